// The CUDA plugin's binary pointwise kernels (docs/ops/binary.md): add, sub,
// mul, div, remainder, fmod, pow, atan2, maximum, minimum, the comparisons,
// the logical and bitwise ops and the shifts. Each reproduces the cpu plugin
// (plugins/cpu/src/binary.cpp, binary_math.hpp) element for element: integer
// arithmetic wraps, float16/bfloat16 compute in float and round once, bool is
// read as its byte != 0, and no multiply is fused into an add (the cpu plugin
// builds with -ffp-contract=off; a fused a + b*c can stay finite where the
// unfused one overflows). Integer division by zero and negative integer
// powers are found on the device before any output is written: one flag copied
// back and a stream sync, for integer dtypes only.
#include "common.cuh"
#include "elementwise.cuh"
#include "kernels.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace tessera::cuda {
namespace {

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

/// What the elementwise launcher hands a functor for a T operand.
template <typename T>
using loaded_t = compute_t<storage_t<T>>;

/// A loaded operand as the arithmetic sees it: compute_t<T>, bool as byte != 0.
template <typename T>
__device__ __forceinline__ compute_t<T> value_of(loaded_t<T> v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return v;
  }
}

/// Adapts an op on compute values of T to the launcher's loaded operands.
template <typename T, typename Op>
struct OnValues {
  Op op;
  __device__ __forceinline__ auto operator()(loaded_t<T> x, loaded_t<T> y) const {
    return op(value_of<T>(x), value_of<T>(y));
  }
};

// ---------------------------------------------------------------------------
// Scalar math (device), the cpu plugin's formulas
// ---------------------------------------------------------------------------

__device__ __forceinline__ float d_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double d_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float d_trunc(float a) { return truncf(a); }
__device__ __forceinline__ double d_trunc(double a) { return trunc(a); }
__device__ __forceinline__ float d_floor(float a) { return floorf(a); }
__device__ __forceinline__ double d_floor(double a) { return floor(a); }
__device__ __forceinline__ float d_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double d_copysign(double a, double b) { return copysign(a, b); }
__device__ __forceinline__ float d_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double d_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float d_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double d_atan2(double a, double b) { return atan2(a, b); }
/// A product the compiler may not fuse into a following add.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

/// Python's floor division of floats: exact where floor(a / b) would be misled
/// by the rounding of a / b (1 // 0.1 == 9).
template <typename C>
__device__ __forceinline__ C float_floor_divide(C a, C b) {
  if (b == C(0)) return a / b;  // IEEE: +-inf or NaN
  const C rem = d_fmod(a, b);
  C q = (a - rem) / b;  // an integer, up to the rounding of the division
  if (rem != C(0) && ((b < C(0)) != (rem < C(0)))) q -= C(1);
  if (q == C(0)) return d_copysign(C(0), a / b);
  C floored = d_floor(q);
  if (q - floored > C(0.5)) floored += C(1);  // q was just below an integer
  return floored;
}

/// Python's a % b for floats: the sign of the divisor; b == 0 gives NaN.
template <typename C>
__device__ __forceinline__ C float_remainder(C a, C b) {
  C r = d_fmod(a, b);
  if (r != C(0)) {
    if ((r < C(0)) != (b < C(0))) r += b;
  } else {
    r = d_copysign(C(0), b);
  }
  return r;
}

// Integer division and remainders; b != 0 (checked on the device first).
// MIN / -1 wraps and MIN % -1 is 0 instead of trapping.
template <typename T>
__device__ __forceinline__ T int_trunc_divide(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}

template <typename T>
__device__ __forceinline__ T int_floor_divide(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);
    const T q = static_cast<T>(a / b);
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

template <typename T>
__device__ __forceinline__ T int_remainder(T a, T b) {  // Python's %: sign of the divisor
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

template <typename T>
__device__ __forceinline__ T int_fmod(T a, T b) {  // C's %: sign of the dividend
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
  }
  return static_cast<T>(a % b);
}

