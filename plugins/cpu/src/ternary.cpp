// where, lerp, addcmul, addcdiv, _clamp: out = f(a, b, c) on same-shape
// operands (broadcast inputs arrive with stride 0; out may be self for in-place
// ops). clamp is a core composite that runs _clamp here when it may.
#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"

#include <cmath>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

struct Ternary {
  const DLTensor* a;
  const DLTensor* b;
  const DLTensor* c;
  DLTensor* out;
};

Ternary ternary_operands(const TsrKernelCall& call, const char* a_name, TsrDType a_dtype, const char* b_name,
                         const char* c_name) {
  const DLTensor& a = tensor_arg(call, 0, a_name, a_dtype);
  const DLTensor& b = tensor_arg(call, 1, b_name, call.dtype);
  const DLTensor& c = tensor_arg(call, 2, c_name, call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(a, a_name, out, "out");
  check_same_shape(b, b_name, out, "out");
  check_same_shape(c, c_name, out, "out");
  return {&a, &b, &c, &out};
}

// out = f(a, b, c), element types A, B, C of the storage; Out the output's.
template <typename Out, typename A, typename B, typename C, typename F>
void ternary_map(const Ternary& ops, int64_t grain, F f) {
  run_elementwise<4>(ops.out->ndim, ops.out->shape,
                     {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.a), sdk::IterOperand::of(*ops.b),
                      sdk::IterOperand::of(*ops.c)},
                     grain, sdk::basic_loop<Out, A, B, C>(f));
}

// float16/bfloat16 operands: f runs on float32 blocks (convert.hpp), each
// result rounded back once.
template <typename T, typename F>
void half_ternary_map(const Ternary& ops, int64_t grain, F f) {
  run_elementwise<4>(ops.out->ndim, ops.out->shape,
                     {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.a), sdk::IterOperand::of(*ops.b),
                      sdk::IterOperand::of(*ops.c)},
                     grain, half_block_loop<T, T, T, T>(f));
}

void where_kernel(const TsrKernelCall& call) {
  const Ternary ops = ternary_operands(call, "condition", TSR_DTYPE_BOOL, "self", "other");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // float16/bfloat16 as their bits: a select of integers vectorizes.
    using S = std::conditional_t<kIsHalfLike<T>, uint16_t, storage_t<T>>;
    ternary_map<S, uint8_t, S, S>(ops, kGrain, [](uint8_t c, S x, S y) -> S { return c != 0 ? x : y; });
  });
}

void lerp_kernel(const TsrKernelCall& call) {
  const Ternary ops = ternary_operands(call, "self", call.dtype, "end", "weight");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("lerp needs a floating dtype");
    } else {
      using Cm = compute_t<T>;
      // From end's side for weight >= 0.5: exact at weight 1 (PyTorch's formula).
      const auto lerp = [](Cm a, Cm b, Cm t) -> Cm {
        const Cm d = b - a;
        return std::abs(t) < Cm(0.5) ? a + t * d : b - d * (Cm(1) - t);
      };
      if constexpr (kIsHalfLike<T>) {
        half_ternary_map<T>(ops, kGrain, lerp);
      } else {
        ternary_map<T, T, T, T>(ops, kGrainExpensive, lerp);
      }
    }
  });
}

// min(max(x, lo), hi) with NaN from any operand, as selects (they vectorize).
template <typename C>
inline C clamp_both(C x, C lo, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    const C r = lo != lo ? lo : (x < lo ? lo : x);  // a NaN x fails x < lo and stays
    return hi != hi ? hi : (r > hi ? hi : r);
  } else {
    const C r = x < lo ? lo : x;
    return r > hi ? hi : r;
  }
}

// Every element of t is its first one (a number expanded: stride 0 or size 1).
bool is_broadcast_value(const DLTensor& t) {
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] != 1 && t.strides[d] != 0) return false;
  return true;
}

void clamp_kernel(const TsrKernelCall& call) {
  const Ternary ops = ternary_operands(call, "self", call.dtype, "min", "max");
  // Number bounds (the usual clamp(x, lo, hi)): a one-input map with the two
  // values held in registers; the SDK's loops vectorize broadcast operands of
  // two-input maps only.
  const bool number_bounds = is_broadcast_value(*ops.b) && is_broadcast_value(*ops.c);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    if constexpr (kIsHalfLike<T>) {
      if (number_bounds) {
        const float lo = static_cast<float>(*reinterpret_cast<const T*>(data_ptr(*ops.b)));
        const float hi = static_cast<float>(*reinterpret_cast<const T*>(data_ptr(*ops.c)));
        run_elementwise<2>(ops.out->ndim, ops.out->shape, {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.a)},
                           kGrain, half_block_loop<T, T>([lo, hi](float x) { return clamp_both(x, lo, hi); }));
      } else {
        half_ternary_map<T>(ops, kGrain, [](float x, float lo, float hi) { return clamp_both(x, lo, hi); });
      }
    } else if (number_bounds) {
      const S lo = *reinterpret_cast<const S*>(data_ptr(*ops.b));
      const S hi = *reinterpret_cast<const S*>(data_ptr(*ops.c));
      run_elementwise<2>(ops.out->ndim, ops.out->shape, {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.a)},
                         kGrain, sdk::basic_loop<S, S>([lo, hi](S x) -> S { return clamp_both(x, lo, hi); }));
    } else {
      ternary_map<S, S, S, S>(ops, kGrain, [](S x, S lo, S hi) -> S { return clamp_both(x, lo, hi); });
    }
  });
}

template <typename T>
compute_t<T> value_as(const TsrKernelCall& call) {
  const TsrValue& v = arg(call, 3, "value");
  if (v.tag == TSR_VALUE_NONE) return compute_t<T>(1);
  check_scalar(v, "value");
  if constexpr (!kIsFloating<T>) {
    if (v.tag == TSR_VALUE_FLOAT) invalid("value must be an int for an integer dtype");
    return v.tag == TSR_VALUE_INT ? static_cast<T>(v.as.i) : static_cast<T>(v.as.b != 0);  // ints wrap
  } else {
    using C = compute_t<T>;
    return v.tag == TSR_VALUE_INT ? C(v.as.i) : v.tag == TSR_VALUE_FLOAT ? C(v.as.f) : C(v.as.b != 0);
  }
}

template <bool kDiv>
void addc_kernel(const TsrKernelCall& call) {
  const Ternary ops = ternary_operands(call, "self", call.dtype, "tensor1", "tensor2");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if constexpr (kDiv) {
        invalid("integer division is not supported");
      } else {
        const T value = value_as<T>(call);
        ternary_map<T, T, T, T>(ops, kGrain,
                                [value](T s, T x, T y) -> T { return wrap_add(s, wrap_mul(value, wrap_mul(x, y))); });
      }
    } else {
      using C = compute_t<T>;
      const C value = value_as<T>(call);
      const auto addc = [value](C s, C x, C y) -> C { return kDiv ? s + value * (x / y) : s + value * (x * y); };
      if constexpr (kIsHalfLike<T>) {
        half_ternary_map<T>(ops, kGrain, addc);
      } else {
        ternary_map<T, T, T, T>(ops, kGrain, addc);
      }
    }
  });
}

}  // namespace

void register_ternary_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"where", kAllMask, &kernel_entry<&where_kernel>},
      {"lerp", kFloatMask, &kernel_entry<&lerp_kernel>},
      {"_clamp", kAllMask, &kernel_entry<&clamp_kernel>},
      {"addcmul", kNumericMask, &kernel_entry<&addc_kernel<false>>},
      {"addcdiv", kFloatMask, &kernel_entry<&addc_kernel<true>>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
