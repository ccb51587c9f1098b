// A plugin that defines its own operators (ABI 1.3, TsrHostApi.register_op),
// for the conformance kit's tests of plugin-defined ops (docs/conformance.md,
// tests/conformance/plugin_ops_test.cpp and the conformance.plugin_ops_* ctests).
//
// Device type "opkit": host memory (tests/plugins/host_memory_device.hpp), no
// DLPack type. Ops, float32 and float64:
//   opkit::sin_mul(self, other, *, alpha=1.0) = alpha * self * sin(other)
//       pointwise, broadcasting, with the in-place variant sin_mul_ and the
//       backward op opkit::sin_mul_backward; kernels on opkit and on cpu.
//   opkit::sumsq(self, dim=None, keepdim=False) = sum of squares over dims
//       a reduction, with the backward op opkit::sumsq_backward (whose shape
//       rule is a shape function); kernels on opkit and on cpu.
//   opkit::cube(self) = self^3
//       pointwise, backward op opkit::cube_backward, itself differentiable
//       (opkit::cube_backward_backward); kernels on opkit only, so the kit has
//       no cpu reference for them.
// and the built-in fill_ on opkit (gradcheck fills its seeds and perturbs its
// inputs with it).
//
// Seeded bugs, one at a time, chosen by TSRTEST_OPKIT_BUG (read on every call,
// so that a test process can switch between runs); only opkit's kernels have them:
//   sin_mul           — reads `other` with a last-dim stride of 1 (transposed and
//                       every-other-element `other` give wrong values);
//   sin_mul_backward  — the gradient of `other` uses sin where cos belongs;
//   cube              — the last element of a vector whose length is not a
//                       multiple of 4 (a vector loop's tail) overflows to inf;
//   cube_backward     — 2 x^2 instead of 3 x^2 (only gradcheck can tell: no cpu reference).
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../plugins/host_memory_device.hpp"

namespace {

namespace sdk = tessera::sdk;

inline constexpr char kOpkit[] = "opkit";
int g_device_tag;  // kernel_context of opkit's kernels (cpu's get NULL)

bool on_device(const TsrKernelCall& call) { return call.kernel_context == &g_device_tag; }
bool bug(const TsrKernelCall& call, const char* name) {
  const char* v = std::getenv("TSRTEST_OPKIT_BUG");
  return on_device(call) && v != nullptr && std::strcmp(v, name) == 0;
}

int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// The element offset of row-major index i of t (any strides, 0 included).
int64_t offset_of(const DLTensor& t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.shape[d]) * t.strides[d];
    i /= t.shape[d];
  }
  return off;
}

template <typename T>
T& at(const DLTensor& t, int64_t i) {
  return reinterpret_cast<T*>(sdk::data_ptr(t))[offset_of(t, i)];
}

// Calls body<T>() for float32 and float64.
template <typename F>
void floating(const TsrKernelCall& call, F&& body) {
  if (call.dtype == TSR_DTYPE_FLOAT32) body(float{});
  else if (call.dtype == TSR_DTYPE_FLOAT64) body(double{});
  else sdk::fail(TSR_ERROR_UNIMPLEMENTED, "float32 and float64 only");
}

// ---- sin_mul and its backward ----------------------------------------------------

void sin_mul(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  const double alpha = sdk::float_arg(call, 2, "alpha");
  DLTensor& out = sdk::output(call, 0, call.dtype);  // may be self (sin_mul_)
  sdk::check_binary_shapes(self, other, out);
  // The seeded bug: other's last dim read with stride 1 (never past the true extent).
  std::vector<int64_t> strides(other.strides, other.strides + other.ndim);
  if (bug(call, "sin_mul") && other.ndim > 0 && strides.back() > 1) strides.back() = 1;
  DLTensor o = other;
  o.strides = strides.data();
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0, n = numel(out); i < n; ++i)
      at<T>(out, i) = static_cast<T>(alpha) * at<T>(self, i) * std::sin(at<T>(o, i));
  });
}

// (grad, self, other, alpha) -> (grad_self, grad_other)
void sin_mul_backward(const TsrKernelCall& call) {
  const DLTensor& grad = sdk::tensor_arg(call, 0, "grad", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 1, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 2, "other", call.dtype);
  const double alpha = sdk::float_arg(call, 3, "alpha");
  DLTensor& gs = sdk::output(call, 0, call.dtype);
  DLTensor& go = sdk::output(call, 1, call.dtype);
  sdk::check_binary_shapes(grad, self, gs);
  sdk::check_same_shape(other, "other", gs, "out");
  sdk::check_same_shape(go, "out 1", gs, "out 0");
  const bool wrong = bug(call, "sin_mul_backward");
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0, n = numel(gs); i < n; ++i) {
      const T g = at<T>(grad, i) * static_cast<T>(alpha), x = at<T>(self, i), y = at<T>(other, i);
      at<T>(gs, i) = g * std::sin(y);
      at<T>(go, i) = g * x * (wrong ? std::sin(y) : std::cos(y));
    }
  });
}

