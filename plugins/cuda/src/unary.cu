// The CUDA plugin's unary pointwise kernels (docs/ops/unary.md): the 38 ops of
// the cpu plugin's plugins/cpu/src/unary.cpp, with its dtype masks and
// semantics. out = f(self), same shape, any strides; out has the dispatch dtype
// except for logical_not, isnan, isinf, isfinite (bool). float16/bfloat16
// compute in float and round once; integers wrap. Every op is one device
// functor run by the elementwise launcher (elementwise.cuh) on the call's stream.
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

// ---- operands and launch ----------------------------------------------------

struct Unary {
  const DLTensor* self;
  DLTensor* out;
};

Unary unary_operands(const TsrKernelCall& call, TsrDType out_dtype) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, out_dtype);
  sdk::check_same_shape(self, "self", out, "out");
  return {&self, &out};
}
Unary unary_operands(const TsrKernelCall& call) { return unary_operands(call, call.dtype); }

/// out = f(self) elementwise; Out and In are the storage types the launcher
/// reads and writes (which may reinterpret the dtype: bool as its byte, a
/// floating type as its bits).
template <typename Out, typename In, typename F>
void launch_unary(const TsrKernelCall& call, const Unary& ops, F f) {
  DeviceScope scope(call.device_index);
  const Geometry<2> g = make_geometry<2>({ops.out, ops.self});
  const std::array<const char*, 1> in = {data_as<const char>(*ops.self)};
  launch_elementwise<Out, In>(g, data_as<char>(*ops.out), in, f, stream_of(call));
}

// A floating type's bits: the unsigned integer of its size, the sign bit, the
// magnitude mask (all but the sign bit) and +inf (exponent all ones, mantissa
// 0). Ops that only look at or flip the sign, or classify, work on these exactly.
template <typename T>
struct FloatBits;
template <>
struct FloatBits<__half> {
  using U = uint16_t;
  static constexpr U kSign = 0x8000u, kMag = 0x7fffu, kInf = 0x7c00u;
};
template <>
struct FloatBits<__nv_bfloat16> {
  using U = uint16_t;
  static constexpr U kSign = 0x8000u, kMag = 0x7fffu, kInf = 0x7f80u;
};
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr U kSign = 0x80000000u, kMag = 0x7fffffffu, kInf = 0x7f800000u;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr U kSign = 0x8000000000000000ull, kMag = 0x7fffffffffffffffull,
                     kInf = 0x7ff0000000000000ull;
};

// ---- floating functions: float (also for the half types) and double ---------

// Names the float function explicitly, so float math never runs in double.
#define TSR_FLOAT_FN(Name, float_fn, double_fn)                                \
  struct Name {                                                               \
    __device__ __forceinline__ float operator()(float x) const { return ::float_fn(x); }   \
    __device__ __forceinline__ double operator()(double x) const { return ::double_fn(x); } \
  };
TSR_FLOAT_FN(Exp, expf, exp)
TSR_FLOAT_FN(Exp2, exp2f, exp2)
TSR_FLOAT_FN(Expm1, expm1f, expm1)
TSR_FLOAT_FN(Log, logf, log)
TSR_FLOAT_FN(Log2, log2f, log2)
TSR_FLOAT_FN(Log10, log10f, log10)
TSR_FLOAT_FN(Log1p, log1pf, log1p)
TSR_FLOAT_FN(Sqrt, sqrtf, sqrt)
TSR_FLOAT_FN(Sin, sinf, sin)
TSR_FLOAT_FN(Cos, cosf, cos)
TSR_FLOAT_FN(Tan, tanf, tan)
TSR_FLOAT_FN(Asin, asinf, asin)
TSR_FLOAT_FN(Acos, acosf, acos)
TSR_FLOAT_FN(Atan, atanf, atan)
TSR_FLOAT_FN(Sinh, sinhf, sinh)
TSR_FLOAT_FN(Cosh, coshf, cosh)
TSR_FLOAT_FN(Tanh, tanhf, tanh)
TSR_FLOAT_FN(Erf, erff, erf)
TSR_FLOAT_FN(Erfc, erfcf, erfc)
TSR_FLOAT_FN(Fabs, fabsf, fabs)
TSR_FLOAT_FN(Floor, floorf, floor)
TSR_FLOAT_FN(Ceil, ceilf, ceil)
TSR_FLOAT_FN(Round, rintf, rint)  // half to even in the default rounding mode
TSR_FLOAT_FN(Trunc, truncf, trunc)
#undef TSR_FLOAT_FN

