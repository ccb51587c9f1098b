// Gradients of the nn ops: gradcheck (finite differences in float64)
// on every differentiable op, gradgradcheck where docs/autograd.md says, and
// the not-differentiable ops' outputs never requiring grad.
#include <tessera/autograd.h>
#include <tessera/autograd/derivative.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace tessera;
namespace ag = tessera::autograd;
using VL = ag::variable_list;

namespace {

// A float64 leaf of standard normals, reproducible per seed.
Tensor leaf(IntArrayRef shape, uint64_t seed) {
  return randn(shape, Generator(seed), TensorOptions(kDouble)).requires_grad_();
}
Tensor ints(std::initializer_list<int64_t> v) { return tensor(v); }
std::vector<double> vals(const Tensor& t) { return t.contiguous().to_vector<double>(); }

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "element " << i;
}

bool check(const ag::GradcheckFn& f, const VL& in) { return ag::gradcheck(f, in); }
bool check2(const ag::GradcheckFn& f, const VL& in) { return ag::gradgradcheck(f, in); }

}  // namespace

// ---- softmax, log_softmax ----

TEST(GradNNSoftmax, GradcheckEveryDim) {
  Tensor x = leaf({3, 4}, 1);
  for (int64_t d : {0, 1, -1}) {
    EXPECT_TRUE(check([d](const VL& in) -> VL { return {softmax(in[0], d)}; }, {x})) << "dim " << d;
    EXPECT_TRUE(check([d](const VL& in) -> VL { return {log_softmax(in[0], d)}; }, {x})) << "dim " << d;
  }
  Tensor x0 = leaf({}, 6);  // one element: softmax is 1, log_softmax 0, gradient 0
  EXPECT_TRUE(check([](const VL& in) -> VL { return {softmax(in[0], 0)}; }, {x0}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {log_softmax(in[0], -1)}; }, {x0}));
  Tensor x3 = leaf({2, 3, 2}, 2);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {softmax(in[0], 1)}; }, {x3}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {log_softmax(in[0], 1)}; }, {x3}));
}

TEST(GradNNSoftmax, Gradgradcheck) {
  Tensor x = leaf({2, 3}, 3);
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {softmax(in[0], 1)}; }, {x}));
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {log_softmax(in[0], 0)}; }, {x}));
}

TEST(GradNNSoftmax, DtypeArgumentGivesGradientInInputDtype) {
  // softmax(x32, dtype=float64): the gradient comes back as float32 and equals
  // the float64 computation's.
  Tensor x64 = leaf({2, 3}, 4);
  Tensor x32 = x64.detach().to(kFloat).requires_grad_();
  Tensor w = randn({2, 3}, Generator(5), TensorOptions(kDouble));
  (softmax(x32, 1, kDouble) * w).sum().backward();
  (softmax(x64, 1) * w).sum().backward();
  ASSERT_EQ(x32.grad().scalar_type(), kFloat);
  expect_near(vals(x32.grad()), vals(x64.grad()), 1e-6);
}

// ---- layer_norm ----

TEST(GradNNLayerNorm, GradcheckWithAndWithoutAffine) {
  Tensor x = leaf({3, 4}, 10);
  Tensor w = leaf({4}, 11), b = leaf({4}, 12);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {layer_norm(in[0], {4}, in[1], in[2])}; }, {x, w, b}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {layer_norm(in[0], {4})}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {layer_norm(in[0], {4}, in[1], std::nullopt, 0.1)}; }, {x, w}));
  // Two normalized dims.
  Tensor x3 = leaf({2, 2, 3}, 13);
  Tensor w2 = leaf({2, 3}, 14), b2 = leaf({2, 3}, 15);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {layer_norm(in[0], {2, 3}, in[1], in[2])}; }, {x3, w2, b2}));
}

TEST(GradNNLayerNorm, Gradgradcheck) {
  // The formula recomputes rsqrt(var + eps); its own derivative comes from the unary family.
  if (ag::rule_of(Dispatcher::instance().get("rsqrt")) == ag::RuleKind::None)
    GTEST_SKIP() << "rsqrt has no derivative rule yet";
  Tensor x = leaf({2, 3}, 16);
  Tensor w = leaf({3}, 17), b = leaf({3}, 18);
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {layer_norm(in[0], {3}, in[1], in[2])}; }, {x, w, b}));
}

// ---- losses ----

