// Gradients of the pointwise ops: gradcheck (finite differences in float64)
// on every differentiable op in its function, in-place, broadcasting,
// non-contiguous and number-operand forms, gradgradcheck on each, the
// conventions at non-smooth points computed by hand, and the
// not-differentiable ops' outputs never requiring grad.
#include <tessera/autograd.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/ops/call.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

using namespace tessera;
namespace ag = tessera::autograd;
using VL = ag::variable_list;

namespace {

// Uniform float64 values in [lo, hi]; with gap > 0, values in (-gap, gap) are
// pushed out to +-gap (inputs away from a kink or pole at 0).
Tensor make(IntArrayRef shape, double lo, double hi, uint64_t seed, double gap = 0) {
  Tensor u = rand(shape, Generator(seed), TensorOptions(kDouble)) * (hi - lo) + lo;
  if (gap > 0) u = where(u.ge(0), u + gap, u - gap);
  return u.detach().requires_grad_();
}

std::vector<double> vals(const Tensor& t) { return t.detach().to(kDouble).contiguous().to_vector<double>(); }

void expect_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i << ": got " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-12) << what << " element " << i;
    }
  }
}

void check_grad(const std::string& what, const ag::GradcheckFn& fn, const VL& in) {
  try {
    EXPECT_TRUE(ag::gradcheck(fn, in)) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

void check_gradgrad(const std::string& what, const ag::GradcheckFn& fn, const VL& in) {
  try {
    EXPECT_TRUE(ag::gradgradcheck(fn, in)) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

// The gradient of sum(y * w) with respect to each of `xs` (w a fixed weight
// so that elements are distinguishable).
VL grads_of(const Tensor& y, const VL& xs) {
  const Tensor w = ones_like(y.detach());
  return ag::grad({y}, xs, {w}, std::nullopt, false, /*allow_unused=*/true);
}

// ---- unary ----

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> f;
  std::function<void(Tensor&)> f_;  // the in-place form
  double lo, hi, gap;
};

std::vector<UnaryCase> unary_cases() {
#define U(fn, lo, hi, gap) \
  UnaryCase{#fn, [](const Tensor& x) { return x.fn(); }, [](Tensor& x) { x.fn##_(); }, lo, hi, gap}
  return {
      U(neg, -2, 2, 0),       U(exp, -1, 1, 0),      U(relu, -1, 1, 0.2),    U(abs, -1, 1, 0.2),
      U(sign, -1, 1, 0.2),    U(floor, 1.1, 1.9, 0), U(ceil, 1.1, 1.9, 0),   U(round, 1.1, 1.4, 0),
      U(trunc, -1.9, -1.1, 0), U(exp2, -1, 1, 0),    U(expm1, -1, 1, 0),     U(log, 0.3, 2, 0),
      U(log2, 0.3, 2, 0),     U(log10, 0.3, 2, 0),   U(log1p, -0.5, 2, 0),   U(sqrt, 0.3, 2, 0),
      U(rsqrt, 0.3, 2, 0),    U(reciprocal, -1, 1, 0.3), U(square, -2, 2, 0), U(sin, -2, 2, 0),
      U(cos, -2, 2, 0),       U(tan, -1.2, 1.2, 0),  U(asin, -0.9, 0.9, 0),  U(acos, -0.9, 0.9, 0),
      U(atan, -2, 2, 0),      U(sinh, -2, 2, 0),     U(cosh, -2, 2, 0),      U(tanh, -2, 2, 0),
      U(sigmoid, -2, 2, 0),   U(silu, -2, 2, 0),     U(erf, -2, 2, 0),
      UnaryCase{"gelu", [](const Tensor& x) { return x.gelu(); }, [](Tensor& x) { x.gelu_(); }, -3, 3, 0},
      UnaryCase{"gelu(tanh)", [](const Tensor& x) { return x.gelu("tanh"); }, [](Tensor& x) { x.gelu_("tanh"); },
                -3, 3, 0},
      UnaryCase{"softplus", [](const Tensor& x) { return x.softplus(); }, [](Tensor& x) { x.softplus_(); }, -3, 3, 0},
      // beta x > threshold (x > 0.5) takes the linear branch.
      UnaryCase{"softplus(2, 1)", [](const Tensor& x) { return x.softplus(2, 1); },
                [](Tensor& x) { x.softplus_(2, 1); }, -1, 2, 0},
  };
#undef U
}

TEST(GradPointwiseUnary, FunctionForms) {
  uint64_t seed = 1;
  for (const UnaryCase& k : unary_cases()) {
    const Tensor x = make({2, 3}, k.lo, k.hi, seed++, k.gap);
    check_grad(k.name, [&](const VL& in) -> VL { return {k.f(in[0])}; }, {x});
  }
}

TEST(GradPointwiseUnary, InPlaceFormsOnNonLeaf) {
  uint64_t seed = 100;
  for (const UnaryCase& k : unary_cases()) {
    const Tensor x = make({2, 3}, k.lo, k.hi, seed++, k.gap);
    check_grad(k.name + "_", [&](const VL& in) -> VL {
      Tensor y = in[0].clone();
      k.f_(y);
      return {y};
    }, {x});
  }
}

TEST(GradPointwiseUnary, NonContiguousInput) {
  uint64_t seed = 200;
  for (const UnaryCase& k : unary_cases()) {
    const Tensor x = make({3, 2}, k.lo, k.hi, seed++, k.gap);
    check_grad(k.name + " of a transposed input", [&](const VL& in) -> VL { return {k.f(in[0].t())}; }, {x});
  }
}

TEST(GradPointwiseUnary, SecondOrder) {
  uint64_t seed = 300;
  for (const UnaryCase& k : unary_cases()) {
    const Tensor x = make({2, 3}, k.lo, k.hi, seed++, k.gap);
    check_gradgrad(k.name, [&](const VL& in) -> VL { return {k.f(in[0])}; }, {x});
    check_gradgrad(k.name + "_", [&](const VL& in) -> VL {
      Tensor y = in[0].clone();
      k.f_(y);
      return {y};
    }, {x});
  }
}

TEST(GradPointwiseUnary, ConventionsAtNonSmoothPoints) {
  Tensor x = tensor({-2.0, 0.0, 3.0}).requires_grad_();
  expect_near(vals(grads_of(x.relu(), {x})[0]), {0, 0, 1}, "relu'(0) = 0");
  // A NaN result passes the gradient (PyTorch: [5., 0., 0., 5.] for these).
  Tensor n = tensor({std::nan(""), -1.0, 0.0, 2.0}).requires_grad_();
  n.relu().backward(tensor({5.0, 5.0, 5.0, 5.0}));
  expect_near(vals(n.grad()), {5, 0, 0, 5}, "relu' at NaN");
  expect_near(vals(grads_of(x.abs(), {x})[0]), {-1, 0, 1}, "abs'(0) = 0");
  // Piecewise constant: a defined gradient of zeros, also at the jumps.
  Tensor r = tensor({-1.5, 0.0, 0.5, 1.0, 2.5}).requires_grad_();
  for (const auto& [name, y] : std::vector<std::pair<std::string, Tensor>>{
           {"floor", r.floor()}, {"ceil", r.ceil()}, {"round", r.round()}, {"trunc", r.trunc()}, {"sign", r.sign()}}) {
    const Tensor g = grads_of(y, {r})[0];
    ASSERT_TRUE(g.defined()) << name;
    expect_near(vals(g), {0, 0, 0, 0, 0}, name);
  }
  // softplus: slope 1 above the threshold, sigmoid(beta x) below.
  Tensor s = tensor({-1.0, 0.25, 3.0}).requires_grad_();
  const double sig = 1 / (1 + std::exp(-2 * 0.25));
  const double sig_neg = 1 / (1 + std::exp(2.0));
  expect_near(vals(grads_of(s.softplus(2, 1), {s})[0]), {sig_neg, sig, 1}, "softplus(beta 2, threshold 1)");
}

TEST(GradPointwiseUnary, NotDifferentiableOpsGiveNoGrad) {
  Tensor x = tensor({-1.0, 0.0, 2.5}).requires_grad_();
  for (const auto& [name, y] : std::vector<std::pair<std::string, Tensor>>{
           {"logical_not", x.logical_not()}, {"isnan", isnan(x)}, {"isinf", isinf(x)}, {"isfinite", isfinite(x)}}) {
    EXPECT_FALSE(y.requires_grad()) << name;
    EXPECT_EQ(y.scalar_type(), kBool) << name;
  }
  // An in-place not-differentiable op cannot overwrite a tensor that requires grad.
  Tensor y = x * 1.0;
  EXPECT_THROW(y.logical_not_(), AutogradError);
}

// ---- binary ----

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> f;
  std::function<void(Tensor&, const Tensor&)> f_;
  double alo, ahi, agap, blo, bhi, bgap;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add(alpha 2)", [](const Tensor& a, const Tensor& b) { return a.add(b, 2); },
       [](Tensor& a, const Tensor& b) { a.add_(b, 2); }, -2, 2, 0, -2, 2, 0},
      {"sub(alpha 0.5)", [](const Tensor& a, const Tensor& b) { return a.sub(b, 0.5); },
       [](Tensor& a, const Tensor& b) { a.sub_(b, 0.5); }, -2, 2, 0, -2, 2, 0},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](Tensor& a, const Tensor& b) { a.mul_(b); },
       -2, 2, 0, -2, 2, 0},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](Tensor& a, const Tensor& b) { a.div_(b); },
       -2, 2, 0, -1, 1, 0.4},
      {"remainder", [](const Tensor& a, const Tensor& b) { return a.remainder(b); },
       [](Tensor& a, const Tensor& b) { a.remainder_(b); }, -3, 3, 0, -1, 1, 0.6},
      {"fmod", [](const Tensor& a, const Tensor& b) { return a.fmod(b); },
       [](Tensor& a, const Tensor& b) { a.fmod_(b); }, -3, 3, 0, -1, 1, 0.6},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, [](Tensor& a, const Tensor& b) { a.pow_(b); },
       0.5, 2, 0, -2, 2, 0},
      {"atan2", [](const Tensor& a, const Tensor& b) { return a.atan2(b); },
       [](Tensor& a, const Tensor& b) { a.atan2_(b); }, -2, 2, 0, -2, 2, 0.3},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](Tensor& a, const Tensor& b) { a.maximum_(b); }, -2, 2, 0, -2, 2, 0},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](Tensor& a, const Tensor& b) { a.minimum_(b); }, -2, 2, 0, -2, 2, 0},
  };
}