// ---- sumsq and its backward --------------------------------------------------------

// Which dims of an ndim-d tensor argument `dims` (None, [] or a list) reduces.
std::vector<bool> reduced_dims(const TsrValue& dims, int32_t ndim) {
  std::vector<bool> r(static_cast<size_t>(ndim), true);
  if (dims.tag == TSR_VALUE_NONE || (dims.tag == TSR_VALUE_INT_LIST && dims.as.int_list.size == 0)) return r;
  if (dims.tag != TSR_VALUE_INT_LIST) sdk::invalid("argument 'dim' must be None or an int list");
  std::fill(r.begin(), r.end(), false);
  for (size_t k = 0; k < dims.as.int_list.size; ++k) {
    int64_t d = dims.as.int_list.data[k];
    const int64_t n = ndim == 0 ? 1 : ndim;
    if (d < -n || d >= n) sdk::invalid("dim " + std::to_string(d) + " out of range for " + std::to_string(ndim) + " dims");
    if (d < 0) d += n;
    if (ndim > 0) r[static_cast<size_t>(d)] = true;
  }
  return r;
}

// The shape sumsq gives for `self`.
std::vector<int64_t> reduced_shape(const DLTensor& self, const std::vector<bool>& r, bool keepdim) {
  std::vector<int64_t> s;
  for (int32_t d = 0; d < self.ndim; ++d) {
    if (!r[static_cast<size_t>(d)]) s.push_back(self.shape[d]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

// Row-major index into the reduced shape of row-major element i of self.
int64_t reduced_index(const DLTensor& self, const std::vector<bool>& r, int64_t i) {
  int64_t out = 0, scale = 1;
  for (int32_t d = self.ndim - 1; d >= 0; --d) {
    const int64_t k = i % self.shape[d];
    i /= self.shape[d];
    if (r[static_cast<size_t>(d)]) continue;  // a reduced dim adds nothing (kept or not)
    out += k * scale;
    scale *= self.shape[d];
  }
  return out;
}

void sumsq(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const std::vector<bool> r = reduced_dims(sdk::arg(call, 1, "dim"), self.ndim);
  (void)sdk::bool_arg(call, 2, "keepdim");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> acc(static_cast<size_t>(numel(out)), 0.0);
    for (int64_t i = 0, n = numel(self); i < n; ++i) {
      const double x = at<T>(self, i);
      acc[static_cast<size_t>(reduced_index(self, r, i))] += x * x;
    }
    for (size_t j = 0; j < acc.size(); ++j) at<T>(out, static_cast<int64_t>(j)) = static_cast<T>(acc[j]);
  });
}

// (grad, self, dim, keepdim) -> 2 * self * grad (grad laid over self's reduced dims)
void sumsq_backward(const TsrKernelCall& call) {
  const DLTensor& grad = sdk::tensor_arg(call, 0, "grad", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 1, "self", call.dtype);
  const std::vector<bool> r = reduced_dims(sdk::arg(call, 2, "dim"), self.ndim);
  (void)sdk::bool_arg(call, 3, "keepdim");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0, n = numel(self); i < n; ++i)
      at<T>(out, i) = 2 * at<T>(self, i) * at<T>(grad, reduced_index(self, r, i));
  });
}

// sumsq_backward's shape function: self's shape and dtype, once grad has the
// shape sumsq gives for self.
TsrError* sumsq_backward_shape(const TsrShapeQuery* q) {
  return sdk::guard([q] {
    if (q->num_args != 4 || q->args[0].tag != TSR_VALUE_TENSOR || q->args[1].tag != TSR_VALUE_TENSOR ||  // checked: num_args
        q->args[3].tag != TSR_VALUE_BOOL)  // checked: num_args
      sdk::invalid("opkit::sumsq_backward: expected (Tensor grad, Tensor self, int[]? dim, bool keepdim)");
    const DLTensor& grad = *q->args[0].as.tensor;  // checked: num_args
    const DLTensor& self = *q->args[1].as.tensor;  // checked: num_args
    const std::vector<int64_t> want = reduced_shape(self, reduced_dims(q->args[2], self.ndim), q->args[3].as.b != 0);  // checked: num_args
    if (std::vector<int64_t>(grad.shape, grad.shape + grad.ndim) != want)
      sdk::invalid("opkit::sumsq_backward: grad has shape " + sdk::shape_text(grad) + ", but sumsq of self " +
                   sdk::shape_text(self) + " has " + std::to_string(want.size()) + " dims of other sizes");
    sdk::throw_if_error(q->set_output(q->handle, 0, sdk::dtype_of(self, "self"), self.ndim, self.shape));
  });
}

