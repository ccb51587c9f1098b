// The autograd engine's rules, checked against gradients computed by hand.
#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/autograd/derivative.h>
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

TEST(AutogradRules, EveryOpHasARule) {
  std::string missing;
  for (const Operator* op : Dispatcher::instance().operators())
    if (ag::rule_of(*op) == ag::RuleKind::None) missing += " " + op->name();
  EXPECT_EQ(missing, "") << "ops without an autograd rule (define_derivative, define_not_differentiable or "
                            "define_decomposed in core/src/autograd/formulas_<family>.cpp)";
}

TEST(Gradcheck, AcceptsCorrectAndRejectsWrongGradients) {
  Tensor a = tensor({0.5, -1.5, 2.0}).requires_grad_();
  Tensor b = tensor({1.25, 3.0, -0.75}).requires_grad_();
  EXPECT_TRUE(ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * in[1] / in[1].exp()}; },
                            {a, b}));
  EXPECT_TRUE(ag::gradgradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * in[1] * in[1]}; },
                                {a, b}));
}