/// base ** exp for exp >= 0 (checked on the device first for signed types),
/// wrapping like repeated multiplication.
template <typename T>
__device__ __forceinline__ T int_pow(T base, T exp) {
  using U = wrap_unsigned_t<T>;
  U result = 1;
  U b = static_cast<U>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e != 0) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<T>(result);
}

/// a << b; amounts outside [0, bits) give 0.
template <typename T>
__device__ __forceinline__ T shift_left(T a, T b) {
  constexpr unsigned kBits = sizeof(T) * 8;
  if (static_cast<std::make_unsigned_t<T>>(b) >= kBits) return 0;
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) << b);
}

/// a >> b (arithmetic for signed types); amounts outside [0, bits) give the sign fill.
template <typename T>
__device__ __forceinline__ T shift_right(T a, T b) {
  constexpr unsigned kBits = sizeof(T) * 8;
  if (static_cast<std::make_unsigned_t<T>>(b) >= kBits) {
    if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
    return 0;
  }
  return static_cast<T>(a >> b);
}

// ---------------------------------------------------------------------------
// The ops: device functors on compute values of T (nvcc allows no extended
// device lambdas inside the generic dispatch lambdas).
// ---------------------------------------------------------------------------

template <typename T, bool kSubtract>
struct AddSubOp {
  compute_t<T> alpha;
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (std::is_same_v<T, bool>) {
      return x | (alpha & y);  // add only: logical or; alpha false drops other
    } else if constexpr (kIsInteger<T>) {
      return kSubtract ? wrap_sub(x, wrap_mul(alpha, y)) : wrap_add(x, wrap_mul(alpha, y));
    } else {
      return kSubtract ? x - mul_rn(alpha, y) : x + mul_rn(alpha, y);
    }
  }
};

template <typename T>
struct MulOp {
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (std::is_same_v<T, bool>) {
      return x & y;
    } else if constexpr (kIsInteger<T>) {
      return wrap_mul(x, y);
    } else {
      return x * y;
    }
  }
};

enum class Rounding { kNone, kTrunc, kFloor };

template <typename T, Rounding R>
struct DivOp {
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (kIsInteger<T>) {
      static_assert(R != Rounding::kNone, "true division runs in a floating dtype");
      return R == Rounding::kTrunc ? int_trunc_divide(x, y) : int_floor_divide(x, y);
    } else if constexpr (R == Rounding::kNone) {
      return x / y;
    } else if constexpr (R == Rounding::kTrunc) {
      return d_trunc(x / y);
    } else {
      return float_floor_divide(x, y);
    }
  }
};

template <typename T, bool kPython>  // remainder (Python %) or fmod (C)
struct RemainderOp {
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (kIsInteger<T>) {
      return kPython ? int_remainder(x, y) : int_fmod(x, y);
    } else {
      return kPython ? float_remainder(x, y) : d_fmod(x, y);
    }
  }
};

template <typename T>
struct PowOp {
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (kIsInteger<T>) {
      return int_pow(x, y);
    } else {
      return d_pow(x, y);
    }
  }
};

template <typename T>
struct Atan2Op {
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const { return d_atan2(x, y); }
};

/// maximum / minimum; a NaN in either operand is the result.
template <typename T>
struct MaxMinOp {
  bool is_max;
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    if constexpr (kIsFloating<T>) {
      if (x != x) return x;
      if (y != y) return y;
    }
    return is_max ? (x > y ? x : y) : (x < y ? x : y);
  }
};

enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kXor };

/// Comparisons and logical ops (on x != 0: NaN is true), bool out. The kind is
/// a kernel argument rather than a template parameter: one kernel per dtype.
template <typename T>
struct CompareOp {
  Cmp kind;
  __device__ __forceinline__ bool operator()(compute_t<T> x, compute_t<T> y) const {
    using C = compute_t<T>;
    switch (kind) {
      case Cmp::kEq: return x == y;
      case Cmp::kNe: return x != y;
      case Cmp::kLt: return x < y;
      case Cmp::kLe: return x <= y;
      case Cmp::kGt: return x > y;
      case Cmp::kGe: return x >= y;
      case Cmp::kAnd: return (x != C(0)) && (y != C(0));
      case Cmp::kOr: return (x != C(0)) || (y != C(0));
      default: return (x != C(0)) != (y != C(0));
    }
  }
};

