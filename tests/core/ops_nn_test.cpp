// C++ tests of the nn ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <random>

using namespace tessera;

namespace {

Tensor random_tensor(IntArrayRef shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return tensor(ArrayRef<double>(v)).view(shape);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// Expects `fn` to throw E whose message contains `text`.
template <typename E, typename F>
void expect_error(F fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << text;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(OpsNn, SoftmaxFunctionMethodAndDtypes) {
  const Tensor x = tensor({1.0, 2.0, 3.0, -1.0, 0.0, 1.0}).view({2, 3});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double z2 = std::exp(-1.0) + std::exp(0.0) + std::exp(1.0);
  const std::vector<double> want = {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z,
                                    std::exp(-1.0) / z2, std::exp(0.0) / z2, std::exp(1.0) / z2};
  for (ScalarType t : {kHalf, kBFloat16, kFloat, kDouble}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const double tol = t == kBFloat16 ? 1e-2 : t == kHalf ? 1e-3 : 1e-6;
    const Tensor s = softmax(x.to(t), 1);
    EXPECT_EQ(s.scalar_type(), t);
    expect_near(s.to_vector<double>(), want, tol);
    expect_near(x.to(t).softmax(-1).to_vector<double>(), want, tol);
    std::vector<double> logw(want.size());
    for (size_t i = 0; i < want.size(); ++i) logw[i] = std::log(want[i]);
    expect_near(log_softmax(x.to(t), 1).to_vector<double>(), logw, tol * 10);
    expect_near(x.to(t).log_softmax(1).to_vector<double>(), logw, tol * 10);
  }
  // Along dim 0 of the same tensor: each column of two.
  const Tensor c = softmax(x, 0);
  EXPECT_NEAR(c.to_vector<double>()[0], 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
  // dtype= casts first; an integer input needs it.
  EXPECT_EQ(softmax(tensor({1, 2, 3}), 0, kDouble).scalar_type(), kDouble);
  EXPECT_EQ(softmax(tensor({5.0}).view({}), 0).item<double>(), 1.0);
}

TEST(OpsNn, SoftmaxErrors) {
  expect_error<TypeError>([] { softmax(tensor({1, 2}), 0); }, "softmax: expected a floating input, got int64");
  expect_error<TypeError>([] { log_softmax(tensor({1.0}), 0, kInt); }, "log_softmax: dtype must be a floating dtype");
  expect_error<IndexError>([] { softmax(tensor({1.0, 2.0}), 1); }, "softmax");
}

TEST(OpsNn, LayerNormAgainstLoops) {
  const Tensor x = random_tensor({3, 2, 4}, 1).to(kFloat);
  const Tensor w = random_tensor({2, 4}, 2).to(kFloat), b = random_tensor({2, 4}, 3).to(kFloat);
  const Tensor y = layer_norm(x, {2, 4}, w, b, 1e-3);
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> want(xv.size());
  for (int r = 0; r < 3; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 8; ++i) m += xv[r * 8 + i] / 8;
    for (int i = 0; i < 8; ++i) v += (xv[r * 8 + i] - m) * (xv[r * 8 + i] - m) / 8;
    for (int i = 0; i < 8; ++i) want[r * 8 + i] = (xv[r * 8 + i] - m) / std::sqrt(v + 1e-3) * wv[i] + bv[i];
  }
  expect_near(y.to_vector<double>(), want, 1e-5);
  expect_error<ValueError>([&] { layer_norm(x, {4, 2}); }, "layer_norm: expected input with shape [*, 4, 2]");
  expect_error<ValueError>([&] { layer_norm(x, {4}, w); }, "layer_norm: expected weight of shape [4]");
}

TEST(OpsNn, LossesKnownValues) {
  const Tensor a = tensor({1.0, 2.0, 4.0}), b = tensor({0.0, 2.0, 1.0});
  EXPECT_DOUBLE_EQ(mse_loss(a, b).item<double>(), 10.0 / 3.0);
  EXPECT_DOUBLE_EQ(mse_loss(a, b, "sum").item<double>(), 10.0);
  EXPECT_EQ(mse_loss(a, b, "none").to_vector<double>(), (std::vector<double>{1, 0, 9}));
  // nll: -x[n, t[n]] weighted; mean divides by the weights of non-ignored targets.
  const Tensor lp = tensor({-1.0, -2.0, -3.0, -4.0, -5.0, -6.0}).view({2, 3});
  const Tensor t = tensor({int64_t{2}, int64_t{0}});
  EXPECT_DOUBLE_EQ(nll_loss(lp, t).item<double>(), 3.5);
  const Tensor w = tensor({1.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(nll_loss(lp, t, w).item<double>(), (3 * 3.0 + 1 * 4.0) / 4.0);
  EXPECT_DOUBLE_EQ(nll_loss(lp, t, w, "sum").item<double>(), 13.0);
  EXPECT_EQ(nll_loss(lp, t, w, "none").to_vector<double>(), (std::vector<double>{9.0, 4.0}));
  EXPECT_DOUBLE_EQ(nll_loss(lp, t, w, "mean", 2).item<double>(), 4.0);  // first target ignored
  // cross_entropy = nll_loss(log_softmax); label smoothing mixes in the class mean.
  const Tensor logits = tensor({0.5, 1.5, -1.0, 2.0, 0.0, 1.0}).view({2, 3});
  EXPECT_NEAR(cross_entropy(logits, t).item<double>(), nll_loss(log_softmax(logits, 1), t).item<double>(), 1e-12);
  const auto l = log_softmax(logits, 1).to_vector<double>();
  const double eps = 0.2;
  const double s0 = -(1 - eps) * l[2] - eps / 3 * (l[0] + l[1] + l[2]);
  const double s1 = -(1 - eps) * l[3] - eps / 3 * (l[3] + l[4] + l[5]);
  EXPECT_NEAR(cross_entropy(logits, t, std::nullopt, "mean", -100, eps).item<double>(), (s0 + s1) / 2, 1e-12);
}

TEST(OpsNn, LossErrors) {
  const Tensor lp = zeros({2, 3}), t = tensor({int64_t{0}, int64_t{1}});
  expect_error<ValueError>([&] { nll_loss(lp, t, std::nullopt, "avg"); },
                           "nll_loss: reduction must be 'none', 'mean' or 'sum', got 'avg'");
  expect_error<ValueError>([&] { mse_loss(lp, lp, "x"); }, "mse_loss: reduction must be");
  expect_error<IndexError>([&] { nll_loss(lp, tensor({int64_t{0}, int64_t{3}})); }, "target 3 is out of bounds for 3 classes");
  expect_error<ValueError>([&] { nll_loss(lp, tensor({int64_t{0}})); }, "nll_loss: expected target of shape [2]");
  expect_error<TypeError>([&] { nll_loss(lp, zeros({2})); }, "nll_loss: expected an integer");
  expect_error<ValueError>([&] { cross_entropy(lp, zeros({2, 4})); }, "cross_entropy: expected a floating target");
}

TEST(OpsNn, Conv2dIdentityAndKnownValues) {
  // A 1x1 kernel of ones over 2 channels sums them; bias adds.
  const Tensor x = arange(0, 18, 1, TensorOptions(kFloat)).view({1, 2, 3, 3});
  const Tensor w = ones({1, 2, 1, 1});
  const Tensor y = conv2d(x, w, tensor({0.5f}));
  std::vector<double> want(9);
  for (int i = 0; i < 9; ++i) want[i] = i + (i + 9) + 0.5;
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 1, 3, 3}));
  expect_near(y.to_vector<double>(), want, 1e-6);
  // 2x2 box filter with padding 1 on the first channel only (groups = 2, unbatched).
  const Tensor box = ones({2, 1, 2, 2}, TensorOptions(kDouble));
  const Tensor z = conv2d(x.view({2, 3, 3}).to(kDouble), box, std::nullopt, {1}, {1, 1}, {1}, 2);
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{2, 4, 4}));
  EXPECT_EQ(z.to_vector<double>()[0], 0.0);
  EXPECT_EQ(z.to_vector<double>()[5], 0.0 + 1 + 3 + 4);
  // 'same' keeps the size; 'valid' is no padding.
  EXPECT_EQ(conv2d(x, ones({3, 2, 3, 2}), std::nullopt, {1}, "same").sizes().vec(), (std::vector<int64_t>{1, 3, 3, 3}));
  EXPECT_EQ(conv2d(x, ones({3, 2, 3, 2}), std::nullopt, {1}, "valid").sizes().vec(), (std::vector<int64_t>{1, 3, 1, 2}));
}

