// Gradients of the reduction and linalg ops: gradcheck (finite differences in float64)
// on every differentiable op, gradgradcheck where docs/autograd.md says, and
// the not-differentiable ops' outputs never requiring grad.
#include <tessera/autograd.h>
#include <tessera/autograd/derivative.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

using namespace tessera;
namespace ag = tessera::autograd;
using VL = ag::variable_list;

namespace {

// Distinct float64 values (no ties, no zeros) that require grad.
Tensor input(IntArrayRef shape, uint64_t seed = 1) {
  Tensor t = randn(shape, Generator(seed), kDouble);
  return (t + t.sign() * 0.1).detach().requires_grad_();  // keep away from 0
}
Tensor leaf(std::initializer_list<double> v) { return tensor(v).requires_grad_(); }
Tensor leaf2(std::initializer_list<double> v, IntArrayRef shape) {
  return tensor(v).reshape(shape).detach().requires_grad_();
}
// A non-contiguous leaf of shape [a, b] (a transposed [b, a] buffer).
Tensor transposed_input(int64_t a, int64_t b, uint64_t seed = 2) {
  Tensor t = randn({b, a}, Generator(seed), kDouble).t().detach().requires_grad_();
  EXPECT_FALSE(t.is_contiguous());
  return t;
}
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// d sum(f(x)) / dx with one backward.
Tensor grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  return ag::grad({f(x).sum()}, {x})[0];
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

using F1 = std::function<Tensor(const Tensor&)>;
void check1(const F1& f, const Tensor& x) {
  EXPECT_TRUE(ag::gradcheck([&](const VL& in) -> VL { return {f(in[0])}; }, {x}));
}
void checkgg1(const F1& f, const Tensor& x) {
  EXPECT_TRUE(ag::gradgradcheck([&](const VL& in) -> VL { return {f(in[0])}; }, {x}));
}

// The dim lists every reduction is checked over, on a [2, 3, 4] input.
const std::vector<std::vector<int64_t>> kDimLists = {{}, {1}, {-1}, {0, 2}, {-3, -1}, {0, 1, 2}};

}  // namespace

// ---------------------------------------------------------------- sum / mean

TEST(GradReductionSum, GradcheckOverDimsAndKeepdim) {
  const Tensor x = input({2, 3, 4});
  check1([](const Tensor& t) { return t.sum(); }, x);
  for (const auto& dims : kDimLists)
    for (bool keep : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "dims size " << dims.size() << " keepdim " << keep);
      check1([&](const Tensor& t) { return t.sum(dims, keep); }, x);
    }
  check1([](const Tensor& t) { return t.sum({0}, false); }, transposed_input(3, 2));
}

TEST(GradReductionSum, ZeroDimInputAndDtype) {
  Tensor s = tensor({2.5}).reshape({}).detach().requires_grad_();
  check1([](const Tensor& t) { return t.sum(); }, s);
  check1([](const Tensor& t) { return t.sum({0}, true); }, s);
  // dtype= widens the computation; the gradient comes back in the input's dtype.
  Tensor x = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor y = x.sum({0}, false, kDouble);
  EXPECT_EQ(y.scalar_type(), kDouble);
  Tensor g = ag::grad({y * 3.0}, {x})[0];
  EXPECT_EQ(g.scalar_type(), kFloat);
  expect_near(vals(g), {3, 3, 3});
}

namespace {
// Calls op boxed: arguments the C++ API never passes (None with keepdim=True).
Tensor boxed(std::string_view op, std::initializer_list<IValue> args) {
  Tensor out;
  Frame frame{args.begin(), static_cast<int>(args.size()), &out, 1};
  Dispatcher::instance().call(Dispatcher::instance().get(op), frame);
  return out;
}
}  // namespace