enum class Bits { kAnd, kOr, kXor, kShl, kShr };

template <typename T>
struct BitsOp {
  Bits kind;
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> x, compute_t<T> y) const {
    switch (kind) {
      case Bits::kAnd: return static_cast<T>(x & y);
      case Bits::kOr: return static_cast<T>(x | y);
      case Bits::kXor: return static_cast<T>(x ^ y);
      default:
        if constexpr (std::is_same_v<T, bool>) {
          return false;  // never launched: shifts of bool are refused on the host
        } else {
          return kind == Bits::kShl ? shift_left(x, y) : shift_right(x, y);
        }
    }
  }
};

// ---------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------

struct Operands {
  const DLTensor* self;
  const DLTensor* other;
  DLTensor* out;
};

/// self and other of the dispatch dtype, out of `out_dtype`, all of out's shape.
Operands binary_operands(const TsrKernelCall& call, TsrDType out_dtype) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = sdk::output(call, 0, out_dtype);
  sdk::check_binary_shapes(self, other, out);
  return {&self, &other, &out};
}

/// out = op(self, other) over elements of dtype T, out of dtype Out, on the call's stream.
template <typename T, typename Out = T, typename Op>
void run(const TsrKernelCall& call, const Operands& ops, const Op& op) {
  using S = storage_t<T>;
  const Geometry<3> g = make_geometry<3>({ops.out, ops.self, ops.other});
  const std::array<const char*, 2> in = {data_as<const char>(*ops.self), data_as<const char>(*ops.other)};
  launch_elementwise<storage_t<Out>, S, S>(g, data_as<char>(*ops.out), in, OnValues<T, Op>{op}, stream_of(call));
}

// ---- data-dependent checks ----

struct IsZero {
  template <typename S>
  __device__ __forceinline__ bool operator()(S v) const { return v == S(0); }
};
struct IsNegative {
  template <typename S>
  __device__ __forceinline__ bool operator()(S v) const { return v < S(0); }
};

/// Sets *flag when pred holds for any element; one atomic per thread at most.
template <typename S, typename Pred>
__global__ void flag_any_kernel(Geometry<1> g, const S* data, Pred pred, int* flag) {
  bool hit = false;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += step) {
    int64_t rest = i;
    int64_t off = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      off += (rest % g.shape[d]) * g.strides[0].s[d];
      rest /= g.shape[d];
    }
    hit |= pred(data[off]);
  }
  if (hit) atomicOr(flag, 1);
}

