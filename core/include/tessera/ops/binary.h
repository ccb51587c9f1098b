// tessera/ops/binary.h — binary pointwise ops (add, sub, mul, div, remainder, pow, comparisons, logical and bitwise ops, shifts, ...): free functions.
// Included by tessera/tensor.h; the method forms are in binary_methods.inc.
//
// Every op broadcasts its operands and promotes them as PyTorch's result_type
// (a number ranks below any tensor of its category). Operands on different
// devices or shapes that do not broadcast give a ValueError naming the op; a
// dtype the op does not take gives a TypeError. The `_out` forms write the
// result into `out` (same shape as the result; the result dtype must cast to
// out's) and return it.
#pragma once

#include <tessera/tensor.h>

#include <optional>
#include <string_view>

namespace tessera {

// ---- add, sub, mul, div (a number on either side), and their out= forms ----
/// self + alpha * other.
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor add(const Scalar& self, const Tensor& other, const Scalar& alpha = 1);
/// self - alpha * other; TypeError for bool.
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Scalar& self, const Tensor& other, const Scalar& alpha = 1);
/// self * other (bool: logical and).
Tensor mul(const Tensor& self, const Tensor& other);
Tensor mul(const Tensor& self, const Scalar& other);
Tensor mul(const Scalar& self, const Tensor& other);
/// self / other: true division (integers promoted to float32) or rounded with
/// rounding_mode "trunc" / "floor"; integer division by zero is a ValueError.
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor div(const Scalar& self, const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor& add_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& add_out(Tensor& out, const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor& add_out(Tensor& out, const Scalar& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Scalar& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& mul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& mul_out(Tensor& out, const Tensor& self, const Scalar& other);
Tensor& mul_out(Tensor& out, const Scalar& self, const Tensor& other);
Tensor& div_out(Tensor& out, const Tensor& self, const Tensor& other,
                std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor& div_out(Tensor& out, const Tensor& self, const Scalar& other,
                std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor& div_out(Tensor& out, const Scalar& self, const Tensor& other,
                std::optional<std::string_view> rounding_mode = std::nullopt);
// Operators: add, sub, mul, div (unary minus is neg, in unary.h).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
/// In place: a.add_(b), a.sub_(b), a.mul_(b), a.div_(b).
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);

/// div(self, other, "floor") (Python's //).
Tensor floor_divide(const Tensor& self, const Tensor& other);
Tensor floor_divide(const Tensor& self, const Scalar& other);
Tensor floor_divide(const Scalar& self, const Tensor& other);

// Each op X below has X(Tensor, Tensor), X(Tensor, Scalar), X(Scalar, Tensor)
// and X_out(out, self, other) with the same three operand kinds.
#define TSR_DECLARE_BINARY(fn)                                            \
  Tensor fn(const Tensor& self, const Tensor& other);                     \
  Tensor fn(const Tensor& self, const Scalar& other);                     \
  Tensor fn(const Scalar& self, const Tensor& other);                     \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Tensor& other); \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Scalar& other); \
  Tensor& fn##_out(Tensor& out, const Scalar& self, const Tensor& other);

/// Python's %: the remainder has the sign of the divisor. Not for bool; integer
/// remainder by zero is a ValueError (float gives NaN).
TSR_DECLARE_BINARY(remainder)
/// C's fmod: the remainder has the sign of the dividend. Not for bool; integer
/// fmod by zero is a ValueError.
TSR_DECLARE_BINARY(fmod)
/// self ** exponent. Not for bool; an integer raised to a negative integer
/// power is a ValueError (as in PyTorch); integer powers wrap on overflow.
TSR_DECLARE_BINARY(pow)
/// atan2(self, other), the angle of (other, self); integers promote to float32.
TSR_DECLARE_BINARY(atan2)
/// Elementwise maximum / minimum; a NaN in either operand gives NaN.
TSR_DECLARE_BINARY(maximum)
TSR_DECLARE_BINARY(minimum)
/// Comparisons in the promoted dtype; the result is bool (NaN compares unequal).
TSR_DECLARE_BINARY(eq)
TSR_DECLARE_BINARY(ne)
TSR_DECLARE_BINARY(lt)
TSR_DECLARE_BINARY(le)
TSR_DECLARE_BINARY(gt)
TSR_DECLARE_BINARY(ge)
/// Logical ops on the truth values (x != 0) of any dtype; the result is bool.
TSR_DECLARE_BINARY(logical_and)
TSR_DECLARE_BINARY(logical_or)
TSR_DECLARE_BINARY(logical_xor)
/// Bitwise ops on bool and integer tensors (TypeError for floating ones).
TSR_DECLARE_BINARY(bitwise_and)
TSR_DECLARE_BINARY(bitwise_or)
TSR_DECLARE_BINARY(bitwise_xor)
/// Shifts of integer tensors. A shift by a negative amount or by at least the
/// bit width gives 0 (right shift of a negative signed value: -1).
TSR_DECLARE_BINARY(bitwise_left_shift)
TSR_DECLARE_BINARY(bitwise_right_shift)
#undef TSR_DECLARE_BINARY

}  // namespace tessera