TEST(GradReductionSum, BoxedArguments) {
  using V = IValue;
  const Tensor x = input({2, 3});
  // dim=None with keepdim=True: a [1, 1] result.
  for (const char* op : {"sum", "mean", "prod"})
    check1([&](const Tensor& t) { return boxed(op, {V::of(t), V::none(), V::of(true), V::none()}); }, x);
  check1([](const Tensor& t) { return boxed("var", {V::of(t), V::none(), V::none(), V::of(true)}); }, x);
  check1([](const Tensor& t) { return boxed("norm", {V::of(t), V::none(), V::none(), V::of(true)}); }, x);
  // correction given as a float, keepdim=False.
  const int64_t d0[1] = {0};
  check1([&](const Tensor& t) { return boxed("std", {V::of(t), V::of(IntArrayRef(d0, 1)), V::of(0.0), V::of(false)}); }, x);
  // mean with dtype=: computed in float64, the gradient comes back as float32.
  Tensor f = tensor({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  Tensor g = ag::grad({f.mean({0}, false, kDouble)}, {f})[0];
  EXPECT_EQ(g.scalar_type(), kFloat);
  expect_near(vals(g), {0.25, 0.25, 0.25, 0.25});
}

TEST(GradReductionSum, Gradgradcheck) {
  checkgg1([](const Tensor& t) { return t.sum({-1}, false) * t.sum({0}, true).sum(); }, input({2, 3}));
}

TEST(GradReductionMean, GradcheckOverDimsAndKeepdim) {
  const Tensor x = input({2, 3, 4});
  check1([](const Tensor& t) { return t.mean(); }, x);
  for (const auto& dims : kDimLists)
    for (bool keep : {false, true}) check1([&](const Tensor& t) { return t.mean(dims, keep); }, x);
  check1([](const Tensor& t) { return t.mean({1}, true); }, transposed_input(3, 2));
  // Hand-computed: each element gets 1/count.
  Tensor y = input({2, 4});
  expect_near(vals(grad_of([](const Tensor& t) { return t.mean({1}, false); }, y)), std::vector<double>(8, 0.25));
}

TEST(GradReductionMean, Gradgradcheck) {
  checkgg1([](const Tensor& t) { return t.mean({0}, false) * t.mean(); }, input({3, 2}));
}

// ---------------------------------------------------------------- prod

TEST(GradReductionProd, GradcheckWithoutZeros) {
  const Tensor x = input({2, 3, 2});
  check1([](const Tensor& t) { return t.prod(); }, x);
  for (const auto& dims : kDimLists)
    for (bool keep : {false, true}) check1([&](const Tensor& t) { return t.prod(dims, keep); }, x);
  check1([](const Tensor& t) { return t.prod({1}, false); }, transposed_input(2, 3));
}

TEST(GradReductionProd, OneZeroGetsTheProductOfTheOthers) {
  Tensor x = leaf({2, 0, 3, 5});
  // d/dx_i prod = prod of the others: only the zero's slot is non-zero.
  expect_near(vals(grad_of([](const Tensor& t) { return t.prod(); }, x)), {0, 30, 0, 0});
  Tensor m = leaf2({2, 0, 3, 4, 5, 6}, {2, 3});
  expect_near(vals(grad_of([](const Tensor& t) { return t.prod({1}, false); }, m)), {0, 6, 0, 30, 24, 20});
  check1([](const Tensor& t) { return t.prod({1}, true); }, m);  // prod is multilinear: exact differences
}

TEST(GradReductionProd, TwoZerosGiveZeroGradient) {
  Tensor x = leaf({2, 0, 3, 0});
  expect_near(vals(grad_of([](const Tensor& t) { return t.prod(); }, x)), {0, 0, 0, 0});
  Tensor m = leaf2({0, 0, 3, 0, 5, 6}, {2, 3});  // columns: two zeros, one zero, none
  expect_near(vals(grad_of([](const Tensor& t) { return t.prod({0}, false); }, m)), {0, 5, 6, 0, 0, 3});
  check1([](const Tensor& t) { return t.prod(); }, x);
  check1([](const Tensor& t) { return t.prod({0}, false); }, m);
}

TEST(GradReductionProd, Gradgradcheck) {
  checkgg1([](const Tensor& t) { return t.prod({1}, false); }, input({2, 3}));
  // With one zero per group the second derivative is exact too.
  checkgg1([](const Tensor& t) { return t.prod(); }, leaf({2, 0, 3, -1.5}));
  checkgg1([](const Tensor& t) { return t.prod({0}, true); }, leaf2({0, 2, 3, 0.5, 4, 0}, {2, 3}));
}

// ---------------------------------------------------------------- max / min / amax / amin

TEST(GradReductionMax, FullReductionSplitsTiesEvenly) {
  Tensor x = leaf({3, 1, 3, 2});
  expect_near(vals(grad_of([](const Tensor& t) { return t.max(); }, x)), {0.5, 0, 0.5, 0});
  Tensor y = leaf({-1, 4, -1, -1});
  expect_near(vals(grad_of([](const Tensor& t) { return t.min(); }, y)), {1.0 / 3, 0, 1.0 / 3, 1.0 / 3});
  check1([](const Tensor& t) { return t.max(); }, input({3, 4}));
  check1([](const Tensor& t) { return t.min(); }, input({3, 4}));
}

TEST(GradReductionAmax, GradcheckOverDims) {
  const Tensor x = input({2, 3, 4});
  for (const auto& dims : kDimLists)
    for (bool keep : {false, true}) {
      check1([&](const Tensor& t) { return t.amax(dims, keep); }, x);
      check1([&](const Tensor& t) { return t.amin(dims, keep); }, x);
    }
  check1([](const Tensor& t) { return t.amax({0}, false); }, transposed_input(3, 4));
}

TEST(GradReductionAmax, TiesSplitEvenlyPerGroup) {
  Tensor m = leaf2({1, 3, 3, 2, 2, 0}, {2, 3});
  expect_near(vals(grad_of([](const Tensor& t) { return t.amax({1}, false); }, m)), {0, 0.5, 0.5, 0.5, 0.5, 0});
  expect_near(vals(grad_of([](const Tensor& t) { return t.amin({1}, true); }, m)), {1, 0, 0, 0, 0, 1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor n = leaf2({1, nan, 3, nan, 2, 0}, {2, 3});  // a NaN result: its NaN elements share the gradient
  expect_near(vals(grad_of([](const Tensor& t) { return t.amax({1}, false); }, n)), {0, 1, 0, 1, 0, 0});
  expect_near(vals(grad_of([](const Tensor& t) { return t.max(); }, n)), {0, 0.5, 0, 0.5, 0, 0});
  Tensor z = leaf({7, 7, 7});
  expect_near(vals(grad_of([](const Tensor& t) { return t.amax(); }, z)), {1.0 / 3, 1.0 / 3, 1.0 / 3});
}

TEST(GradReductionAmax, Gradgradcheck) {
  checkgg1([](const Tensor& t) { return t.amax({1}, false) * t.amin(); }, input({2, 3}));
  checkgg1([](const Tensor& t) { return std::get<0>(t.max(0, true)) * std::get<0>(t.min(-1, false)); }, input({2, 2}));
}

TEST(GradReductionMaxDim, GradcheckAndIndicesNotDifferentiable) {
  const Tensor x = input({2, 3, 4});
  for (int64_t d : {0, 1, -1})
    for (bool keep : {false, true}) {
      check1([&](const Tensor& t) { return std::get<0>(t.max(d, keep)); }, x);
      check1([&](const Tensor& t) { return std::get<0>(t.min(d, keep)); }, x);
    }
  check1([](const Tensor& t) { return std::get<0>(t.max(1, false)); }, transposed_input(3, 4));
  auto [v, i] = x.max(1, false);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(i.requires_grad());
  Tensor s = tensor({1.5}).reshape({}).detach().requires_grad_();
  check1([](const Tensor& t) { return std::get<0>(t.max(0, false)); }, s);
}

TEST(GradReductionMaxDim, GradientGoesToTheReturnedIndexOnly) {
  Tensor m = leaf2({2, 2, 1, 0, 5, 5}, {2, 3});
  auto [v, idx] = m.max(1, false);
  Tensor g = ag::grad({(v * tensor({10.0, 20.0})).sum()}, {m})[0];
  const std::vector<int64_t> at = idx.to_vector<int64_t>();
  std::vector<double> want(6, 0.0);
  want[size_t(at[0])] = 10;
  want[size_t(3 + at[1])] = 20;
  expect_near(vals(g), want);
  auto [vm, im] = m.min(0, true);
  Tensor gm = ag::grad({vm.sum()}, {m})[0];
  const std::vector<int64_t> atm = im.to_vector<int64_t>();
  std::vector<double> wantm(6, 0.0);
  for (size_t j = 0; j < 3; ++j) wantm[size_t(atm[j]) * 3 + j] = 1;
  expect_near(vals(gm), wantm);
}

TEST(GradReductionNotDifferentiable, OutputsDoNotRequireGrad) {
  const Tensor x = input({2, 3});
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_FALSE(x.argmin(1, true).requires_grad());
  EXPECT_FALSE(x.any().requires_grad());
  EXPECT_FALSE(x.all({0}, false).requires_grad());
}

// ---------------------------------------------------------------- var / std

TEST(GradReductionVar, GradcheckOverDimsCorrectionKeepdim) {
  const Tensor x = input({2, 3, 4});
  check1([](const Tensor& t) { return t.var(); }, x);
  check1([](const Tensor& t) { return t.std(); }, x);
  for (const auto& dims : kDimLists)
    for (double corr : {0.0, 1.0, 2.0})
      for (bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "dims " << dims.size() << " correction " << corr << " keep " << keep);
        check1([&](const Tensor& t) { return t.var(dims, corr, keep); }, x);
        check1([&](const Tensor& t) { return t.std(dims, corr, keep); }, x);
      }
  check1([](const Tensor& t) { return t.var({1}, 1, false); }, transposed_input(2, 5));
  check1([](const Tensor& t) { return t.std({0}, 0, true); }, transposed_input(4, 3));
}

TEST(GradReductionVar, HandComputedAndZeroStd) {
  // var(x, correction=1) of [1, 2, 4]: mean 7/3, d/dx_i = 2 (x_i - mean) / 2.
  Tensor x = leaf({1, 2, 4});
  expect_near(vals(grad_of([](const Tensor& t) { return t.var(); }, x)), {1 - 7.0 / 3, 2 - 7.0 / 3, 4 - 7.0 / 3});
  Tensor c = leaf({3, 3, 3});  // std 0: zero gradient, not NaN
  expect_near(vals(grad_of([](const Tensor& t) { return t.std(); }, c)), {0, 0, 0});
}

TEST(GradReductionVar, Gradgradcheck) {
  const Tensor x = input({3, 4});
  checkgg1([](const Tensor& t) { return t.var(); }, x);
  checkgg1([](const Tensor& t) { return t.var({1}, 0, true); }, x);
  checkgg1([](const Tensor& t) { return t.var({-2}, 1, false); }, x);
  checkgg1([](const Tensor& t) { return t.std({1}, 1, false); }, x);
  checkgg1([](const Tensor& t) { return t.norm(2, {0}, true); }, x);
}

// ---------------------------------------------------------------- norm

TEST(GradReductionNorm, GradcheckOverP) {
  const Tensor x = input({2, 3, 4});
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {1.0, 2.0, 3.0, 1.5, 0.5, -1.0, inf, -inf}) {
    SCOPED_TRACE(::testing::Message() << "p " << p);
    check1([&](const Tensor& t) { return t.norm(p); }, x);
    check1([&](const Tensor& t) { return t.norm(p, {1}, false); }, x);
    check1([&](const Tensor& t) { return t.norm(p, {0, -1}, true); }, x);
  }
  // "fro": the 2-norm over the matrix dims.
  check1([](const Tensor& t) { return t.norm(2, {-2, -1}, false); }, x);
  check1([](const Tensor& t) { return t.norm(2, {0}, false); }, transposed_input(3, 4));
}

TEST(GradReductionNorm, Gradgradcheck) {
  const Tensor x = input({2, 3});
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {1.0, 2.0, 3.0, 0.5, inf}) {
    SCOPED_TRACE(::testing::Message() << "p " << p);
    checkgg1([&](const Tensor& t) { return t.norm(p, {1}, false); }, x);
  }
}

TEST(GradReductionNorm, ZeroNormAndP0GiveZeroGradient) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, inf}) {
    SCOPED_TRACE(::testing::Message() << "p " << p);
    Tensor z = leaf({0, 0, 0});
    expect_near(vals(grad_of([&](const Tensor& t) { return t.norm(p); }, z)), {0, 0, 0});
  }
  Tensor x = leaf({3, 0, -4});  // 2-norm 5: x / 5
  expect_near(vals(grad_of([](const Tensor& t) { return t.norm(2); }, x)), {0.6, 0, -0.8});
  expect_near(vals(grad_of([](const Tensor& t) { return t.norm(1); }, x)), {1, 0, -1});
  expect_near(vals(grad_of([](const Tensor& t) { return t.norm(0); }, x)), {0, 0, 0});
  Tensor ties = leaf({-4, 1, 4});  // inf-norm tie between -4 and 4: split, with their signs
  expect_near(vals(grad_of([&](const Tensor& t) { return t.norm(inf); }, ties)), {-0.5, 0, 0.5});
}

