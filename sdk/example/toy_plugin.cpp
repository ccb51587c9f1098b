// toy_plugin.cpp — an out-of-tree Tessera device plugin, built as a stranger
// would (find_package(Tessera)): device type "toy" whose memory is ordinary host
// memory, one kernel for a core op (add, float32 and float64), and a new op of
// its own with its derivative (ABI 1.3): toy::fused_gelu, GELU in its tanh
// form, with kernels on "toy" and on "cpu". docs/plugin-guide.md walks through it.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/iterate.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sdk = tessera::sdk;

namespace {

// ---- the device: every function the host calls is wrapped in sdk::guard ----
TsrError* toy_device_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

TsrError* toy_describe(void*, int32_t, char* buf, size_t size) {
  std::snprintf(buf, size, "toy device (host memory)");
  return nullptr;
}

TsrError* toy_allocate(void*, int32_t, size_t nbytes, TsrStream, void** ptr) {
  return sdk::guard([&] {
    *ptr = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (*ptr == nullptr) throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "toy: out of memory");
  });
}

void toy_deallocate(void*, int32_t, void* ptr, size_t, TsrStream) { std::free(ptr); }

TsrError* toy_copy(void*, const TsrCopyRequest* r) {
  std::memcpy(r->dst, r->src, r->nbytes);  // every side is host memory here
  return nullptr;
}

// ---- the kernel: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor ----
// docs/ops.md: self, other and out have one shape and dtype (broadcast inputs
// have stride 0); out = self + alpha * other; out may be self (add_). The
// SDK's accessors check every argument (a wrong or missing one is an error
// naming it), and kernel_entry names the op and dtype in every error.
inline constexpr char kToy[] = "toy";

void toy_add(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(self, other, out);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T alpha = sdk::scalar_arg<T>(call, 2, "alpha");
      const sdk::StridedIter<3> iter(out.ndim, out.shape,
                                     {sdk::IterOperand::of(out), sdk::IterOperand::of(self),
                                      sdk::IterOperand::of(other)});
      iter.for_each(sdk::basic_loop<T, T, T>([alpha](T a, T b) { return a + alpha * b; }));
    } else {
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "float32 and float64 only");
    }
  });
}

// ---- a new op: toy::fused_gelu and its derivatives -------------------------------
// gelu(x) = x/2 (1 + tanh(u)), u = k (x + c x^3), k = sqrt(2/pi), c = 0.044715
// (the core's gelu(x, approximate='tanh'), in one kernel). Its derivatives:
//   gelu'(x)  = (1 + t)/2 + x s u'/2              t = tanh(u), s = 1 - t^2,
//   gelu''(x) = s (u' - x t u'^2 + 3 k c x^2)     u' = k (1 + 3 c x^2).
template <typename T>
struct GeluTanh {
  static constexpr T k = T(0.7978845608028654);  // sqrt(2 / pi)
  static constexpr T c = T(0.044715);
  static T value(T x) { return T(0.5) * x * (T(1) + std::tanh(k * (x + c * x * x * x))); }
  static T grad(T x) {
    const T t = std::tanh(k * (x + c * x * x * x)), du = k * (T(1) + T(3) * c * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
  }
  static T grad2(T x) {
    const T t = std::tanh(k * (x + c * x * x * x)), du = k * (T(1) + T(3) * c * x * x);
    return (T(1) - t * t) * (du - x * t * du * du + T(3) * k * c * x * x);
  }
};

// Calls f(T{}) for the two dtypes the op's kernels are registered for.
template <typename F>
void float_or_double(TsrDType dtype, F&& f) {
  sdk::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      f(T{});
    } else {
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "float32 and float64 only");
    }
  });
}

// toy::fused_gelu(Tensor self) -> Tensor. The shape rule (SAME_AS_INPUT) gave
// `out` self's shape and dtype; in the in-place variant toy::fused_gelu_,
// out *is* self, which an elementwise map handles.
void fused_gelu(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  float_or_double(call.dtype, [&](auto zero) {
    using T = decltype(zero);
    const sdk::StridedIter<2> iter(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(self)});
    iter.for_each(sdk::basic_loop<T, T>([](T x) { return GeluTanh<T>::value(x); }));
  });
}

// toy::fused_gelu_backward(Tensor grad_output, Tensor self) -> Tensor
//   = grad_output * gelu'(self).
// The shape rule (BROADCAST) hands both tensors over in the promoted dtype,
// expanded to out's shape.
void fused_gelu_backward(const TsrKernelCall& call) {
  const DLTensor& grad = sdk::tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 1, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(grad, self, out);
  float_or_double(call.dtype, [&](auto zero) {
    using T = decltype(zero);
    const sdk::StridedIter<3> iter(out.ndim, out.shape,
                                   {sdk::IterOperand::of(out), sdk::IterOperand::of(grad), sdk::IterOperand::of(self)});
    iter.for_each(sdk::basic_loop<T, T, T>([](T g, T x) { return g * GeluTanh<T>::grad(x); }));
  });
}

