// The C++ API: Tensor methods, free functions and factories, each a thin boxing
// of its arguments followed by one dispatcher call.
#include <tessera/autograd/function.h>
#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/tensor.h>

#include <cmath>
#include <cstring>

#include "checked_math.h"
#include "device_registry.h"
#include "ops/ops.h"
#include "structured.h"

namespace tessera {

using ops::call;
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
Tensor Tensor::view(IntArrayRef size) const { return call(ops::op_view(), {V::of(*this), V::of(size)}); }
Tensor Tensor::reshape(IntArrayRef shape) const { return call(ops::op_reshape(), {V::of(*this), V::of(shape)}); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return call(ops::op_transpose(), {V::of(*this), V::of(d0), V::of(d1)});
}
Tensor Tensor::t() const {
  TSR_CHECK(dim() <= 2, ValueError, "t: expects a tensor with <= 2 dimensions, got ", dim(), " (shape ", sizes(),
            "); use transpose or permute");
  return dim() < 2 ? transpose(0, 0) : transpose(0, 1);
}
Tensor Tensor::permute(IntArrayRef dims) const { return call(ops::op_permute(), {V::of(*this), V::of(dims)}); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return call(ops::op_narrow(), {V::of(*this), V::of(dim), V::of(start), V::of(length)});
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return call(ops::op_slice(), {V::of(*this), V::of(dim), start ? V::of(*start) : V::none(),
                                end ? V::of(*end) : V::none(), V::of(step)});
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return call(ops::op_select(), {V::of(*this), V::of(dim), V::of(index)});
}
Tensor Tensor::squeeze() const { return call(ops::op_squeeze(), {V::of(*this)}); }
Tensor Tensor::squeeze(int64_t dim) const { return call(ops::op_squeeze_dim(), {V::of(*this), V::of(dim)}); }
Tensor Tensor::unsqueeze(int64_t dim) const { return call(ops::op_unsqueeze(), {V::of(*this), V::of(dim)}); }
Tensor Tensor::expand(IntArrayRef size) const { return call(ops::op_expand(), {V::of(*this), V::of(size)}); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) const {
  return call(ops::op_as_strided(), {V::of(*this), V::of(size), V::of(stride), offset ? V::of(*offset) : V::none()});
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const int64_t n = dim();
  if (n == 0) return reshape({1});
  auto wrap = [&](int64_t d) {
    TSR_CHECK(d >= -n && d < n, IndexError, "flatten: dimension ", d, " is out of range for a tensor of ", n,
              " dimension(s)");
    return d < 0 ? d + n : d;
  };
  const int64_t s = wrap(start_dim), e = wrap(end_dim);
  TSR_CHECK(s <= e, ValueError, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  DimVector shape;
  int64_t merged = 1;
  for (int64_t d = 0; d < n; ++d) {
    if (d < s || d > e) {
      shape.push_back(size(d));
    } else {
      merged *= size(d);  // fits: a product of this tensor's sizes (checked_math.h)
      if (d == e) shape.push_back(merged);
    }
  }
  return reshape(shape);
}
Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;  // the common case costs no dispatch
  return call(ops::op_contiguous(), {V::of(*this)});
}
Tensor Tensor::clone() const { return call(ops::op_clone(), {V::of(*this)}); }

// ---- ops ----
namespace ops {
Tensor wrapped_number(const Scalar& s, Device device) {
  Tensor t = empty_on({}, s.default_dtype() == kDefaultFloat ? kDouble : s.default_dtype(), device);
  t.fill_(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}
}  // namespace ops

// Pointwise ops try the lane with their typed arguments (no boxing);
// call_pointwise boxes them only for the dispatcher.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_pointwise(ops::cached_op<ops::op_add>(), a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_pointwise(ops::cached_op<ops::op_sub>(), a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) { return call_pointwise(ops::cached_op<ops::op_mul>(), a, b); }
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  return call(ops::op_div(), {V::of(a), V::of(b), mode ? V::of(*mode) : V::none()});
}
Tensor neg(const Tensor& a) { return call_pointwise(ops::cached_op<ops::op_neg>(), a); }
Tensor exp(const Tensor& a) { return call_pointwise(ops::cached_op<ops::op_exp>(), a); }
Tensor relu(const Tensor& a) { return call_pointwise(ops::cached_op<ops::op_relu>(), a); }
Tensor sum(const Tensor& a, std::optional<ScalarType> dtype) {
  return call(ops::op_sum(), {V::of(a), V::none(), V::of(false), dtype ? V::of(*dtype) : V::none()});
}
Tensor sum(const Tensor& a, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return call(ops::op_sum(), {V::of(a), V::of(dim), V::of(keepdim), dtype ? V::of(*dtype) : V::none()});
}
Tensor mm(const Tensor& a, const Tensor& b) { return call(ops::op_mm(), {V::of(a), V::of(b)}); }
Tensor bmm(const Tensor& a, const Tensor& b) { return call(ops::op_bmm(), {V::of(a), V::of(b)}); }
Tensor matmul(const Tensor& a, const Tensor& b) { return call(ops::op_matmul(), {V::of(a), V::of(b)}); }
Tensor nonzero(const Tensor& a) { return call(ops::op_nonzero(), {V::of(a)}); }

ScalarType result_type(const Tensor& a, const Tensor& b) {
  TSR_CHECK(a.defined() && b.defined(), ValueError, "result_type: undefined tensor");
  return tessera::result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
}

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return tessera::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return tessera::add(*this, ops::wrapped_number(o, device()), alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return tessera::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return tessera::sub(*this, ops::wrapped_number(o, device()), alpha);
}
Tensor Tensor::mul(const Tensor& o) const { return tessera::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return tessera::mul(*this, ops::wrapped_number(o, device())); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string_view> m) const { return tessera::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, std::optional<std::string_view> m) const {
  return tessera::div(*this, ops::wrapped_number(o, device()), m);
}
Tensor Tensor::neg() const { return tessera::neg(*this); }
Tensor Tensor::exp() const { return tessera::exp(*this); }
Tensor Tensor::relu() const { return tessera::relu(*this); }
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return tessera::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tessera::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mm(const Tensor& o) const { return tessera::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return tessera::bmm(*this, o); }
Tensor Tensor::matmul(const Tensor& o) const { return tessera::matmul(*this, o); }
Tensor Tensor::nonzero() const { return tessera::nonzero(*this); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return ops::call_inplace(*this, ops::op_add_(), {V::of(o), V::of(alpha)}); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  const Tensor w = ops::wrapped_number(o, device());
  return ops::call_inplace(*this, ops::op_add_(), {V::of(w), V::of(alpha)});
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return ops::call_inplace(*this, ops::op_sub_(), {V::of(o), V::of(alpha)}); }
Tensor& Tensor::mul_(const Tensor& o) { return ops::call_inplace(*this, ops::op_mul_(), {V::of(o)}); }
Tensor& Tensor::mul_(const Scalar& o) {
  const Tensor w = ops::wrapped_number(o, device());
  return ops::call_inplace(*this, ops::op_mul_(), {V::of(w)});
}
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string_view> m) {
  return ops::call_inplace(*this, ops::op_div_(), {V::of(o), m ? V::of(*m) : V::none()});
}
Tensor& Tensor::neg_() { return ops::call_inplace(*this, ops::op_neg_(), {}); }
Tensor& Tensor::exp_() { return ops::call_inplace(*this, ops::op_exp_(), {}); }
Tensor& Tensor::relu_() { return ops::call_inplace(*this, ops::op_relu_(), {}); }
Tensor& Tensor::fill_(const Scalar& value) { return ops::call_inplace(*this, ops::op_fill_(), {V::of(value)}); }
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  return ops::call_inplace(*this, ops::op_copy_(), {V::of(src), V::of(non_blocking)});
}

