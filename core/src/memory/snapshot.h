// memory/snapshot.h — the state of a caching allocator at one moment, and its
// recorded history, with writers for JSON and for a pickle in the layout of
// PyTorch's torch.cuda.memory._snapshot() (so PyTorch's memory visualizer,
// https://pytorch.org/memory_viz, renders it). docs/memory.md has the format.
// Thread-safety: values; the writers are reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "alloc_config.h"
#include "call_stack.h"
#include "memory_stats.h"

namespace tessera::memory {

enum class BlockState {
  ActiveAllocated,    // "active_allocated": handed out
  ActivePendingFree,  // "active_pending_free": freed, waiting for other streams' events
  Inactive,           // "inactive": cached, free for reuse on its stream
};
const char* block_state_name(BlockState state) noexcept;

struct SnapshotBlock {
  uint64_t address = 0;
  uint64_t size = 0;            // rounded size
  uint64_t requested_size = 0;  // what the caller asked (0 for inactive blocks)
  BlockState state = BlockState::Inactive;
  std::vector<Frame> frames;    // where it was allocated (history only)
};

/// One device allocation; for an expandable segment, one contiguous mapped range.
struct SnapshotSegment {
  int device = 0;
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t allocated_size = 0;  // sum of active_allocated blocks
  uint64_t active_size = 0;     // sum of active_allocated and active_pending_free blocks
  uint64_t requested_size = 0;  // sum of the requested sizes of active_allocated blocks
  uint64_t stream = 0;          // the TsrStream handle's value
  bool small = false;           // segment_type "small" (else "large")
  bool is_expandable = false;
  std::vector<SnapshotBlock> blocks;  // in address order, covering the segment
  std::vector<Frame> frames;          // where the segment was allocated (history only)
};

enum class TraceAction {
  Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Oom, Snapshot,
};
const char* trace_action_name(TraceAction action) noexcept;

struct TraceEntry {
  TraceAction action = TraceAction::Alloc;
  uint64_t addr = 0;         // 0 for oom and snapshot
  uint64_t size = 0;
  uint64_t stream = 0;
  int64_t time_us = 0;       // microseconds since the epoch
  uint64_t device_free = 0;  // oom only: what the device could still give (0 when unknown)
  std::vector<Frame> frames;
};

/// One device's snapshot.
struct Snapshot {
  int device = 0;            // the device index (PyTorch's "device" field)
  std::string device_name;   // e.g. "sim:0"
  std::vector<SnapshotSegment> segments;  // by address
  std::vector<TraceEntry> trace;          // oldest first; empty unless history is recorded
  AllocatorConfig config;
  DeviceStats stats;
};

/// Writes snapshots of one or more devices as one JSON object:
/// {"segments": [...], "device_traces": [[...], ...], "allocator_settings": {...},
///  "devices": [{"device": i, "name": ...}]}, the pickle's layout.
void write_snapshot_json(const std::vector<Snapshot>& snapshots, std::ostream& out);
/// The same object as a protocol-2 pickle, loadable by pickle.load() and by
/// PyTorch's memory visualizer (torch.cuda._memory_viz).
void write_snapshot_pickle(const std::vector<Snapshot>& snapshots, std::ostream& out);

/// The "current" statistics a snapshot implies (PyTorch's
/// _check_memory_stat_consistency): allocation, segment, active,
/// inactive_split and the *_bytes, each .{all,small_pool,large_pool}.current.
/// Expandable segments count no "segment" and no "inactive_split", as in PyTorch.
std::map<std::string, int64_t> current_stats_from_snapshot(const Snapshot& snapshot);

}  // namespace tessera::memory
