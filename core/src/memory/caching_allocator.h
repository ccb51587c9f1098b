// memory/caching_allocator.h — the core's device-generic caching allocator.
//
// One CachingAllocator per device, over the device's DeviceMemory. Design
// (PyTorch's CUDA caching allocator; docs/memory.md has the details):
//  - requests are rounded to 512 B (and to roundup_power2_divisions when set);
//  - two pools per stream: small (requests <= 1 MiB, carved from 2 MiB
//    segments) and large (20 MiB segments for requests < 10 MiB, else the
//    request rounded to 2 MiB); best fit, splitting and coalescing;
//  - blocks >= max_split_size are never split, an oversize cached block serves
//    only an oversize request less than 20 MiB smaller than it;
//  - a block freed on stream S is reused only for requests on S;
//    record_stream(ptr, T) makes free() record an event on T and hold the block
//    until it completes; events are polled at allocation, never waited on;
//  - out of memory: free cached unsplit blocks -> retry -> wait for all pending
//    events and free every cached block -> retry -> tessera::OutOfMemoryError;
//  - garbage_collection_threshold, per_process_memory_fraction,
//    expandable_segments and backend:plugin as in alloc_config.h.
//
// Thread-safety: every member function may be called from any thread; one
// mutex per allocator serializes them. The DeviceMemory is called under that
// mutex (never the context recorder).
// Lifetime: the DeviceMemory outlives the allocator. The destructor returns
// every cached segment; blocks still allocated then stay with the device.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "alloc_config.h"
#include "call_stack.h"
#include "device_memory.h"
#include "memory_stats.h"
#include "snapshot.h"

namespace tessera::memory {

/// The allocator's lock: an uncontended lock is one atomic exchange and an
/// unlock one plain release store, both inline (the hot path takes the lock
/// twice per allocate+free pair, and a locked instruction costs more than the
/// rest of a cached pair). A futex lock needs a locked instruction in unlock
/// to see sleepers; instead a contended lock spins on a load, then yields,
/// then sleeps in growing steps of at most 1 ms, so a waiter sees the lock
/// free at most about half the time it was held after it began to wait.
class AllocatorMutex {
 public:
  [[gnu::always_inline]] void lock() noexcept {
    if (!held_.exchange(true, std::memory_order_acquire)) [[likely]] return;
    lock_contended();
  }
  [[gnu::always_inline]] void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  void lock_contended() noexcept;
  std::atomic<bool> held_{false};
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlockSize = 512;           // every size is a multiple of it
  static constexpr size_t kSmallSize = size_t{1} << 20;  // largest request of the small pool
  static constexpr size_t kSmallBuffer = size_t{2} << 20;   // small-pool segment size
  static constexpr size_t kLargeBuffer = size_t{20} << 20;  // large-pool segment for requests < kMinLargeAlloc
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;
  static constexpr size_t kRoundLarge = size_t{2} << 20;    // larger requests' segments round to it

  /// `device_index` is the snapshot's "device" field. Takes the config as is
  /// (parse_alloc_conf / current_alloc_conf make one). Throws nothing.
  CachingAllocator(DeviceMemory& device, AllocatorConfig config, int device_index = 0);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// `nbytes` on `stream` (nullptr for 0 bytes), aligned to the device's
  /// alignment and to 512 B within a segment. Throws tessera::OutOfMemoryError
  /// when the device (or the limit) cannot give it after the retries; other
  /// tessera::Errors from the device pass through. The allocator is consistent
  /// after either.
  void* allocate(size_t nbytes, TsrStream stream);
  /// Returns a pointer from allocate() (nullptr: nothing). With streams recorded
  /// by record_stream, the block is reused only after their events complete.
  /// Throws tessera::ValueError for a pointer this allocator did not hand out.
  void free(void* ptr);
  /// Marks the live allocation at `ptr` as used on `stream` too (no-op for its
  /// own stream and on synchronous devices). Throws ValueError for an unknown ptr.
  void record_stream(void* ptr, TsrStream stream);
  /// Polls pending events and returns the blocks whose streams are done. allocate() does it too.
  void process_events();
  /// Waits for every pending event, then returns every unused segment to the
  /// device (with expandable segments: unmaps every unused granule).
  void empty_cache();
  /// `stream` is about to be destroyed: waits for the events of pending frees,
  /// then returns every segment of the stream's pools to the device (ordered
  /// on that stream, while it still exists) and forgets the pools, so that a
  /// later stream with the same handle starts empty. Segments that still hold
  /// allocated blocks (there should be none: storages keep their stream alive)
  /// stay. No-op for a stream the allocator never saw.
  void release_stream(TsrStream stream);
  /// Destroys the events the allocator keeps for reuse (those of pending
  /// blocks stay). The core calls it, after empty_cache(), when the device's
  /// plugin is being unloaded: the plugin is promised that every event the
  /// host created is destroyed before its shutdown.
  void release_spare_events();