TEST(GradPointwiseBinary, SameShapeAndBroadcast) {
  uint64_t seed = 400;
  for (const BinaryCase& k : binary_cases()) {
    const auto fn = [&](const VL& in) -> VL { return {k.f(in[0], in[1])}; };
    const Tensor a = make({2, 3}, k.alo, k.ahi, seed++, k.agap);
    check_grad(k.name, fn, {a, make({2, 3}, k.blo, k.bhi, seed++, k.bgap)});
    check_grad(k.name + " [2,3] with [3]", fn, {a, make({3}, k.blo, k.bhi, seed++, k.bgap)});
    // Both operands broadcast: [2,1] with [1,3].
    check_grad(k.name + " [2,1] with [1,3]", fn,
               {make({2, 1}, k.alo, k.ahi, seed++, k.agap), make({1, 3}, k.blo, k.bhi, seed++, k.bgap)});
    // A transposed (non-contiguous) operand.
    check_grad(k.name + " transposed", [&](const VL& in) -> VL { return {k.f(in[0].t(), in[1])}; },
               {make({3, 2}, k.alo, k.ahi, seed++, k.agap), make({2, 3}, k.blo, k.bhi, seed++, k.bgap)});
  }
}

TEST(GradPointwiseBinary, InPlaceFormsOnNonLeaf) {
  uint64_t seed = 500;
  for (const BinaryCase& k : binary_cases()) {
    const auto fn = [&](const VL& in) -> VL {
      Tensor y = in[0].clone();
      k.f_(y, in[1]);
      return {y};
    };
    check_grad(k.name + "_", fn, {make({2, 3}, k.alo, k.ahi, seed++, k.agap), make({3}, k.blo, k.bhi, seed++, k.bgap)});
  }
}

