// C++ tests of the binary ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <limits>
#include <string>

using namespace tessera;

namespace {

template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(BinaryOps, RemainderAndFmodInEveryForm) {
  const Tensor a = tensor({7, -7, 7, -7}), b = tensor({3, 3, -3, -3});
  EXPECT_EQ(remainder(a, b).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -2, -1}));  // Python's %
  EXPECT_EQ(fmod(a, b).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1}));       // C's %
  EXPECT_EQ(a.remainder(3).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(remainder(10, b).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -2, -2}));
  Tensor out = empty({4}, kDouble);
  EXPECT_EQ(&remainder_out(out, a, b), &out);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 2, -2, -1}));
  Tensor x = a.clone();
  EXPECT_EQ(&x.fmod_(b), &x);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1}));
  const Tensor f = tensor({5.5, -5.5});
  EXPECT_EQ(remainder(f, 2.0).to_vector<double>(), (std::vector<double>{1.5, 0.5}));
  EXPECT_EQ(fmod(f, 2.0).to_vector<double>(), (std::vector<double>{1.5, -1.5}));
}

TEST(BinaryOps, IntegerDivisionByZeroIsAnError) {
  const Tensor a = tensor({1, 2}), z = tensor({1, 0});
  EXPECT_NE(error_of<ValueError>([&] { remainder(a, z); }).find("by zero"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] { fmod(a, 0); }).find("fmod"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] { div(a, z, "floor"); }).find("division by zero"), std::string::npos);
  Tensor x = a.clone();
  EXPECT_THROW(x.remainder_(z), ValueError);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));  // untouched
  EXPECT_TRUE(std::isnan(remainder(tensor({1.0}), 0.0).item<double>()));
}

TEST(BinaryOps, PowForms) {
  const Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(pow(i, 2).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 9}));
  EXPECT_EQ(pow(2, i).to_vector<int64_t>(), (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(pow(i, 0.5).scalar_type(), kFloat);
  EXPECT_EQ(pow(tensor({2}, kChar), 7).to_vector<int64_t>(), (std::vector<int64_t>{-128}));  // wraps
  EXPECT_NE(error_of<ValueError>([&] { pow(i, -1); }).find("negative integer powers"), std::string::npos);
  EXPECT_NE(error_of<TypeError>([&] { pow(tensor({true}), tensor({true})); }).find("bool"), std::string::npos);
  Tensor f = tensor({2.0f, 3.0f});
  f.pow_(2);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{4, 9}));
  EXPECT_NE(error_of<TypeError>([&] { Tensor t = i.clone(); t.pow_(0.5); }).find("cannot be cast"), std::string::npos);
}

