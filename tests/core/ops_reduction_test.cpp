// C++ tests of the reduction ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace tessera;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// [[0, 1, 2], [3, 4, 5]] as float32.
Tensor m23() { return arange(6, kFloat).view({2, 3}); }

std::vector<double> vals(const Tensor& t) { return t.to(kDouble).contiguous().to_vector<double>(); }
std::vector<int64_t> ivals(const Tensor& t) { return t.to(kLong).contiguous().to_vector<int64_t>(); }

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Reduction, MeanFunctionMethodOutAndDtype) {
  EXPECT_EQ(vals(mean(m23())), (std::vector<double>{2.5}));
  EXPECT_EQ(vals(m23().mean({1})), (std::vector<double>{1, 4}));
  EXPECT_EQ(m23().mean({0}, true).sizes().vec(), (std::vector<int64_t>{1, 3}));
  Tensor i = arange(4, kInt);
  EXPECT_EQ(i.mean(kDouble).scalar_type(), kDouble);
  EXPECT_DOUBLE_EQ(i.mean(kDouble).item<double>(), 1.5);
  Tensor out = empty({3}, kDouble);
  mean_out(out, m23(), {0});
  EXPECT_EQ(vals(out), (std::vector<double>{1.5, 2.5, 3.5}));
  // float16 sums in float32: 4096 * 30 overflows float16, the mean does not.
  EXPECT_FLOAT_EQ(full({4096}, 30.0, kHalf).mean().item<float>(), 30.0f);
  EXPECT_TRUE(std::isnan(empty({0}).mean().item<float>()));
}