TEST(GradPointwiseBinary, SecondOrder) {
  uint64_t seed = 600;
  for (const BinaryCase& k : binary_cases()) {
    const Tensor a = make({2, 3}, k.alo, k.ahi, seed++, k.agap);
    const Tensor b = make({3}, k.blo, k.bhi, seed++, k.bgap);
    check_gradgrad(k.name, [&](const VL& in) -> VL { return {k.f(in[0], in[1])}; }, {a, b});
    check_gradgrad(k.name + "_", [&](const VL& in) -> VL {
      Tensor y = in[0].clone();
      k.f_(y, in[1]);
      return {y};
    }, {a, b});
  }
}

TEST(GradPointwiseBinary, NumberOperands) {
  const Tensor x = make({2, 3}, 0.5, 2, 700);
  const Tensor s = make({2, 3}, -1, 1, 701, 0.3);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> cases = {
      {"x * 2.5", [](const Tensor& t) { return t * 2.5; }},
      {"2.5 * x", [](const Tensor& t) { return 2.5 * t; }},
      {"x + 3", [](const Tensor& t) { return t + 3; }},
      {"1.5 - x", [](const Tensor& t) { return 1.5 - t; }},
      {"sub(x, 2, alpha 3)", [](const Tensor& t) { return sub(t, 2, 3); }},
      {"x / 4", [](const Tensor& t) { return t / 4; }},
      {"3 / x", [](const Tensor& t) { return 3 / t; }},
      {"pow(x, 3)", [](const Tensor& t) { return pow(t, 3); }},
      {"pow(x, 2.5)", [](const Tensor& t) { return pow(t, 2.5); }},
      {"pow(x, -1.5)", [](const Tensor& t) { return pow(t, -1.5); }},
      {"pow(x, 0)", [](const Tensor& t) { return pow(t, 0); }},
      {"pow(2, x)", [](const Tensor& t) { return pow(2, t); }},
      {"pow(0.5, x)", [](const Tensor& t) { return pow(0.5, t); }},
      {"remainder(x, 0.3)", [](const Tensor& t) { return remainder(t, 0.3); }},
      {"fmod(2, x)", [](const Tensor& t) { return fmod(2.0, t); }},
      {"atan2(x, -1)", [](const Tensor& t) { return atan2(t, -1); }},
      {"maximum(x, 1)", [](const Tensor& t) { return maximum(t, 1.05); }},
      {"minimum(x, 1)", [](const Tensor& t) { return minimum(t, 1.05); }},
  };
  for (const auto& [name, f] : cases) {
    check_grad(name, [&](const VL& in) -> VL { return {f(in[0])}; }, {x});
    check_gradgrad(name, [&](const VL& in) -> VL { return {f(in[0])}; }, {x});
  }
  // Negative bases with integer exponents.
  check_grad("pow(negative x, 3)", [](const VL& in) -> VL { return {pow(in[0], 3)}; }, {s});
  check_gradgrad("pow(negative x, 3)", [](const VL& in) -> VL { return {pow(in[0], 3)}; }, {s});
  check_grad("x.mul_(2.5)", [](const VL& in) -> VL {
    Tensor y = in[0].clone();
    y.mul_(2.5);
    return {y};
  }, {x});
  check_grad("x.pow_(3)", [](const VL& in) -> VL {
    Tensor y = in[0].clone();
    y.pow_(3);
    return {y};
  }, {x});
}

