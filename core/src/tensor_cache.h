// Internal: per-thread reuse of whole small output tensors.
//
// A tiny op's output is a TensorImpl, a StorageImpl and a small device block
// (small_block_cache.h). When such a tensor dies as it was born — its storage a
// small block it alone owns, no autograd state, not a view, dims inline — the
// three are kept together on the dying thread, and the next output of the same
// device type and size class on that thread takes them back with its own shape
// and dtype and a fresh version counter: one pop instead of two object
// allocations and a block lookup, and no destructor chain on release. Each
// thread keeps at most small_blocks::kPerClass tensors per class and deletes
// them (through their destructors) when it exits, or when an allocation on it
// fails (release_thread).
#pragma once

#include <tessera/tensor_impl.h>

#include "abi_bridge.h"
#include "device_registry.h"
#include "local_keys.h"
#include "small_block_cache.h"

namespace tessera {

class TensorCache {
 public:
  /// Keeps `t`, whose last reference just went, if it qualifies; false (and
  /// nothing done) otherwise: the caller deletes it.
  static bool keep(TensorImpl* t) noexcept;
  /// A kept tensor of device type `type` whose block has nbytes' size class,
  /// reset to a contiguous `sizes` (numel elements) of `dtype`, holding one
  /// reference the caller adopts (intrusive_ptr(t, false)); null if none. The
  /// caller checked the type is not retired.
  [[gnu::always_inline]] static TensorImpl* reuse(DeviceTypeId type, size_t nbytes, IntArrayRef sizes, int64_t numel,
                           ScalarType dtype) noexcept;
  /// Bytes of the blocks the calling thread's kept tensors hold (whole size
  /// classes; disjoint from small_blocks' cache). No throw.
  static size_t thread_cached_bytes() noexcept;
  /// Deletes the calling thread's kept tensors; their blocks go where a freed
  /// block goes (the thread's small-block cache or their plugin). Returns the
  /// bytes of those blocks. Called when an allocation fails, before it is
  /// retried; other threads' kept tensors are left alone (unsynchronized, and
  /// bounded like the small-block cache). No throw.
  static size_t release_thread() noexcept;

  // The per-thread slots, in the header so keep/reuse inline into the release
  // and allocation paths.
  struct Slots {
    TensorImpl* kept[small_blocks::kMaxTypes][small_blocks::kClasses][small_blocks::kPerClass];
    uint8_t count[small_blocks::kMaxTypes][small_blocks::kClasses] = {};
  };
  enum class State : unsigned char { Fresh, Alive, Dead };
  static constinit thread_local Slots* tls_slots __attribute__((tls_model("initial-exec")));
  static constinit thread_local State tls_state __attribute__((tls_model("initial-exec")));
  /// The thread's slots, created on first use; null once the thread is exiting.
  static Slots* create_slots() noexcept;
};

inline bool TensorCache::keep(TensorImpl* t) noexcept {
  if (!t->recyclable()) [[unlikely]] return false;
  const StorageImpl* s = t->storage().get();
  const DeviceTypeId type = s->device().type();
  if (device_registry::retired(type)) [[unlikely]] return false;
  Slots* slots = tls_slots;
  if (tls_state != State::Alive) [[unlikely]] {
    slots = create_slots();
    if (slots == nullptr) return false;
  }
  const int cls = small_blocks::class_of(s->nbytes());
  uint8_t& n = slots->count[type][cls];
  if (n == small_blocks::kPerClass) [[unlikely]] return false;
  slots->kept[type][cls][n++] = t;
  return true;
}

inline TensorImpl* TensorCache::reuse(DeviceTypeId type, size_t nbytes, IntArrayRef sizes, int64_t numel,
                                      ScalarType dtype) noexcept {
  Slots* slots = tls_slots;
  if (slots == nullptr || sizes.size() > size_t(TensorImpl::kInlineDims)) return nullptr;
  const int cls = small_blocks::class_of(nbytes);
  uint8_t& n = slots->count[type][cls];
  if (n == 0) return nullptr;
  TensorImpl* t = slots->kept[type][cls][--n];
  t->recycle(nbytes, sizes, numel, dtype, to_dl_dtype(dtype), local_keys().inference_mode);
  return t;
}

}  // namespace tessera