// ---- cube and its derivatives (opkit only) -------------------------------------------

void cube(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  const bool wrong = bug(call, "cube");
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = numel(out);
    for (int64_t i = 0; i < n; ++i) {
      const T x = at<T>(self, i);
      T v = x * x * x;
      if (wrong && n % 4 != 0 && i == n - 1) v = std::numeric_limits<T>::infinity();  // the tail lane
      at<T>(out, i) = v;
    }
  });
}

// (grad, self) -> 3 self^2 grad
void cube_backward(const TsrKernelCall& call) {
  const DLTensor& grad = sdk::tensor_arg(call, 0, "grad", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 1, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(grad, self, out);
  const int k = bug(call, "cube_backward") ? 2 : 3;
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0, n = numel(out); i < n; ++i) {
      const T x = at<T>(self, i);
      at<T>(out, i) = static_cast<T>(k) * x * x * at<T>(grad, i);
    }
  });
}

// (gg, grad, self) -> (3 self^2 gg, 6 self grad gg): the gradients of cube_backward's grad and self.
void cube_backward_backward(const TsrKernelCall& call) {
  const DLTensor& gg = sdk::tensor_arg(call, 0, "gg", call.dtype);
  const DLTensor& grad = sdk::tensor_arg(call, 1, "grad", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 2, "self", call.dtype);
  DLTensor& d_grad = sdk::output(call, 0, call.dtype);
  DLTensor& d_self = sdk::output(call, 1, call.dtype);
  sdk::check_binary_shapes(gg, grad, d_grad);
  sdk::check_same_shape(self, "self", d_grad, "out");
  sdk::check_same_shape(d_self, "out 1", d_grad, "out 0");
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0, n = numel(d_grad); i < n; ++i) {
      const T x = at<T>(self, i), g = at<T>(grad, i), h = at<T>(gg, i);
      at<T>(d_grad, i) = 3 * x * x * h;
      at<T>(d_self, i) = 6 * x * g * h;
    }
  });
}

// ---- fill_ on opkit -------------------------------------------------------------------

void fill(const TsrKernelCall& call) {
  DLTensor& self = sdk::output(call, 0, call.dtype);
  floating(call, [&](auto tag) {
    using T = decltype(tag);
    const T v = sdk::scalar_arg<T>(call, 1, "value");
    for (int64_t i = 0, n = numel(self); i < n; ++i) at<T>(self, i) = v;
  });
}

// ---- registration ---------------------------------------------------------------------

TsrOpArg ref(TsrOpArgKind kind, int32_t index) {
  TsrOpArg a{};
  a.kind = kind;
  a.index = index;
  return a;
}

TsrOpDesc op_desc(const char* schema, uint32_t flags, TsrShapeRule rule, int32_t shape_input) {
  TsrOpDesc d{};
  d.struct_size = sizeof(TsrOpDesc);
  d.schema = schema;
  d.flags = flags;
  d.shape_rule = rule;
  d.shape_input = shape_input;
  d.dims_arg = -1;
  d.keepdim_arg = -1;
  d.derivative = TSR_DERIVATIVE_NONE;
  return d;
}

void register_op(const sdk::Host& host, const TsrOpDesc& d) {
  const TsrHostApi* api = host.api();
  if (api->struct_size < offsetof(TsrHostApi, register_op) + sizeof(api->register_op) || api->register_op == nullptr)
    throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "opkit defines ops and needs a host of ABI 1.3 or later");
  sdk::throw_if_error(api->register_op(api->context, &d));
}

template <void (*Body)(const TsrKernelCall&)>
void kernels(const sdk::Host& host, const char* op, bool on_cpu) {
  const uint64_t mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  host.register_kernel(op, "opkit", mask, &sdk::kernel_entry<kOpkit, Body>, &g_device_tag);
  if (on_cpu) host.register_kernel(op, "cpu", mask, &sdk::kernel_entry<kOpkit, Body>, nullptr);
}

