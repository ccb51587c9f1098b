// The Tensor class beyond its ops (each op family's file holds its Tensor
// methods): metadata accessors, conversions (to, item, to_vector), the factories
// that compose empty and fill_/copy_ (zeros, ones, full, tensor, from_blob),
// equal and allclose.
#include <tessera/autograd/function.h>
#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/tensor.h>

#include <cmath>
#include <cstring>

#include "checked_math.h"
#include "device_registry.h"
#include "ops/ops.h"
#include "output_placement.h"
#include "structured.h"

namespace tessera {

using V = IValue;

void Tensor::throw_undefined() { throw ValueError("operation on an undefined tensor"); }

int64_t Tensor::size(int64_t dim) const {
  const TensorImpl& t = checked();
  TSR_CHECK(t.dim() > 0, IndexError, "size: a 0-d tensor has no dimension ", dim);
  TSR_CHECK(dim >= -t.dim() && dim < t.dim(), IndexError, "size: dimension ", dim, " is out of range for a tensor of ",
            t.dim(), " dimension(s)");
  return t.sizes()[dim < 0 ? dim + t.dim() : dim];
}

int64_t Tensor::stride(int64_t dim) const {
  const TensorImpl& t = checked();
  TSR_CHECK(t.dim() > 0, IndexError, "stride: a 0-d tensor has no dimension ", dim);
  TSR_CHECK(dim >= -t.dim() && dim < t.dim(), IndexError, "stride: dimension ", dim,
            " is out of range for a tensor of ", t.dim(), " dimension(s)");
  return t.strides()[dim < 0 ? dim + t.dim() : dim];
}

template <typename T>
T* Tensor::data_ptr() const {
  TSR_CHECK(scalar_type() == CppTypeToScalarType<T>::value, TypeError, "data_ptr: tensor has dtype ",
            dtype_name(scalar_type()), ", not ", dtype_name(CppTypeToScalarType<T>::value));
  return static_cast<T*>(data_ptr());
}
template bool* Tensor::data_ptr<bool>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template int16_t* Tensor::data_ptr<int16_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;

// ---- views ----
ScalarType result_type(const Tensor& a, const Tensor& b) {
  TSR_CHECK(a.defined() && b.defined(), ValueError, "result_type: undefined tensor");
  return tessera::result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
}

// ---- conversion ----
Tensor Tensor::to(Device device, ScalarType dtype, bool non_blocking) const {
  if (device != this->device() && requires_grad() && autograd::is_grad_enabled()) [[unlikely]] {
    // Moves between devices are not dispatched ops: record the move back by hand.
    auto node = autograd::make_node<autograd::CustomFunctionNode>(
        "ToCopyBackward", [from = this->device()](autograd::AutogradContext*, autograd::variable_list g) {
          return autograd::variable_list{g[0].to(from)};
        });
    autograd::prepare_custom(node, {*this});
    Tensor out;
    {
      autograd::NoGradGuard no_grad;
      out = detach().to(device, dtype, non_blocking);
    }
    return autograd::detail_wire_custom(node, {*this}, {out})[0];
  }
  if (device == this->device()) {
    if (dtype == scalar_type()) return *this;
    (void)checked::check_shape("to", sizes(), dtype);  // a wider dtype may not fit where this one did
    placement::Hint hint;  // the cast streams this into out
    hint.add(impl_->data());
    Tensor out = empty_on(sizes(), dtype, device, &hint);
    out.copy_(*this);
    return out;
  }
  if (dtype == scalar_type()) return ops::transfer("copy_", *this, device, non_blocking);  // no kernel needed
  // Cast on the host side of the move, where kernels are sure to exist: after
  // the move when the target is host memory, else before it.
  if (device_entry(device).host_accessible()) return ops::transfer("copy_", *this, device).to(dtype);
  return ops::transfer("copy_", to(dtype), device);
}
Tensor Tensor::to(Device device, bool non_blocking) const { return to(device, scalar_type(), non_blocking); }
Tensor Tensor::to(ScalarType dtype) const { return to(device(), dtype); }
Tensor Tensor::cpu() const { return to(Device()); }

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = to(Device(), CppTypeToScalarType<T>::value).contiguous();
  TSR_CHECK(device_entry(host.device()).host_accessible(), ValueError, "to_vector: the cpu device is not host-accessible");
  const T* p = static_cast<const T*>(host.data_ptr());
  return std::vector<T>(p, p + host.numel());
}
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;

template <typename T>
T Tensor::item() const {
  TSR_CHECK(numel() == 1, ValueError, "item: a tensor with ", numel(), " elements (shape ", sizes(),
            ") cannot be converted to a scalar; it needs exactly one element");
  const Tensor host = to(Device(), CppTypeToScalarType<T>::value);
  return *static_cast<const T*>(host.data_ptr());
}
template bool Tensor::item<bool>() const;
template uint8_t Tensor::item<uint8_t>() const;
template int8_t Tensor::item<int8_t>() const;
template int16_t Tensor::item<int16_t>() const;
template int32_t Tensor::item<int32_t>() const;
template int64_t Tensor::item<int64_t>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;

Scalar Tensor::item() const {
  const ScalarType t = scalar_type();
  if (t == kBool) return Scalar(item<bool>());
  if (is_integral_type(t)) return Scalar(item<int64_t>());
  return Scalar(item<double>());
}