// The formulas below are the cpu plugin's, operation for operation, so that
// special values (NaN, +-inf, +-0) come out the same.

// Two correctly rounded operations, as on cpu (rsqrtf is only within 2 ulp).
struct Rsqrt {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return C(1) / Sqrt{}(x); }
};
struct Reciprocal {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return C(1) / x; }
};
// e = exp(-|x|) never overflows; e / (1 + e) keeps the accuracy for x < 0.
// NaN: e is NaN, and so is e * r.
struct Sigmoid {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const {
    const C e = Exp{}(-Fabs{}(x));
    const C r = C(1) / (C(1) + e);
    return x >= C(0) ? r : e * r;
  }
};
// x * sigmoid(x): NaN at -inf (-inf * 0), as on cpu.
struct Silu {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return x * Sigmoid{}(x); }
};
// x Phi(x) = 0.5 x erfc(-x / sqrt 2): no cancellation for x << 0.
struct GeluErf {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const {
    return C(0.5) * x * Erfc{}(x * C(-0.70710678118654752440));
  }
};
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
struct GeluTanh {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const {
    return C(0.5) * x * (C(1) + Tanh{}(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
  }
};
// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
template <typename C>
struct Softplus {
  C beta;
  C threshold;
  __device__ __forceinline__ C operator()(C x) const {
    const C bx = x * beta;
    return bx > threshold ? x : Log1p{}(Exp{}(bx)) / beta;
  }
};

// ---- sign-aware and integer functors -------------------------------------------

struct Identity {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return x; }
};
struct NegateWrap {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const { return wrap_neg(x); }
};
struct AbsWrap {  // signed integers: abs(min) wraps to min
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const { return x < T(0) ? wrap_neg(x) : x; }
};
struct Relu {  // signed integers
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
struct SquareWrap {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const { return wrap_mul(x, x); }
};
struct Square {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return x * x; }
};
struct SignInt {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return static_cast<T>(x != T(0));
    else return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
// +-1 for non-zero numbers; zeros (keeping their sign) and NaN pass through.
struct SignFloat {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const { return x > C(0) ? C(1) : x < C(0) ? C(-1) : x; }
};
struct IsNonZero {  // sign of a bool
  __device__ __forceinline__ uint8_t operator()(uint8_t x) const { return x != 0; }
};
struct IsZero {  // logical_not of bool and integers, bitwise_not of bool
  template <typename T>
  __device__ __forceinline__ uint8_t operator()(T x) const { return x == T(0); }
};
struct BitwiseNot {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const { return static_cast<T>(~x); }
};

// Floating neg, abs, relu on the bits: exact, NaN payloads kept, and no
// conversion through float for the half types.
template <typename T>
struct NegBits {
  using B = FloatBits<T>;
  __device__ __forceinline__ typename B::U operator()(typename B::U x) const {
    return static_cast<typename B::U>(x ^ B::kSign);
  }
};
template <typename T>
struct AbsBits {
  using B = FloatBits<T>;
  __device__ __forceinline__ typename B::U operator()(typename B::U x) const {
    return static_cast<typename B::U>(x & B::kMag);
  }
};
// Negative and not NaN -> +0; NaN, -0 and positives are kept (cpu's `x < 0 ? 0 : x`).
template <typename T>
struct ReluBits {
  using B = FloatBits<T>;
  __device__ __forceinline__ typename B::U operator()(typename B::U x) const {
    const typename B::U mag = static_cast<typename B::U>(x & B::kMag);
    const bool negative = (x & B::kSign) != 0 && mag != 0 && mag <= B::kInf;
    return negative ? typename B::U(0) : x;
  }
};

// ---- bool-valued ops -------------------------------------------------------------

enum class Pred { LogicalNot, IsNan, IsInf, IsFinite };

// A floating value classified by its bits: exact for every dtype, and the same
// answers as cpu's (x == 0, x != x, |x| == inf, |x| <= max).
template <Pred P, typename T>
struct FloatPredicate {
  using B = FloatBits<T>;
  __device__ __forceinline__ uint8_t operator()(typename B::U x) const {
    const typename B::U mag = static_cast<typename B::U>(x & B::kMag);
    if constexpr (P == Pred::LogicalNot) return mag == 0;
    else if constexpr (P == Pred::IsNan) return mag > B::kInf;
    else if constexpr (P == Pred::IsInf) return mag == B::kInf;
    else return mag < B::kInf;
  }
};
// isnan, isinf, isfinite of bool and integers: constants (integers are finite).
template <uint8_t kValue>
struct Constant {
  template <typename T>
  __device__ __forceinline__ uint8_t operator()(T) const { return kValue; }
};

// ---- kernels ------------------------------------------------------------------------

[[noreturn]] void needs_floating() {
  sdk::invalid("needs a floating dtype (the core promotes integer and bool inputs to float32)");
}

// Ops defined only on floating dtypes.
template <typename Op>
void float_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) needs_floating();
    else launch_unary<T, T>(call, ops, Op{});
  });
}