TEST(OpsNn, Conv2dErrors) {
  const Tensor x = zeros({1, 4, 5, 5}), w = zeros({2, 4, 3, 3});
  expect_error<ValueError>([&] { conv2d(zeros({4, 5}), w); }, "conv2d: expected a 3-D (unbatched) or 4-D");
  expect_error<ValueError>([&] { conv2d(x, zeros({2, 3, 3, 3}), std::nullopt, {1}, {1}, {1}, 2); },
                           "to have 6 channels");
  expect_error<ValueError>([&] { conv2d(x, zeros({3, 1, 3, 3}), std::nullopt, {1}, {1}, {1}, 3); },
                           "must be divisible by groups (3)");
  expect_error<ValueError>([&] { conv2d(x, zeros({2, 4, 6, 6})); }, "can't be greater than the padded input size");
  expect_error<ValueError>([&] { conv2d(x, w, std::nullopt, {0}); }, "conv2d: stride must be positive");
  expect_error<ValueError>([&] { conv2d(x, w, std::nullopt, {2}, "same"); }, "padding='same' is not supported");
  expect_error<TypeError>([&] { conv2d(x, w.to(kDouble)); }, "must have the same dtype");
}

TEST(OpsNn, PoolingKnownValuesAndErrors) {
  const Tensor x = arange(0, 16, 1, TensorOptions(kFloat)).view({1, 1, 4, 4});
  EXPECT_EQ(max_pool2d(x, {2}).to_vector<double>(), (std::vector<double>{5, 7, 13, 15}));
  EXPECT_EQ(avg_pool2d(x, {2}).to_vector<double>(), (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
  EXPECT_EQ(max_pool2d(x.to(kInt), {3}, {2}, {1}).to_vector<double>(), (std::vector<double>{5, 7, 13, 15}));
  // Padded border windows: the pad counts in the divisor unless count_include_pad=false.
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}).to_vector<double>()[0], 0.0 / 4);
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}, false, false).to_vector<double>()[1], (1.0 + 2.0) / 2);
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}, false, true, 1).to_vector<double>()[1], 3.0);
  EXPECT_EQ(max_pool2d(x, {3}, {2}, {0}, {1}, true).sizes().vec(), (std::vector<int64_t>{1, 1, 2, 2}));
  expect_error<ValueError>([&] { max_pool2d(x, {2}, {1}, {2}); }, "max_pool2d: padding should be at most half of kernel size");
  expect_error<ValueError>([&] { avg_pool2d(x, {2}, {0}); }, "avg_pool2d: stride must be positive");
  expect_error<ValueError>([&] { max_pool2d(zeros({4, 4}), {2}); }, "max_pool2d: expected a 3-D [C, H, W] or 4-D");
  expect_error<ValueError>([&] { max_pool2d(x, {5}); }, "max_pool2d: output size is too small");
  expect_error<TypeError>([&] { avg_pool2d(x.to(kLong), {2}); }, "avg_pool2d: expected a floating input");
}