TEST(GradPointwiseBinary, ConventionsAtNonSmoothPoints) {
  // maximum/minimum: ties split the gradient in half.
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = tensor({1.0, 0.0, 5.0}).requires_grad_();
  VL g = grads_of(a.maximum(b), {a, b});
  expect_near(vals(g[0]), {0.5, 1, 0}, "maximum, self");
  expect_near(vals(g[1]), {0.5, 0, 1}, "maximum, other");
  g = grads_of(a.minimum(b), {a, b});
  expect_near(vals(g[0]), {0.5, 0, 1}, "minimum, self");
  expect_near(vals(g[1]), {0.5, 1, 0}, "minimum, other");

  // pow at base 0 and with negative bases (PyTorch's conventions).
  Tensor base = tensor({0.0, 0.0, 2.0, -2.0, 0.0}).requires_grad_();
  Tensor e = tensor({2.0, 0.0, -1.0, 2.0, 0.5}).requires_grad_();
  g = grads_of(base.pow(e), {base, e});
  // d/dbase = e base^(e-1), and 0 where e == 0 (no 0 * inf).
  expect_near(vals(g[0]), {0, 0, -0.25, -4, std::numeric_limits<double>::infinity()}, "pow, base");
  // d/de = base^e log(base): 0 where base == 0 and e >= 0; NaN for a negative base.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_near(vals(g[1]), {0, 0, 0.5 * std::log(2.0), nan, 0}, "pow, exponent");
  Tensor z = tensor({0.0, 1.5}).requires_grad_();
  expect_near(vals(grads_of(pow(z, 0), {z})[0]), {0, 0}, "pow(x, 0)");
  expect_near(vals(grads_of(pow(z, 2), {z})[0]), {0, 3}, "pow(x, 2) at 0");

  // Rounding division is piecewise constant: a zero gradient.
  Tensor n = tensor({3.5, -2.0}).requires_grad_();
  Tensor d = tensor({2.0, 1.5}).requires_grad_();
  for (const char* mode : {"trunc", "floor"}) {
    g = grads_of(n.div(d, mode), {n, d});
    ASSERT_TRUE(g[0].defined() && g[1].defined()) << mode;
    expect_near(vals(g[0]), {0, 0}, mode);
    expect_near(vals(g[1]), {0, 0}, mode);
  }
  // remainder/fmod: d/dother = -floor(a / b) and -trunc(a / b).
  Tensor p = tensor({7.0, -7.0}).requires_grad_();
  Tensor q = tensor({2.0, 2.0}).requires_grad_();
  expect_near(vals(grads_of(p.remainder(q), {q})[0]), {-3, 4}, "remainder, other");
  expect_near(vals(grads_of(p.fmod(q), {q})[0]), {-3, 3}, "fmod, other");
}

