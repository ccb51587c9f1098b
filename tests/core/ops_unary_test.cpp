// C++ tests of the unary ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tessera;

namespace {

using Vec = std::vector<double>;

template <typename E, typename F>
void expect_error(F f, const std::string& needle) {
  try {
    f();
    FAIL() << "no exception; expected one mentioning '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_near(const Tensor& t, const Vec& want, double tol) {
  const Vec got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
    }
  }
}

const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(UnaryOps, FunctionMethodInPlaceAndOutFormsAgree) {
  const Tensor x = tensor({0.25, 1.0, 4.0});
  const Vec want = {std::log(0.25), 0.0, std::log(4.0)};
  expect_near(log(x), want, 1e-15);
  expect_near(x.log(), want, 1e-15);
  Tensor y = x.clone();
  EXPECT_EQ(&y.log_(), &y);
  expect_near(y, want, 1e-15);
  Tensor out = empty({3}, TensorOptions(kDouble));
  EXPECT_EQ(&log_out(out, x), &out);
  expect_near(out, want, 1e-15);
  // out= of another dtype: computed in float32, then cast into the float64 out.
  Tensor out64 = empty({2}, TensorOptions(kDouble));
  exp_out(out64, tensor({0.0f, 1.0f}));
  expect_near(out64, {1.0, static_cast<double>(std::exp(1.0f))}, 1e-7);
}

TEST(UnaryOps, FloatingOpsPromoteIntegersAndBool) {
  for (ScalarType t : {kBool, kByte, kChar, kShort, kInt, kLong}) {
    EXPECT_EQ(sqrt(tensor({1, 0}, t)).scalar_type(), kFloat) << dtype_name(t);
    EXPECT_EQ(sigmoid(tensor({1, 0}, t)).scalar_type(), kFloat);
    EXPECT_EQ(reciprocal(tensor({1, 1}, t)).scalar_type(), kFloat);
  }
  for (ScalarType t : {kHalf, kBFloat16, kFloat, kDouble}) EXPECT_EQ(tanh(tensor({1.0}, t)).scalar_type(), t);
  expect_near(sqrt(tensor({4, 9})), {2, 3}, 0);
  expect_error<TypeError>([] { tensor({4, 9}).sqrt_(); }, "sqrt_");
  expect_error<TypeError>([] { tensor({4, 9}).sqrt_(); }, "int64");
}

