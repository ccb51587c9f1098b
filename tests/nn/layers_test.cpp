// The standard layers: Linear against a hand matmul and PyTorch's init rule,
// Conv2d and LayerNorm against the functional ops, Dropout, ReLU, Sequential.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/tessera.h>

#include <cmath>
#include <vector>

using namespace tessera;

namespace {

TEST(NnLinear, ForwardMatchesAHandMatmul) {
  manual_seed(1);
  nn::Linear lin(3, 2, true, kDouble);
  const Tensor x = randn({4, 3}, std::nullopt, kDouble);
  const auto X = x.to_vector<double>(), W = lin.weight().to_vector<double>(), B = lin.bias().to_vector<double>();
  const auto Y = lin.forward(x).to_vector<double>();
  ASSERT_EQ(Y.size(), 8u);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 2; ++o) {
      double s = B[o];
      for (int i = 0; i < 3; ++i) s += X[n * 3 + i] * W[o * 3 + i];
      EXPECT_NEAR(Y[n * 2 + o], s, 1e-12);
    }
}

TEST(NnLinear, OtherRanksAndNoBias) {
  manual_seed(2);
  nn::Linear lin(3, 2, /*bias=*/false);
  EXPECT_FALSE(lin.bias().defined());
  EXPECT_EQ(lin.named_parameters().size(), 1u);
  const Tensor x = randn({2, 5, 3});
  autograd::NoGradGuard no_grad;  // forward values only
  const Tensor y = lin.forward(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 5, 2}));
  EXPECT_TRUE(allclose(y.select(0, 1), lin.forward(x.select(0, 1)), 1e-6, 1e-6));
  const Tensor v = lin.forward(x.select(0, 0).select(0, 0));  // 1-D input
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_THROW(lin.forward(ones({4, 2})), ValueError);
}

TEST(NnLinear, InitIsPyTorchsAndReproducible) {
  const int64_t in = 400, out = 300;
  nn::Linear a(in, out, true, {}, Generator(42));
  nn::Linear b(in, out, true, {}, Generator(42));
  nn::Linear c(in, out, true, {}, Generator(43));
  EXPECT_TRUE(equal(a.weight(), b.weight()));
  EXPECT_TRUE(equal(a.bias(), b.bias()));
  EXPECT_FALSE(equal(a.weight(), c.weight()));
  // kaiming_uniform(a = sqrt(5)) is uniform on ±1/sqrt(fan_in): max near the
  // bound, variance bound^2 / 3, mean 0.
  const double bound = 1.0 / std::sqrt(double(in));
  const auto w = a.weight().to_vector<double>();
  double mx = 0, mean = 0, sq = 0;
  for (double v : w) {
    mx = std::max(mx, std::abs(v));
    mean += v;
    sq += v * v;
  }
  mean /= double(w.size());
  sq /= double(w.size());
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.99 * bound);
  EXPECT_NEAR(mean, 0, 0.01 * bound);
  EXPECT_NEAR(sq, bound * bound / 3, 0.02 * bound * bound / 3);
  for (double v : a.bias().to_vector<double>()) EXPECT_LE(std::abs(v), bound);
  // The default generator, seeded, is reproducible too.
  manual_seed(5);
  nn::Linear d(4, 4);
  manual_seed(5);
  nn::Linear e(4, 4);
  EXPECT_TRUE(equal(d.weight(), e.weight()));
}

TEST(NnConv2d, MatchesTheFunctionalOp) {
  manual_seed(3);
  nn::Conv2d conv(4, 6, {3, 2}, /*stride=*/{2, 1}, /*padding=*/{1}, /*dilation=*/{1, 2}, /*groups=*/2);
  EXPECT_EQ(conv.weight().sizes().vec(), (std::vector<int64_t>{6, 2, 3, 2}));
  EXPECT_EQ(conv.bias().sizes().vec(), (std::vector<int64_t>{6}));
  const double bound = 1.0 / std::sqrt(2.0 * 3 * 2);  // fan_in = in/groups * kH * kW
  for (double v : conv.weight().to_vector<double>()) EXPECT_LE(std::abs(v), bound);
  const Tensor x = randn({2, 4, 7, 6});
  autograd::NoGradGuard no_grad;
  const Tensor want = conv2d(x, conv.weight(), conv.bias(), {2, 1}, {1, 1}, {1, 2}, 2);
  EXPECT_TRUE(equal(conv.forward(x), want));
  nn::Conv2d same(4, 3, {3}, {1}, "same", {1}, 1, /*bias=*/false);
  EXPECT_FALSE(same.bias().defined());
  EXPECT_TRUE(equal(same.forward(x), conv2d(x, same.weight(), std::nullopt, {1}, "same")));
  EXPECT_THROW(nn::Conv2d(4, 6, {3}, {1}, 0, {1}, 3), ValueError);   // groups do not divide
  EXPECT_THROW(nn::Conv2d(4, 6, {3}, {1}, "full"), ValueError);      // unknown padding mode
  EXPECT_THROW(nn::Conv2d(4, 6, {3, 3, 3}), ValueError);              // 3 kernel sizes
  EXPECT_EQ(conv.extra_repr(), "4, 6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2");
}