TEST(BinaryOps, MaximumMinimumPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = tensor({nan, 1.0, 3.0}), b = tensor({1.0, nan, 2.0});
  const auto mx = maximum(a, b).to_vector<double>();
  const auto mn = a.minimum(b).to_vector<double>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && mx[2] == 3.0);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]) && mn[2] == 2.0);
  EXPECT_EQ(maximum(tensor({true, false}), tensor({false, false})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(maximum(tensor({1, 5}, kByte), tensor({-1, 7}, kChar)).scalar_type(), kShort);
}

TEST(BinaryOps, ComparisonsGiveBoolAndInPlaceKeepsDtype) {
  const Tensor a = tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(lt(a, 2).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(lt(a, 2).scalar_type(), kBool);
  EXPECT_EQ(ge(2, a).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(a.eq(tensor({1, 0, 3})).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  Tensor x = a.clone();
  EXPECT_EQ(&x.ne_(2.0), &x);
  EXPECT_EQ(x.scalar_type(), kDouble);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 0, 1}));
  Tensor out = empty({3}, kInt);
  gt_out(out, a, 1.5);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(BinaryOps, LogicalAndBitwise) {
  const Tensor a = tensor({0.0, 0.5, 2.0}), b = tensor({1, 0, 3}, kInt);
  EXPECT_EQ(logical_and(a, b).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(logical_or(a, b).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(logical_xor(a, b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  const Tensor i = tensor({12, 10}, kInt);
  EXPECT_EQ(bitwise_and(i, 6).to_vector<int64_t>(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(bitwise_or(i, 1).to_vector<int64_t>(), (std::vector<int64_t>{13, 11}));
  EXPECT_EQ(i.bitwise_xor(i).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(bitwise_and(i, 6).scalar_type(), kInt);
  EXPECT_NE(error_of<TypeError>([&] { bitwise_and(a, a); }).find("bitwise_and"), std::string::npos);
}

TEST(BinaryOps, ShiftsOutsideTheBitWidth) {
  const Tensor a = tensor({1, -8, 1, -8}, kChar);
  const Tensor s = tensor({3, 1, 8, 9}, kChar);
  EXPECT_EQ(bitwise_left_shift(a, s).to_vector<int64_t>(), (std::vector<int64_t>{8, -16, 0, 0}));
  EXPECT_EQ(bitwise_right_shift(a, s).to_vector<int64_t>(), (std::vector<int64_t>{0, -4, 0, -1}));
  EXPECT_EQ(bitwise_right_shift(a, -1).to_vector<int64_t>(), (std::vector<int64_t>{0, -1, 0, -1}));
  EXPECT_EQ(bitwise_left_shift(tensor({1}, kByte), tensor({7}, kByte)).to_vector<int64_t>(),
            (std::vector<int64_t>{128}));
  EXPECT_THROW(bitwise_left_shift(tensor({1.0}), 1), TypeError);
}

TEST(BinaryOps, Atan2PromotesIntegers) {
  const Tensor r = atan2(tensor({1, -1}), tensor({0, 0}));
  EXPECT_EQ(r.scalar_type(), kFloat);
  EXPECT_NEAR(r.to_vector<double>()[0], M_PI / 2, 1e-6);
  EXPECT_NEAR(r.to_vector<double>()[1], -M_PI / 2, 1e-6);
}

TEST(BinaryOps, AddSubMulDivNumberAndOutForms) {
  const Tensor a = tensor({1, 2, 3});
  EXPECT_EQ(add(10, a).to_vector<int64_t>(), (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(sub(10, a, 2).to_vector<int64_t>(), (std::vector<int64_t>{8, 6, 4}));
  EXPECT_EQ(mul(2.5, a).scalar_type(), kFloat);
  EXPECT_EQ(div(6, a).to_vector<float>(), (std::vector<float>{6, 3, 2}));
  Tensor out = empty({3}, kLong);
  EXPECT_EQ(&add_out(out, a, a, 3), &out);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{4, 8, 12}));
  sub_out(out, a, 1);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  mul_out(out, a, a);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 9}));
  div_out(out, a, 2, "floor");
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_NE(error_of<TypeError>([&] { div_out(out, a, 2); }).find("cannot be cast"), std::string::npos);
  Tensor bad = empty({2}, kLong);
  EXPECT_NE(error_of<ValueError>([&] { add_out(bad, a, a); }).find("shape"), std::string::npos);
  Tensor f = tensor({4.0, 8.0});
  f.sub_(1.0, 2);
  f.div_(2);
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{1, 3}));
  EXPECT_EQ(floor_divide(tensor({-7}), 2).to_vector<int64_t>(), (std::vector<int64_t>{-4}));
}

TEST(BinaryOps, ErrorsNameTheOp) {
  EXPECT_NE(error_of<ValueError>([] { maximum(ones({2}), ones({3})); }).find("maximum"), std::string::npos);
  EXPECT_NE(error_of<TypeError>([] { remainder(tensor({true}), tensor({false})); }).find("remainder"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([] { eq(ones({2}), ones({2}, TensorOptions().device(Device("meta")))); })
                .find("eq"),
            std::string::npos);
}

TEST(BinaryOps, LargeFloatAddMulMatchAScalarLoop) {
  // Above the OpenMP grain and the huge-page threshold, dense and strided, in place.
  const int64_t n = (int64_t{1} << 21) + 3;
  const Tensor a = arange(n, kFloat).div(7.0), b = arange(n, kFloat).mul(0.5f).add(1);
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  const auto sum = add(a, b).to_vector<float>(), prod = mul(a, b).to_vector<float>();
  const auto diff = sub(a, b).to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) {
    ASSERT_EQ(sum[i], av[i] + bv[i]);
    ASSERT_EQ(prod[i], av[i] * bv[i]);
    ASSERT_EQ(diff[i], av[i] - bv[i]);
  }
  Tensor x = a.clone();
  x.mul_(x);
  const auto sq = x.to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(sq[i], av[i] * av[i]);
  const Tensor s = a.slice(0, 0, n - 1, 2), t = b.slice(0, 1, n, 2);  // strided: the generic loop
  const auto st = add(s, t).to_vector<float>();
  for (int64_t i = 0; i < s.numel(); i += 997) ASSERT_EQ(st[i], av[2 * i] + bv[2 * i + 1]);
}