TEST(OpsNn, CrossEntropyWithClassProbabilities) {
  // -sum_c p[c] * log_softmax(x)[c] per sample; 'mean' divides by the samples.
  const Tensor x = tensor({0.5, 1.5, -1.0, 2.0, 0.0, 1.0}).view({2, 3});
  const Tensor p = tensor({0.2, 0.3, 0.5, 1.0, 0.0, 0.0}).view({2, 3});
  const auto l = log_softmax(x, 1).to_vector<double>(), pv = p.to_vector<double>();
  double s[2] = {0, 0};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c) s[n] -= pv[n * 3 + c] * l[n * 3 + c];
  expect_near(cross_entropy(x, p, std::nullopt, "none").to_vector<double>(), {s[0], s[1]}, 1e-12);
  EXPECT_NEAR(cross_entropy(x, p).item<double>(), (s[0] + s[1]) / 2, 1e-12);
  EXPECT_NEAR(cross_entropy(x, p, std::nullopt, "sum").item<double>(), s[0] + s[1], 1e-12);
}

TEST(OpsNn, LayerNormHalfComputesInFloat) {
  const Tensor x = tensor({1000.0, 1001.0, 1002.0, 1003.0}).view({1, 4});
  // float16 keeps these exactly; the normalized values are +-1.342, +-0.447.
  const auto y = layer_norm(x.to(kHalf), {4}).to_vector<double>();
  const double sd = std::sqrt(1.25 + 1e-5);
  expect_near(y, {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd}, 2e-3);
}
