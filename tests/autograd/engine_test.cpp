// The autograd engine's rules, checked against gradients computed by hand.
#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <thread>

using namespace tessera;
namespace ag = tessera::autograd;

namespace {
Tensor leaf(std::initializer_list<double> v) { return tensor(v).requires_grad_(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST(AutogradEngine, ScalarBackwardAccumulatesIntoLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor w = leaf({4, 5, 6});
  Tensor y = (x * w + x).sum();  // dy/dx = w + 1, dy/dw = x
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward");
  y.backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2, 3}));
  // A second graph accumulates into the same .grad.
  (x * 2).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{7, 8, 9}));
}