// ---- factories ----
Tensor zeros(IntArrayRef size, const TensorOptions& o) { return empty(size, o).fill_(0); }
Tensor ones(IntArrayRef size, const TensorOptions& o) { return empty(size, o).fill_(1); }
Tensor full(IntArrayRef size, const Scalar& v, const TensorOptions& o) {
  // Like torch.full: the dtype follows the fill value when none is given.
  return empty(size, o.dtype(o.dtype_or(v.default_dtype()))).fill_(v);
}
Tensor empty_like(const Tensor& self, std::optional<ScalarType> dtype) {
  return empty(self.sizes(), TensorOptions(dtype.value_or(self.scalar_type())).device(self.device()));
}
Tensor zeros_like(const Tensor& self) { return empty_like(self).fill_(0); }
Tensor ones_like(const Tensor& self) { return empty_like(self).fill_(1); }
namespace {
template <typename T>
Tensor tensor_from_host(const T* values, size_t n, ScalarType natural, const TensorOptions& o) {
  Tensor host = empty_on({static_cast<int64_t>(n)}, natural, Device());
  TSR_CHECK(device_entry(host.device()).host_accessible(), ValueError, "tensor: the cpu device is not host-accessible");
  if (n) std::memcpy(host.data_ptr(), values, n * sizeof(T));
  return host.to(o.device_or_cpu(), o.dtype_or(natural));
}
}  // namespace

Tensor tensor(std::initializer_list<double> v, const TensorOptions& o) {
  return tensor_from_host(v.begin(), v.size(), kDouble, o);
}
Tensor tensor(std::initializer_list<float> v, const TensorOptions& o) {
  return tensor_from_host(v.begin(), v.size(), kFloat, o);
}
Tensor tensor(std::initializer_list<int64_t> v, const TensorOptions& o) {
  return tensor_from_host(v.begin(), v.size(), kLong, o);
}
Tensor tensor(std::initializer_list<int> v, const TensorOptions& o) {
  std::vector<int64_t> wide(v.begin(), v.end());
  return tensor_from_host(wide.data(), wide.size(), kLong, o);
}
Tensor tensor(std::initializer_list<bool> v, const TensorOptions& o) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  Tensor host = empty_on({static_cast<int64_t>(bytes.size())}, kBool, Device());
  if (!bytes.empty()) std::memcpy(host.data_ptr(), bytes.data(), bytes.size());
  return host.to(o.device_or_cpu(), o.dtype_or(kBool));
}
Tensor tensor(ArrayRef<double> v, const TensorOptions& o) {
  return tensor_from_host(v.data(), v.size(), kDouble, o);
}
Tensor scalar_tensor(const Scalar& value, const TensorOptions& o) {
  return empty({}, o.dtype(o.dtype_or(value.default_dtype()))).fill_(value);
}

namespace {
struct BlobDeleter {
  std::function<void(void*)> fn;
  void* data;  // the pointer the user gave (the storage may start below it)
};
void blob_deleter(StorageImpl& s) noexcept {
  auto* d = static_cast<BlobDeleter*>(s.deleter_context());
  if (d->fn) d->fn(d->data);
  delete d;
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter,
                 const TensorOptions& o) {
  TSR_CHECK(sizes.size() == strides.size(), ValueError, "from_blob: sizes ", sizes, " and strides ", strides,
            " differ in length");
  const ScalarType dtype = o.dtype_or(kDefaultFloat);
  const Device device = o.device_or_cpu();
  bool empty_tensor = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TSR_CHECK(sizes[i] >= 0, ValueError, "from_blob: negative size in ", sizes);
    if (sizes[i] == 0) empty_tensor = true;
  }
  // The storage spans the lowest to the highest element address; with negative
  // strides the first element is not the lowest, so it sits at an offset.
  (void)checked::check_shape("from_blob", sizes, dtype);
  const int64_t itemsize = static_cast<int64_t>(element_size(dtype));
  int64_t lo = 0, hi = 0, bytes = 0;
  if (!empty_tensor) {
    // Elements lie at lo..hi (in elements) around the first: that span in bytes must fit int64.
    const bool overflow = checked::extent(sizes, strides, lo, hi) || checked::sub(hi, lo, bytes) ||
                          checked::add(bytes, 1, bytes) || checked::mul(bytes, itemsize, bytes);
    TSR_CHECK(!overflow, ValueError, "from_blob: sizes ", sizes, " and strides ", strides, " of ", dtype_name(dtype),
              " span more bytes than int64 can count");
  }
  TSR_CHECK(data != nullptr || empty_tensor, ValueError, "from_blob: null data pointer for a non-empty tensor");
  void* base = empty_tensor ? data : static_cast<char*>(data) + lo * itemsize;
  auto* ctx = new BlobDeleter{std::move(deleter), data};
  Storage storage(new StorageImpl(base, size_t(bytes), device, &blob_deleter, ctx, PluginRef()));
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(std::move(storage), dtype, sizes, strides, -lo)));
}

Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& o) {
  (void)checked::check_shape("from_blob", sizes, o.dtype_or(kDefaultFloat));
  const DimVector strides = contiguous_strides(sizes);
  return from_blob(data, sizes, strides, std::move(deleter), o);
}

bool equal(const Tensor& a, const Tensor& b) {
  if (!a.sizes().equals(b.sizes()) || a.scalar_type() != b.scalar_type()) return false;
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i]) && !(std::isnan(x[i]) && std::isnan(y[i]))) return false;
  return true;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  TSR_CHECK(a.sizes().equals(b.sizes()), ValueError, "allclose: shapes ", a.sizes(), " and ", b.sizes(), " differ");
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return false;
    if (std::abs(x[i] - y[i]) > atol + rtol * std::abs(y[i])) return false;
  }
  return true;
}

}  // namespace tessera