// toy::fused_gelu_double_backward(Tensor grad_grad, Tensor grad_output, Tensor self)
//   -> (Tensor, Tensor) = (grad_grad * gelu'(self), grad_grad * grad_output * gelu''(self)):
// the gradients of fused_gelu_backward with respect to its grad_output and its self.
// Two outputs, so the loop is written by hand: StridedIter calls it once per
// row with each operand's row start and byte stride.
void fused_gelu_double_backward(const TsrKernelCall& call) {
  const DLTensor& gg = sdk::tensor_arg(call, 0, "grad_grad", call.dtype);
  const DLTensor& grad = sdk::tensor_arg(call, 1, "grad_output", call.dtype);
  const DLTensor& self = sdk::tensor_arg(call, 2, "self", call.dtype);
  DLTensor& d_grad = sdk::output(call, 0, call.dtype);
  DLTensor& d_self = sdk::output(call, 1, call.dtype);
  sdk::check_same_shape(gg, "grad_grad", d_grad, "out");
  sdk::check_same_shape(grad, "grad_output", d_grad, "out");
  sdk::check_same_shape(self, "self", d_grad, "out");
  sdk::check_same_shape(d_self, "out1", d_grad, "out0");
  float_or_double(call.dtype, [&](auto zero) {
    using T = decltype(zero);
    const sdk::StridedIter<5> iter(d_grad.ndim, d_grad.shape,
                                   {sdk::IterOperand::of(d_grad), sdk::IterOperand::of(d_self),
                                    sdk::IterOperand::of(gg), sdk::IterOperand::of(grad), sdk::IterOperand::of(self)});
    iter.for_each([](char** p, const int64_t* stride, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const auto at = [&](int k) { return reinterpret_cast<T*>(p[k] + i * stride[k]); };
        const T a = *at(2), g = *at(3), x = *at(4);
        *at(0) = a * GeluTanh<T>::grad(x);
        *at(1) = a * g * GeluTanh<T>::grad2(x);
      }
    });
  });
}

// Registers the three ops, each before the op naming it as its backward, then
// their kernels on both device types (the cpu plugin is built in and loads
// first, so "cpu" is known here). sdk::op_desc(schema) starts a description
// from the defaults of a plain op (no flags, the shape and dtype of argument
// 0, no derivative). register_op copies everything a description points to,
// so locals do.
void register_fused_gelu(const sdk::Host& host) {
  // 1. The second derivative: not differentiable itself (results never
  //    require grad), so fused_gelu is twice differentiable, not three times.
  TsrOpDesc dd = sdk::op_desc(
      "toy::fused_gelu_double_backward(Tensor grad_grad, Tensor grad_output, Tensor self) -> (Tensor, Tensor)");
  dd.flags = TSR_OP_POINTWISE;
  dd.shape_rule = TSR_SHAPE_BROADCAST;
  if (!host.register_op(dd)) return;  // a core older than ABI 1.3: no new ops, the rest still works

  // 2. The first derivative; its own backward is op 1 (so double backward works):
  //    d/d grad_output = grad_grad * gelu'(self),
  //    d/d self = grad_grad * grad_output * gelu''(self).
  TsrOpDesc bw = sdk::op_desc("toy::fused_gelu_backward(Tensor grad_output, Tensor self) -> Tensor");
  bw.flags = TSR_OP_POINTWISE;
  bw.shape_rule = TSR_SHAPE_BROADCAST;
  const int32_t bw_inputs[] = {0, 1};  // grad_output, self
  // backward: fused_gelu_double_backward(grad of our output, our grad_output, our self)
  const TsrOpArg bw_args[] = {sdk::grad_output(0), sdk::input(0), sdk::input(1)};
  bw.derivative = TSR_DERIVATIVE_BACKWARD_OP;
  bw.differentiable_inputs = bw_inputs;
  bw.num_differentiable_inputs = 2;
  bw.backward_op = "toy::fused_gelu_double_backward";
  bw.backward_args = bw_args;
  bw.num_backward_args = 3;
  host.register_op(bw);

  // 3. The op itself, with its in-place variant toy::fused_gelu_.
  TsrOpDesc op = sdk::op_desc("toy::fused_gelu(Tensor self) -> Tensor");
  op.flags = TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT;
  op.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  op.shape_input = 0;
  const int32_t inputs[] = {0};  // self
  // backward: fused_gelu_backward(grad of our output, our self)
  const TsrOpArg args[] = {sdk::grad_output(0), sdk::input(0)};
  op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
  op.differentiable_inputs = inputs;
  op.num_differentiable_inputs = 1;
  op.backward_op = "toy::fused_gelu_backward";
  op.backward_args = args;
  op.num_backward_args = 2;
  host.register_op(op);

  const uint64_t mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  for (const char* device : {"toy", "cpu"}) {
    host.register_kernel("toy::fused_gelu", device, mask, &sdk::kernel_entry<kToy, fused_gelu>);
    host.register_kernel("toy::fused_gelu_backward", device, mask, &sdk::kernel_entry<kToy, fused_gelu_backward>);
    host.register_kernel("toy::fused_gelu_double_backward", device, mask,
                         &sdk::kernel_entry<kToy, fused_gelu_double_backward>);
  }
}

// ---- registration: called once by the host, inside sdk::guard ----
void init(const sdk::Host& host, void** /*state*/) {
  TsrDeviceTypeDesc d{};  // zero-initialized: every slot we do not set is NULL
  d.name = "toy";
  d.dlpack_device_type = 0;  // not exchanged through DLPack
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 64;
  d.device_count = &toy_device_count;
  d.describe_device = &toy_describe;
  d.allocate = &toy_allocate;
  d.deallocate = &toy_deallocate;
  d.copy = &toy_copy;
  host.register_device_type(d);

  host.register_kernel("add", "toy", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64),
                       &sdk::kernel_entry<kToy, toy_add>);
  register_fused_gelu(host);
}

}  // namespace

TSR_SDK_PLUGIN("toy", "0.1.0", "A toy device: host memory, an add kernel and the op toy::fused_gelu", init, nullptr)