TEST(Reduction, MeanOfIntegersNeedsDtype) {
  const std::string msg = error_of([] { arange(4, kInt).mean(); });
  EXPECT_NE(msg.find("mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_THROW(arange(4, kInt).mean(), TypeError);
  EXPECT_THROW(m23().mean(kLong), TypeError);
}

TEST(Reduction, ProdAndSumOut) {
  Tensor t = arange(1, 7, 1, kFloat).view({2, 3});
  EXPECT_EQ(vals(prod(t)), (std::vector<double>{720}));
  EXPECT_EQ(vals(t.prod({1})), (std::vector<double>{6, 120}));
  EXPECT_EQ(arange(1, 5, 1, kInt).prod().scalar_type(), kLong);
  EXPECT_EQ(vals(empty({0, 2}).prod({0})), (std::vector<double>{1, 1}));
  Tensor out = empty({2}, kDouble);
  prod_out(out, t, {1});
  EXPECT_EQ(vals(out), (std::vector<double>{6, 120}));
  Tensor s = empty({3});
  sum_out(s, t, {0});
  EXPECT_EQ(vals(s), (std::vector<double>{5, 7, 9}));
  Tensor wrong = empty({4});
  EXPECT_THROW(sum_out(wrong, t, {0}), ValueError);
}

TEST(Reduction, MaxMinValuesAndIndices) {
  Tensor t = tensor({3.0f, 7.0f, 7.0f, -1.0f, 2.0f, -1.0f}).view({2, 3});
  EXPECT_EQ(t.max().item<float>(), 7.0f);
  EXPECT_EQ(min(t).item<float>(), -1.0f);
  auto [v, i] = t.max(1);
  EXPECT_EQ(vals(v), (std::vector<double>{7, 2}));
  EXPECT_EQ(ivals(i), (std::vector<int64_t>{1, 1}));  // the first of equal maxima
  auto [v2, i2] = min(t, 1, true);
  EXPECT_EQ(v2.sizes().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ivals(i2), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(i2.scalar_type(), kLong);
  Tensor vo = empty({3}), io = empty({3}, kLong);
  max_out(vo, io, t, 0);
  EXPECT_EQ(vals(vo), (std::vector<double>{3, 7, 7}));
  EXPECT_EQ(ivals(io), (std::vector<int64_t>{0, 0, 0}));
  // Along a transposed (strided) dim, and a reversed one.
  auto [v3, i3] = t.t().max(1);
  EXPECT_EQ(vals(v3), (std::vector<double>{3, 7, 7}));
  EXPECT_EQ(ivals(std::get<1>(t.t().max(0))), (std::vector<int64_t>{1, 1}));
}

TEST(Reduction, NaNPropagatesThroughMaxMinAndArgmax) {
  Tensor t = tensor({1.0, kNaN, 5.0, kNaN});
  EXPECT_TRUE(std::isnan(t.max().item<double>()));
  EXPECT_TRUE(std::isnan(t.amin().item<double>()));
  EXPECT_EQ(t.argmax().item<int64_t>(), 1);
  EXPECT_EQ(t.argmin().item<int64_t>(), 1);
  // Long contiguous rows take the vectorized path.
  Tensor big = arange(1000, kFloat);
  EXPECT_EQ(big.argmax().item<int64_t>(), 999);
  std::vector<double> host(1000, 1.0);
  host[500] = kNaN;
  host[700] = kNaN;
  Tensor row = tensor(ArrayRef<double>(host)).to(kFloat);
  EXPECT_TRUE(std::isnan(row.amax().item<float>()));
  EXPECT_EQ(row.argmax().item<int64_t>(), 500);
  EXPECT_EQ(row.argmin().item<int64_t>(), 500);
}

TEST(Reduction, ArgmaxArgminForms) {
  Tensor t = tensor({4, 9, 1, 9, 0, 2}).view({2, 3});
  EXPECT_EQ(argmax(t).item<int64_t>(), 1);
  EXPECT_EQ(ivals(t.argmax(1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ivals(t.argmin(0)), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(t.argmax(std::nullopt, true).sizes().vec(), (std::vector<int64_t>{1, 1}));
  Tensor out = empty({2}, kLong);
  argmin_out(out, t, 1);
  EXPECT_EQ(ivals(out), (std::vector<int64_t>{2, 1}));
}

TEST(Reduction, AmaxAminOverDimSets) {
  Tensor t = arange(24, kInt).view({2, 3, 4});
  EXPECT_EQ(ivals(amax(t, {0, 2})), (std::vector<int64_t>{15, 19, 23}));
  EXPECT_EQ(ivals(t.amin({-1})), (std::vector<int64_t>{0, 4, 8, 12, 16, 20}));
  EXPECT_EQ(t.amax({}, true).sizes().vec(), (std::vector<int64_t>{1, 1, 1}));
  Tensor out = empty({3}, kLong);
  amax_out(out, t, {0, 2});
  EXPECT_EQ(ivals(out), (std::vector<int64_t>{15, 19, 23}));
}

TEST(Reduction, NoIdentityOverEmptyDimIsAnIndexError) {
  Tensor e = empty({0, 3});
  EXPECT_THROW(e.amax({0}), IndexError);
  EXPECT_THROW(e.max(), IndexError);
  EXPECT_THROW(e.max(0), IndexError);
  EXPECT_THROW(e.argmin(), IndexError);
  EXPECT_THROW(e.norm(kInf, {0}), IndexError);
  const std::string msg = error_of([&] { e.amin({0}); });
  EXPECT_NE(msg.find("amin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3]"), std::string::npos) << msg;
  EXPECT_EQ(e.amax({1}).sizes().vec(), (std::vector<int64_t>{0}));  // nothing to reduce per output
}

TEST(Reduction, BadDims) {
  EXPECT_THROW(m23().amax({2}), IndexError);
  EXPECT_THROW(m23().mean({0, -2}), ValueError);
  const std::string msg = error_of([] { m23().prod({1, 1}); });
  EXPECT_NE(msg.find("more than once"), std::string::npos) << msg;
  EXPECT_THROW(m23().cumsum(2), IndexError);
  EXPECT_THROW(m23().max(-3), IndexError);
}

TEST(Reduction, AnyAll) {
  Tensor t = tensor({0, 0, 3, 1}).view({2, 2});
  EXPECT_FALSE(t.any({1}).to_vector<bool>()[0]);
  EXPECT_EQ(ivals(t.any({1})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ivals(all(t, {1})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.all().scalar_type(), kBool);
  EXPECT_EQ(t.to(kByte).any().scalar_type(), kByte);
  EXPECT_TRUE(empty({0}).all().item<bool>());
  EXPECT_FALSE(empty({0}).any().item<bool>());
  EXPECT_TRUE(tensor({kNaN}).all().item<bool>());
}

TEST(Reduction, VarStd) {
  Tensor t = tensor({1.0, 2.0, 3.0, 4.0});
  EXPECT_DOUBLE_EQ(var(t).item<double>(), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.var({0}, 0).item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(t.std().item<double>(), std::sqrt(5.0 / 3.0));
  EXPECT_TRUE(std::isnan(tensor({1.0}).var().item<double>()));  // N - correction = 0
  Tensor out = empty({});
  std_out(out, t.to(kFloat), {0}, 0);
  EXPECT_FLOAT_EQ(out.item<float>(), std::sqrt(1.25f));
  EXPECT_THROW(arange(3, kInt).var(), TypeError);
}

TEST(Reduction, Norms) {
  Tensor t = tensor({3.0, -4.0});
  EXPECT_DOUBLE_EQ(norm(t).item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(t.norm(1).item<double>(), 7.0);
  EXPECT_DOUBLE_EQ(t.norm(kInf).item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(t.norm(-kInf).item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(t.norm(0).item<double>(), 2.0);
  EXPECT_NEAR(t.norm(3).item<double>(), std::cbrt(27.0 + 64.0), 1e-12);
  EXPECT_EQ(vals(m23().norm(1, {1}, true)), (std::vector<double>{3, 12}));
  EXPECT_THROW(arange(3).norm(), TypeError);
}

TEST(Reduction, LogSumExpIsStable) {
  Tensor t = tensor({1000.0, 1000.0});
  EXPECT_NEAR(logsumexp(t, {0}).item<double>(), 1000.0 + std::log(2.0), 1e-9);
  EXPECT_EQ(tensor({-kInf, -kInf}).logsumexp({0}).item<double>(), -kInf);
  EXPECT_EQ(tensor({kInf, 1.0}).logsumexp({0}).item<double>(), kInf);
  EXPECT_EQ(arange(3, kInt).logsumexp({0}).scalar_type(), kFloat);
  EXPECT_EQ(empty({0}).logsumexp({0}).item<float>(), -std::numeric_limits<float>::infinity());
}

TEST(Reduction, CumsumCumprodForms) {
  Tensor t = arange(1, 7, 1, kInt).view({2, 3});
  EXPECT_EQ(ivals(cumsum(t, 1)), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(cumsum(t, 1).scalar_type(), kLong);
  EXPECT_EQ(ivals(t.cumprod(0)), (std::vector<int64_t>{1, 2, 3, 4, 10, 18}));
  EXPECT_EQ(t.cumsum(0, kFloat).scalar_type(), kFloat);
  Tensor out = empty({2, 3}, kLong);
  cumsum_out(out, t, -1);
  EXPECT_EQ(ivals(out), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  Tensor f = m23();
  Tensor& r = f.cumsum_(1);
  EXPECT_EQ(&r, &f);
  EXPECT_EQ(vals(f), (std::vector<double>{0, 1, 3, 3, 7, 12}));
  Tensor g = arange(1, 5, 1, kFloat);
  g.cumprod_(0);
  EXPECT_EQ(vals(g), (std::vector<double>{1, 2, 6, 24}));
  EXPECT_EQ(ivals(t.t().cumsum(0)), (std::vector<int64_t>{1, 4, 3, 9, 6, 15}));
}

TEST(Reduction, FullSumOfTenMillionFloatsIsAccurate) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 3.0f);
  std::vector<double> host(10'000'000);
  double exact = 0;
  for (double& x : host) {
    x = static_cast<double>(u(gen));
    exact += x;
  }
  const Tensor t = tensor(ArrayRef<double>(host)).to(kFloat);
  const double got = t.sum().item<float>();
  EXPECT_LE(std::abs(got - exact), 1e-6 * std::abs(exact));
}
