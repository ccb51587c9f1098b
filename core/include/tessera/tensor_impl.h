// tessera/tensor_impl.h — the object behind a Tensor: storage + view metadata.
//
// Ownership: intrusive reference count (thread-safe); Tensor is the handle.
// Sizes and strides (in elements) live inline for up to 6 dims. A TensorImpl's
// metadata is not synchronized: mutating one (e.g. set_requires_grad later) from
// several threads at once is a data race, like in PyTorch; reading is safe.
#pragma once

#include <tessera/array_ref.h>
#include <tessera/dispatch_key.h>
#include <tessera/dtype.h>
#include <tessera/storage.h>

#include <boost/container/small_vector.hpp>
#include <dlpack/dlpack.h>

namespace tessera {

namespace autograd {
struct AutogradMeta;  // core/src/autograd/autograd_meta.h
void destroy_autograd_meta(AutogradMeta* meta) noexcept;
}  // namespace autograd

using DimVector = boost::container::small_vector<int64_t, 6>;

class TensorImpl : public detail::RefCounted<TensorImpl> {
 public:
  // Allocated from a per-thread cache: tiny ops create one per output.
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size) noexcept;

  /// A contiguous tensor over `storage` from element 0. ValueError unless the
  /// sizes are >= 0 and their product counting 0 as 1, times the element size,
  /// fits int64 (docs/architecture.md, "Sizes, strides and overflow").
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes);
  /// A view: any sizes, strides (elements) and offset (elements) over `storage`.
  /// ValueError unless the sizes follow the rule above, the offset is >= 0 and
  /// every element lies inside the storage's bytes (offsets computed without
  /// overflow); nothing is kept when it throws.
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  ~TensorImpl() {
    if (dims_ != inline_dims_) delete[] dims_;
    if (autograd_meta_ != nullptr) [[unlikely]] autograd::destroy_autograd_meta(autograd_meta_);
  }
  TensorImpl(const TensorImpl&) = delete;
  /// Called by the reference count when the last reference goes: a recyclable()
  /// tensor is kept, with its storage, for the next output of its size class on
  /// this thread (core/src/tensor_cache.h); any other is deleted.
  static void on_last_release(const TensorImpl* p) noexcept;

  // ---- recycling, for the core's tensor cache (core/src/tensor_cache.h) ----
  static constexpr int kInlineDims = 6;
  /// Whether this tensor, its last reference gone, may be kept for reuse: its
  /// dims inline, no autograd state, not a view, and its storage a recyclable
  /// block (storage.h) that it alone owns.
  bool recyclable() const noexcept {
    const StorageImpl* s = storage_.get();
    return s != nullptr && s->recyclable() && s->use_count() == 1 && autograd_meta_ == nullptr &&
           view_base_ == nullptr && dims_ == inline_dims_;
  }
  /// Makes a recyclable() tensor that nothing references a new output, as the
  /// first constructor would over the same storage without its allocations: a
  /// contiguous `sizes` (numel elements, at most kInlineDims dims) of `dtype`
  /// from element 0, the storage resized to `nbytes` (the same size class) with
  /// a fresh version counter, one reference that the caller adopts. `dl_dtype`
  /// is dtype's DLPack type and `inference` the thread's inference mode (the
  /// caller has both at hand).
  [[gnu::always_inline]] void recycle(size_t nbytes, IntArrayRef sizes, int64_t numel, ScalarType dtype,
                                      DLDataType dl_dtype, bool inference) noexcept {
    reset_ref_count(1);
    storage_->reuse(nbytes);
    set_contiguous_dims(sizes);
    numel_ = numel;
    offset_ = 0;
    dtype_ = dtype;
    key_set_ = DispatchKeySet::backend(device_.type());
    is_contiguous_ = true;
    wrapped_number_ = false;
    inference_ = inference;
    // The DLTensor view: same block, device and (inline) shape array as before.
    dl_.data = storage_->data();
    dl_.ndim = static_cast<int32_t>(ndim_);
    dl_.dtype = dl_dtype;
    dl_.strides = dims_ + ndim_;
  }
  TensorImpl& operator=(const TensorImpl&) = delete;

  IntArrayRef sizes() const { return IntArrayRef(dims_, static_cast<size_t>(ndim_)); }
  IntArrayRef strides() const { return IntArrayRef(dims_ + ndim_, static_cast<size_t>(ndim_)); }
  int64_t dim() const { return ndim_; }
  int64_t numel() const { return numel_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t storage_offset() const { return offset_; }
  const Storage& storage() const { return storage_; }
  DispatchKeySet key_set() const { return key_set_; }
  bool is_contiguous() const { return is_contiguous_; }
  /// Address of the first element (null for zero-size or meta tensors).
  void* data() const {
    return storage_->data() ? static_cast<char*>(storage_->data()) + offset_ * int64_t(element_size(dtype_)) : nullptr;
  }
  const int64_t* sizes_data() const { return dims_; }
  const int64_t* strides_data() const { return dims_ + ndim_; }
  /// The tensor as plugin kernels see it (docs/abi.md H12): data at the first
  /// element (null for zero-size or meta tensors), byte_offset 0, shape and
  /// strides pointing into this object, device {the device type's DLPack type
  /// (kDLExtDev without one), index}. Built at construction; unchanged and valid
  /// while this TensorImpl lives. Kernel calls pass it for argument tensors (as
  /// a const DLTensor*, read during the call only); outputs get a copy.
  const DLTensor& dl_tensor() const { return dl_; }

  /// A number given to an op in place of a tensor (a + 2): it takes part in type
  /// promotion only by category, like PyTorch's wrapped numbers.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool v) { wrapped_number_ = v; }

  /// Autograd state (requires_grad, grad, grad_fn, hooks); null for tensors
  /// autograd never touched, so plain ops pay nothing for it. Owned.
  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_; }
  /// Installs `meta` (taking ownership; frees any previous one) and adds or
  /// removes the Autograd dispatch key to match (null removes both).
  void set_autograd_meta(autograd::AutogradMeta* meta);
  /// Created in inference mode (cannot be saved for backward).
  bool is_inference() const { return inference_; }

  /// For a tensor made by a view op: the tensor that owns the data layout it
  /// views (the root base: a view of a view points at the first one's base);
  /// null otherwise. Autograd uses it to route gradients of in-place ops on
  /// views through their base.
  TensorImpl* view_base() const { return view_base_.get(); }
  void set_view_base(boost::intrusive_ptr<TensorImpl> base) { view_base_ = std::move(base); }

 private:
  void refresh();
  void init_dl_tensor();  // dl_ from the fields above (the constructors' last step)
  // Sizes and row-major strides for a contiguous tensor (dims_ allocated if
  // needed); inline: every new output runs it. The caller checked the shape
  // (checked_math.h), so the strides fit int64.
  [[gnu::always_inline]] void set_contiguous_dims(IntArrayRef sizes) {
    ndim_ = static_cast<int64_t>(sizes.size());
    if (ndim_ > kInlineDims) dims_ = new int64_t[2 * ndim_];
    int64_t* st = dims_ + ndim_;
    int64_t acc = 1;
    for (int64_t i = ndim_ - 1; i >= 0; --i) {
      const int64_t s = sizes[i];
      dims_[i] = s;
      st[i] = acc;
      acc *= s > 1 ? s : 1;
    }
  }
  // Sizes then strides, 2 * ndim_ values: inline up to kInlineDims dims, else heap.
  void set_dims(IntArrayRef sizes, const int64_t* strides);

  Storage storage_;
  Device device_;  // storage_'s, kept here: every dispatch reads it
  int64_t* dims_ = inline_dims_;
  int64_t ndim_ = 0;
  DLTensor dl_{};
  int64_t inline_dims_[2 * kInlineDims];
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  ScalarType dtype_;
  DispatchKeySet key_set_;
  bool is_contiguous_ = true;
  bool wrapped_number_ = false;
  bool inference_ = false;
  autograd::AutogradMeta* autograd_meta_ = nullptr;
  boost::intrusive_ptr<TensorImpl> view_base_;
};

/// Row-major strides for `sizes` (sizes >= 0); ValueError when a stride would
/// not fit int64 (the product of the sizes, counting 0 as 1, exceeds it).
DimVector contiguous_strides(IntArrayRef sizes);

}  // namespace tessera
