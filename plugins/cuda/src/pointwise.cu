// Pointwise kernels of the CUDA plugin (issue 17 point 3, first part): add,
// sub, mul, neg, abs on every numeric dtype; exp, log, sqrt, tanh, sigmoid on
// the floating dtypes. Semantics as the cpu plugin's (docs/ops/binary.md,
// unary.md): integer arithmetic wraps; float16/bfloat16 compute in float and
// round once; alpha converts to the dtype (float for the half types).
// Compiled here, not yet run on a GPU: the conformance kit proves them there.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/kernel_args.hpp>

#include "elementwise.cuh"
#include "kernels.hpp"

#include <type_traits>

namespace tessera::cuda {
namespace {

namespace sdk = ::tessera::sdk;

inline constexpr char kCuda[] = "cuda";

cudaStream_t stream_of(const TsrKernelCall& call) { return reinterpret_cast<cudaStream_t>(call.stream); }

// Makes the call's device current for the launch.
struct DeviceScope {
  int previous = 0;
  explicit DeviceScope(int index) {
    cudaGetDevice(&previous);
    if (previous != index) cudaSetDevice(index);
  }
  ~DeviceScope() { cudaSetDevice(previous); }
};

// Calls f(TypeTag<T>) with the CUDA storage type of a dtype.
template <typename F>
void dispatch(TsrDType d, F f) {
  switch (d) {
    case TSR_DTYPE_UINT8: return f(sdk::TypeTag<uint8_t>{});
    case TSR_DTYPE_INT8: return f(sdk::TypeTag<int8_t>{});
    case TSR_DTYPE_INT16: return f(sdk::TypeTag<int16_t>{});
    case TSR_DTYPE_INT32: return f(sdk::TypeTag<int32_t>{});
    case TSR_DTYPE_INT64: return f(sdk::TypeTag<int64_t>{});
    case TSR_DTYPE_FLOAT16: return f(sdk::TypeTag<__half>{});
    case TSR_DTYPE_BFLOAT16: return f(sdk::TypeTag<__nv_bfloat16>{});
    case TSR_DTYPE_FLOAT32: return f(sdk::TypeTag<float>{});
    case TSR_DTYPE_FLOAT64: return f(sdk::TypeTag<double>{});
    default: sdk::invalid(std::string("no cuda kernel for dtype ") + sdk::dtype_name(d));
  }
}

template <typename T>
inline constexpr bool kInteger = std::is_integral_v<T>;

// Wrapping integer arithmetic (no signed overflow).
template <typename T>
__device__ __forceinline__ T wrap_add(T a, T b) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
__device__ __forceinline__ T wrap_mul(T a, T b) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// ---- the device functors (device lambdas cannot live in the generic dispatch lambdas) ----

template <typename T>
struct MulWrap {
  __device__ T operator()(T a, T b) const { return wrap_mul(a, b); }
};
template <typename C>
struct MulFloat {
  __device__ C operator()(C a, C b) const { return a * b; }
};
template <typename T>
struct AddWrap {
  T alpha;
  __device__ T operator()(T a, T b) const { return wrap_add(a, wrap_mul(alpha, b)); }
};
template <typename C>
struct AddFloat {
  C alpha;
  __device__ C operator()(C a, C b) const { return a + alpha * b; }
};

// ---- binary ------------------------------------------------------------------

enum class BinaryOp { Add, Sub, Mul };

template <BinaryOp Op>
void binary(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(self, other, out);
  DeviceScope scope(call.device_index);
  const Geometry<3> g = make_geometry<3>({&out, &self, &other});
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Compute<T>::type;
    const std::array<const char*, 2> in = {static_cast<const char*>(self.data), static_cast<const char*>(other.data)};
    char* o = static_cast<char*>(out.data);
    if constexpr (Op == BinaryOp::Mul) {
      if constexpr (kInteger<T>) launch_elementwise<T, T, T>(g, o, in, MulWrap<T>{}, stream_of(call));
      else launch_elementwise<T, T, T>(g, o, in, MulFloat<C>{}, stream_of(call));
    } else {
      if constexpr (kInteger<T>) {
        T alpha = static_cast<T>(sdk::scalar_arg<int64_t>(call, 2, "alpha"));
        if (Op == BinaryOp::Sub) alpha = wrap_mul(alpha, static_cast<T>(-1));
        launch_elementwise<T, T, T>(g, o, in, AddWrap<T>{alpha}, stream_of(call));
      } else {
        C alpha = sdk::scalar_arg<C>(call, 2, "alpha");
        if (Op == BinaryOp::Sub) alpha = -alpha;
        launch_elementwise<T, T, T>(g, o, in, AddFloat<C>{alpha}, stream_of(call));
      }
    }
  });
}

