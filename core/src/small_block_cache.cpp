#include "small_block_cache.h"

#include <cstdint>
#include <cstdio>

namespace tessera::small_blocks {
namespace {

struct Block {
  void* ptr;
  PluginRecord* plugin;  // an owned reference
};

struct Cache {
  Block blocks[kMaxTypes][kClasses][kPerClass];
  uint8_t count[kMaxTypes][kClasses] = {};

  ~Cache() {
    for (int t = 0; t < kMaxTypes; ++t) {
      const DeviceTypeEntry* e = device_registry::get(static_cast<DeviceTypeId>(t));
      for (int c = 0; c < kClasses; ++c) {
        for (int i = 0; i < count[t][c]; ++i) {
          const Block& b = blocks[t][c][i];
          try {
            e->desc.deallocate(e->desc.context, 0, b.ptr, (c + 1) * kGranule, nullptr);
          } catch (...) {
            std::fprintf(stderr, "[tessera] plugin %s: deallocate threw a C++ exception\n", e->plugin_name.c_str());
          }
          intrusive_ptr_release(b.plugin);
        }
      }
    }
  }
};

enum class State : unsigned char { Fresh, Alive, Dead };
// Plain thread_locals (one %fs-relative load each); the cache itself is on the
// heap so the static TLS block stays small for a libtessera loaded by dlopen.
thread_local Cache* tls_cache __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local State tls_state __attribute__((tls_model("initial-exec"))) = State::Fresh;

struct Owner {
  ~Owner() {
    tls_state = State::Dead;
    delete tls_cache;
    tls_cache = nullptr;
  }
};

Cache* cache_for_give() {
  if (tls_state == State::Alive) [[likely]] return tls_cache;
  if (tls_state == State::Dead) return nullptr;
  static thread_local Owner owner;  // frees the cache when the thread exits
  (void)owner;
  tls_cache = new (std::nothrow) Cache();
  tls_state = tls_cache ? State::Alive : State::Dead;
  return tls_cache;
}

int class_of(size_t nbytes) { return static_cast<int>(rounded(nbytes) / kGranule) - 1; }

}  // namespace

void* take(DeviceTypeId type, size_t nbytes, PluginRef& owner) noexcept {
  Cache* c = tls_cache;
  if (c == nullptr) return nullptr;
  const int cls = class_of(nbytes);
  uint8_t& n = c->count[type][cls];
  if (n == 0) return nullptr;
  const Block b = c->blocks[type][cls][--n];
  owner = PluginRef(b.plugin, /*add_ref=*/false);  // adopt the cached reference
  return b.ptr;
}

bool give(DeviceTypeId type, void* ptr, size_t nbytes, PluginRef& owner) noexcept {
  Cache* c = cache_for_give();
  if (c == nullptr) return false;
  const int cls = class_of(nbytes);
  uint8_t& n = c->count[type][cls];
  if (n == kPerClass) return false;
  c->blocks[type][cls][n++] = Block{ptr, owner.detach()};  // keep the reference, no atomic
  return true;
}

}  // namespace tessera::small_blocks