// ---------------------------------------------------------------- logsumexp

TEST(GradReductionLogsumexp, GradcheckAndGradgradcheck) {
  const Tensor x = input({2, 3, 4});
  for (const auto& dims : kDimLists)
    for (bool keep : {false, true}) check1([&](const Tensor& t) { return t.logsumexp(dims, keep); }, x);
  check1([](const Tensor& t) { return t.logsumexp({0}, false); }, transposed_input(3, 4));
  // Hand-computed: softmax.
  Tensor y = leaf({0, std::log(3.0)});
  expect_near(vals(grad_of([](const Tensor& t) { return t.logsumexp({0}, false); }, y)), {0.25, 0.75});
  checkgg1([](const Tensor& t) { return t.logsumexp({1}, false); }, input({2, 3}));
  checkgg1([](const Tensor& t) { return t.logsumexp({0, 1}, true); }, input({2, 3}));
}

// ---------------------------------------------------------------- cumsum / cumprod

TEST(GradReductionCumsum, GradcheckOverDims) {
  const Tensor x = input({2, 3, 4});
  for (int64_t d : {0, 1, 2, -1}) check1([&](const Tensor& t) { return t.cumsum(d); }, x);
  check1([](const Tensor& t) { return t.cumsum(0); }, transposed_input(3, 4));
  check1([](const Tensor& t) { return t.cumsum(0); }, tensor({2.0}).reshape({}).detach().requires_grad_());
  // Hand-computed: element i reaches outputs i..n-1.
  expect_near(vals(grad_of([](const Tensor& t) { return t.cumsum(0); }, leaf({1, 2, 3}))), {3, 2, 1});
}