// ---- conversion ----
Tensor Tensor::to(Device device, ScalarType dtype) const {
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
      out = detach().to(device, dtype);
    }
    return autograd::detail_wire_custom(node, {*this}, {out})[0];
  }
  if (device == this->device()) {
    if (dtype == scalar_type()) return *this;
    (void)checked::check_shape("to", sizes(), dtype);  // a wider dtype may not fit where this one did
    Tensor out = empty_on(sizes(), dtype, device);
    out.copy_(*this);
    return out;
  }
  if (dtype == scalar_type()) return ops::transfer(ops::op_copy_(), *this, device);  // no kernel needed
  // Cast on the host side of the move, where kernels are sure to exist: after
  // the move when the target is host memory, else before it.
  if (device_entry(device).host_accessible()) return ops::transfer(ops::op_copy_(), *this, device).to(dtype);
  return ops::transfer(ops::op_copy_(), to(dtype), device);
}
Tensor Tensor::to(Device device) const { return to(device, scalar_type()); }
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
Tensor empty(IntArrayRef size, const TensorOptions& o) {
  return call(ops::op_empty(), {V::of(size), V::of(o.dtype_or(kDefaultFloat)), V::of(o.device_or_cpu())});
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) {
  TSR_CHECK(size.size() == stride.size(), ValueError, "empty_strided: sizes ", size, " and strides ", stride,
            " differ in length");
  bool empty_tensor = false;
  for (size_t i = 0; i < size.size(); ++i) {
    TSR_CHECK(size[i] >= 0 && stride[i] >= 0, ValueError, "empty_strided: negative size or stride");
    if (size[i] == 0) empty_tensor = true;
  }
  int64_t lo = 0, hi = 0, span = 0;
  TSR_CHECK(empty_tensor || (!checked::extent(size, stride, lo, hi) && !checked::add(hi, 1, span)), ValueError,
            "empty_strided: sizes ", size, " and strides ", stride, " reach beyond int64");
  return empty({span}, o).as_strided(size, stride, 0);
}
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
Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  return call(ops::op_arange(), {V::of(start), V::of(end), V::of(step),
                                 o.dtype_opt() ? V::of(*o.dtype_opt()) : V::none(), V::of(o.device_or_cpu())});
}

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

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return b.add(a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(ops::wrapped_number(a, b.device()), b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return b.mul(a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(ops::wrapped_number(a, b.device()), b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }

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