TEST(GradPointwiseBinary, NotDifferentiableOpsGiveNoGrad) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = tensor({3.0, 2.0, 1.0}).requires_grad_();
  const std::vector<std::pair<std::string, Tensor>> outs = {
      {"eq", a.eq(b)},     {"ne", a.ne(b)},     {"lt", a.lt(b)},   {"le", a.le(b)},
      {"gt", a.gt(b)},     {"ge", a.ge(b)},     {"gt(number)", a.gt(2)},
      {"logical_and", a.logical_and(b)},        {"logical_or", a.logical_or(b)},
      {"logical_xor", a.logical_xor(b)},
  };
  for (const auto& [name, y] : outs) {
    EXPECT_FALSE(y.requires_grad()) << name;
    EXPECT_EQ(y.grad_fn(), nullptr) << name;
  }
  // Bitwise ops and shifts take no floating tensors, so nothing reaching them requires grad.
  const Tensor i = tensor({int64_t(6), int64_t(3)});
  EXPECT_FALSE(i.bitwise_and(i).requires_grad());
  EXPECT_FALSE(i.bitwise_left_shift(1).requires_grad());
  Tensor y = a * 1.0;
  EXPECT_THROW(y.lt_(b), AutogradError);
}

TEST(GradPointwiseBinary, IntegerOperandGetsNoGradient) {
  Tensor x = tensor({0.5, 1.5, 2.0}).requires_grad_();
  const Tensor k = tensor({int64_t(2), int64_t(-1), int64_t(3)});
  Tensor y = x * k + x.pow(k) + x.maximum(k) + x.sub(k) + x / k;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.scalar_type(), kDouble);
  y.sum().backward();
  // d/dx of x k + x^k + max(x, k) + (x - k) + x / k.
  const std::vector<double> xs = {0.5, 1.5, 2.0}, ks = {2, -1, 3};
  std::vector<double> want;
  for (size_t j = 0; j < xs.size(); ++j)
    want.push_back(ks[j] + ks[j] * std::pow(xs[j], ks[j] - 1) + (xs[j] > ks[j] ? 1 : 0) + 1 + 1 / ks[j]);
  expect_near(vals(x.grad()), want, "x.grad");
  EXPECT_FALSE(k.requires_grad());
  EXPECT_FALSE(k.grad().defined());
}

