// add, sub, mul, div: out = op(self, other) on same-shape, same-dtype operands
// (broadcast inputs arrive with stride 0; out may be self for in-place ops).
#include "common.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace tessera::cpu {
namespace {

struct Binary {
  const DLTensor* self;
  const DLTensor* other;
  DLTensor* out;
};

Binary binary_operands(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(self, "self", out, "out");
  check_same_shape(other, "other", out, "out");
  return {&self, &other, &out};
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
    } else {
      using C = compute_t<T>;
      const C alpha = alpha_as<T>(call);
      binary_map<T>(*ops.out, *ops.self, *ops.other, kIsHalfLike<T> ? kGrainExpensive : kGrain,
                    [alpha](T x, T y) -> T {
                      return T(kSubtract ? C(x) - alpha * C(y) : C(x) + alpha * C(y));
                    });
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
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);  // MIN / -1 overflows: wrap like two's complement
  }
  return static_cast<T>(a / b);
}

template <typename T>
inline T int_floor_divide(T a, T b) {  // b != 0
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);
    const T q = static_cast<T>(a / b);
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

// True if any element of t is zero. Broadcast (stride 0) and size-1 dims are
// dropped first, so each distinct element is read once. Checked before any
// output is written, so a failing in-place division leaves self untouched.
template <typename T>
bool any_zero(const DLTensor& t) {
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
  it.for_each([&found](char** p, const int64_t* s, int64_t n) {
    if (found) return;
    bool zero = false;
    if (s[0] == static_cast<int64_t>(sizeof(T))) {
      const T* x = reinterpret_cast<const T*>(p[0]);
      for (int64_t i = 0; i < n; ++i) zero |= (x[i] == 0);
    } else {
      for (int64_t i = 0; i < n; ++i) zero |= (*reinterpret_cast<const T*>(p[0] + i * s[0]) == 0);
    }
    found = zero;
  });
  return found;
}

enum class Rounding { kNone, kTrunc, kFloor };

Rounding rounding_mode(const TsrKernelCall& call) {
  if (call.num_args <= 2) return Rounding::kNone;  // optional, omitted at the end
  const TsrValue& v = call.args[2];
  if (v.tag == TSR_VALUE_NONE) return Rounding::kNone;
  if (v.tag != TSR_VALUE_STRING) invalid("rounding_mode must be a string or none, got " + tag_text(v.tag));
  if (v.as.string == nullptr) invalid("rounding_mode is a NULL string");
  if (std::strcmp(v.as.string, "trunc") == 0) return Rounding::kTrunc;
  if (std::strcmp(v.as.string, "floor") == 0) return Rounding::kFloor;
  invalid(std::string("rounding_mode must be 'trunc', 'floor' or none, got '") + v.as.string + "'");
}

}  // namespace

void add_kernel(const TsrKernelCall& call) { add_or_sub<false>(call); }
void sub_kernel(const TsrKernelCall& call) { add_or_sub<true>(call); }

void mul_kernel(const TsrKernelCall& call) {
  const Binary ops = binary_operands(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {  // logical and
      binary_map<bool>(*ops.out, *ops.self, *ops.other, kGrain,
                       [](uint8_t x, uint8_t y) -> uint8_t { return static_cast<uint8_t>((x != 0) & (y != 0)); });
    } else if constexpr (kIsInteger<T>) {
      binary_map<T>(*ops.out, *ops.self, *ops.other, kGrain, [](T x, T y) -> T { return wrap_mul(x, y); });
    } else {
      using C = compute_t<T>;
      binary_map<T>(*ops.out, *ops.self, *ops.other, kIsHalfLike<T> ? kGrainExpensive : kGrain,
                    [](T x, T y) -> T { return T(C(x) * C(y)); });
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

void register_binary_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"add", kAllMask, &kernel_entry<&add_kernel>},
      {"sub", kNumericMask, &kernel_entry<&sub_kernel>},
      {"mul", kAllMask, &kernel_entry<&mul_kernel>},
      {"div", kNumericMask, &kernel_entry<&div_kernel>},
  };
  register_kernels(host, kTable);
}

}  // namespace tessera::cpu
