#include <tessera/error.h>
#include <tessera/tensor_impl.h>

#include "abi_bridge.h"
#include "checked_math.h"
#include "device_registry.h"
#include "local_keys.h"
#include "tensor_cache.h"
#include "object_pool.h"

namespace tessera {

void* TensorImpl::operator new(size_t size) { return detail::pooled_new<sizeof(TensorImpl)>(size); }
void TensorImpl::operator delete(void* p, size_t size) noexcept { detail::pooled_delete<sizeof(TensorImpl)>(p, size); }

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  bool bad = false;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    bad |= checked::mul(acc, sizes[i] > 1 ? sizes[i] : 1, acc);
  }
  if (bad) [[unlikely]]
    throw ValueError(detail::str("contiguous_strides: shape ", sizes, " has strides beyond int64 (the product of its ",
                                 "sizes, counting 0 as 1, exceeds 9223372036854775807)"));
  return strides;
}

void TensorImpl::set_dims(IntArrayRef sizes, const int64_t* strides) {
  ndim_ = static_cast<int64_t>(sizes.size());
  if (ndim_ > kInlineDims) dims_ = new int64_t[2 * ndim_];
  for (int64_t i = 0; i < ndim_; ++i) dims_[i] = sizes[i];
  if (strides != nullptr)
    for (int64_t i = 0; i < ndim_; ++i) dims_[ndim_ + i] = strides[i];
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes)
    : storage_(std::move(storage)), device_(storage_->device()), dtype_(dtype) {
  // Callers checked the shape (allocate_contiguous); checked again before
  // set_contiguous_dims computes strides from it.
  numel_ = checked::check_shape("empty", sizes, dtype);
  set_contiguous_dims(sizes);
  is_contiguous_ = true;
  key_set_ = DispatchKeySet::backend(device_.type());
  inference_ = local_keys().inference_mode;
  init_dl_tensor();
}

void TensorImpl::init_dl_tensor() {
  const Device d = device_;
  const DeviceTypeEntry* e = device_registry::get(d.type());
  dl_.data = data();
  dl_.device = e != nullptr ? dl_device_of(*e, d.index()) : DLDevice{kDLExtDev, d.index()};
  dl_.ndim = static_cast<int32_t>(ndim_);
  dl_.dtype = is_valid(dtype_) ? to_dl_dtype(dtype_) : DLDataType{0, 0, 0};
  dl_.shape = dims_;
  dl_.strides = dims_ + ndim_;
  dl_.byte_offset = 0;
}

namespace {
// Out of line: the common release (kept by the tensor cache) then needs no
// saved registers and no stack frame.
[[gnu::noinline]] void destroy(TensorImpl* t) noexcept { delete t; }
}  // namespace

void TensorImpl::on_last_release(const TensorImpl* p) noexcept {
  auto* t = const_cast<TensorImpl*>(p);
  if (!TensorCache::keep(t)) [[unlikely]] destroy(t);
}

namespace {
// A view must address only bytes inside its storage, with every size, stride,
// offset and byte count in int64 (core/src/checked_math.h). The view ops check
// first, naming the op; this catches what reaches the constructor otherwise.
void check_view(const StorageImpl& storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
                int64_t offset) {
  const int64_t numel = checked::check_shape("view", sizes, dtype);
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  int64_t lo = 0, hi = 0, first = 0, end = 0;
  bool bad = sizes.size() != strides.size() || offset < 0 || checked::mul(offset, item, first);
  if (!bad && numel > 0) {
    bad = checked::extent(sizes, strides, lo, hi) || checked::add(offset, lo, lo) || lo < 0 ||
          checked::add(offset, hi, hi) || checked::add(hi, 1, end) || checked::mul(end, item, end) ||
          static_cast<uint64_t>(end) > storage.nbytes();
  }
  if (bad) [[unlikely]] {
    throw ValueError(detail::str("view: sizes ", sizes, ", strides ", strides, " and storage offset ", offset, " of ",
                                 dtype_name(dtype), " reach outside the storage of ", storage.nbytes(),
                                 " bytes or beyond int64"));
  }
}
}  // namespace

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset)
    : storage_(std::move(storage)), device_(storage_->device()), offset_(offset), dtype_(dtype) {
  check_view(*storage_, dtype, sizes, strides, offset);  // before set_dims: a throw then leaks nothing
  set_dims(sizes, strides.data());
  refresh();
  key_set_ = DispatchKeySet::backend(device_.type());
  inference_ = local_keys().inference_mode;
  init_dl_tensor();
}

void TensorImpl::refresh() {
  const int64_t* sizes = dims_;
  const int64_t* strides = dims_ + ndim_;
  numel_ = 1;
  for (int64_t i = 0; i < ndim_; ++i) numel_ *= sizes[i];  // fits: the constructors checked the shape
  // Contiguous = row-major dense, ignoring the strides of size-1 dims (as PyTorch).
  is_contiguous_ = true;
  int64_t expected = 1;
  for (int64_t i = ndim_ - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) {
      is_contiguous_ = numel_ == 0;
      break;
    }
    expected *= sizes[i];
  }
}

}  // namespace tessera
