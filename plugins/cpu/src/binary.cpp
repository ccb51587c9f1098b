// Binary pointwise kernels: out = op(self, other) on same-shape, same-dtype
// operands (broadcast inputs arrive with stride 0; out may be self for in-place
// ops). Comparisons and logical ops write bool.
#include "isa.hpp"
#include "binary_math.hpp"
#include "binary_dense.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"
#include "pow_math.hpp"
#include "sleef_math.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <string>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

struct Binary {
  const DLTensor* self;
  const DLTensor* other;
  DLTensor* out;
};

// The operands of a call that is not the usual one: each checked with a
// message that says what is wrong.
TSR_CPU_COLD Binary checked_binary_operands(const TsrKernelCall& call, TsrDType out_dtype) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = output(call, 0, out_dtype >= 0 ? out_dtype : call.dtype);
  check_binary_shapes(self, other, out);
  return {&self, &other, &out};
}

[[gnu::always_inline]] inline Binary binary_operands(const TsrKernelCall& call, TsrDType out_dtype = -1) {
  // The usual call, checked at once; anything else gets the detailed checks.
  if (call.args != nullptr && call.num_args >= 2 && call.outputs != nullptr && call.num_outputs >= 1 &&
      call.args[0].tag == TSR_VALUE_TENSOR && call.args[1].tag == TSR_VALUE_TENSOR) [[likely]] {  // checked: above
    const DLDataType want = dlpack_dtype(call.dtype);
    const DLTensor* self = call.args[0].as.tensor;   // checked: num_args >= 2 above
    const DLTensor* other = call.args[1].as.tensor;  // checked: num_args >= 2 above
    DLTensor* out = call.outputs;
    if (plain_operand(self, want) & plain_operand(other, want) &
        plain_operand(out, out_dtype >= 0 ? dlpack_dtype(out_dtype) : want)) [[likely]] {
      check_binary_shapes(*self, *other, *out);
      return {self, other, out};
    }
  }
  return checked_binary_operands(call, out_dtype);
}

[[noreturn]] TSR_CPU_COLD void float_alpha_for_integers(double alpha) {
  invalid("alpha must be an int or bool for an integer or bool dtype, got the float " + std::to_string(alpha));
}

// alpha of add/sub, in the type the arithmetic runs in. Mirrors PyTorch: a
// floating alpha is refused for integer and bool dtypes rather than truncated.
template <typename T>
compute_t<T> alpha_as(const TsrKernelCall& call) {
  const TsrValue& v = arg(call, 2, "alpha");
  if (v.tag == TSR_VALUE_NONE) return compute_t<T>(1);  // the schema default
  check_scalar(v, "alpha");
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

// float16/bfloat16: blocks of the operands widened to float32, f run on them
// (vectorized), each result rounded back once, as T(f(float(x), float(y))).
template <typename T, typename Out = T, typename F>
void half_map(const Binary& ops, int64_t grain, F f) {
  run_elementwise<3>(ops.out->ndim, ops.out->shape,
                     {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.self),
                      sdk::IterOperand::of(*ops.other)},
                     grain, half_block_loop<Out, T, T>(f));
}

// The general path of add/sub: every dtype, layout and alpha, every check; the
// usual dense float32 call never comes here (dense_f32_entry runs it).
template <bool kSubtract>
void add_or_sub(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      if constexpr (kSubtract) {
        invalid("subtraction is not defined for bool tensors");
      } else {  // logical or; with alpha false, other drops out
        const bool alpha = alpha_as<bool>(call);
        binary_map<bool>(*ops.out, *ops.self, *ops.other, kGrain, [alpha](uint8_t x, uint8_t y) -> uint8_t {
          return static_cast<uint8_t>((x != 0) | (alpha & (y != 0)));
        });
      }
    } else if constexpr (kIsInteger<T>) {
      const T alpha = alpha_as<T>(call);
      binary_map<T>(*ops.out, *ops.self, *ops.other, kGrain, [alpha](T x, T y) -> T {
        return kSubtract ? wrap_sub(x, wrap_mul(alpha, y)) : wrap_add(x, wrap_mul(alpha, y));
      });
    } else if constexpr (kIsHalfLike<T>) {
      const float alpha = alpha_as<T>(call);
      half_map<T>(ops, kGrain, [alpha](float x, float y) { return kSubtract ? x - alpha * y : x + alpha * y; });
    } else {
      const T alpha = alpha_as<T>(call);
      binary_map<T>(*ops.out, *ops.self, *ops.other, kGrain,
                    [alpha](T x, T y) -> T { return kSubtract ? x - alpha * y : x + alpha * y; });
    }
  });
}

