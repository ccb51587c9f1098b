// Derivative formulas of the unary pointwise ops (core/src/ops/unary.cpp).
// Each op and its in-place variant share one formula: an in-place op's saved
// self is the engine's copy taken before the op, and its result is self after.
// Formulas that can be written from the result use it (no copy of self).
#include <numbers>

#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// The rule of an op whose formula reads self (argument 0).
Derivative of_self(BackwardFormula f) { return {{0}, {0}, {}, f}; }
// The rule of an op whose formula reads its result.
Derivative of_result(BackwardFormula f) { return {{0}, {}, {0}, f}; }

// Piecewise-constant ops (floor, ceil, round, trunc, sign): zero almost
// everywhere, and zero at the jumps too (as PyTorch).
variable_list zero_grad(C& c) { return {zeros_like(c.grad())}; }

// d/dx gelu(x) for approximate = 'none': Phi(x) + x phi(x).
Tensor gelu_erf_grad(const Tensor& x) {
  const Tensor cdf = (x * std::numbers::sqrt2 * 0.5).erf().add(1.0).mul(0.5);
  const Tensor pdf = x.square().mul(-0.5).exp().mul(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
  return cdf + x * pdf;
}

// d/dx of 0.5 x (1 + tanh(u)), u = k (x + a x^3).
Tensor gelu_tanh_grad(const Tensor& x) {
  constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
  constexpr double a = 0.044715;
  const Tensor x2 = x.square();
  const Tensor t = (x + x * x2 * a).mul(k).tanh();
  const Tensor du = (x2 * (3 * a)).add(1.0).mul(k);
  return t.add(1.0).mul(0.5) + x * 0.5 * (1.0 - t.square()) * du;
}
}  // namespace

void define_unary_derivatives() {
  with_inplace("neg", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad().neg()}; }});
  with_inplace("exp", of_result([](C& c) -> variable_list { return {c.grad() * c.result()}; }));
  // relu'(0) = 0; where the result is NaN the gradient passes (as PyTorch's
  // threshold_backward). One compare and one masked_fill: half the time of
  // grad * (result > 0) cast to grad's dtype.
  with_inplace("relu", of_result([](C& c) -> variable_list {
                 return {c.grad().masked_fill(c.result().le(0), 0.0)};
               }));

  // abs'(0) = sign(0) = 0.
  with_inplace("abs", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0).sign()}; }));
  for (const char* fn : {"sign", "floor", "ceil", "round", "trunc"}) with_inplace(fn, {{0}, {}, {}, &zero_grad});

  with_inplace("exp2", of_result([](C& c) -> variable_list {
                 return {c.grad() * c.result() * std::numbers::ln2};
               }));
  with_inplace("expm1", of_result([](C& c) -> variable_list { return {c.grad() * (c.result() + 1.0)}; }));
  with_inplace("log", of_self([](C& c) -> variable_list { return {c.grad() / c.saved(0)}; }));
  with_inplace("log2", of_self([](C& c) -> variable_list {
                 return {c.grad() / (c.saved(0) * std::numbers::ln2)};
               }));
  with_inplace("log10", of_self([](C& c) -> variable_list {
                 return {c.grad() / (c.saved(0) * std::numbers::ln10)};
               }));
  with_inplace("log1p", of_self([](C& c) -> variable_list { return {c.grad() / (c.saved(0) + 1.0)}; }));
  with_inplace("sqrt", of_result([](C& c) -> variable_list { return {c.grad() / (c.result() * 2.0)}; }));
  // d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 r^3.
  with_inplace("rsqrt", of_result([](C& c) -> variable_list {
                 const Tensor r = c.result();
                 return {c.grad() * (r * r * r) * -0.5};
               }));
  with_inplace("reciprocal", of_result([](C& c) -> variable_list {
                 return {c.grad() * c.result().square().neg()};
               }));
  with_inplace("square", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0) * 2.0}; }));

  with_inplace("sin", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0).cos()}; }));
  with_inplace("cos", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0).sin().neg()}; }));
  with_inplace("tan", of_result([](C& c) -> variable_list { return {c.grad() * (c.result().square() + 1.0)}; }));
  with_inplace("asin", of_self([](C& c) -> variable_list {
                 return {c.grad() * (1.0 - c.saved(0).square()).rsqrt()};
               }));
  with_inplace("acos", of_self([](C& c) -> variable_list {
                 return {c.grad() * (1.0 - c.saved(0).square()).rsqrt().neg()};
               }));
  with_inplace("atan", of_self([](C& c) -> variable_list {
                 return {c.grad() / (c.saved(0).square() + 1.0)};
               }));
  with_inplace("sinh", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0).cosh()}; }));
  with_inplace("cosh", of_self([](C& c) -> variable_list { return {c.grad() * c.saved(0).sinh()}; }));
  with_inplace("tanh", of_result([](C& c) -> variable_list { return {c.grad() * (1.0 - c.result().square())}; }));
  with_inplace("sigmoid", of_result([](C& c) -> variable_list {
                 const Tensor s = c.result();
                 return {c.grad() * s * (1.0 - s)};
               }));
  // silu = x s(x): s + x s (1 - s) = s (1 + x (1 - s)).
  with_inplace("silu", of_self([](C& c) -> variable_list {
                 const Tensor x = c.saved(0);
                 const Tensor s = x.sigmoid();
                 return {c.grad() * s * (x * (1.0 - s) + 1.0)};
               }));
  with_inplace("erf", of_self([](C& c) -> variable_list {
                 return {c.grad() * c.saved(0).square().neg().exp() * (2.0 * std::numbers::inv_sqrtpi)};
               }));
  with_inplace("gelu", of_self([](C& c) -> variable_list {
                 const Tensor x = c.saved(0);
                 return {c.grad() * (c.string_arg(1) == "tanh" ? gelu_tanh_grad(x) : gelu_erf_grad(x))};
               }));
  // softplus = log(1 + exp(beta x)) / beta: sigmoid(beta x); x itself (slope 1)
  // where beta x > threshold, as the forward.
  with_inplace("softplus", of_self([](C& c) -> variable_list {
                 const Tensor bx = c.saved(0) * c.scalar_arg(1);
                 const Tensor g = c.grad();
                 return {where(bx.gt(c.scalar_arg(2)), g, g * bx.sigmoid())};
               }));

  // Bool results.
  not_differentiable({"logical_not", "logical_not_", "bitwise_not", "bitwise_not_", "isnan", "isinf", "isfinite"});
}

}  // namespace tessera::autograd