TEST(GradReductionCumprod, GradcheckWithAndWithoutZeros) {
  const Tensor x = input({2, 3, 4});
  for (int64_t d : {0, 1, -1}) check1([&](const Tensor& t) { return t.cumprod(d); }, x);
  check1([](const Tensor& t) { return t.cumprod(1); }, transposed_input(3, 4));
  // cumprod is multilinear, so central differences are exact even at zeros.
  check1([](const Tensor& t) { return t.cumprod(0); }, leaf({2, 0, 3, 4}));
  check1([](const Tensor& t) { return t.cumprod(0); }, leaf({0, 2, 0, 3}));
  check1([](const Tensor& t) { return t.cumprod(1); }, leaf2({1.5, 0, 2, 0, 3, -1, 0.5, 2}, {2, 4}));
}

TEST(GradReductionCumprod, HandComputedWithZeros) {
  // y = [2, 0, 0, 0]: dy/dx summed: x0 -> 1 + 0 (products through the zero vanish),
  // x1 -> x0 + x0 x2 + x0 x2 x3 = 2 + 6 + 30, x2, x3 -> 0.
  expect_near(vals(grad_of([](const Tensor& t) { return t.cumprod(0); }, leaf({2, 0, 3, 5}))), {1, 38, 0, 0});
  // Two zeros: only the first zero's slot sees x0 (the later terms include the second zero).
  expect_near(vals(grad_of([](const Tensor& t) { return t.cumprod(0); }, leaf({2, 0, 0, 5}))), {1, 2, 0, 0});
}