// Python's floor division for floating point (the quotient of a // b): exact
// where floor(a / b) would be misled by the rounding of a / b (1 // 0.1 == 9).
template <typename C>
inline C floor_divide(C a, C b) {
  if (b == 0) return a / b;  // IEEE: +-inf or NaN
  const C rem = std::fmod(a, b);
  C q = (a - rem) / b;  // an integer, up to the rounding of the division
  if (rem != 0 && ((b < 0) != (rem < 0))) q -= 1;
  if (q == 0) return std::copysign(C(0), a / b);
  C floored = std::floor(q);
  if (q - floored > C(0.5)) floored += 1;  // q was just below an integer
  return floored;
}

template <typename T>
inline T int_trunc_divide(T a, T b) {  // b != 0
  if constexpr (kDivideInDouble<T>) {
    int32_t q, r;
    trunc_divmod32(a, b, q, r);
    return static_cast<T>(q);  // int8 / int16: -128 / -1 wraps to -128 here
  } else if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);  // MIN / -1 overflows: wrap like two's complement
  }
  return static_cast<T>(a / b);
}

template <typename T>
inline T int_floor_divide(T a, T b) {  // b != 0
  if constexpr (kDivideInDouble<T>) {
    int32_t q, r;
    trunc_divmod32(a, b, q, r);
    return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(q) - floor_step32(r, b)));
  } else if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);
    const T q = static_cast<T>(a / b);
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

// True if pred holds for any element of t. Broadcast (stride 0) and size-1 dims are
// dropped first, so each distinct element is read once. Checked before any
// output is written, so a failing in-place division leaves self untouched.
template <typename T, typename Pred>
bool any_of(const DLTensor& t, Pred pred) {
  int64_t shape[sdk::StridedIter<1>::kMaxDims];
  int64_t strides[sdk::StridedIter<1>::kMaxDims];
  int32_t nd = 0;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return false;
    if (t.shape[d] == 1 || t.strides[d] == 0) continue;
    if (nd == sdk::StridedIter<1>::kMaxDims) invalid("more than 64 dimensions of size > 1");
    shape[nd] = t.shape[d];
    strides[nd] = t.strides[d];
    ++nd;
  }
  sdk::IterOperand op{data_ptr(t), strides, static_cast<int64_t>(sizeof(T))};
  const sdk::StridedIter<1> it(nd, shape, {op});
  bool found = false;
  it.for_each([&found, &pred](char** p, const int64_t* s, int64_t n) {
    if (found) return;
    bool hit = false;
    if (s[0] == static_cast<int64_t>(sizeof(T))) {
      const T* x = reinterpret_cast<const T*>(p[0]);
      for (int64_t i = 0; i < n; ++i) hit |= pred(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) hit |= pred(*reinterpret_cast<const T*>(p[0] + i * s[0]));
    }
    found = hit;
  });
  return found;
}

template <typename T>
bool any_zero(const DLTensor& t) {
  return any_of<T>(t, [](T x) { return x == 0; });
}

// out = f(C(self), C(other)) with C the compute type of T (bool for bool, float
// for float16/bfloat16), stored as Out (T itself, or bool for comparisons).
template <typename T, typename Out = T, typename F>
void map_compute(const Binary& ops, int64_t grain, F f) {
  if constexpr (kIsHalfLike<T>) {
    half_map<T, Out>(ops, grain, f);
  } else {
    using S = storage_t<T>;
    using SO = storage_t<Out>;
    run_elementwise<3>(ops.out->ndim, ops.out->shape,
                       {sdk::IterOperand::of(*ops.out), sdk::IterOperand::of(*ops.self),
                        sdk::IterOperand::of(*ops.other)},
                       grain, sdk::basic_loop<SO, S, S>([f](S x, S y) -> SO {
                         using C = compute_t<T>;  // bool for bool: a byte other than 0/1 reads true
                         if constexpr (std::is_same_v<Out, bool>) {
                           return static_cast<SO>(f(static_cast<C>(x), static_cast<C>(y)) ? 1 : 0);
                         } else {
                           return static_cast<SO>(static_cast<Out>(f(static_cast<C>(x), static_cast<C>(y))));
                         }
                       }));
  }
}

enum class Rounding { kNone, kTrunc, kFloor };

Rounding rounding_mode(const TsrKernelCall& call) {
  if (call.num_args <= 2 || sdk::is_none(call, 2, "rounding_mode")) return Rounding::kNone;  // optional
  const std::string_view mode = sdk::string_arg(call, 2, "rounding_mode");
  if (mode == "trunc") return Rounding::kTrunc;
  if (mode == "floor") return Rounding::kFloor;
  invalid("rounding_mode must be 'trunc', 'floor' or none, got '" + std::string(mode) + "'");
}