TEST(NnLayerNorm, MatchesTheFunctionalOpAndTrainsItsAffine) {
  manual_seed(4);
  nn::LayerNorm ln({3, 4}, 1e-5);
  EXPECT_TRUE(equal(ln.weight(), ones({3, 4})));
  EXPECT_TRUE(equal(ln.bias(), zeros({3, 4})));
  {
    autograd::NoGradGuard no_grad;
    ln.weight().uniform_(0.5, 1.5);
    ln.bias().uniform_(-1, 1);
  }
  const Tensor x = randn({2, 3, 4});
  {
    autograd::NoGradGuard no_grad;
    EXPECT_TRUE(equal(ln.forward(x), layer_norm(x, {3, 4}, ln.weight(), ln.bias(), 1e-5)));
  }
  nn::LayerNorm plain({4}, 1e-3, /*elementwise_affine=*/false);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_TRUE(equal(plain.forward(x), layer_norm(x, {4}, std::nullopt, std::nullopt, 1e-3)));
  EXPECT_THROW(nn::LayerNorm({}), ValueError);
}

// The modules' parameter gradients are the functional ops' gradients.
TEST(NnConv2dLayerNorm, GradientsMatchTheFunctionalOps) {
  manual_seed(8);
  nn::Conv2d conv(2, 3, {3}, {1}, 1);
  nn::LayerNorm ln({3, 5, 5});
  const Tensor x = randn({2, 2, 5, 5});
  const Tensor c = randn({2, 3, 5, 5});
  (ln.forward(conv.forward(x)) * c).sum().backward();
  const Tensor w = conv.weight().detach().requires_grad_(), b = conv.bias().detach().requires_grad_();
  const Tensor g = ln.weight().detach().requires_grad_(), h = ln.bias().detach().requires_grad_();
  (layer_norm(conv2d(x, w, b, {1}, {1}), {3, 5, 5}, g, h) * c).sum().backward();
  EXPECT_TRUE(allclose(conv.weight().grad(), w.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(conv.bias().grad(), b.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(ln.weight().grad(), g.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(ln.bias().grad(), h.grad(), 1e-5, 1e-6));
  EXPECT_GT(conv.weight().grad().abs().sum().item<double>(), 0.0);
}

TEST(NnDropout, IdentityInEvalAndScaledMaskInTrain) {
  nn::Dropout drop(0.25, Generator(9));
  const Tensor x = rand({200, 50}) + 1.0;  // no zeros in x
  const Tensor y = drop.forward(x);
  const auto X = x.to_vector<double>(), Y = y.to_vector<double>();
  size_t zeros_seen = 0;
  for (size_t i = 0; i < X.size(); ++i) {
    if (Y[i] == 0) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(Y[i], X[i] / 0.75, 1e-6);
    }
  }
  const double frac = double(zeros_seen) / double(X.size());
  EXPECT_NEAR(frac, 0.25, 0.02);
  // The same generator state gives the same mask.
  nn::Dropout again(0.25, Generator(9));
  EXPECT_TRUE(equal(again.forward(x), y));
  drop.eval();
  EXPECT_TRUE(equal(drop.forward(x), x));
  EXPECT_THROW(nn::Dropout(1.5), ValueError);
}

TEST(NnSequential, ChainsAndIndexes) {
  manual_seed(6);
  auto l1 = std::make_shared<nn::Linear>(2, 3);
  auto l2 = std::make_shared<nn::Linear>(3, 1);
  nn::Sequential s{l1, std::make_shared<nn::ReLU>(), l2};
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  const Tensor x = randn({4, 2});
  EXPECT_TRUE(equal(s.forward(x), l2->forward(l1->forward(x).relu())));
  EXPECT_TRUE(s[0] == l1);
  EXPECT_THROW(s[3], IndexError);
  EXPECT_THROW(s.push_back(nullptr), ValueError);
  nn::Sequential empty_seq;
  EXPECT_TRUE(empty_seq.forward(x).is_same(x));
}

}  // namespace