TEST(UnaryOps, IntegerRules) {
  EXPECT_EQ(abs(tensor({-3, 4}, kChar)).to_vector<int8_t>(), (std::vector<int8_t>{3, 4}));
  EXPECT_EQ(abs(tensor({-128}, kChar)).to_vector<int8_t>(), (std::vector<int8_t>{-128}));  // wraps like PyTorch
  EXPECT_EQ(sign(tensor({-7, 0, 9}, kShort)).to_vector<int16_t>(), (std::vector<int16_t>{-1, 0, 1}));
  EXPECT_EQ(sign(tensor({true, false})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(square(tensor({-3, 5}, kInt)).to_vector<int32_t>(), (std::vector<int32_t>{9, 25}));
  EXPECT_EQ(square(tensor({true, false})).scalar_type(), kLong);
  EXPECT_EQ(floor(tensor({-3, 5}, kLong)).to_vector<int64_t>(), (std::vector<int64_t>{-3, 5}));
  EXPECT_EQ(floor(tensor({-3, 5}, kLong)).scalar_type(), kLong);
  EXPECT_EQ(bitwise_not(tensor({0, 5}, kByte)).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 250}));
  EXPECT_EQ(bitwise_not(tensor({true, false})).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(logical_not(tensor({0.0, -0.0, 2.5, NAN})).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
}

TEST(UnaryOps, RoundingAndSpecialValues) {
  expect_near(round(tensor({0.5, 1.5, 2.5, -0.5, -1.5, 2.4})), {0, 2, 2, -0.0, -2, 2}, 0);
  expect_near(trunc(tensor({-1.7, 1.7})), {-1, 1}, 0);
  expect_near(ceil(tensor({-1.7, 1.2})), {-1, 2}, 0);
  expect_near(log(tensor({-1.0, 0.0, kInf, NAN})), {NAN, -kInf, kInf, NAN}, 0);
  expect_near(exp(tensor({-kInf, kInf, 1000.0, -1000.0})), {0, kInf, kInf, 0}, 0);
  expect_near(tanh(tensor({-kInf, kInf, 30.0, 0.0})), {-1, 1, 1, 0}, 0);
  expect_near(sigmoid(tensor({-kInf, kInf, -745.0})), {0, 1, std::exp(-745.0)}, 1e-12);
  EXPECT_EQ(isnan(tensor({1.0, NAN, kInf})).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(isinf(tensor({1.0, NAN, -kInf}, kHalf)).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(isfinite(tensor({1.0, NAN, kInf}, kBFloat16)).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(isfinite(tensor({1, 2})).to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(UnaryOps, ActivationsMatchTheirFormulas) {
  const Tensor x = tensor({-3.0, -0.5, 0.0, 0.7, 25.0});
  Vec gelu_erf, gelu_tanh, silu_v, softplus_v, softplus_b;
  for (double v : x.to_vector<double>()) {
    gelu_erf.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    gelu_tanh.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    silu_v.push_back(v / (1 + std::exp(-v)));
    softplus_v.push_back(v > 20 ? v : std::log1p(std::exp(v)));
    softplus_b.push_back(2 * v > 3 ? v : std::log1p(std::exp(2 * v)) / 2);
  }
  expect_near(gelu(x), gelu_erf, 1e-14);
  expect_near(x.gelu("tanh"), gelu_tanh, 1e-14);
  expect_near(silu(x), silu_v, 1e-14);
  expect_near(softplus(x), softplus_v, 1e-14);
  expect_near(x.softplus(2, 3), softplus_b, 1e-14);
  Tensor y = x.clone();
  y.gelu_("tanh");
  expect_near(y, gelu_tanh, 1e-14);
  expect_error<ValueError>([&] { gelu(x, "fast"); }, "approximate must be 'none' or 'tanh', got 'fast'");
}

TEST(UnaryOps, Errors) {
  expect_error<TypeError>([] { abs(tensor({true})); }, "abs: not supported for bool");
  expect_error<TypeError>([] { neg(tensor({true})); }, "use logical_not");
  expect_error<TypeError>([] { floor(tensor({true})); }, "floor");
  expect_error<TypeError>([] { bitwise_not(tensor({1.5})); }, "bitwise_not: only bool and integer");
  Tensor wrong_shape = empty({2}, TensorOptions(kFloat));
  expect_error<ValueError>([&] { exp_out(wrong_shape, tensor({1.0f, 2.0f, 3.0f})); }, "exp_out");
  Tensor int_out = empty({2}, TensorOptions(kInt));
  expect_error<TypeError>([&] { sin_out(int_out, tensor({1.0f, 2.0f})); }, "sin_out: result type float32");
  Tensor f_out = empty({2}, TensorOptions(kFloat));
  isnan_out(f_out, tensor({NAN, 1.0}));  // bool casts to float
  expect_near(f_out, {1, 0}, 0);
}

TEST(UnaryOps, StridedAndEmptyInputs) {
  const Tensor base = arange(12, TensorOptions(kDouble)).view({3, 4});
  const Tensor t = base.transpose(0, 1);
  const Tensor r = sqrt(t);
  const Vec b = base.to_vector<double>();
  const Vec got = r.contiguous().to_vector<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(got[i * 3 + j], std::sqrt(b[j * 4 + i]));
  EXPECT_TRUE(tanh(empty({0, 3})).sizes().equals({0, 3}));
  EXPECT_EQ(sin(scalar_tensor(0.5)).dim(), 0);
}

TEST(UnaryOps, VectorizedExpLogTanhSigmoidOnLargeInputs) {
  // Long enough for the parallel path; values across the whole float range.
  const int64_t n = 100000;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -110.0 + 220.0 * static_cast<double>(i) / static_cast<double>(n - 1);
  const Tensor x = tensor(ArrayRef<double>(v)).to(kFloat);
  const Vec e = exp(x).to_vector<double>(), th = tanh(x).to_vector<double>(), sg = sigmoid(x).to_vector<double>();
  const Vec xs = x.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const float want_e = static_cast<float>(std::exp(xs[i]));
    if (std::isinf(want_e)) {
      EXPECT_TRUE(std::isinf(e[i])) << xs[i];
    } else {
      EXPECT_NEAR(e[i], want_e, 6e-7 * want_e + 1e-44) << xs[i];
    }
    EXPECT_NEAR(th[i], std::tanh(xs[i]), 6e-7 * std::fabs(std::tanh(xs[i])) + 1e-45) << xs[i];
    const double s = 1 / (1 + std::exp(-xs[i]));
    EXPECT_NEAR(sg[i], s, 6e-7 * s + 1e-44) << xs[i];
  }
  const Tensor pos = abs(x).add(1e-30);
  const Vec l = log(pos).to_vector<double>(), ps = pos.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(l[i], std::log(ps[i]), 6e-7 * std::fabs(std::log(ps[i])) + 1e-7);
}