TEST(GradNNLoss, MseLossEveryReduction) {
  Tensor x = leaf({2, 3}, 20), y = leaf({2, 3}, 21), yb = leaf({3}, 22);
  for (const char* r : {"none", "mean", "sum"}) {
    EXPECT_TRUE(check([r](const VL& in) -> VL { return {mse_loss(in[0], in[1], r)}; }, {x, y})) << r;
    EXPECT_TRUE(check([r](const VL& in) -> VL { return {mse_loss(in[0], in[1], r)}; }, {x, yb})) << r << " broadcast";
  }
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {mse_loss(in[0], in[1])}; }, {x, y}));
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {mse_loss(in[0], in[1], "none")}; }, {x, y}));
}

TEST(GradNNLoss, NllLossReductionsWeightsIgnoreIndex) {
  Tensor x = leaf({4, 3}, 30);
  Tensor t = ints({0, 2, 1, 2});
  Tensor w = tensor({0.5, 2.0, 1.5});
  for (const char* r : {"none", "mean", "sum"}) {
    for (bool weighted : {false, true}) {
      for (int64_t ignore : {int64_t(-100), int64_t(2)}) {
        const std::optional<Tensor> wo = weighted ? std::optional<Tensor>(w) : std::nullopt;
        EXPECT_TRUE(check([&](const VL& in) -> VL { return {nll_loss(in[0], t, wo, r, ignore)}; }, {x}))
            << r << " weighted " << weighted << " ignore " << ignore;
      }
    }
  }
  // int32 targets; every target ignored ('mean' is NaN, the gradient 0 as in PyTorch).
  EXPECT_TRUE(check([&](const VL& in) -> VL { return {nll_loss(in[0], t.to(kInt), w, "mean")}; }, {x}));
  Tensor xi = leaf({2, 3}, 35);
  Tensor loss = nll_loss(xi, ints({1, 1}), std::nullopt, "mean", 1);
  EXPECT_TRUE(std::isnan(loss.item<double>()));
  loss.backward();
  expect_near(vals(xi.grad()), std::vector<double>(6, 0.0));
  // Unbatched [C] and spatial [N, C, d].
  Tensor x1 = leaf({4}, 31);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {nll_loss(in[0], ints({3}).reshape({}))}; }, {x1}));
  Tensor xs = leaf({2, 3, 2}, 32);
  Tensor ts = ints({0, 2, 1, -100}).reshape({2, 2});
  EXPECT_TRUE(check([&](const VL& in) -> VL { return {nll_loss(in[0], ts, w, "mean")}; }, {xs}));
  EXPECT_TRUE(check([&](const VL& in) -> VL { return {nll_loss(in[0], ts, std::nullopt, "none")}; }, {xs}));
}

TEST(GradNNLoss, NllLossByHand) {
  // mean with weights: d/dx[i, t_i] = -w[t_i] / sum_valid w[t_j]; ignored rows get 0.
  Tensor x = leaf({3, 2}, 33);
  Tensor t = ints({1, 0, 1});
  nll_loss(x, t, tensor({2.0, 3.0}), "mean", 0).backward();
  // Row 1 is ignored (target 0); valid weights 3 + 3 = 6.
  expect_near(vals(x.grad()), {0, -0.5, 0, 0, 0, -0.5});
}

TEST(GradNNLoss, NllLossGradgradcheck) {
  Tensor x = leaf({3, 3}, 34);
  Tensor t = ints({0, 2, 1});
  EXPECT_TRUE(check2([&](const VL& in) -> VL { return {nll_loss(in[0], t)}; }, {x}));
  EXPECT_TRUE(check2([&](const VL& in) -> VL { return {nll_loss(in[0], t, tensor({1.0, 2.0, 0.5}), "none")}; }, {x}));
}

TEST(GradNNLoss, CrossEntropyClassIndices) {
  Tensor x = leaf({3, 4}, 40);
  Tensor t = ints({3, 0, 1});
  Tensor w = tensor({0.5, 2.0, 1.5, 1.0});
  for (const char* r : {"none", "mean", "sum"}) {
    for (double eps : {0.0, 0.2}) {
      for (bool weighted : {false, true}) {
        const std::optional<Tensor> wo = weighted ? std::optional<Tensor>(w) : std::nullopt;
        EXPECT_TRUE(check([&](const VL& in) -> VL { return {cross_entropy(in[0], t, wo, r, 0, eps)}; }, {x}))
            << r << " label_smoothing " << eps << " weighted " << weighted;
      }
    }
  }
  Tensor xs = leaf({2, 3, 2}, 41);
  Tensor ts = ints({0, 2, 1, 1}).reshape({2, 2});
  EXPECT_TRUE(check([&](const VL& in) -> VL { return {cross_entropy(in[0], ts, std::nullopt, "mean", -100, 0.1)}; },
                    {xs}));
  Tensor x1 = leaf({3}, 42);
  EXPECT_TRUE(check([](const VL& in) -> VL {
    return {cross_entropy(in[0], tensor({int64_t(1)}).reshape({}), std::nullopt, "sum", -100, 0.3)};
  }, {x1}));
}

