// Which nodes grad() and backward(inputs=) run: exactly those on a path from the
// outputs to a requested input, chosen in one pass over the graph (linear in
// its size). Gradients are checked against hand-computed values; a custom
// function counts its backward calls to show which branches did not run.
#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
namespace ag = tessera::autograd;

namespace {

int g_backward_calls = 0;

// Identity whose backward counts its calls.
struct Counted : ag::Function<Counted> {
  static Tensor forward(ag::AutogradContext*, const Tensor& x) { return x.clone(); }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list grads) {
    ++g_backward_calls;
    return {grads[0]};
  }
};

Tensor leaf(std::initializer_list<double> v) { return tensor(v).requires_grad_(); }
double item(const Tensor& t) { return t.item<double>(); }

}  // namespace

TEST(AutogradSelection, AnUnrelatedBranchDoesNotRun) {
  Tensor x = leaf({1.5}), w = leaf({0.5});
  Tensor out = (x * 2).sum() + Counted::apply(w).exp().sum();
  g_backward_calls = 0;
  auto g = ag::grad({out}, {x}, {}, /*retain_graph=*/true);
  EXPECT_EQ(item(g[0]), 2.0);
  EXPECT_EQ(g_backward_calls, 0);
  out.backward({}, std::nullopt, false, {x});
  EXPECT_EQ(item(x.grad()), 2.0);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(g_backward_calls, 0);
}

TEST(AutogradSelection, DiamondBelowAndAboveTheInput) {
  Tensor x = leaf({0.7});
  Tensor a = Counted::apply(x) * 3;  // a = 2.1
  Tensor out = (a.sin() + a * a).sum();
  const double av = 2.1, da = std::cos(av) + 2 * av;
  g_backward_calls = 0;
  // With respect to a: both sides of the diamond run, nothing below a.
  auto ga = ag::grad({out}, {a}, {}, /*retain_graph=*/true);
  EXPECT_NEAR(item(ga[0]), da, 1e-12);
  EXPECT_EQ(g_backward_calls, 0);
  // With respect to x: the diamond's two gradients meet, then the path below runs once.
  auto gx = ag::grad({out}, {x}, {}, /*retain_graph=*/true);
  EXPECT_NEAR(item(gx[0]), 3 * da, 1e-12);
  EXPECT_EQ(g_backward_calls, 1);
  // Both at once, and an input listed twice.
  auto both = ag::grad({out}, {x, a, x});
  EXPECT_NEAR(item(both[0]), 3 * da, 1e-12);
  EXPECT_NEAR(item(both[1]), da, 1e-12);
  EXPECT_NEAR(item(both[2]), 3 * da, 1e-12);
  EXPECT_EQ(g_backward_calls, 2);
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradSelection, AnInputInTheMiddleOfAChain) {
  Tensor x = leaf({0.25});
  Tensor h1 = Counted::apply(x * 2);  // 0.5
  Tensor h2 = h1.exp();
  Tensor out = (h2 * 5).sum();
  g_backward_calls = 0;
  EXPECT_EQ(item(ag::grad({out}, {h2}, {}, /*retain_graph=*/true)[0]), 5.0);
  EXPECT_EQ(g_backward_calls, 0);
  auto g = ag::grad({out}, {h1, x}, {}, /*retain_graph=*/true);
  EXPECT_NEAR(item(g[0]), 5 * std::exp(0.5), 1e-12);
  EXPECT_NEAR(item(g[1]), 10 * std::exp(0.5), 1e-12);
  EXPECT_EQ(g_backward_calls, 1);
  // backward(inputs=) with a non-leaf: its .grad, and nothing below it.
  out.backward({}, std::nullopt, false, {h2});
  EXPECT_EQ(item(h2.grad()), 5.0);
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(g_backward_calls, 1);
}

TEST(AutogradSelection, AnInputNotInTheGraph) {
  Tensor x = leaf({1.0}), unused = leaf({2.0});
  Tensor out = (x * x).sum();
  auto g = ag::grad({out}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_EQ(item(g[0]), 2.0);
  EXPECT_FALSE(g[1].defined());
}

// A million-op chain: selecting its nodes for grad() used to take one pass per
// level (hours); building, differentiating and freeing it must neither take
// that long nor recurse (the C stack could not hold a frame per node).
TEST(AutogradSelection, AMillionOpChain) {
  constexpr int kOps = 1000000;
  Tensor x = leaf({1.0});
  Tensor y = x, middle;
  for (int i = 0; i < kOps; ++i) {
    y = i % 2 == 0 ? -y : y + 1.0;  // dy/dx flips sign at each neg
    if (i == kOps / 2 - 1) middle = y;
  }
  // kOps / 2 negations: an even count, so dy/dx = 1; dy/dmiddle = 1 too.
  auto g = ag::grad({y}, {middle, x}, {}, /*retain_graph=*/true);
  EXPECT_EQ(item(g[0]), 1.0);
  EXPECT_EQ(item(g[1]), 1.0);
  y.backward({}, std::nullopt, false, {middle});
  EXPECT_EQ(item(middle.grad()), 1.0);
  EXPECT_FALSE(x.grad().defined());
  middle = Tensor();
  y = Tensor();  // frees the chain iteratively
}
