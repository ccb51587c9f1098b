// Internal: per-thread reuse of small device blocks.
//
// The fast path of the core's caching allocator on a synchronous device whose
// plugin allows caching (TSR_DEVICE_CAP_CACHING_ALLOCATOR without ASYNC):
// blocks of up to kMaxBytes are taken from the allocator in 64-byte size
// classes, and a freed one goes to its thread's cache instead of back to the
// allocator; the next allocation of that class on the thread takes it back. A
// tiny op then costs no allocator lock and no reference-count traffic on the
// plugin: the cached block keeps the plugin reference its storage held. The
// allocator counts a cached block as allocated (docs/memory.md). Each thread
// keeps at most kPerClass blocks per class and returns them to the allocator
// when it exits, when an allocation fails (release_thread) and on
// tessera::empty_cache from that thread.
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

// The per-thread cache, in the header so take/give inline into the
// allocation and release paths of every op.
struct Block {
  void* ptr;
  PluginRecord* plugin;  // an owned reference
};
struct Cache {
  Block blocks[kMaxTypes][kClasses][kPerClass];
  uint8_t count[kMaxTypes][kClasses] = {};
  ~Cache() { release(); }
  size_t bytes() const noexcept;  // cached bytes (whole size classes)
  size_t release() noexcept;      // returns every block to its plugin; the bytes returned
};
// Plain thread_locals (one %fs-relative load each); the cache itself is on the
// heap so the static TLS block stays small for a libtessera loaded by dlopen.
enum class State : unsigned char { Fresh, Alive, Dead };
extern constinit thread_local Cache* tls_cache __attribute__((tls_model("initial-exec")));
extern constinit thread_local State tls_state __attribute__((tls_model("initial-exec")));
/// The thread's cache, created on first use; null once the thread is exiting.
Cache* create_cache() noexcept;

inline int class_of(size_t nbytes) { return static_cast<int>(rounded(nbytes) / kGranule) - 1; }

/// Bytes the calling thread's cache holds (0 if it has none). No throw.
size_t thread_cached_bytes() noexcept;
/// Returns the calling thread's cached blocks to their plugins (and drops the
/// plugin references they held); returns the bytes returned. Called when an
/// allocation fails, before it is retried. Other threads' caches are left
/// alone: they are unsynchronized, and each is bounded (kPerClass blocks per
/// class, at most ~68 KiB per device type). No throw.
size_t release_thread() noexcept;

/// A cached block of this type and size class, with the plugin reference it
/// holds moved into `owner`; null if none.
inline void* take(DeviceTypeId type, size_t nbytes, PluginRef& owner) noexcept {
  Cache* c = tls_cache;
  if (c == nullptr) return nullptr;
  const int cls = class_of(nbytes);
  uint8_t& n = c->count[type][cls];
  if (n == 0) return nullptr;
  const Block b = c->blocks[type][cls][--n];
  owner = PluginRef(b.plugin, /*add_ref=*/false);  // adopt the cached reference
  return b.ptr;
}

/// Caches a block with its plugin reference; false (and nothing taken) if the
/// class is full or the thread is exiting.
inline bool give(DeviceTypeId type, void* ptr, size_t nbytes, PluginRef& owner) noexcept {
  Cache* c = tls_state == State::Alive ? tls_cache : create_cache();
  if (c == nullptr) return false;
  const int cls = class_of(nbytes);
  uint8_t& n = c->count[type][cls];
  if (n == kPerClass) return false;
  c->blocks[type][cls][n++] = Block{ptr, owner.detach()};  // keep the reference, no atomic
  return true;
}

}  // namespace tessera::small_blocks