TEST(GradNNLoss, SmoothedNllLossMatchesHandFormula) {
  // d loss / dx for cross_entropy with smoothing e, C classes, 'sum', one row:
  // softmax(x) - ((1 - e) * onehot(t) + e / C).
  Tensor x = leaf({1, 3}, 43);
  const double e = 0.3;
  cross_entropy(x, ints({2}), std::nullopt, "sum", -100, e).backward();
  const std::vector<double> p = vals(softmax(x.detach(), 1));
  expect_near(vals(x.grad()), {p[0] - e / 3, p[1] - e / 3, p[2] - (1 - e) - e / 3});
}

TEST(GradNNLoss, CrossEntropyProbabilityTargets) {
  Tensor x = leaf({2, 3}, 44);
  Tensor p = softmax(randn({2, 3}, Generator(45), TensorOptions(kDouble)), 1).requires_grad_();
  Tensor w = tensor({0.5, 2.0, 1.5});
  for (const char* r : {"none", "mean", "sum"}) {
    for (double eps : {0.0, 0.25}) {
      EXPECT_TRUE(check([&](const VL& in) -> VL { return {cross_entropy(in[0], in[1], std::nullopt, r, -100, eps)}; },
                        {x, p}))
          << r << " label_smoothing " << eps;
      EXPECT_TRUE(check([&](const VL& in) -> VL { return {cross_entropy(in[0], in[1], w, r, -100, eps)}; }, {x, p}))
          << r << " weighted, label_smoothing " << eps;
    }
  }
}

TEST(GradNNLoss, CrossEntropyGradgradcheck) {
  Tensor x = leaf({3, 3}, 46);
  Tensor t = ints({0, 2, 1});
  EXPECT_TRUE(check2([&](const VL& in) -> VL { return {cross_entropy(in[0], t)}; }, {x}));
  EXPECT_TRUE(check2([&](const VL& in) -> VL {
    return {cross_entropy(in[0], t, tensor({1.0, 2.0, 0.5}), "sum", -100, 0.2)};
  }, {x}));
  Tensor p = softmax(randn({3, 3}, Generator(47), TensorOptions(kDouble)), 1).requires_grad_();
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {cross_entropy(in[0], in[1])}; }, {x, p}));
}

// ---- conv2d ----

struct ConvCase {
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
  const char* pad_mode;  // nullptr: numeric padding
};

