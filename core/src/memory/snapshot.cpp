// memory/snapshot.cpp — snapshot writers and the statistics a snapshot implies.
#include "snapshot.h"

#include <algorithm>

#include "object_writers.h"

namespace tessera::memory {

const char* block_state_name(BlockState state) noexcept {
  switch (state) {
    case BlockState::ActiveAllocated: return "active_allocated";
    case BlockState::ActivePendingFree: return "active_pending_free";
    case BlockState::Inactive: return "inactive";
  }
  return "?";
}

const char* trace_action_name(TraceAction action) noexcept {
  switch (action) {
    case TraceAction::Alloc: return "alloc";
    case TraceAction::FreeRequested: return "free_requested";
    case TraceAction::FreeCompleted: return "free_completed";
    case TraceAction::SegmentAlloc: return "segment_alloc";
    case TraceAction::SegmentFree: return "segment_free";
    case TraceAction::SegmentMap: return "segment_map";
    case TraceAction::SegmentUnmap: return "segment_unmap";
    case TraceAction::Oom: return "oom";
    case TraceAction::Snapshot: return "snapshot";
  }
  return "?";
}

namespace {

template <typename W>
void write_frames(W& w, const std::vector<Frame>& frames) {
  w.begin_list();
  for (const Frame& f : frames) {
    w.begin_dict();
    w.key("filename"), w.str(f.filename);
    w.key("line"), w.integer(f.line);
    w.key("name"), w.str(f.name);
    w.end_dict();
  }
  w.end_list();
}

template <typename W>
void write_settings(W& w, const AllocatorConfig& c) {
  w.begin_dict();
  w.key("TESSERA_ALLOC_CONF"), w.str(c.text);
  // PyTorch's key, so that tools reading it find the same text.
  w.key("PYTORCH_CUDA_ALLOC_CONF"), w.str(c.text);
  w.key("max_split_size"), w.integer(c.max_split_size == std::numeric_limits<size_t>::max()
                                         ? -1 : static_cast<int64_t>(c.max_split_size));
  w.key("garbage_collection_threshold"), w.real(c.garbage_collection_threshold);
  w.key("per_process_memory_fraction"), w.real(c.per_process_memory_fraction);
  w.key("expandable_segments"), w.boolean(c.expandable_segments);
  w.key("backend"), w.str(c.backend == AllocatorBackend::Plugin ? "plugin" : "caching");
  w.key("roundup_power2_divisions");
  w.begin_dict();
  for (size_t i = 0; i < AllocatorConfig::kRoundupBands; ++i) {
    // Keyed by the band's lower bound in MiB (band 0: every size below 2 MiB).
    w.key(std::to_string(i == 0 ? 0 : size_t{1} << i));
    w.integer(c.roundup_power2_divisions[i]);
  }
  w.end_dict();
  w.end_dict();
}

template <typename W>
void write_all(W& w, const std::vector<Snapshot>& snapshots) {
  w.begin_dict();
  w.key("segments");
  w.begin_list();
  for (const Snapshot& s : snapshots) {
    for (const SnapshotSegment& seg : s.segments) {
      w.begin_dict();
      w.key("device"), w.integer(seg.device);
      w.key("address"), w.uinteger(seg.address);
      w.key("total_size"), w.uinteger(seg.total_size);
      w.key("allocated_size"), w.uinteger(seg.allocated_size);
      w.key("active_size"), w.uinteger(seg.active_size);
      w.key("requested_size"), w.uinteger(seg.requested_size);
      w.key("stream"), w.uinteger(seg.stream);
      w.key("segment_type"), w.str(seg.small ? "small" : "large");
      w.key("segment_pool_id");  // PyTorch: the private pool of a CUDA graph; (0, 0) is none
      w.begin_list(), w.integer(0), w.integer(0), w.end_list();
      w.key("is_expandable"), w.boolean(seg.is_expandable);
      w.key("frames"), write_frames(w, seg.frames);
      w.key("blocks");
      w.begin_list();
      for (const SnapshotBlock& b : seg.blocks) {
        w.begin_dict();
        w.key("address"), w.uinteger(b.address);
        w.key("size"), w.uinteger(b.size);
        w.key("requested_size"), w.uinteger(b.requested_size);
        w.key("state"), w.str(block_state_name(b.state));
        w.key("frames"), write_frames(w, b.frames);
        w.end_dict();
      }
      w.end_list();
      w.end_dict();
    }
  }
  w.end_list();
  // device_traces[i] is device i's history (PyTorch indexes it by device).
  int max_device = -1;
  for (const Snapshot& s : snapshots) max_device = std::max(max_device, s.device);
  w.key("device_traces");
  w.begin_list();
  for (int d = 0; d <= max_device; ++d) {
    w.begin_list();
    for (const Snapshot& s : snapshots) {
      if (s.device != d) continue;
      for (const TraceEntry& e : s.trace) {
        w.begin_dict();
        w.key("action"), w.str(trace_action_name(e.action));
        w.key("addr"), w.uinteger(e.addr);
        w.key("size"), w.uinteger(e.size);
        w.key("stream"), w.uinteger(e.stream);
        w.key("time_us"), w.integer(e.time_us);
        if (e.action == TraceAction::Oom) w.key("device_free"), w.uinteger(e.device_free);
        w.key("frames"), write_frames(w, e.frames);
        w.end_dict();
      }
    }
    w.end_list();
  }
  w.end_list();
  w.key("allocator_settings");  // PyTorch's place: the first device's; "devices" has each one's
  if (snapshots.empty()) write_settings(w, AllocatorConfig{});
  else write_settings(w, snapshots.front().config);
  w.key("devices");
  w.begin_list();
  for (const Snapshot& s : snapshots) {
    w.begin_dict();
    w.key("device"), w.integer(s.device);
    w.key("name"), w.str(s.device_name);
    w.key("allocator_settings"), write_settings(w, s.config);  // each device's own (its fraction)
    w.end_dict();
  }
  w.end_list();
  w.end_dict();
}

}  // namespace

void write_snapshot_json(const std::vector<Snapshot>& snapshots, std::ostream& out) {
  JsonWriter w;
  write_all(w, snapshots);
  out << w.finish();
}

void write_snapshot_pickle(const std::vector<Snapshot>& snapshots, std::ostream& out) {
  PickleWriter w;
  write_all(w, snapshots);
  const std::string& bytes = w.finish();
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::map<std::string, int64_t> current_stats_from_snapshot(const Snapshot& snapshot) {
  std::map<std::string, int64_t> m;
  for (const char* name : {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                           "active_bytes", "inactive_split_bytes", "requested_bytes"})
    for (const char* pool : {"all", "small_pool", "large_pool"}) m[std::string(name) + "." + pool + ".current"] = 0;
  auto add = [&m](const std::string& name, const std::string& pool, int64_t v) {
    m[name + ".all.current"] += v;
    m[name + "." + pool + ".current"] += v;
  };
  for (const SnapshotSegment& seg : snapshot.segments) {
    const std::string pool = seg.small ? "small_pool" : "large_pool";
    if (!seg.is_expandable) add("segment", pool, 1);
    add("reserved_bytes", pool, static_cast<int64_t>(seg.total_size));
    add("allocated_bytes", pool, static_cast<int64_t>(seg.allocated_size));
    add("active_bytes", pool, static_cast<int64_t>(seg.active_size));
    add("requested_bytes", pool, static_cast<int64_t>(seg.requested_size));
    const bool split = seg.blocks.size() > 1;
    for (const SnapshotBlock& b : seg.blocks) {
      if (b.state == BlockState::ActiveAllocated) add("allocation", pool, 1);
      if (b.state != BlockState::Inactive) add("active", pool, 1);
      if (b.state == BlockState::Inactive && split && !seg.is_expandable) {
        add("inactive_split", pool, 1);
        add("inactive_split_bytes", pool, static_cast<int64_t>(b.size));
      }
    }
  }
  return m;
}

}  // namespace tessera::memory