// floor, ceil, round, trunc: identity on integers.
template <typename Op>
void rounding_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) sdk::invalid("not defined for bool tensors");
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, Identity{});
    else launch_unary<T, T>(call, ops, Op{});
  });
}

void gelu_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  const std::string_view mode = sdk::string_arg(call, 1, "approximate");
  if (mode != "none" && mode != "tanh")
    sdk::invalid("approximate must be the string 'none' or 'tanh', got '" + std::string(mode) + "'");
  const bool tanh_form = mode == "tanh";
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) needs_floating();
    else if (tanh_form) launch_unary<T, T>(call, ops, GeluTanh{});
    else launch_unary<T, T>(call, ops, GeluErf{});
  });
}

void softplus_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  const double beta = sdk::scalar_arg<double>(call, 1, "beta");
  const double threshold = sdk::scalar_arg<double>(call, 2, "threshold");
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      needs_floating();
    } else {
      using C = compute_t<T>;
      launch_unary<T, T>(call, ops, Softplus<C>{static_cast<C>(beta), static_cast<C>(threshold)});
    }
  });
}

void neg_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) sdk::invalid("negation is not defined for bool tensors");
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, NegateWrap{});
    else launch_unary<typename FloatBits<T>::U, typename FloatBits<T>::U>(call, ops, NegBits<T>{});
  });
}

void abs_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) sdk::invalid("abs is not defined for bool tensors");
    else if constexpr (std::is_unsigned_v<T>) launch_unary<T, T>(call, ops, Identity{});
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, AbsWrap{});
    else launch_unary<typename FloatBits<T>::U, typename FloatBits<T>::U>(call, ops, AbsBits<T>{});
  });
}

void relu_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) sdk::invalid("relu is not defined for bool tensors");
    else if constexpr (std::is_unsigned_v<T>) launch_unary<T, T>(call, ops, Identity{});
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, Relu{});
    else launch_unary<typename FloatBits<T>::U, typename FloatBits<T>::U>(call, ops, ReluBits<T>{});
  });
}

void sign_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) launch_unary<uint8_t, uint8_t>(call, ops, IsNonZero{});
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, SignInt{});
    else launch_unary<T, T>(call, ops, SignFloat{});
  });
}

void square_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>)
      sdk::invalid("square of a bool tensor computes in int64 (the core promotes it)");
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, SquareWrap{});
    else launch_unary<T, T>(call, ops, Square{});
  });
}

