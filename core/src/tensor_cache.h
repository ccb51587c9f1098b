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
// them (through their destructors) when it exits.
#pragma once

#include <tessera/tensor_impl.h>

namespace tessera {

class TensorCache {
 public:
  /// Keeps `t`, whose last reference just went, if it qualifies; false (and
  /// nothing done) otherwise: the caller deletes it.
  static bool keep(TensorImpl* t) noexcept;
  /// A kept tensor of device type `type` whose block has nbytes' size class,
  /// reset to a contiguous `sizes` (numel elements) of `dtype` with reference
  /// count zero; null if none. The caller checked the type is not retired.
  static TensorImpl* reuse(DeviceTypeId type, size_t nbytes, IntArrayRef sizes, int64_t numel,
                           ScalarType dtype) noexcept;
};

}  // namespace tessera
