// Optimizers: each update against torch.optim's formula, evaluated here by hand
// on doubles over three steps with chosen gradients.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/tessera.h>

#include <cmath>
#include <vector>

using namespace tessera;
using Vec = std::vector<double>;

namespace {

const Vec kP0 = {0.5, -1.25, 2.0, 0.0};
// One gradient per step; signs and sizes vary so that max() in amsgrad and the
// momentum terms matter.
const std::vector<Vec> kGrads = {{0.3, -0.2, 1.5, -0.7}, {-0.1, 0.4, 0.2, 0.05}, {0.25, 0.25, -1.0, 0.6}};

Tensor make_param(const Vec& v) { return tensor(ArrayRef<double>(v), kDouble).requires_grad_(); }

void expect_vec_near(const Tensor& t, const Vec& want, double tol, const std::string& what) {
  const Vec got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// Runs `opt` for the three gradients, checking p against `ref` after each step.
// ref(step t from 1, p, g) updates p (a Vec) in place by the formula.
template <typename Ref>
void run_and_compare(optim::Optimizer& opt, Tensor& p, Ref&& ref, const std::string& what) {
  Vec want = kP0;
  for (size_t t = 0; t < kGrads.size(); ++t) {
    p.set_grad(tensor(ArrayRef<double>(kGrads[t]), kDouble));
    opt.step();
    ref(static_cast<int>(t + 1), want, kGrads[t]);
    expect_vec_near(p, want, 1e-12, what + " step " + std::to_string(t + 1));
  }
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
}

struct SgdCase {
  double lr, momentum, dampening, wd;
  bool nesterov, maximize;
};

void check_sgd(const SgdCase& c) {
  Tensor p = make_param(kP0);
  optim::SGDOptions o;
  o.lr = c.lr;
  o.momentum = c.momentum;
  o.dampening = c.dampening;
  o.weight_decay = c.wd;
  o.nesterov = c.nesterov;
  o.maximize = c.maximize;
  optim::SGD opt({p}, o);
  Vec buf(kP0.size());
  run_and_compare(
      opt, p,
      [&](int t, Vec& w, const Vec& grad) {
        for (size_t i = 0; i < w.size(); ++i) {
          double g = c.maximize ? -grad[i] : grad[i];
          g += c.wd * w[i];
          if (c.momentum != 0) {
            buf[i] = t == 1 ? g : c.momentum * buf[i] + (1 - c.dampening) * g;
            g = c.nesterov ? g + c.momentum * buf[i] : buf[i];
          }
          w[i] -= c.lr * g;
        }
      },
      "SGD");
}

TEST(OptimSGD, Plain) { check_sgd({0.1, 0, 0, 0, false, false}); }
TEST(OptimSGD, Momentum) { check_sgd({0.1, 0.9, 0, 0, false, false}); }
TEST(OptimSGD, MomentumWithDampening) { check_sgd({0.05, 0.8, 0.3, 0, false, false}); }
TEST(OptimSGD, Nesterov) { check_sgd({0.1, 0.9, 0, 0, true, false}); }
TEST(OptimSGD, WeightDecay) { check_sgd({0.1, 0, 0, 0.01, false, false}); }
TEST(OptimSGD, EverythingAndMaximize) { check_sgd({0.07, 0.5, 0, 0.2, true, true}); }

struct AdamCase {
  double lr, b1, b2, eps, wd;
  bool amsgrad, decoupled, maximize;
};

void check_adam(const AdamCase& c) {
  Tensor p = make_param(kP0);
  optim::AdamOptions o;
  o.lr = c.lr;
  o.betas = {c.b1, c.b2};
  o.eps = c.eps;
  o.weight_decay = c.wd;
  o.amsgrad = c.amsgrad;
  o.maximize = c.maximize;
  std::unique_ptr<optim::Adam> opt;
  if (c.decoupled)
    opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, o);
  else
    opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
  Vec m(kP0.size(), 0), v(kP0.size(), 0), vmax(kP0.size(), 0);
  run_and_compare(
      *opt, p,
      [&](int t, Vec& w, const Vec& grad) {
        for (size_t i = 0; i < w.size(); ++i) {
          double g = c.maximize ? -grad[i] : grad[i];
          if (c.decoupled)
            w[i] *= 1 - c.lr * c.wd;
          else
            g += c.wd * w[i];
          m[i] = c.b1 * m[i] + (1 - c.b1) * g;
          v[i] = c.b2 * v[i] + (1 - c.b2) * g * g;
          vmax[i] = std::max(vmax[i], v[i]);
          const double mhat = m[i] / (1 - std::pow(c.b1, t));
          const double vv = c.amsgrad ? vmax[i] : v[i];
          w[i] -= c.lr * mhat / (std::sqrt(vv) / std::sqrt(1 - std::pow(c.b2, t)) + c.eps);
        }
      },
      c.decoupled ? "AdamW" : "Adam");
  EXPECT_EQ(opt->step_count(p), 3);
}

TEST(OptimAdam, BiasCorrection) { check_adam({0.01, 0.9, 0.999, 1e-8, 0, false, false, false}); }
TEST(OptimAdam, OtherBetasAndLargeEps) { check_adam({0.1, 0.5, 0.7, 0.1, 0, false, false, false}); }
TEST(OptimAdam, L2WeightDecay) { check_adam({0.01, 0.9, 0.999, 1e-8, 0.1, false, false, false}); }
TEST(OptimAdam, Amsgrad) { check_adam({0.05, 0.9, 0.8, 1e-8, 0, true, false, false}); }
TEST(OptimAdam, Maximize) { check_adam({0.01, 0.9, 0.999, 1e-8, 0.05, false, false, true}); }
TEST(OptimAdamW, DecoupledWeightDecay) { check_adam({0.01, 0.9, 0.999, 1e-8, 0.1, false, true, false}); }
TEST(OptimAdamW, DecoupledWithAmsgrad) { check_adam({0.05, 0.9, 0.8, 1e-8, 0.3, true, true, false}); }

TEST(OptimAdamW, DefaultWeightDecayIsOnePercentAndDiffersFromAdam) {
  EXPECT_EQ(optim::AdamW::default_options().weight_decay, 1e-2);
  Tensor a = make_param(kP0), b = make_param(kP0);
  optim::AdamOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.5;
  optim::Adam adam({a}, o);
  optim::AdamW adamw({b}, o);
  a.set_grad(tensor(ArrayRef<double>(kGrads[0]), kDouble));
  b.set_grad(tensor(ArrayRef<double>(kGrads[0]), kDouble));
  adam.step();
  adamw.step();
  EXPECT_FALSE(allclose(a, b));
}

TEST(Optim, ParametersWithoutGradAreSkipped) {
  Tensor p = make_param(kP0), q = make_param(kP0);
  optim::Adam opt({p, q}, {});
  p.set_grad(ones({4}, kDouble));
  opt.step();
  EXPECT_FALSE(allclose(p, tensor(ArrayRef<double>(kP0), kDouble)));
  EXPECT_TRUE(equal(q.detach(), tensor(ArrayRef<double>(kP0), kDouble)));
  EXPECT_EQ(opt.step_count(p), 1);
  EXPECT_EQ(opt.step_count(q), 0);
}

TEST(Optim, ParamGroupsHaveTheirOwnOptions) {
  Tensor p = make_param(kP0), q = make_param(kP0);
  optim::SGDOptions fast;
  fast.lr = 1.0;
  optim::SGD opt({{{p}, std::nullopt}, {{q}, fast}}, optim::SGDOptions{0.1});
  EXPECT_EQ(opt.num_param_groups(), 2u);
  EXPECT_EQ(opt.lr(0), 0.1);
  EXPECT_EQ(opt.lr(1), 1.0);
  p.set_grad(ones({4}, kDouble));
  q.set_grad(ones({4}, kDouble));
  opt.step();
  expect_vec_near(p, {0.4, -1.35, 1.9, -0.1}, 1e-12, "group 0");
  expect_vec_near(q, {-0.5, -2.25, 1.0, -1.0}, 1e-12, "group 1");
  opt.set_lr(0.0, 1);
  opt.step();
  expect_vec_near(q, {-0.5, -2.25, 1.0, -1.0}, 1e-12, "lr 0");
  EXPECT_THROW(opt.lr(2), IndexError);
  // The per-group accessors' errors, on each optimizer: a group out of range
  // first, then a negative rate; the value is left alone.
  optim::Adam adam({{{p}, std::nullopt}, {{q}, std::nullopt}}, optim::AdamOptions{});
  for (optim::Optimizer* o : {static_cast<optim::Optimizer*>(&opt), static_cast<optim::Optimizer*>(&adam)}) {
    const std::string name = o == &opt ? "SGD" : "Adam";
    EXPECT_THROW(o->set_lr(-1.0, 2), IndexError) << name;
    try {
      o->set_lr(-1.0, 1);
      ADD_FAILURE() << name << ": a negative lr was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(name + ": invalid learning rate -1"), std::string::npos) << e.what();
    }
    EXPECT_GE(o->lr(1), 0.0) << name;
  }
  EXPECT_THROW(opt.options(2), IndexError);
  EXPECT_THROW(adam.options(5), IndexError);
  adam.set_lr(0.5, 1);
  EXPECT_EQ(adam.options(1).lr, 0.5);
}

TEST(Optim, ZeroGrad) {
  Tensor p = make_param(kP0);
  optim::SGD opt({p}, {});
  p.set_grad(ones({4}, kDouble));
  const Tensor g = p.grad();
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(p.grad().is_same(g) || p.grad().data_ptr() == g.data_ptr());
  EXPECT_TRUE(equal(p.grad(), zeros({4}, kDouble)));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(Optim, ConstructorErrors) {
  Tensor p = make_param(kP0);
  EXPECT_THROW(optim::SGD(std::vector<Tensor>{}), ValueError);
  EXPECT_THROW(optim::SGD({p, p}), ValueError);
  EXPECT_THROW(optim::SGD({p * 2}), ValueError);  // not a leaf
  EXPECT_THROW(optim::SGD({p}, optim::SGDOptions{-1.0}), ValueError);
  optim::SGDOptions nesterov;
  nesterov.nesterov = true;  // without momentum
  EXPECT_THROW(optim::SGD({p}, nesterov), ValueError);
  optim::AdamOptions bad;
  bad.betas = {1.0, 0.999};
  EXPECT_THROW(optim::Adam({p}, bad), ValueError);
  bad.betas = {0.9, 0.999};
  bad.eps = -1;
  EXPECT_THROW(optim::AdamW({p}, bad), ValueError);
  try {
    optim::SGDOptions o;
    o.momentum = -0.5;
    optim::SGD sgd({p}, o);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("momentum -0.5"), std::string::npos) << e.what();
  }
}

// End to end: a linear regression trained with each optimizer reaches the
// least-squares weights (known here: the data is generated from them).
TEST(Optim, TrainsALinearRegression) {
  for (int which = 0; which < 3; ++which) {
    manual_seed(11);
    nn::Linear lin(3, 1, true, kDouble);
    const Tensor x = randn({64, 3}, std::nullopt, kDouble);
    const Tensor w_true = tensor({1.5, -2.0, 0.5}, kDouble).view({3, 1});
    const Tensor y = x.mm(w_true) + 0.25;
    std::unique_ptr<optim::Optimizer> opt;
    if (which == 0) {
      optim::SGDOptions o;
      o.lr = 0.1;
      o.momentum = 0.9;
      opt = std::make_unique<optim::SGD>(lin.parameters(), o);
    } else {
      optim::AdamOptions o;
      o.lr = 0.05;
      o.weight_decay = 0;
      opt = which == 1 ? std::unique_ptr<optim::Optimizer>(std::make_unique<optim::Adam>(lin.parameters(), o))
                       : std::make_unique<optim::AdamW>(lin.parameters(), o);
    }
    for (int step = 0; step < 500; ++step) {
      opt->zero_grad();
      const Tensor d = lin.forward(x) - y;
      ((d * d).sum() / 64.0).backward();
      opt->step();
    }
    expect_vec_near(lin.weight(), {1.5, -2.0, 0.5}, 1e-3, "weight, optimizer " + std::to_string(which));
    expect_vec_near(lin.bias(), {0.25}, 1e-3, "bias, optimizer " + std::to_string(which));
  }
}

}  // namespace
