// tessera/ops/unary.h — unary pointwise ops (neg, abs, exp, log, sin, tanh, sigmoid, gelu, isnan, ...): free functions.
// Included by tessera/tensor.h; the method forms are in unary_methods.inc.
// Each op has f(self), f_out(out, self) (out must have the result's shape and device and a dtype the
// result casts to, else ValueError/TypeError) and, except isnan/isinf/isfinite, the method forms
// t.f() and t.f_() (in place; TypeError when the result dtype cannot be cast to self's, e.g. sqrt_ on int).
// Floating-point ops on float16/bfloat16 compute in float32 and round once.
#pragma once

#include <tessera/tensor.h>

#include <string_view>

namespace tessera {

/// -self. Integers wrap (neg(INT_MIN) = INT_MIN). TypeError for bool.
Tensor neg(const Tensor& self);
Tensor& neg_out(Tensor& out, const Tensor& self);
/// e^self. Bool and integer inputs compute in float32.
Tensor exp(const Tensor& self);
Tensor& exp_out(Tensor& out, const Tensor& self);
/// max(self, 0) with self's dtype (NaN stays NaN). TypeError for bool.
Tensor relu(const Tensor& self);
Tensor& relu_out(Tensor& out, const Tensor& self);
/// -self (neg).
Tensor operator-(const Tensor& self);

/// |self|. Integers wrap (abs(INT_MIN) = INT_MIN). TypeError for bool.
Tensor abs(const Tensor& self);
Tensor& abs_out(Tensor& out, const Tensor& self);
/// -1, 0 or 1 with self's dtype (NaN stays NaN, -0.0 gives -0.0); bool is returned as is.
Tensor sign(const Tensor& self);
Tensor& sign_out(Tensor& out, const Tensor& self);
/// 2^self. Bool and integer inputs compute in float32.
Tensor exp2(const Tensor& self);
Tensor& exp2_out(Tensor& out, const Tensor& self);
/// exp(self) - 1, accurate near 0. Bool and integer inputs compute in float32.
Tensor expm1(const Tensor& self);
Tensor& expm1_out(Tensor& out, const Tensor& self);
/// Natural logarithm (NaN below 0, -inf at 0). Bool and integer inputs compute in float32.
Tensor log(const Tensor& self);
Tensor& log_out(Tensor& out, const Tensor& self);
/// Base-2 logarithm. Bool and integer inputs compute in float32.
Tensor log2(const Tensor& self);
Tensor& log2_out(Tensor& out, const Tensor& self);
/// Base-10 logarithm. Bool and integer inputs compute in float32.
Tensor log10(const Tensor& self);
Tensor& log10_out(Tensor& out, const Tensor& self);
/// log(1 + self), accurate near 0. Bool and integer inputs compute in float32.
Tensor log1p(const Tensor& self);
Tensor& log1p_out(Tensor& out, const Tensor& self);
/// Square root (NaN below 0). Bool and integer inputs compute in float32.
Tensor sqrt(const Tensor& self);
Tensor& sqrt_out(Tensor& out, const Tensor& self);
/// 1 / sqrt(self). Bool and integer inputs compute in float32.
Tensor rsqrt(const Tensor& self);
Tensor& rsqrt_out(Tensor& out, const Tensor& self);
/// 1 / self. Bool and integer inputs compute in float32.
Tensor reciprocal(const Tensor& self);
Tensor& reciprocal_out(Tensor& out, const Tensor& self);
/// self * self in self's dtype (integers wrap); bool gives int64.
Tensor square(const Tensor& self);
Tensor& square_out(Tensor& out, const Tensor& self);
/// Sine. Bool and integer inputs compute in float32.
Tensor sin(const Tensor& self);
Tensor& sin_out(Tensor& out, const Tensor& self);
/// Cosine. Bool and integer inputs compute in float32.
Tensor cos(const Tensor& self);
Tensor& cos_out(Tensor& out, const Tensor& self);
/// Tangent. Bool and integer inputs compute in float32.
Tensor tan(const Tensor& self);
Tensor& tan_out(Tensor& out, const Tensor& self);
/// Arcsine (NaN outside [-1, 1]). Bool and integer inputs compute in float32.
Tensor asin(const Tensor& self);
Tensor& asin_out(Tensor& out, const Tensor& self);
/// Arccosine (NaN outside [-1, 1]). Bool and integer inputs compute in float32.
Tensor acos(const Tensor& self);
Tensor& acos_out(Tensor& out, const Tensor& self);
/// Arctangent. Bool and integer inputs compute in float32.
Tensor atan(const Tensor& self);
Tensor& atan_out(Tensor& out, const Tensor& self);
/// Hyperbolic sine. Bool and integer inputs compute in float32.
Tensor sinh(const Tensor& self);
Tensor& sinh_out(Tensor& out, const Tensor& self);
/// Hyperbolic cosine. Bool and integer inputs compute in float32.
Tensor cosh(const Tensor& self);
Tensor& cosh_out(Tensor& out, const Tensor& self);
/// Hyperbolic tangent. Bool and integer inputs compute in float32.
Tensor tanh(const Tensor& self);
Tensor& tanh_out(Tensor& out, const Tensor& self);
/// 1 / (1 + exp(-self)). Bool and integer inputs compute in float32.
Tensor sigmoid(const Tensor& self);
Tensor& sigmoid_out(Tensor& out, const Tensor& self);
/// self * sigmoid(self). Bool and integer inputs compute in float32.
Tensor silu(const Tensor& self);
Tensor& silu_out(Tensor& out, const Tensor& self);
/// Error function. Bool and integer inputs compute in float32.
Tensor erf(const Tensor& self);
Tensor& erf_out(Tensor& out, const Tensor& self);
/// Largest integer <= self; identity on integers; TypeError for bool.
Tensor floor(const Tensor& self);
Tensor& floor_out(Tensor& out, const Tensor& self);
/// Smallest integer >= self; identity on integers; TypeError for bool.
Tensor ceil(const Tensor& self);
Tensor& ceil_out(Tensor& out, const Tensor& self);
/// Nearest integer, halves to even; identity on integers; TypeError for bool.
Tensor round(const Tensor& self);
Tensor& round_out(Tensor& out, const Tensor& self);
/// Integer part (towards 0); identity on integers; TypeError for bool.
Tensor trunc(const Tensor& self);
Tensor& trunc_out(Tensor& out, const Tensor& self);
/// self == 0 as a bool tensor (any dtype; the in-place form writes 0/1 in self's dtype).
Tensor logical_not(const Tensor& self);
Tensor& logical_not_out(Tensor& out, const Tensor& self);
/// ~self for integers, logical not for bool; TypeError for floating dtypes.
Tensor bitwise_not(const Tensor& self);
Tensor& bitwise_not_out(Tensor& out, const Tensor& self);
/// True where self is NaN (bool result; always false for integers and bool).
Tensor isnan(const Tensor& self);
Tensor& isnan_out(Tensor& out, const Tensor& self);
/// True where self is +inf or -inf (bool result).
Tensor isinf(const Tensor& self);
Tensor& isinf_out(Tensor& out, const Tensor& self);
/// True where self is neither inf nor NaN (bool result).
Tensor isfinite(const Tensor& self);
Tensor& isfinite_out(Tensor& out, const Tensor& self);
/// GELU: x * Phi(x) with the exact erf form (approximate="none") or the tanh form
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) ("tanh"); another string is a ValueError.
Tensor gelu(const Tensor& self, std::string_view approximate = "none");
Tensor& gelu_out(Tensor& out, const Tensor& self, std::string_view approximate = "none");
/// log(1 + exp(beta x)) / beta, or x where beta x > threshold (PyTorch's softplus).
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor& softplus_out(Tensor& out, const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);

}  // namespace tessera