TEST(GradNNConv2d, GradcheckAcrossOptions) {
  const std::vector<ConvCase> cases = {
      {{1, 2, 4, 4}, {2, 2, 3, 3}, {1}, {0}, {1}, 1, true, nullptr},
      {{2, 2, 5, 4}, {3, 2, 2, 3}, {2, 1}, {1, 0}, {1}, 1, true, nullptr},          // stride, asymmetric padding
      {{1, 2, 6, 6}, {2, 2, 2, 2}, {2}, {1}, {2}, 1, false, nullptr},               // dilation with stride, no bias
      {{1, 4, 4, 4}, {4, 2, 3, 2}, {1}, {1}, {1}, 2, true, nullptr},                // groups 2
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {2}, {1}, {1, 2}, 4, false, nullptr},            // depthwise, strided, dilated
      {{2, 3, 4, 4}, {2, 3, 3, 3}, {3}, {1}, {1}, 1, true, nullptr},                // stride leaves rows unused
      {{1, 2, 5, 5}, {2, 2, 1, 1}, {2}, {0}, {1}, 1, false, nullptr},               // 1x1 strided: phases without taps
      {{1, 2, 7, 6}, {2, 2, 2, 2}, {3}, {1}, {1}, 1, false, nullptr},               // stride > kernel
      {{1, 2, 8, 8}, {2, 2, 2, 3}, {2}, {1}, {3, 2}, 1, true, nullptr},             // stride 2 with dilation 3 and 2
      {{1, 4, 7, 8}, {2, 2, 3, 3}, {2, 3}, {1, 2}, {1}, 2, true, nullptr},          // uneven stride, groups
      {{1, 2, 4, 5}, {2, 2, 2, 3}, {1}, {0}, {2, 1}, 1, true, "same"},              // odd total padding
      {{1, 2, 4, 4}, {2, 2, 3, 3}, {1}, {0}, {1}, 1, true, "valid"},
      {{2, 4, 4}, {3, 2, 2, 2}, {1}, {1}, {1}, 1, true, nullptr},                   // unbatched
      {{1, 2, 6, 5}, {2, 2, 3, 2}, {1}, {2, 1}, {2, 1}, 1, true, nullptr},          // stride 1, dilated, padded
      {{1, 2, 4, 4}, {2, 2, 1, 1}, {1}, {1}, {1}, 1, true, nullptr},                // padding beyond the kernel
  };
  uint64_t seed = 100;
  for (const ConvCase& k : cases) {
    Tensor x = leaf(k.x, seed++), w = leaf(k.w, seed++), b = leaf({k.w[0]}, seed++);
    auto f = [&](const VL& in) -> VL {
      const std::optional<Tensor> bias = k.bias ? std::optional<Tensor>(in[2]) : std::nullopt;
      if (k.pad_mode) return {conv2d(in[0], in[1], bias, k.stride, std::string_view(k.pad_mode), k.dilation, k.groups)};
      return {conv2d(in[0], in[1], bias, k.stride, k.padding, k.dilation, k.groups)};
    };
    EXPECT_TRUE(check(f, {x, w, b})) << "case " << (seed - 100) / 3;
  }
}

TEST(GradNNConv2d, BiasGradientIsTheSpatialSum) {
  Tensor x = randn({2, 1, 3, 3}, Generator(150), TensorOptions(kDouble));
  Tensor w = randn({2, 1, 2, 2}, Generator(151), TensorOptions(kDouble));
  Tensor b = tensor({0.0, 0.0}).requires_grad_();
  Tensor g = randn({2, 2, 2, 2}, Generator(152), TensorOptions(kDouble));
  conv2d(x, w, b).backward(g);
  const std::vector<double> gv = vals(g);
  std::vector<double> want(2, 0.0);
  for (size_t i = 0; i < gv.size(); ++i) want[(i / 4) % 2] += gv[i];
  expect_near(vals(b.grad()), want);
}

// Double backward of conv2d and pooling (not required by the issue) goes
// through the shape ops' rules; checked once they exist.
bool have_rules(std::initializer_list<const char*> ops) {
  for (const char* op : ops)
    if (ag::rule_of(Dispatcher::instance().get(op)) == ag::RuleKind::None) return false;
  return true;
}

TEST(GradNNConv2d, Gradgradcheck) {
  if (!have_rules({"pad", "flip", "slice", "narrow", "stack", "matmul"})) GTEST_SKIP() << "shape ops' rules missing";
  Tensor x = leaf({1, 2, 4, 4}, 160), w = leaf({2, 1, 2, 2}, 161), b = leaf({2}, 162);
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {conv2d(in[0], in[1], in[2], {1}, {1}, {1}, 2)}; }, {x, w, b}));
  Tensor w2 = leaf({2, 2, 2, 2}, 163);
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {conv2d(in[0], in[1], std::nullopt, {2}, {1}, {1})}; }, {x, w2}));
}

// ---- pooling ----

TEST(GradNNPool, MaxPool2dGradcheck) {
  Tensor x = leaf({1, 2, 5, 5}, 200);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {2})}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {3}, {2}, {1})}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {2, 3}, {2, 1}, {1, 0}, {1}, true)}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {2}, {1}, {0}, {2})}; }, {x}));  // dilation
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {2}, {2}, {1}, {1}, true)}; }, {x}));
  Tensor x3 = leaf({2, 4, 3}, 201);  // unbatched
  EXPECT_TRUE(check([](const VL& in) -> VL { return {max_pool2d(in[0], {2}, {1})}; }, {x3}));
}

