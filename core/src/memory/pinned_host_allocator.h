// memory/pinned_host_allocator.h — the core's cache of pinned (page-locked)
// host memory, per device type whose plugin has the host_allocate and
// host_deallocate slots (ABI 1.2).
//
// The design of PyTorch's caching host allocator: a request is rounded up to a
// power of two (at least 512 B) and served from a free block of exactly that
// size, else from the plugin's host_allocate. Every asynchronous copy that
// reads or writes a block records an event on the copy's stream
// (record_use); a freed block returns to the cache only when all its events
// have completed — they are polled at each allocation, never waited for on
// that path. Out of memory: wait for the pending events, return every free
// block to the plugin, retry, then OutOfMemoryError.
//
// The memory is host memory: tensors over it are "cpu" tensors that report
// is_pinned() (allocation.cpp makes them; tensor.h documents them).
//
// Thread-safety: one mutex per allocator; any thread. The plugin's slots are
// called under it. Lifetime: never destroyed (like the device allocators);
// when the plugin is unloaded, retire() returns what is cached and later
// frees go straight back to the plugin, which storages keep loaded.
#pragma once

#include <tessera/abi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../device_registry.h"

namespace tessera::memory {

class PinnedHostAllocator {
 public:
  explicit PinnedHostAllocator(const DeviceTypeEntry& entry) : entry_(entry) {}
  PinnedHostAllocator(const PinnedHostAllocator&) = delete;
  PinnedHostAllocator& operator=(const PinnedHostAllocator&) = delete;

  /// A block of at least `nbytes` (> 0). OutOfMemoryError (naming the device
  /// type, the bytes and what is cached) when the plugin has none even after
  /// the cache was returned; other plugin failures as tessera::Error.
  void* allocate(size_t nbytes);
  /// Returns a block from allocate(); reused once the events of its uses
  /// complete. No throw.
  void free(void* ptr) noexcept;
  /// A copy queued on `stream` of device `device_index` uses the block at
  /// `ptr` (which must be live): the block is not reused before the work
  /// queued there so far completes. Throws the plugin's error.
  void record_use(void* ptr, int32_t device_index, TsrStream stream);
  /// Waits for pending events, then returns every free block to the plugin.
  void empty_cache() noexcept;
  /// The plugin is being unloaded: empty_cache(), and from now on freed blocks
  /// go back to the plugin at once (after their events).
  void retire() noexcept;

  /// Statistics with the keys of torch.cuda.host_memory_stats() that apply:
  /// allocations.current/peak, allocated_bytes.current/peak, reserved_bytes
  /// .current/peak, num_host_alloc, num_host_free.
  std::map<std::string, int64_t> stats() const;
  /// The size a block for `nbytes` has.
  static size_t round_size(size_t nbytes) noexcept;

  const DeviceTypeEntry& entry() const noexcept { return entry_; }

 private:
  struct Use {
    int32_t device_index;
    TsrEvent event;
  };
  struct Block {
    void* ptr = nullptr;
    size_t size = 0;
    bool allocated = false;
    std::vector<Use> uses;  // events of copies that used it and may not have completed
  };

  bool uses_done(Block& b);             // polls and destroys completed events
  void wait_uses(Block& b) noexcept;    // waits for and destroys every event
  void poll_pending();
  void release_block(Block* b) noexcept;  // to the plugin
  size_t release_free_blocks() noexcept;  // every cached free block; the bytes
  void* host_allocate(size_t size, std::string* oom_message);

  const DeviceTypeEntry& entry_;
  mutable std::mutex mu_;
  bool retired_ = false;
  std::unordered_map<void*, Block*> blocks_;           // every block held from the plugin
  std::multimap<size_t, Block*> free_;                 // free blocks by size
  std::vector<Block*> pending_;                        // freed, waiting for their events
  int64_t allocations_ = 0, allocations_peak_ = 0;
  int64_t allocated_ = 0, allocated_peak_ = 0;
  int64_t reserved_ = 0, reserved_peak_ = 0;
  int64_t num_host_alloc_ = 0, num_host_free_ = 0;
};

namespace pinned_allocators {
/// The pinned allocator of a device type with the host slots (created on first use).
PinnedHostAllocator& get(const DeviceTypeEntry& e);
/// The allocator if one was created, else null.
PinnedHostAllocator* find(DeviceTypeId type) noexcept;
/// The device type's plugin is being unloaded.
void retire(DeviceTypeId type) noexcept;
}  // namespace pinned_allocators

}  // namespace tessera::memory
