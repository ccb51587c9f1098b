// neg, exp, relu: out = f(self), same shape and dtype.
#include "common.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"

#include <cmath>

namespace tessera::cpu {
namespace {

struct Unary {
  const DLTensor* self;
  DLTensor* out;
};

Unary unary_operands(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(self, "self", out, "out");
  return {&self, &out};
}

// float16/bfloat16 bit patterns: sign bit and the +inf magnitude, identical
// layout for both (sign, exponent all ones, mantissa zero).
constexpr uint16_t kSignBit16 = 0x8000u;
constexpr uint16_t kInfBitsHalf = 0x7c00u;
constexpr uint16_t kInfBitsBf16 = 0x7f80u;

}  // namespace

void neg_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("negation is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T { return wrap_neg(x); });
    } else if constexpr (kIsHalfLike<T>) {
      // Negation only flips the sign bit: exact, NaN included, and vectorizable
      // without converting through float.
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T {
        T r;
        r.bits = static_cast<uint16_t>(x.bits ^ kSignBit16);
        return r;
      });
    } else {
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T { return -x; });
    }
  });
}

void exp_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("exp needs a floating dtype (the core promotes integer and bool inputs to float32)");
    } else {
      using C = compute_t<T>;
      unary_map<T, T>(*ops.out, *ops.self, kGrainExpensive, [](T x) -> T { return T(std::exp(C(x))); });
    }
  });
}

void relu_kernel(const TsrKernelCall& call) {
  const Unary ops = unary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("relu is not defined for bool tensors");
    } else if constexpr (kIsHalfLike<T>) {
      // Negative and not NaN -> +0; everything else (NaN, -0, positives) is kept,
      // which is what `x < 0 ? 0 : x` gives in float.
      constexpr uint16_t kInf = std::is_same_v<T, sdk::Half> ? kInfBitsHalf : kInfBitsBf16;
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T {
        const uint16_t mag = static_cast<uint16_t>(x.bits & ~kSignBit16);
        const bool negative = (x.bits & kSignBit16) != 0 && mag != 0 && mag <= kInf;
        T r;
        r.bits = negative ? uint16_t{0} : x.bits;
        return r;
      });
    } else if constexpr (std::is_unsigned_v<T>) {
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T { return x; });
    } else {
      // NaN < 0 is false, so NaN passes through.
      unary_map<T, T>(*ops.out, *ops.self, kGrain, [](T x) -> T { return x < T(0) ? T(0) : x; });
    }
  });
}

void register_unary_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"neg", kNumericMask, &kernel_entry<&neg_kernel>},
      {"exp", kFloatMask, &kernel_entry<&exp_kernel>},
      {"relu", kNumericMask, &kernel_entry<&relu_kernel>},
  };
  register_kernels(host, kTable);
}

}  // namespace tessera::cpu