TEST(GradNNPool, MaxPool2dTiesGoToTheFirstIndexOfEachWindow) {
  // Every element equal: each 2x2 window sends its gradient to its top-left
  // element; with stride 1 windows overlap and gradients add up.
  Tensor x = full({1, 1, 3, 3}, 1.0, TensorOptions(kDouble)).requires_grad_();
  max_pool2d(x, {2}, {1}).backward(tensor({1.0, 2.0, 3.0, 4.0}).reshape({1, 1, 2, 2}));
  expect_near(vals(x.grad()), {1, 2, 0, 3, 4, 0, 0, 0, 0});
  Tensor y = tensor({1.0, 5.0, 5.0, 2.0}).reshape({1, 1, 2, 2}).requires_grad_();
  max_pool2d(y, {2}).sum().backward();
  expect_near(vals(y.grad()), {0, 1, 0, 0});
  // NaN wins the window (it is the output); of several NaNs the scan ends on
  // the last (`v > max || isnan(v)`), as PyTorch's kernels.
  const double nan = std::nan("");
  Tensor z = tensor({1.0, nan, nan, 2.0}).reshape({1, 1, 2, 2}).requires_grad_();
  max_pool2d(z, {2}).sum().backward();
  expect_near(vals(z.grad()), {0, 0, 1, 0});
  // A window of -inf inputs sends its gradient to its first input element, not
  // to the padding before it.
  Tensor m = full({1, 1, 2, 2}, -std::numeric_limits<double>::infinity(), TensorOptions(kDouble)).requires_grad_();
  max_pool2d(m, {2}, {2}, {1}).sum().backward();  // 4 windows, each holding one input element
  expect_near(vals(m.grad()), {1, 1, 1, 1});
}

TEST(GradNNPool, AvgPool2dGradcheck) {
  Tensor x = leaf({1, 2, 5, 5}, 210);
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {2})}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {3}, {2}, {1})}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {3}, {2}, {1}, false, false)}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {2, 3}, {2}, {1}, true, true)}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {2}, {2}, {1}, true, false)}; }, {x}));
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {2}, {1}, {0}, false, true, 3)}; }, {x}));
  Tensor x3 = leaf({2, 3, 4}, 211);  // unbatched
  EXPECT_TRUE(check([](const VL& in) -> VL { return {avg_pool2d(in[0], {2}, {1}, {1})}; }, {x3}));
}

TEST(GradNNPool, Gradgradcheck) {
  if (!have_rules({"pad", "slice", "narrow"})) GTEST_SKIP() << "shape ops' rules missing";
  Tensor x = leaf({1, 1, 4, 4}, 220);
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {max_pool2d(in[0], {2}, {1}, {1})}; }, {x}));
  EXPECT_TRUE(check2([](const VL& in) -> VL { return {avg_pool2d(in[0], {3}, {2}, {1}, true, false)}; }, {x}));
}

TEST(GradNNPool, AvgPool2dByHand) {
  // 1x3 input, kernel (1, 2), stride 1, padding (0, 1), count_include_pad=false:
  // windows [pad, x0], [x0, x1], [x1, x2], [x2, pad] have divisors 1, 2, 2, 1.
  Tensor x = tensor({1.0, 2.0, 3.0}).reshape({1, 1, 3}).requires_grad_();
  avg_pool2d(x, {1, 2}, {1}, {0, 1}, false, false).sum().backward();
  expect_near(vals(x.grad()), {1.5, 1.0, 1.5});
}

// ---- dropout and the random samplers ----

TEST(GradRandom, DropoutGradientIsTheMaskScaling) {
  // The gradient is g * (kept ? 1 / (1 - p) : 0), the mask read from the output.
  const double p = 0.4;
  Tensor x = (randn({4, 5}, Generator(300), TensorOptions(kDouble)).abs() + 0.5).requires_grad_();
  Tensor y = dropout(x, p, true, Generator(301));
  Tensor g = randn({4, 5}, Generator(302), TensorOptions(kDouble));
  y.backward(g);
  const std::vector<double> xv = vals(x), yv = vals(y), gv = vals(g);
  std::vector<double> want(xv.size());
  size_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const bool keep = yv[i] != 0.0;
    kept += keep;
    if (keep) {
      EXPECT_NEAR(yv[i], xv[i] / (1 - p), 1e-12);
    }
    want[i] = keep ? gv[i] / (1 - p) : 0.0;
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, xv.size());
  expect_near(vals(x.grad()), want);
}

TEST(GradRandom, DropoutGradcheckAndGradgradcheck) {
  // The same generator seed each call gives the same mask, so the function is deterministic.
  Tensor x = leaf({3, 4}, 310);
  auto f = [](const VL& in) -> VL { return {dropout(in[0], 0.5, true, Generator(311))}; };
  EXPECT_TRUE(check(f, {x}));
  EXPECT_TRUE(check2(f, {x}));
  // p = 1 drops everything: zero gradient.
  Tensor z = leaf({3}, 312);
  dropout(z, 1.0, true, Generator(313)).sum().backward();
  expect_near(vals(z.grad()), {0, 0, 0});
}