void init(const sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("opkit", 0));

  // Backward ops first: an op naming one as its backward finds it registered.
  register_op(host, op_desc("opkit::sin_mul_backward(Tensor grad, Tensor self, Tensor other, float alpha) -> (Tensor, Tensor)",
                            TSR_OP_POINTWISE, TSR_SHAPE_BROADCAST, -1));
  {
    TsrOpDesc d = op_desc("opkit::sin_mul(Tensor self, Tensor other, *, float alpha=1.0) -> Tensor",
                          TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT, TSR_SHAPE_BROADCAST, -1);
    static const int32_t inputs[] = {0, 1};
    static const TsrOpArg args[] = {ref(TSR_OP_ARG_GRAD_OUTPUT, 0), ref(TSR_OP_ARG_INPUT, 0), ref(TSR_OP_ARG_INPUT, 1),
                                    ref(TSR_OP_ARG_INPUT, 2)};
    d.derivative = TSR_DERIVATIVE_BACKWARD_OP;
    d.differentiable_inputs = inputs;
    d.num_differentiable_inputs = 2;
    d.backward_op = "opkit::sin_mul_backward";
    d.backward_args = args;
    d.num_backward_args = 4;
    register_op(host, d);
  }
  {
    TsrOpDesc d = op_desc("opkit::sumsq_backward(Tensor grad, Tensor self, int[]? dim, bool keepdim) -> Tensor", 0,
                          TSR_SHAPE_CALLBACK, 1);
    d.shape_fn = &sumsq_backward_shape;
    register_op(host, d);
  }
  {
    TsrOpDesc d = op_desc("opkit::sumsq(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", 0,
                          TSR_SHAPE_REDUCTION, 0);
    d.dims_arg = 1;
    d.keepdim_arg = 2;
    static const int32_t inputs[] = {0};
    static const TsrOpArg args[] = {ref(TSR_OP_ARG_GRAD_OUTPUT, 0), ref(TSR_OP_ARG_INPUT, 0), ref(TSR_OP_ARG_INPUT, 1),
                                    ref(TSR_OP_ARG_INPUT, 2)};
    d.derivative = TSR_DERIVATIVE_BACKWARD_OP;
    d.differentiable_inputs = inputs;
    d.num_differentiable_inputs = 1;
    d.backward_op = "opkit::sumsq_backward";
    d.backward_args = args;
    d.num_backward_args = 4;
    register_op(host, d);
  }
  register_op(host, op_desc("opkit::cube_backward_backward(Tensor gg, Tensor grad, Tensor self) -> (Tensor, Tensor)",
                            TSR_OP_POINTWISE, TSR_SHAPE_BROADCAST, -1));
  {
    TsrOpDesc d = op_desc("opkit::cube_backward(Tensor grad, Tensor self) -> Tensor", TSR_OP_POINTWISE,
                          TSR_SHAPE_BROADCAST, -1);
    static const int32_t inputs[] = {0, 1};
    static const TsrOpArg args[] = {ref(TSR_OP_ARG_GRAD_OUTPUT, 0), ref(TSR_OP_ARG_INPUT, 0), ref(TSR_OP_ARG_INPUT, 1)};
    d.derivative = TSR_DERIVATIVE_BACKWARD_OP;
    d.differentiable_inputs = inputs;
    d.num_differentiable_inputs = 2;
    d.backward_op = "opkit::cube_backward_backward";
    d.backward_args = args;
    d.num_backward_args = 3;
    register_op(host, d);
  }
  {
    TsrOpDesc d = op_desc("opkit::cube(Tensor self) -> Tensor", TSR_OP_POINTWISE, TSR_SHAPE_SAME_AS_INPUT, 0);
    static const int32_t inputs[] = {0};
    static const TsrOpArg args[] = {ref(TSR_OP_ARG_GRAD_OUTPUT, 0), ref(TSR_OP_ARG_INPUT, 0)};
    d.derivative = TSR_DERIVATIVE_BACKWARD_OP;
    d.differentiable_inputs = inputs;
    d.num_differentiable_inputs = 1;
    d.backward_op = "opkit::cube_backward";
    d.backward_args = args;
    d.num_backward_args = 2;
    register_op(host, d);
  }

  kernels<&sin_mul>(host, "opkit::sin_mul", true);
  kernels<&sin_mul_backward>(host, "opkit::sin_mul_backward", true);
  kernels<&sumsq>(host, "opkit::sumsq", true);
  kernels<&sumsq_backward>(host, "opkit::sumsq_backward", true);
  kernels<&cube>(host, "opkit::cube", false);
  kernels<&cube_backward>(host, "opkit::cube_backward", false);
  kernels<&cube_backward_backward>(host, "opkit::cube_backward_backward", false);
  kernels<&fill>(host, "fill_", false);
}

}  // namespace

TSR_SDK_PLUGIN("opkit", "0.1", "plugin-defined ops for the conformance kit's own tests", init, nullptr)