/// Whether pred holds for any element of the integer tensor t (on the device).
/// Broadcast and size-1 dims are dropped first, so each distinct element is
/// read once. Ordered on the call's stream and waited for: the answer decides
/// whether the kernel fails, before any output is written.
template <typename S, typename Pred>
bool any_of(const TsrKernelCall& call, const DLTensor& t, Pred pred) {
  constexpr int kMaxRank = 64;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];
  int32_t nd = 0;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return false;
    if (t.shape[d] == 1 || t.strides[d] == 0) continue;
    if (nd == kMaxRank) sdk::invalid("more than 64 dimensions of size > 1");
    shape[nd] = t.shape[d];
    strides[nd] = t.strides[d];
    ++nd;
  }
  DLTensor distinct = t;
  distinct.ndim = nd;
  distinct.shape = shape;
  distinct.strides = strides;
  const Geometry<1> g = make_geometry<1>({&distinct});
  const cudaStream_t stream = stream_of(call);
  int* flag = static_cast<int*>(workspace(call, sizeof(int)));
  check_cuda(cudaMemsetAsync(flag, 0, sizeof(int), stream), "cudaMemsetAsync");
  flag_any_kernel<S, Pred><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, data_as<const S>(t), pred, flag);
  check_launch("cuda binary: operand check launch");
  int found = 0;
  check_cuda(cudaMemcpyAsync(&found, flag, sizeof(int), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return found != 0;
}

// ---- scalar arguments ----

[[noreturn]] TSR_SDK_COLD void float_alpha_for_integers(double alpha) {
  sdk::invalid("alpha must be an int or bool for an integer or bool dtype, got the float " + std::to_string(alpha));
}

/// add/sub's alpha (argument 2) in the compute type of T; a float alpha is
/// refused for integer and bool dtypes rather than truncated (as on cpu).
template <typename T>
compute_t<T> alpha_as(const TsrKernelCall& call) {
  const TsrValue& v = sdk::arg(call, 2, "alpha");
  if (v.tag == TSR_VALUE_NONE) return compute_t<T>(1);  // the schema default
  sdk::check_scalar(v, "alpha");
  if constexpr (!kIsFloating<T>) {
    if (v.tag == TSR_VALUE_FLOAT) float_alpha_for_integers(v.as.f);
    return v.tag == TSR_VALUE_INT ? static_cast<T>(v.as.i) : static_cast<T>(v.as.b != 0);  // ints wrap
  } else {
    using C = compute_t<T>;
    switch (v.tag) {
      case TSR_VALUE_INT: return static_cast<C>(v.as.i);
      case TSR_VALUE_FLOAT: return static_cast<C>(v.as.f);
      default: return static_cast<C>(v.as.b != 0 ? 1 : 0);
    }
  }
}

Rounding rounding_mode(const TsrKernelCall& call) {
  if (call.num_args <= 2 || sdk::is_none(call, 2, "rounding_mode")) return Rounding::kNone;  // optional
  const std::string_view mode = sdk::string_arg(call, 2, "rounding_mode");
  if (mode == "trunc") return Rounding::kTrunc;
  if (mode == "floor") return Rounding::kFloor;
  sdk::invalid("rounding_mode must be 'trunc', 'floor' or none, got '" + std::string(mode) + "'");
}

// ---- kernel bodies ----

template <bool kSubtract>
void add_or_sub(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kSubtract && std::is_same_v<T, bool>) {
      sdk::invalid("subtraction is not defined for bool tensors");
    } else {
      run<T>(call, ops, AddSubOp<T, kSubtract>{alpha_as<T>(call)});
    }
  });
}

void mul_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run<T>(call, ops, MulOp<T>{});
  });
}

void div_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  const Rounding mode = rounding_mode(call);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid("division is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if (mode == Rounding::kNone)
        sdk::invalid("true division needs a floating dtype (the core promotes integer inputs to float32)");
      if (any_of<T>(call, *ops.other, IsZero{})) sdk::invalid("integer division by zero");
      if (mode == Rounding::kTrunc) {
        run<T>(call, ops, DivOp<T, Rounding::kTrunc>{});
      } else {
        run<T>(call, ops, DivOp<T, Rounding::kFloor>{});
      }
    } else {
      switch (mode) {
        case Rounding::kNone: run<T>(call, ops, DivOp<T, Rounding::kNone>{}); break;
        case Rounding::kTrunc: run<T>(call, ops, DivOp<T, Rounding::kTrunc>{}); break;
        case Rounding::kFloor: run<T>(call, ops, DivOp<T, Rounding::kFloor>{}); break;
      }
    }
  });
}

template <bool kPython>
void remainder_kernel(const TsrKernelCall& call) {
  const char* const name = kPython ? "remainder" : "fmod";
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid(std::string(name) + " is not defined for bool tensors");
    } else {
      if constexpr (kIsInteger<T>) {
        if (any_of<T>(call, *ops.other, IsZero{})) sdk::invalid(std::string("integer ") + name + " by zero");
      }
      run<T>(call, ops, RemainderOp<T, kPython>{});
    }
  });
}