TEST(GradPointwiseBinary, NaNOperandsOfMaximumAndMinimum) {
  // No tie and no winner: both operands get the whole gradient (PyTorch's rule).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = tensor({nan, 1.0}).requires_grad_();
  Tensor b = tensor({2.0, nan}).requires_grad_();
  for (const bool max : {true, false}) {
    const VL g = grads_of(max ? a.maximum(b) : a.minimum(b), {a, b});
    expect_near(vals(g[0]), {1, 1}, max ? "maximum, self" : "minimum, self");
    expect_near(vals(g[1]), {1, 1}, max ? "maximum, other" : "minimum, other");
  }
}

TEST(GradPointwiseBinary, MixedFloatDtypes) {
  // float32 * float64 computes in float64; the engine casts each gradient back
  // to its input's dtype.
  Tensor a = tensor({1.5f, -2.0f}).requires_grad_();
  Tensor b = tensor({0.25, 4.0}).requires_grad_();
  Tensor y = a * b + a.sigmoid();
  EXPECT_EQ(y.scalar_type(), kDouble);
  y.sum().backward();
  ASSERT_EQ(a.grad().scalar_type(), kFloat);
  ASSERT_EQ(b.grad().scalar_type(), kDouble);
  const auto sig_grad = [](double x) {
    const double s = 1 / (1 + std::exp(-x));
    return s * (1 - s);
  };
  const std::vector<double> ga = vals(a.grad());
  EXPECT_NEAR(ga[0], 0.25 + sig_grad(1.5), 1e-6);
  EXPECT_NEAR(ga[1], 4.0 + sig_grad(-2.0), 1e-6);
  expect_near(vals(b.grad()), {1.5, -2.0}, "b.grad");
}

// ---- ternary ----

