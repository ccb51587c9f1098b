// Internal: per-thread reuse of small device blocks.
//
// For a synchronous device whose plugin allows caching
// (TSR_DEVICE_CAP_CACHING_ALLOCATOR without ASYNC), blocks of up to kMaxBytes are
// allocated in 64-byte size classes, and a freed one goes to its thread's cache
// instead of back to the plugin; the next allocation of that class on the thread
// takes it back. A tiny op then costs no plugin allocate/deallocate round trip
// and no reference-count traffic on the plugin: the cached block keeps the
// plugin reference its storage held. Each thread keeps at most kPerClass blocks
// per class and returns them to their plugins when it exits. (The full caching
// allocator with streams, events and statistics is a later piece of work.)
#pragma once

#include <tessera/storage.h>

#include <cstddef>

#include "device_registry.h"

namespace tessera::small_blocks {

inline constexpr size_t kGranule = 64;
inline constexpr size_t kMaxBytes = 1024;
inline constexpr int kClasses = static_cast<int>(kMaxBytes / kGranule);
inline constexpr int kPerClass = 8;
inline constexpr int kMaxTypes = 8;  // device type ids served (the first registered)

/// Whether allocations of nbytes on d go through the cache (fixed per type and size,
/// so allocation and release agree).
inline bool eligible(const DeviceTypeEntry& e, Device d, size_t nbytes) {
  return e.small_block_cache && nbytes <= kMaxBytes && d.type() < kMaxTypes && d.index() == 0;
}
/// The size actually allocated from the plugin for an eligible request.
inline size_t rounded(size_t nbytes) { return (nbytes + kGranule - 1) & ~(kGranule - 1); }

/// A cached block of this type and size class, with the plugin reference it
/// holds moved into `owner`; null if none.
void* take(DeviceTypeId type, size_t nbytes, PluginRef& owner) noexcept;
/// Caches a block with its plugin reference; false (and nothing taken) if the
/// class is full or the thread is exiting.
bool give(DeviceTypeId type, void* ptr, size_t nbytes, PluginRef& owner) noexcept;

}  // namespace tessera::small_blocks