TEST(GradRandom, SamplersOutputsDoNotRequireGrad) {
  Generator g(320);
  EXPECT_FALSE(rand({3}, g).requires_grad());
  EXPECT_FALSE(randn({3}, g).requires_grad());
  EXPECT_FALSE(randint(0, 5, {3}, g).requires_grad());
  EXPECT_FALSE(randperm(4, g).requires_grad());
  EXPECT_FALSE(bernoulli(full({3}, 0.5), g).requires_grad());
  Tensor t = zeros({3}, TensorOptions(kDouble));
  EXPECT_FALSE(t.uniform_(0, 1, g).requires_grad());
  EXPECT_FALSE(t.normal_(0, 1, g).requires_grad());
  EXPECT_FALSE(t.bernoulli_(0.5, g).requires_grad());
  EXPECT_FALSE(t.random_(0, 3, g).requires_grad());
}

TEST(GradRandom, InPlaceSamplersCutTheGradientThroughSelf) {
  // As in PyTorch: overwriting a non-leaf with random values keeps it in the
  // graph but no gradient flows to what it held.
  Generator g(330);
  Tensor x = leaf({3}, 331);
  Tensor p = full({3}, 0.5, TensorOptions(kDouble)).requires_grad_();
  using Sampler = Tensor& (*)(Tensor&, Generator&, const Tensor&);
  const std::vector<std::pair<const char*, Sampler>> samplers = {
      {"uniform_", [](Tensor& t, Generator& gen, const Tensor&) -> Tensor& { return t.uniform_(0, 1, gen); }},
      {"normal_", [](Tensor& t, Generator& gen, const Tensor&) -> Tensor& { return t.normal_(0, 1, gen); }},
      {"random_", [](Tensor& t, Generator& gen, const Tensor&) -> Tensor& { return t.random_(0, 4, gen); }},
      {"bernoulli_.float", [](Tensor& t, Generator& gen, const Tensor&) -> Tensor& { return t.bernoulli_(0.3, gen); }},
      {"bernoulli_.Tensor", [](Tensor& t, Generator& gen, const Tensor& q) -> Tensor& { return t.bernoulli_(q, gen); }},
  };
  for (const auto& [name, sample] : samplers) {
    Tensor y = x * 2.0;
    Tensor z = y + x;  // x also reaches the loss directly: d/dx = 1
    sample(y, g, p);
    EXPECT_TRUE(y.requires_grad()) << name;
    const std::vector<Tensor> grads = ag::grad({(y * 3.0 + z).sum()}, {x, p}, {}, std::nullopt, false, true);
    expect_near(vals(grads[0]), {3, 3, 3});  // only through z: 2 + 1
    EXPECT_TRUE(!grads[1].defined() || vals(grads[1]) == std::vector<double>(3, 0.0)) << name;
  }
  // A leaf that requires grad cannot be overwritten in place.
  Tensor leaf_x = leaf({2}, 332);
  EXPECT_THROW(leaf_x.uniform_(0, 1, g), AutogradError);
}

// ---- devices ----

TEST(GradNNMeta, FormulasUseOnlyDispatchedOps) {
  // On meta tensors (shapes only) every formula still runs: no formula reads data.
  const TensorOptions m = TensorOptions(kFloat).device("meta");
  Tensor x = empty({2, 4, 6, 6}, m).requires_grad_();
  Tensor w = empty({4, 2, 3, 3}, m).requires_grad_();
  Tensor y = conv2d(x, w, std::nullopt, {2}, {1}, {1}, 2);
  Tensor z = max_pool2d(y, {2}, {1}, {1}, {1}, true) + avg_pool2d(y, {2}, {1}, {1}, true, false);
  z = layer_norm(log_softmax(softmax(z, 2), 1), {z.size(3)});
  z = dropout(z, 0.5, true, Generator(1));
  const Tensor t = zeros({2, z.size(2) * z.size(3)}, TensorOptions(kLong).device("meta"));
  cross_entropy(z.reshape({2, 4, -1}), t, std::nullopt, "mean", -100, 0.1).backward();
  EXPECT_TRUE(x.grad().sizes().equals(x.sizes()));
  EXPECT_TRUE(w.grad().sizes().equals(w.sizes()));
  EXPECT_EQ(x.grad().device(), x.device());
}