TEST(GradPointwiseTernary, WhereLerpAddc) {
  const Tensor cond = tensor({true, false, true});
  const Tensor a = make({2, 3}, -2, 2, 800);
  const Tensor b = make({3}, -2, 2, 801);
  const Tensor c = make({2, 1}, -2, 2, 802);
  const Tensor w = make({2, 3}, 0, 1, 803);
  const Tensor t2 = make({3}, -1, 1, 804, 0.4);
  const std::vector<std::pair<std::string, std::function<Tensor(const VL&)>>> cases = {
      {"where", [&](const VL& in) { return where(cond, in[0], in[1]); }},
      {"where(number)", [&](const VL& in) { return where(cond, in[0], 0.5); }},
      {"where_", [&](const VL& in) { return in[0].clone().where_(cond, in[1]); }},
      {"lerp", [&](const VL& in) { return in[0].lerp(in[1], in[3]); }},
      {"lerp(number)", [&](const VL& in) { return in[0].lerp(in[1], 0.3); }},
      {"lerp_", [&](const VL& in) { return in[0].clone().lerp_(in[1], in[3]); }},
      {"lerp broadcast", [&](const VL& in) { return in[2].lerp(in[1].unsqueeze(0), in[3]); }},
      {"addcmul", [&](const VL& in) { return in[0].addcmul(in[1], in[2], 0.5); }},
      {"addcmul_", [&](const VL& in) { return in[0].clone().addcmul_(in[1], in[2], 0.5); }},
      {"addcdiv", [&](const VL& in) { return in[0].addcdiv(in[2], in[4], 2); }},
      {"addcdiv_", [&](const VL& in) { return in[0].clone().addcdiv_(in[2], in[4], 2); }},
      {"addcdiv transposed", [&](const VL& in) { return in[0].t().addcdiv(in[3].t(), in[4].unsqueeze(1), -1.5); }},
  };
  for (const auto& [name, f] : cases) {
    check_grad(name, [&](const VL& in) -> VL { return {f(in)}; }, {a, b, c, w, t2});
    check_gradgrad(name, [&](const VL& in) -> VL { return {f(in)}; }, {a, b, c, w, t2});
  }
}

TEST(GradPointwiseTernary, Clamp) {
  const Tensor x = make({2, 3}, -2, 2, 900);
  const Tensor lo = make({3}, -1.5, -0.2, 901);
  const Tensor hi = make({2, 1}, 0.2, 1.5, 902);
  using Opt = std::optional<Tensor>;
  using OptS = std::optional<Scalar>;
  const std::vector<std::pair<std::string, std::function<Tensor(const VL&)>>> cases = {
      {"clamp(min, max)", [](const VL& in) { return in[0].clamp(Opt(in[1]), Opt(in[2])); }},
      {"clamp(None, max)", [](const VL& in) { return in[0].clamp(Opt(), Opt(in[2])); }},
      {"clamp(min, None)", [](const VL& in) { return in[0].clamp(Opt(in[1]), Opt()); }},
      {"clamp(-0.5, 0.7)", [](const VL& in) { return in[0].clamp(OptS(-0.5), OptS(0.7)); }},
      {"clamp(None, 0.7)", [](const VL& in) { return in[0].clamp(OptS(), OptS(0.7)); }},
      {"clamp_(min, max)", [](const VL& in) { return in[0].clone().clamp_(Opt(in[1]), Opt(in[2])); }},
      {"clamp_(-0.5, None)", [](const VL& in) { return in[0].clone().clamp_(OptS(-0.5), OptS()); }},
      {"clamp of transposed", [](const VL& in) { return in[0].t().clamp(Opt(in[2].t()), Opt()); }},
      {"_clamp by name", [](const VL& in) { return ops::call("_clamp", {in[0], in[1], in[2]}).at(0); }},
      {"_clamp_ by name", [](const VL& in) { return ops::call("_clamp_", {in[0].clone(), in[1], in[2]}).at(0); }},
      {"clamp_min", [](const VL& in) { return in[0].clamp_min(in[1]); }},
      {"clamp_min(number)", [](const VL& in) { return in[0].clamp_min(-0.3); }},
      {"clamp_min_", [](const VL& in) { return in[0].clone().clamp_min_(in[1]); }},
      {"clamp_max", [](const VL& in) { return in[0].clamp_max(in[2]); }},
      {"clamp_max(number)", [](const VL& in) { return in[0].clamp_max(0.4); }},
      {"clamp_max_", [](const VL& in) { return in[0].clone().clamp_max_(in[2]); }},
  };
  for (const auto& [name, f] : cases) {
    check_grad(name, [&](const VL& in) -> VL { return {f(in)}; }, {x, lo, hi});
    check_gradgrad(name, [&](const VL& in) -> VL { return {f(in)}; }, {x, lo, hi});
  }
}

