// tessera/memory.h — the core's caching allocator, seen from a program.
//
// Every device whose plugin sets TSR_DEVICE_CAP_CACHING_ALLOCATOR (cpu, sim,
// cuda) gets its memory from one allocator per device in the core, the design
// of PyTorch's CUDA caching allocator (docs/memory.md). These functions take
// the names and statistics of torch.cuda.memory, with a device argument, so
// that habits carry over: memory_allocated(Device("sim:0")).
//
// Errors: a device that does not exist, or whose type does not use the core's
// allocator (meta, a plugin without the capability), is a ValueError naming
// the device and its plugin. A device on which nothing was allocated yet has
// all statistics 0 (asking does not create its allocator, so settings made
// afterwards still apply).
//
// Threading: every function may be called from any thread; each device's
// allocator has its own lock. Figures read while other threads allocate are a
// consistent state of that device at some moment during the call.
#pragma once

#include <tessera/device.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// ---- Settings -------------------------------------------------------------

/// Sets the allocator configuration, in TESSERA_ALLOC_CONF's syntax
/// ("max_split_size_mb:64,expandable_segments:True"); it wins over the
/// environment variable. Takes effect for allocators built afterwards: call it
/// before the first allocation on the devices it should govern (allocators
/// already built keep their settings). ValueError naming the key for an
/// unknown key, a malformed or out-of-range value.
void set_alloc_conf(std::string_view conf);
/// The configuration new allocators get, as text that parses back to it.
std::string alloc_conf();
/// Limits `device`'s allocator to `fraction` x the device's total memory from
/// now on (torch.cuda.set_per_process_memory_fraction). ValueError for a
/// fraction outside (0, 1] or a device that cannot tell its total memory.
void set_per_process_memory_fraction(double fraction, Device device = Device());

// ---- Statistics (torch.cuda.memory's names) -------------------------------

/// Bytes held by tensors (and workspace, and the per-thread small-block cache)
/// on `device` now: allocated_bytes.all.current.
int64_t memory_allocated(Device device = Device());
/// The peak of memory_allocated since the last reset_peak_memory_stats.
int64_t max_memory_allocated(Device device = Device());
/// Bytes the allocator holds from the device (allocated and cached):
/// reserved_bytes.all.current.
int64_t memory_reserved(Device device = Device());
/// The peak of memory_reserved since the last reset_peak_memory_stats.
int64_t max_memory_reserved(Device device = Device());
/// Every statistic, keyed as torch.cuda.memory_stats(): "allocated_bytes.all.current",
/// "segment.large_pool.peak", "num_alloc_retries", "num_ooms", ... (docs/memory.md).
std::map<std::string, int64_t> memory_stats(Device device = Device());
/// Every peak becomes its current value.
void reset_peak_memory_stats(Device device = Device());
/// Every .allocated/.freed sum and num_* counter becomes 0.
void reset_accumulated_memory_stats(Device device = Device());
/// A readable table of the statistics (torch.cuda.memory_summary's layout).
std::string memory_summary(Device device = Device());

// ---- Releasing cached memory ------------------------------------------------

/// Returns every unused cached segment of `device` to its plugin, after the
/// events of pending frees complete; this thread's cached small blocks and
/// kept tensors go back to their allocators first. Memory held by tensors
/// stays.
void empty_cache(Device device);
/// empty_cache for every device that has an allocator.
void empty_cache();

// ---- Snapshots and history ----------------------------------------------------

/// Starts (enabled) or stops recording `device`'s allocator events (alloc, free,
/// segment alloc/free/map/unmap, oom) with their C++ call stacks, keeping the
/// last `max_entries`. Stopping clears the history. Creates the allocator.
void record_memory_history(bool enabled, Device device = Device(), size_t max_entries = 100000);

/// The devices a snapshot covers: all = every device that has an allocator;
/// a device named twice is written once.
/// Writes the segments, blocks (state, size, requested size) and recorded
/// history of those devices as one object in the layout of PyTorch's
/// torch.cuda.memory._snapshot() (docs/memory.md): JSON text, or a protocol-2
/// pickle that PyTorch's memory visualizer (pytorch.org/memory_viz) reads.
std::string memory_snapshot_json(const std::vector<Device>& devices = {});
std::string memory_snapshot_pickle(const std::vector<Device>& devices = {});
/// Writes memory_snapshot_pickle (a path ending in ".json": the JSON) to `path`.
/// tessera::Error naming the path when it cannot be written.
void dump_memory_snapshot(const std::string& path, const std::vector<Device>& devices = {});

}  // namespace tessera