void pow_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid("pow is not defined for bool tensors");
    } else {
      if constexpr (kIsInteger<T> && std::is_signed_v<T>) {
        if (any_of<T>(call, *ops.other, IsNegative{}))
          sdk::invalid("integers to negative integer powers are not allowed");
      }
      run<T>(call, ops, PowOp<T>{});
    }
  });
}

void atan2_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("atan2 needs a floating dtype (the core promotes integer and bool inputs to float32)");
    } else {
      run<T>(call, ops, Atan2Op<T>{});
    }
  });
}

template <bool kMax>
void max_min_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run<T>(call, ops, MaxMinOp<T>{kMax});
  });
}

template <Cmp K>
void compare_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, TSR_DTYPE_BOOL);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run<T, bool>(call, ops, CompareOp<T>{K});
  });
}

template <Bits K>
void bits_kernel(const TsrKernelCall& call) {
  const Operands ops = binary_operands(call, call.dtype);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      sdk::invalid("bitwise ops need an integer or bool dtype");
    } else if constexpr (std::is_same_v<T, bool> && (K == Bits::kShl || K == Bits::kShr)) {
      sdk::invalid("shifts are not defined for bool tensors");
    } else {
      run<T>(call, ops, BitsOp<T>{K});
    }
  });
}

template <void (*Body)(const TsrKernelCall&)>
void reg(const sdk::Host& host, const char* op, uint64_t mask) {
  host.register_kernel(op, "cuda", mask, &sdk::kernel_entry<kCuda, Body>);
}

}  // namespace

void register_binary(const sdk::Host& host) {
  // The cpu plugin's table (plugins/cpu/src/binary.cpp), op for op and mask for mask.
  reg<&add_or_sub<false>>(host, "add", kAllMask);
  reg<&add_or_sub<true>>(host, "sub", kNumericMask);
  reg<&mul_kernel>(host, "mul", kAllMask);
  reg<&div_kernel>(host, "div", kNumericMask);
  reg<&remainder_kernel<true>>(host, "remainder", kNumericMask);
  reg<&remainder_kernel<false>>(host, "fmod", kNumericMask);
  reg<&pow_kernel>(host, "pow", kNumericMask);
  reg<&atan2_kernel>(host, "atan2", kFloatMask);
  reg<&max_min_kernel<true>>(host, "maximum", kAllMask);
  reg<&max_min_kernel<false>>(host, "minimum", kAllMask);
  reg<&compare_kernel<Cmp::kEq>>(host, "eq", kAllMask);
  reg<&compare_kernel<Cmp::kNe>>(host, "ne", kAllMask);
  reg<&compare_kernel<Cmp::kLt>>(host, "lt", kAllMask);
  reg<&compare_kernel<Cmp::kLe>>(host, "le", kAllMask);
  reg<&compare_kernel<Cmp::kGt>>(host, "gt", kAllMask);
  reg<&compare_kernel<Cmp::kGe>>(host, "ge", kAllMask);
  reg<&compare_kernel<Cmp::kAnd>>(host, "logical_and", kAllMask);
  reg<&compare_kernel<Cmp::kOr>>(host, "logical_or", kAllMask);
  reg<&compare_kernel<Cmp::kXor>>(host, "logical_xor", kAllMask);
  reg<&bits_kernel<Bits::kAnd>>(host, "bitwise_and", kBoolMask | kIntMask);
  reg<&bits_kernel<Bits::kOr>>(host, "bitwise_or", kBoolMask | kIntMask);
  reg<&bits_kernel<Bits::kXor>>(host, "bitwise_xor", kBoolMask | kIntMask);
  reg<&bits_kernel<Bits::kShl>>(host, "bitwise_left_shift", kIntMask);
  reg<&bits_kernel<Bits::kShr>>(host, "bitwise_right_shift", kIntMask);
}

}  // namespace tessera::cuda