  /// The block size (rounded) and requested size of a live allocation; false if unknown.
  bool lookup(const void* ptr, size_t* size, size_t* requested) const;

  /// A copy of the statistics now (memory_stats.h defines each).
  DeviceStats stats() const;
  /// The flat view of stats(), keys as torch.cuda.memory_stats().
  std::map<std::string, int64_t> stats_map() const { return stats().to_map(); }
  /// Every peak becomes its current value.
  void reset_peak_stats();
  /// Every .allocated/.freed sum and num_* counter becomes 0.
  void reset_accumulated_stats();

  /// The segments and blocks now, and the recorded history (when enabled).
  /// Records a "snapshot" trace entry first when history is on.
  Snapshot snapshot();
  /// Starts (enabled) or stops recording the history of allocator events with
  /// their call stacks, keeping the last `max_entries` (older entries dropped).
  /// Stopping clears the history. Costs a backtrace() per event while on.
  void record_history(bool enabled, size_t max_entries = 100000);
  /// Called (without the allocator's lock) when an allocation has failed every
  /// stage of out-of-memory recovery, before the error: it returns blocks
  /// that callers keep outside the allocator (the core's per-thread caches),
  /// and says what it returned ("" for nothing). The allocation is then tried
  /// once more, and its error ends with that text. Set before the allocator is
  /// shared between threads.
  using CacheReleaseHook = std::string (*)();
  void set_cache_release_hook(CacheReleaseHook hook) noexcept { release_hook_ = hook; }

  /// Adds the recorder's frames (e.g. Python's) to each recorded call stack.
  /// Called without the allocator's lock held; must not call the allocator.
  void set_context_recorder(ContextRecorder recorder);

  /// A readable table of the statistics (torch.cuda.memory_summary's shape).
  std::string summary() const;

  /// Sets the device limit to `fraction` x total memory from now on (cached and
  /// allocated memory above it stays; new segments are refused beyond it).
  /// ValueError for a fraction outside (0, 1] or a device that cannot tell its
  /// total memory.
  void set_memory_fraction(double fraction);

  /// The device limit in bytes (per_process_memory_fraction x total memory); 0: none.
  size_t limit() const noexcept { return limit_; }
  const AllocatorConfig& config() const noexcept { return config_; }
  DeviceMemory& device() const noexcept { return device_; }
  /// The size a request of `nbytes` is rounded to.
  size_t round_size(size_t nbytes) const noexcept;

  /// Checks the internal invariants: blocks tile every segment, neighbours free
  /// in the pool are coalesced, pools hold exactly the free blocks, the stats
  /// agree with the blocks. "" when they hold, else the first violation. O(blocks).
  std::string check_invariants() const;

  struct Impl;  // private; public so that the .cpp's helpers can name it

 private:
  [[gnu::cold, gnu::noinline]] void* allocate_after_release(size_t nbytes, TsrStream stream, size_t size,
                                                            std::shared_ptr<const StackContext> ctx);
  /// The stack from `caller` (the return address into the allocator's caller) outward.
  std::shared_ptr<const StackContext> capture_context(const void* caller);

  DeviceMemory& device_;
  AllocatorConfig config_;  // per_process_memory_fraction changes under mu_ (set_memory_fraction)
  size_t limit_ = 0;
  std::atomic<bool> history_on_{false};
  CacheReleaseHook release_hook_ = nullptr;
  mutable AllocatorMutex mu_;
  std::mutex recorder_mu_;  // guards recorder_ (never held with mu_)
  ContextRecorder recorder_;
  std::unique_ptr<Impl> impl_;
};

/// "1.50 GiB" style, for messages.
std::string format_bytes(uint64_t bytes);

}  // namespace tessera::memory
