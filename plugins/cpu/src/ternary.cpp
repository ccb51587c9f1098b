// where, lerp, addcmul, addcdiv: out = f(a, b, c) on same-shape operands
// (broadcast inputs arrive with stride 0; out may be self for in-place ops).
// clamp is a composite of maximum and minimum in the core: no kernel here.
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
      {"addcmul", kNumericMask, &kernel_entry<&addc_kernel<false>>},
      {"addcdiv", kFloatMask, &kernel_entry<&addc_kernel<true>>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
