#include "small_block_cache.h"

#include <cstdint>

#include "memory/device_allocators.h"

namespace tessera::small_blocks {

size_t Cache::bytes() const noexcept {
  size_t n = 0;
  for (int t = 0; t < kMaxTypes; ++t)
    for (int c = 0; c < kClasses; ++c) n += count[t][c] * (c + 1) * kGranule;
  return n;
}

size_t Cache::release() noexcept {
  size_t freed = 0;
  for (int t = 0; t < kMaxTypes; ++t) {
    for (int c = 0; c < kClasses; ++c) {
      if (count[t][c] == 0) continue;
      // Cached blocks came from device 0's allocator, which exists while they do.
      memory::DeviceAllocator* a = memory::device_allocators::find(Device(static_cast<DeviceTypeId>(t), 0));
      for (int i = 0; i < count[t][c]; ++i) {
        const Block& b = blocks[t][c][i];
        memory::device_allocators::free(*a, b.ptr);
        intrusive_ptr_release(b.plugin);
        freed += (c + 1) * kGranule;
      }
      count[t][c] = 0;
    }
  }
  return freed;
}

constinit thread_local Cache* tls_cache __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local State tls_state __attribute__((tls_model("initial-exec"))) = State::Fresh;

namespace {
struct Owner {
  ~Owner() {
    tls_state = State::Dead;
    delete tls_cache;
    tls_cache = nullptr;
  }
};
}  // namespace

size_t thread_cached_bytes() noexcept { return tls_cache != nullptr ? tls_cache->bytes() : 0; }

size_t release_thread() noexcept { return tls_cache != nullptr ? tls_cache->release() : 0; }

Cache* create_cache() noexcept {
  if (tls_state == State::Alive) return tls_cache;
  if (tls_state == State::Dead) return nullptr;
  static thread_local Owner owner;  // frees the cache when the thread exits
  (void)owner;
  tls_cache = new (std::nothrow) Cache();
  tls_state = tls_cache ? State::Alive : State::Dead;
  return tls_cache;
}

}  // namespace tessera::small_blocks