TEST(GradPointwiseTernary, ClampConventionsAtBounds) {
  using Opt = std::optional<Tensor>;
  // At a bound the whole gradient goes to self (lo <= x <= hi).
  Tensor x = tensor({-1.0, 0.0, 0.5, 1.0, 2.0}).requires_grad_();
  expect_near(vals(grads_of(x.clamp(std::optional<Scalar>(0.0), std::optional<Scalar>(1.0)), {x})[0]),
              {0, 1, 1, 1, 0}, "clamp(0, 1), self");
  Tensor lo = tensor({0.0, 0.0, 0.0, 0.0, 0.0}).requires_grad_();
  Tensor hi = tensor({1.0, 1.0, 1.0, 1.0, 1.0}).requires_grad_();
  VL g = grads_of(x.clamp(Opt(lo), Opt(hi)), {x, lo, hi});
  expect_near(vals(g[0]), {0, 1, 1, 1, 0}, "clamp, self");
  expect_near(vals(g[1]), {1, 0, 0, 0, 0}, "clamp, min");
  expect_near(vals(g[2]), {0, 0, 0, 0, 1}, "clamp, max");
  g = grads_of(x.clamp_min(lo), {x, lo});
  expect_near(vals(g[0]), {0, 1, 1, 1, 1}, "clamp_min, self");
  expect_near(vals(g[1]), {1, 0, 0, 0, 0}, "clamp_min, min");
  g = grads_of(x.clamp_max(hi), {x, hi});
  expect_near(vals(g[0]), {1, 1, 1, 1, 0}, "clamp_max, self");
  expect_near(vals(g[1]), {0, 0, 0, 0, 1}, "clamp_max, max");
  // min > max: the result is max everywhere, so max gets all of the gradient.
  Tensor big = tensor({2.0, 2.0, 2.0, 2.0, 2.0}).requires_grad_();
  g = grads_of(x.clamp(Opt(big), Opt(hi)), {x, big, hi});
  expect_near(vals(g[0]), {0, 0, 0, 0, 0}, "clamp(min > max), self");
  expect_near(vals(g[1]), {0, 0, 0, 0, 0}, "clamp(min > max), min");
  expect_near(vals(g[2]), {1, 1, 1, 1, 1}, "clamp(min > max), max");
}

TEST(GradPointwiseTernary, ClampOfNaNGivesNoGradient) {
  using Opt = std::optional<Tensor>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({nan, 0.5}).requires_grad_();
  Tensor lo = tensor({0.0, 0.0}).requires_grad_();
  Tensor hi = tensor({1.0, 1.0}).requires_grad_();
  const VL g = grads_of(x.clamp(Opt(lo), Opt(hi)), {x, lo, hi});
  expect_near(vals(g[0]), {0, 1}, "clamp, self");
  expect_near(vals(g[1]), {0, 0}, "clamp, min");
  expect_near(vals(g[2]), {0, 0}, "clamp, max");
}

TEST(GradPointwiseTernary, WhereConditionAndIntegerOperands) {
  const Tensor cond = tensor({true, false, true});
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  const Tensor k = tensor({int64_t(7), int64_t(8), int64_t(9)});
  Tensor y = where(cond, x, k);
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  expect_near(vals(x.grad()), {1, 0, 1}, "where(cond, x, int), x");
  EXPECT_FALSE(cond.requires_grad());
  Tensor t = tensor({1.0, 2.0, 3.0}).requires_grad_();
  VL g = grads_of(t.addcmul(k, k, 2), {t});
  expect_near(vals(g[0]), {1, 1, 1}, "addcmul with integer tensors, self");
}

}  // namespace
