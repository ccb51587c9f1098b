// tessera/tensor.h — the Tensor handle, TensorOptions and factories; each op
// family's header (tessera/ops/<family>.h, included at the end) adds its free
// functions, and its <family>_methods.inc its Tensor methods.
//
// Names and argument order follow ATen (at::Tensor) wherever the op exists there.
// A Tensor is a reference-counted handle to a TensorImpl; copying a Tensor shares
// the data. Views (view, transpose, narrow, ...) share storage with their base and
// cost no copy on every device. Every op goes through the dispatcher and throws a
// tessera::Error on bad input; the runtime stays usable afterwards.
//
// Threading: distinct tensors may be used from any thread concurrently; one tensor
// may be read concurrently; writing a tensor while another thread reads it is a
// data race (as in every tensor library).
#pragma once

#include <tessera/array_ref.h>
#include <tessera/autograd/hook_handle.h>
#include <tessera/device.h>
#include <tessera/dtype.h>
#include <tessera/error.h>
#include <tessera/scalar.h>
#include <tessera/tensor_impl.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace tessera {

/// dtype + device for factories; implicitly made from either alone.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}  // NOLINT
  TensorOptions(Device device) : device_(device) {}   // NOLINT
  TensorOptions(const char* device) : device_(Device(device)) {}  // NOLINT
  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }
  ScalarType dtype_or(ScalarType t) const { return dtype_.value_or(t); }
  Device device_or_cpu() const { return device_ ? *device_ : Device(); }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(boost::intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const boost::intrusive_ptr<TensorImpl>& impl() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  long use_count() const { return impl_ ? static_cast<long>(impl_->use_count()) : 0; }

  // ---- metadata (throws ValueError on an undefined tensor) ----
  IntArrayRef sizes() const { return checked().sizes(); }
  IntArrayRef strides() const { return checked().strides(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return checked().dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return checked().numel(); }
  ScalarType scalar_type() const { return checked().dtype(); }
  ScalarType dtype() const { return scalar_type(); }
  Device device() const { return checked().device(); }
  int64_t storage_offset() const { return checked().storage_offset(); }
  size_t element_size() const { return tessera::element_size(scalar_type()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const { return checked().is_contiguous(); }
  bool is_floating_point() const { return is_floating_type(scalar_type()); }
  bool is_read_only() const { return checked().storage()->read_only(); }
  /// Address of the first element; null for zero-size and meta tensors. Host
  /// memory only for host-accessible devices.
  void* data_ptr() const { return checked().data(); }
  template <typename T>
  T* data_ptr() const;
  const Storage& storage() const { return checked().storage(); }

  // ---- the op library's methods, one file per family ----
#include <tessera/ops/unary_methods.inc>
#include <tessera/ops/binary_methods.inc>
#include <tessera/ops/ternary_methods.inc>
#include <tessera/ops/reduction_methods.inc>
#include <tessera/ops/linalg_methods.inc>
#include <tessera/ops/shape_methods.inc>
#include <tessera/ops/indexing_methods.inc>
#include <tessera/ops/random_methods.inc>
#include <tessera/ops/nn_methods.inc>

  // ---- autograd ----
#include <tessera/autograd_methods.inc>

  // ---- conversion ----
  /// A copy on `device` (this tensor itself when already there). Between the
  /// host and an asynchronous device the host waits for the copy unless
  /// `non_blocking` and the host side is pinned memory of that device type
  /// (to the host, non_blocking makes the result pinned): then the call
  /// returns once the copy is queued on the device's current stream, and the
  /// result may be read only after that stream's work completes
  /// (docs/streams.md). Between two devices of one type a copy never blocks.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(ScalarType dtype) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false) const;
  Tensor cpu() const;
  /// The one element as T (bool, integer, float, double); ValueError unless numel() == 1.
  template <typename T>
  T item() const;
  Scalar item() const;
  /// All elements, converted to T, in row-major order (copies to the host).
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- memory (docs/memory.md, docs/streams.md) ----
  /// Marks this tensor's memory as used by work queued on `stream` (a stream of
  /// its device): when the tensor is freed, the memory is reused only after
  /// the work queued on `stream` so far completes. For a DLPack import on an
  /// asynchronous device, the producer's deleter runs only after the host has
  /// waited for `stream` (docs/dlpack.md). A no-op for the stream the memory
  /// was allocated (or imported) on, on synchronous devices, and for from_blob
  /// memory, which its owner frees. ValueError for a stream of another device.
  void record_stream(const Stream& stream) const;
  /// A copy of this cpu tensor in pinned (page-locked) host memory of
  /// `device_type` ("" = the accelerator: the first loaded device type other
  /// than "sim" whose plugin offers pinned memory, else "sim"), cached by the
  /// core (docs/memory.md); this tensor itself when it is already pinned for
  /// that type. Copies between pinned memory and that device type may run
  /// with non_blocking=true. ValueError for a tensor not on cpu or a device
  /// type without pinned memory; OutOfMemoryError when none is left.
  Tensor pin_memory(std::string_view device_type = {}) const;
  /// Whether this tensor's memory is pinned host memory (of `device_type`,
  /// when given).
  bool is_pinned(std::string_view device_type = {}) const;

  /// PyTorch-like text: "tensor([[1., 2.],\n        [3., 4.]], dtype=float32)".
  std::string to_string() const;

 private:
  const TensorImpl& checked() const {
    if (impl_ == nullptr) [[unlikely]] throw_undefined();
    return *impl_;
  }
  [[noreturn, gnu::cold]] static void throw_undefined();
  boost::intrusive_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- factories that compose empty and fill_/copy_ (empty and arange are ops: ops/shape.h) ----
Tensor zeros(IntArrayRef size, const TensorOptions& options = {});
Tensor ones(IntArrayRef size, const TensorOptions& options = {});
Tensor full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options = {});
Tensor empty_like(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor zeros_like(const Tensor& self);
Tensor ones_like(const Tensor& self);
/// A 1-D tensor holding `values` (copied), on options' device (cpu by default).
/// dtype defaults to bool / int64 / float32 / float64 for bool / integer / float / double.
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<float> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<bool> values, const TensorOptions& options = {});
Tensor tensor(ArrayRef<double> values, const TensorOptions& options = {});
/// A 0-d tensor holding `value`.
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});
/// Wraps existing memory without copying. `deleter(data)` is called exactly once
/// when the last tensor using the memory goes (nullable: the caller keeps
/// ownership and must keep the memory alive). The memory must belong to `options`'
/// device (cpu by default). Strides default to row-major.
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});

/// The dtype an op on these operands computes in (PyTorch's result_type).
ScalarType result_type(const Tensor& a, const Tensor& b);

/// Exact equality of shape, dtype and every element (compares on the host).
bool equal(const Tensor& a, const Tensor& b);
/// |a - b| <= atol + rtol * |b| elementwise, same shapes (compares in float64 on the host).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace tessera

// The op library's free functions, one header per family.
#include <tessera/ops/unary.h>
#include <tessera/ops/binary.h>
#include <tessera/ops/ternary.h>
#include <tessera/ops/reduction.h>
#include <tessera/ops/linalg.h>
#include <tessera/ops/shape.h>
#include <tessera/ops/indexing.h>
#include <tessera/ops/random.h>
#include <tessera/ops/nn.h>