TEST(GradReductionCumsum, GradgradcheckCumsumCumprod) {
  // The scans' formulas reverse with flip (shape family): skip until it has a rule.
  if (ag::rule_of(Dispatcher::instance().get("flip")) == ag::RuleKind::None) GTEST_SKIP() << "flip has no rule yet";
  checkgg1([](const Tensor& t) { return t.cumsum(1); }, input({2, 3}));
  checkgg1([](const Tensor& t) { return t.cumprod(-1); }, input({2, 3}));
  // With zeros the first derivative is exact but the second is not (docs/ops/reduction.md).
}

// ---------------------------------------------------------------- linalg

namespace {
using F2 = std::function<Tensor(const Tensor&, const Tensor&)>;
void check2(const F2& f, const Tensor& a, const Tensor& b, bool gradgrad = false) {
  auto fn = [&](const VL& in) -> VL { return {f(in[0], in[1])}; };
  EXPECT_TRUE(ag::gradcheck(fn, {a, b}));
  if (gradgrad) {
    EXPECT_TRUE(ag::gradgradcheck(fn, {a, b}));
  }
}
}  // namespace

TEST(GradLinalgMm, GradcheckAndGradgradcheck) {
  auto mm = [](const Tensor& a, const Tensor& b) { return a.mm(b); };
  check2(mm, input({2, 3}, 1), input({3, 4}, 2), true);
  check2(mm, transposed_input(2, 3, 3), transposed_input(3, 2, 4));
  // Hand-computed: d sum(A B) / dA = 1 B^T (row sums of B).
  Tensor a = leaf2({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf2({5, 6, 7, 8}, {2, 2});
  auto g = ag::grad({a.mm(b).sum()}, {a, b});
  expect_near(vals(g[0]), {11, 15, 11, 15});
  expect_near(vals(g[1]), {4, 4, 6, 6});
}

TEST(GradLinalgBmm, GradcheckAndGradgradcheck) {
  check2([](const Tensor& a, const Tensor& b) { return a.bmm(b); }, input({2, 2, 3}, 1), input({2, 3, 2}, 2), true);
  Tensor at = randn({2, 3, 2}, Generator(5), kDouble).transpose(1, 2).detach().requires_grad_();
  check2([](const Tensor& a, const Tensor& b) { return a.bmm(b); }, at, input({2, 3, 2}, 6));
}

TEST(GradLinalgMatmul, EveryShapeCase) {
  auto mt = [](const Tensor& a, const Tensor& b) { return a.matmul(b); };
  struct Case {
    std::vector<int64_t> a, b;
    bool gradgrad;
  };
  const std::vector<Case> cases = {
      {{3}, {3}, true},              // dot: 0-d result
      {{3}, {3, 2}, true},           // vector x matrix
      {{2, 3}, {3}, true},           // matrix x vector
      {{2, 3}, {3, 2}, true},        // mm
      {{2, 2, 3}, {3, 2}, true},     // batch x matrix: folded into one mm
      {{2, 2, 3}, {3}, false},       // batch x vector
      {{3}, {2, 3, 2}, true},        // vector x batch
      {{2, 2, 3}, {2, 3, 2}, true},  // bmm
      {{2, 1, 2, 3}, {3, 3, 2}, false},  // broadcast batch dims
      {{1, 2, 3}, {2, 3, 1}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "a dims " << c.a.size() << " b dims " << c.b.size());
    check2(mt, input(c.a, 7), input(c.b, 8), c.gradgrad);
  }
  check2(mt, transposed_input(2, 3, 9), input({3}, 10));
}

TEST(GradLinalgAddmm, GradcheckBetaAlphaBroadcast) {
  for (double beta : {1.0, 0.0, -0.5})
    for (double alpha : {1.0, 2.5}) {
      SCOPED_TRACE(::testing::Message() << "beta " << beta << " alpha " << alpha);
      auto fn = [&](const VL& in) -> VL { return {addmm(in[0], in[1], in[2], beta, alpha)}; };
      EXPECT_TRUE(ag::gradcheck(fn, {input({2, 4}, 1), input({2, 3}, 2), input({3, 4}, 3)}));
      EXPECT_TRUE(ag::gradcheck(fn, {input({4}, 4), transposed_input(2, 3, 5), input({3, 4}, 6)}));
      EXPECT_TRUE(ag::gradcheck(fn, {input({2, 1}, 7), input({2, 3}, 8), input({3, 4}, 9)}));
    }
  auto fn = [](const VL& in) -> VL { return {addmm(in[0], in[1], in[2], 0.5, 2.0)}; };
  EXPECT_TRUE(ag::gradgradcheck(fn, {input({2, 2}, 1), input({2, 3}, 2), input({3, 2}, 3)}));
  // Hand-computed: d/dself = beta; d/dmat1 = alpha * 1 mat2^T.
  Tensor s = leaf2({0, 0, 0, 0}, {2, 2});
  Tensor a = leaf2({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf2({5, 6, 7, 8}, {2, 2});
  auto g = ag::grad({addmm(s, a, b, 3.0, 2.0).sum()}, {s, a});
  expect_near(vals(g[0]), {3, 3, 3, 3});
  expect_near(vals(g[1]), {22, 30, 22, 30});
}

TEST(GradLinalgAddmm, InPlace) {
  auto fn = [](const VL& in) -> VL {
    Tensor s = in[0].clone();
    s.addmm_(in[1], in[2], 0.5, -2.0);
    return {s};
  };
  EXPECT_TRUE(ag::gradcheck(fn, {input({2, 4}, 1), input({2, 3}, 2), input({3, 4}, 3)}));
  EXPECT_TRUE(ag::gradgradcheck(fn, {input({2, 2}, 4), input({2, 3}, 5), input({3, 2}, 6)}));
}

TEST(GradLinalgDotOuter, Gradcheck) {
  check2([](const Tensor& a, const Tensor& b) { return a.dot(b); }, input({4}, 1), input({4}, 2), true);
  check2([](const Tensor& a, const Tensor& b) { return a.outer(b); }, input({3}, 3), input({2}, 4), true);
  Tensor a = leaf({1, 2, 3});
  Tensor b = leaf({4, 5, 6});
  auto g = ag::grad({a.dot(b)}, {a, b});
  expect_near(vals(g[0]), {4, 5, 6});
  expect_near(vals(g[1]), {1, 2, 3});
  auto go = ag::grad({a.outer(b).sum()}, {a, b});
  expect_near(vals(go[0]), {15, 15, 15});
  expect_near(vals(go[1]), {6, 6, 6});
}