// ---- unary ---------------------------------------------------------------------

enum class UnaryOp { Neg, Abs, Exp, Log, Sqrt, Tanh, Sigmoid };

template <UnaryOp Op, typename C>
__device__ __forceinline__ C unary_value(C x) {
  if constexpr (Op == UnaryOp::Neg) {
    if constexpr (std::is_integral_v<C>) return wrap_mul(x, static_cast<C>(-1));
    else return -x;
  } else if constexpr (Op == UnaryOp::Abs) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? wrap_mul(x, static_cast<C>(-1)) : x;
    else return fabs(x);
  } else if constexpr (Op == UnaryOp::Exp) {
    return exp(x);
  } else if constexpr (Op == UnaryOp::Log) {
    return log(x);
  } else if constexpr (Op == UnaryOp::Sqrt) {
    return sqrt(x);
  } else if constexpr (Op == UnaryOp::Tanh) {
    return tanh(x);
  } else {
    return C(1) / (C(1) + exp(-x));
  }
}

template <UnaryOp Op, typename C>
struct UnaryFn {
  __device__ C operator()(C x) const { return unary_value<Op, C>(x); }
};

template <UnaryOp Op>
void unary(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  DeviceScope scope(call.device_index);
  const Geometry<2> g = make_geometry<2>({&out, &self});
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Compute<T>::type;
    const std::array<const char*, 1> in = {static_cast<const char*>(self.data)};
    launch_elementwise<T, T>(g, static_cast<char*>(out.data), in, UnaryFn<Op, C>{}, stream_of(call));
  });
}

}  // namespace

void register_pointwise(const sdk::Host& host) {
  constexpr uint64_t kInts = TSR_DTYPE_BIT(TSR_DTYPE_UINT8) | TSR_DTYPE_BIT(TSR_DTYPE_INT8) |
                             TSR_DTYPE_BIT(TSR_DTYPE_INT16) | TSR_DTYPE_BIT(TSR_DTYPE_INT32) |
                             TSR_DTYPE_BIT(TSR_DTYPE_INT64);
  constexpr uint64_t kFloats = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT16) | TSR_DTYPE_BIT(TSR_DTYPE_BFLOAT16) |
                               TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  host.register_kernel("add", "cuda", kInts | kFloats, &sdk::kernel_entry<kCuda, binary<BinaryOp::Add>>);
  host.register_kernel("sub", "cuda", kInts | kFloats, &sdk::kernel_entry<kCuda, binary<BinaryOp::Sub>>);
  host.register_kernel("mul", "cuda", kInts | kFloats, &sdk::kernel_entry<kCuda, binary<BinaryOp::Mul>>);
  host.register_kernel("neg", "cuda", kInts | kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Neg>>);
  host.register_kernel("abs", "cuda", kInts | kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Abs>>);
  host.register_kernel("exp", "cuda", kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Exp>>);
  host.register_kernel("log", "cuda", kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Log>>);
  host.register_kernel("sqrt", "cuda", kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Sqrt>>);
  host.register_kernel("tanh", "cuda", kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Tanh>>);
  host.register_kernel("sigmoid", "cuda", kFloats, &sdk::kernel_entry<kCuda, unary<UnaryOp::Sigmoid>>);
}

}  // namespace tessera::cuda
