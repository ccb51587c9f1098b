#include <tessera/error.h>
#include <tessera/tensor_impl.h>

#include "object_pool.h"

namespace tessera {

void* TensorImpl::operator new(size_t size) {
  return size == sizeof(TensorImpl) ? detail::ThreadCachedPool<sizeof(TensorImpl)>::allocate() : ::operator new(size);
}
void TensorImpl::operator delete(void* p, size_t size) noexcept {
  if (size == sizeof(TensorImpl)) {
    detail::ThreadCachedPool<sizeof(TensorImpl)>::deallocate(p);
  } else {
    ::operator delete(p);
  }
}
void* StorageImpl::operator new(size_t size) {
  return size == sizeof(StorageImpl) ? detail::ThreadCachedPool<sizeof(StorageImpl)>::allocate() : ::operator new(size);
}
void StorageImpl::operator delete(void* p, size_t size) noexcept {
  if (size == sizeof(StorageImpl)) {
    detail::ThreadCachedPool<sizeof(StorageImpl)>::deallocate(p);
  } else {
    ::operator delete(p);
  }
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes)
    : storage_(std::move(storage)), sizes_(sizes.begin(), sizes.end()), dtype_(dtype) {
  strides_.resize(sizes_.size());
  int64_t acc = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    strides_[i] = acc;
    acc *= sizes_[i] > 1 ? sizes_[i] : 1;
  }
  numel_ = 1;
  for (int64_t s : sizes_) numel_ *= s;
  is_contiguous_ = true;
  key_set_ = DispatchKeySet::backend(storage_->device().type());
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset)
    : storage_(std::move(storage)), sizes_(sizes.begin(), sizes.end()), strides_(strides.begin(), strides.end()),
      offset_(offset), dtype_(dtype) {
  refresh();
  key_set_ = DispatchKeySet::backend(storage_->device().type());
}

void TensorImpl::refresh() {
  numel_ = 1;
  for (int64_t s : sizes_) numel_ *= s;
  // Contiguous = row-major dense, ignoring the strides of size-1 dims (as PyTorch).
  is_contiguous_ = true;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      is_contiguous_ = numel_ == 0;
      break;
    }
    expected *= sizes_[i];
  }
}

}  // namespace tessera