void bitwise_not_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) launch_unary<uint8_t, uint8_t>(call, ops, IsZero{});
    else if constexpr (kIsInteger<T>) launch_unary<T, T>(call, ops, BitwiseNot{});
    else sdk::invalid("bitwise_not is only defined for bool and integer tensors");
  });
}

// out is bool, self any dtype.
template <Pred P>
void predicate_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call, TSR_DTYPE_BOOL);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    if constexpr (kIsFloating<T>) {
      using U = typename FloatBits<T>::U;
      launch_unary<uint8_t, U>(call, ops, FloatPredicate<P, T>{});
    } else if constexpr (P == Pred::LogicalNot) {
      launch_unary<uint8_t, S>(call, ops, IsZero{});
    } else {
      launch_unary<uint8_t, S>(call, ops, Constant<P == Pred::IsFinite ? 1 : 0>{});
    }
  });
}

}  // namespace

void register_unary(const sdk::Host& host) {
  struct Entry {
    const char* op;
    uint64_t dtype_mask;
    TsrKernelFn fn;
  };
  static constexpr Entry kTable[] = {
      {"neg", kNumericMask, &sdk::kernel_entry<kCuda, neg_kernel>},
      {"exp", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Exp>>},
      {"relu", kNumericMask, &sdk::kernel_entry<kCuda, relu_kernel>},
      {"abs", kNumericMask, &sdk::kernel_entry<kCuda, abs_kernel>},
      {"sign", kAllMask, &sdk::kernel_entry<kCuda, sign_kernel>},
      {"exp2", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Exp2>>},
      {"expm1", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Expm1>>},
      {"log", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Log>>},
      {"log2", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Log2>>},
      {"log10", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Log10>>},
      {"log1p", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Log1p>>},
      {"sqrt", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Sqrt>>},
      {"rsqrt", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Rsqrt>>},
      {"reciprocal", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Reciprocal>>},
      {"square", kNumericMask, &sdk::kernel_entry<kCuda, square_kernel>},
      {"sin", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Sin>>},
      {"cos", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Cos>>},
      {"tan", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Tan>>},
      {"asin", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Asin>>},
      {"acos", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Acos>>},
      {"atan", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Atan>>},
      {"sinh", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Sinh>>},
      {"cosh", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Cosh>>},
      {"tanh", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Tanh>>},
      {"sigmoid", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Sigmoid>>},
      {"gelu", kFloatMask, &sdk::kernel_entry<kCuda, gelu_kernel>},
      {"silu", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Silu>>},
      {"softplus", kFloatMask, &sdk::kernel_entry<kCuda, softplus_kernel>},
      {"erf", kFloatMask, &sdk::kernel_entry<kCuda, float_kernel<Erf>>},
      {"floor", kNumericMask, &sdk::kernel_entry<kCuda, rounding_kernel<Floor>>},
      {"ceil", kNumericMask, &sdk::kernel_entry<kCuda, rounding_kernel<Ceil>>},
      {"round", kNumericMask, &sdk::kernel_entry<kCuda, rounding_kernel<Round>>},
      {"trunc", kNumericMask, &sdk::kernel_entry<kCuda, rounding_kernel<Trunc>>},
      {"logical_not", kAllMask, &sdk::kernel_entry<kCuda, predicate_kernel<Pred::LogicalNot>>},
      {"bitwise_not", kBoolMask | kIntMask, &sdk::kernel_entry<kCuda, bitwise_not_kernel>},
      {"isnan", kAllMask, &sdk::kernel_entry<kCuda, predicate_kernel<Pred::IsNan>>},
      {"isinf", kAllMask, &sdk::kernel_entry<kCuda, predicate_kernel<Pred::IsInf>>},
      {"isfinite", kAllMask, &sdk::kernel_entry<kCuda, predicate_kernel<Pred::IsFinite>>},
  };
  for (const Entry& k : kTable) host.register_kernel(k.op, "cuda", k.dtype_mask, k.fn);
}

}  // namespace tessera::cuda