// The general path of mul (see add_or_sub).
void mul_general(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {  // logical and
      binary_map<bool>(*ops.out, *ops.self, *ops.other, kGrain,
                       [](uint8_t x, uint8_t y) -> uint8_t { return static_cast<uint8_t>((x != 0) & (y != 0)); });
    } else if constexpr (kIsInteger<T>) {
      binary_map<T>(*ops.out, *ops.self, *ops.other, kGrain, [](T x, T y) -> T { return wrap_mul(x, y); });
    } else if constexpr (kIsHalfLike<T>) {
      half_map<T>(ops, kGrain, [](float x, float y) { return x * y; });
    } else {
      binary_map<T>(*ops.out, *ops.self, *ops.other, kGrain, [](T x, T y) -> T { return x * y; });
    }
  });
}


void div_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  const Rounding mode = rounding_mode(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("division is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if (mode == Rounding::kNone) {
        invalid("true division needs a floating dtype (the core promotes integer inputs to float32)");
      }
      if (any_zero<T>(*ops.other)) invalid("integer division by zero");
      if (mode == Rounding::kTrunc) {
        binary_map<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                      [](T x, T y) -> T { return int_trunc_divide(x, y); });
      } else {
        binary_map<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                      [](T x, T y) -> T { return int_floor_divide(x, y); });
      }
    } else if constexpr (kIsHalfLike<T>) {
      switch (mode) {
        case Rounding::kNone: half_map<T>(ops, kGrain, [](float x, float y) { return x / y; }); break;
        case Rounding::kTrunc: half_map<T>(ops, kGrain, [](float x, float y) { return std::trunc(x / y); }); break;
        case Rounding::kFloor:
          half_map<T>(ops, kGrainExpensive, [](float x, float y) { return floor_divide<float>(x, y); });
          break;
      }
    } else {
      using C = compute_t<T>;
      switch (mode) {
        case Rounding::kNone:
          binary_map<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                        [](T x, T y) -> T { return T(C(x) / C(y)); });
          break;
        case Rounding::kTrunc:
          binary_map<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                        [](T x, T y) -> T { return T(std::trunc(C(x) / C(y))); });
          break;
        case Rounding::kFloor:
          binary_map<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                        [](T x, T y) -> T { return T(floor_divide<C>(C(x), C(y))); });
          break;
      }
    }
  });
}

// float_remainder (binary_math.hpp) on whole vectors: fmod, then a nonzero
// result whose sign differs from b's moves by b, and a zero takes b's sign.
template <typename V>
[[gnu::always_inline]] inline V vector_remainder(V a, V b) {
  if constexpr (std::is_arithmetic_v<V>) {  // the scalar SLEEF fallback's "vectors"
    return float_remainder(a, b);
  } else {
    using E = std::remove_reference_t<decltype(a[0])>;
    using Bits = std::conditional_t<sizeof(E) == 8, int64_t, int32_t>;
    typedef Bits I __attribute__((vector_size(sizeof(V))));
    V r = sleef::fmod(a, b);
    const auto zero = r == V{};
    r = (~zero & ((r < V{}) != (b < V{}))) ? r + b : r;
    const V signed_zero = reinterpret_cast<V>(reinterpret_cast<I>(b) & std::numeric_limits<Bits>::min());
    return zero ? signed_zero : r;
  }
}

void remainder_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("remainder is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if (any_zero<T>(*ops.other)) invalid("integer remainder by zero");
      map_compute<T>(ops, kGrainExpensive, [](T x, T y) { return int_remainder(x, y); });
    } else {
      sleef::vector_map2<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                            [](auto x, auto y) __attribute__((always_inline)) { return vector_remainder(x, y); });
    }
  });
}

void fmod_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("fmod is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if (any_zero<T>(*ops.other)) invalid("integer fmod by zero");
      map_compute<T>(ops, kGrainExpensive, [](T x, T y) { return int_fmod(x, y); });
    } else {
      sleef::vector_map2<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                            [](auto x, auto y) __attribute__((always_inline)) { return sleef::fmod(x, y); });
    }
  });
}

void pow_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("pow is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (any_of<T>(*ops.other, [](T x) { return x < 0; }))
          invalid("integers to negative integer powers are not allowed");
      }
      map_compute<T>(ops, kGrainExpensive, [](T x, T y) { return int_pow(x, y); });
    } else {
      // float32 (and float16/bfloat16) at AVX-512: pow_math.hpp's, in double; SLEEF elsewhere.
      sleef::vector_map2<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                            [](auto x, auto y) __attribute__((always_inline)) { return powmath::pow(x, y); });
    }
  });
}

void atan2_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("atan2 needs a floating dtype (the core promotes integer and bool inputs to float32)");
    } else {
      sleef::vector_map2<T>(*ops.out, *ops.self, *ops.other, kGrainExpensive,
                            [](auto x, auto y) __attribute__((always_inline)) { return sleef::atan2(x, y); });
    }
  });
}

template <bool kMax>
void max_min_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_compute<T>(ops, kGrain, [](auto x, auto y) { return kMax ? nan_max(x, y) : nan_min(x, y); });
  });
}

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge, And, Or, Xor };

// Comparisons and logical ops: inputs of the dispatch dtype, bool out.
template <Cmp K>
void compare_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call, TSR_DTYPE_BOOL);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_compute<T, bool>(ops, kGrain, [](auto x, auto y) -> bool {
      using C = decltype(x);
      if constexpr (K == Cmp::Eq) return x == y;
      if constexpr (K == Cmp::Ne) return x != y;
      if constexpr (K == Cmp::Lt) return x < y;
      if constexpr (K == Cmp::Le) return x <= y;
      if constexpr (K == Cmp::Gt) return x > y;
      if constexpr (K == Cmp::Ge) return x >= y;
      if constexpr (K == Cmp::And) return (x != C(0)) & (y != C(0));
      if constexpr (K == Cmp::Or) return (x != C(0)) | (y != C(0));
      if constexpr (K == Cmp::Xor) return (x != C(0)) != (y != C(0));
    });
  });
}

enum class Bits { And, Or, Xor, Shl, Shr };

template <Bits K>
void bits_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      invalid("bitwise ops need an integer or bool dtype");
    } else if constexpr (K == Bits::Shl || K == Bits::Shr) {
      if constexpr (std::is_same_v<T, bool>) {
        invalid("shifts are not defined for bool tensors");
      } else {
        map_compute<T>(ops, kGrain, [](T x, T y) { return K == Bits::Shl ? shift_left(x, y) : shift_right(x, y); });
      }
    } else {
      map_compute<T>(ops, kGrain, [](T x, T y) -> T {
        if constexpr (K == Bits::And) return static_cast<T>(x & y);
        if constexpr (K == Bits::Or) return static_cast<T>(x | y);
        return static_cast<T>(x ^ y);
      });
    }
  });
}

}  // namespace

void register_binary_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"add", kAllMask, &dense_f32_entry<DenseOp::Add, true, &add_or_sub<false>>},
      {"sub", kNumericMask, &dense_f32_entry<DenseOp::Sub, true, &add_or_sub<true>>},
      {"mul", kAllMask, &dense_f32_entry<DenseOp::Mul, false, &mul_general>},
      {"div", kNumericMask, &kernel_entry<&div_kernel>},
      {"remainder", kNumericMask, &kernel_entry<&remainder_kernel>},
      {"fmod", kNumericMask, &kernel_entry<&fmod_kernel>},
      {"pow", kNumericMask, &kernel_entry<&pow_kernel>},
      {"atan2", kFloatMask, &kernel_entry<&atan2_kernel>},
      {"maximum", kAllMask, &kernel_entry<&max_min_kernel<true>>},
      {"minimum", kAllMask, &kernel_entry<&max_min_kernel<false>>},
      {"eq", kAllMask, &kernel_entry<&compare_kernel<Cmp::Eq>>},
      {"ne", kAllMask, &kernel_entry<&compare_kernel<Cmp::Ne>>},
      {"lt", kAllMask, &kernel_entry<&compare_kernel<Cmp::Lt>>},
      {"le", kAllMask, &kernel_entry<&compare_kernel<Cmp::Le>>},
      {"gt", kAllMask, &kernel_entry<&compare_kernel<Cmp::Gt>>},
      {"ge", kAllMask, &kernel_entry<&compare_kernel<Cmp::Ge>>},
      {"logical_and", kAllMask, &kernel_entry<&compare_kernel<Cmp::And>>},
      {"logical_or", kAllMask, &kernel_entry<&compare_kernel<Cmp::Or>>},
      {"logical_xor", kAllMask, &kernel_entry<&compare_kernel<Cmp::Xor>>},
      {"bitwise_and", kBoolMask | kIntMask, &kernel_entry<&bits_kernel<Bits::And>>},
      {"bitwise_or", kBoolMask | kIntMask, &kernel_entry<&bits_kernel<Bits::Or>>},
      {"bitwise_xor", kBoolMask | kIntMask, &kernel_entry<&bits_kernel<Bits::Xor>>},
      {"bitwise_left_shift", kIntMask, &kernel_entry<&bits_kernel<Bits::Shl>>},
      {"bitwise_right_shift", kIntMask, &kernel_entry<&bits_kernel<Bits::Shr>>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
