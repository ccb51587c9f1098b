// C++ tests of the ternary ops: behaviour and error messages beyond the NumPy oracle.
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

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(TernaryOps, WhereForms) {
  const Tensor c = tensor({true, false, true});
  const Tensor a = tensor({1, 2, 3}, kInt), b = tensor({10.0f, 20.0f, 30.0f});
  const Tensor r = where(c, a, b);
  EXPECT_EQ(r.scalar_type(), kFloat);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 20, 3}));
  EXPECT_EQ(where(c, a, 0).scalar_type(), kInt);
  EXPECT_EQ(where(c, 1.5, a).to_vector<float>(), (std::vector<float>{1.5f, 2, 1.5f}));
  EXPECT_EQ(where(c, 1, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(a.where(c, -1).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 3}));
  // Broadcasting of all three operands.
  const Tensor col = tensor({true, false}).view({2, 1});
  EXPECT_EQ(where(col, tensor({1, 2, 3}), 0).sizes().vec(), (std::vector<int64_t>{2, 3}));
  Tensor x = tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(&x.where_(c, 0.5), &x);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 0.5, 3}));
  Tensor out = empty({3}, kDouble);
  EXPECT_EQ(&where_out(out, c, a, b), &out);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 20, 3}));
  EXPECT_TRUE(contains(error_of<TypeError>([&] { where(a, a, a); }), "condition must be a bool"));
  EXPECT_TRUE(contains(error_of<ValueError>([&] { where(c, ones({2}), a); }), "where"));
}

TEST(TernaryOps, ClampForms) {
  const Tensor a = tensor({-5, 0, 5, 10});
  EXPECT_EQ(clamp(a, Scalar(0), Scalar(6)).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 5, 6}));
  EXPECT_EQ(clamp(a, std::optional<Scalar>(), Scalar(1)).to_vector<int64_t>(), (std::vector<int64_t>{-5, 0, 1, 1}));
  EXPECT_EQ(clamp(a, Scalar(0.5)).scalar_type(), kFloat);  // promoted, as PyTorch
  EXPECT_EQ(a.clamp(tensor({0, 1, 2, 3}), tensor({1, 1, 1, 20})).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 1, 10}));
  EXPECT_EQ(clamp_min(a, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 5, 10}));
  EXPECT_EQ(clamp_max(a, tensor({0})).to_vector<int64_t>(), (std::vector<int64_t>{-5, 0, 0, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto v = clamp(tensor({nan, 3.0}), Scalar(0), Scalar(1)).to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 1.0);
  Tensor x = a.clone();
  EXPECT_EQ(&x.clamp_(Scalar(-1), Scalar(1)), &x);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1, 1}));
  EXPECT_EQ(&x.clamp_min_(0), &x);
  EXPECT_EQ(&x.clamp_max_(tensor({0})), &x);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  Tensor out = empty({4}, kDouble);
  EXPECT_EQ(&clamp_out(out, a, Scalar(1), Scalar(2)), &out);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 1, 2, 2}));
  EXPECT_TRUE(contains(error_of<ValueError>([&] { clamp(a, std::optional<Scalar>(), std::optional<Scalar>()); }),
                       "at least one of 'min' or 'max'"));
  EXPECT_TRUE(contains(error_of<TypeError>([&] { Tensor y = a.clone(); y.clamp_(Scalar(0.5)); }), "cannot be cast"));
  EXPECT_TRUE(contains(error_of<ValueError>([&] { clamp_out(out, a, tensor({1, 2})); }), "clamp"));
}

TEST(TernaryOps, LerpForms) {
  const Tensor a = tensor({0.0f, 10.0f}), e = tensor({10.0f, 20.0f});
  EXPECT_EQ(lerp(a, e, 0.25).to_vector<float>(), (std::vector<float>{2.5f, 12.5f}));
  EXPECT_EQ(a.lerp(e, 1.0).to_vector<float>(), (std::vector<float>{10, 20}));
  EXPECT_EQ(lerp(a, e, tensor({0.0f, 0.5f})).to_vector<float>(), (std::vector<float>{0, 15}));
  Tensor x = a.clone();
  EXPECT_EQ(&x.lerp_(e, 0.5), &x);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{5, 15}));
  Tensor out = empty({2}, kDouble);
  lerp_out(out, a, e, 0.5);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{5, 15}));
  EXPECT_TRUE(contains(error_of<TypeError>([] { lerp(tensor({1}), tensor({2}), 0.5); }), "floating"));
  EXPECT_TRUE(contains(error_of<TypeError>([&] { lerp(a, e.to(kDouble), 0.5); }), "end"));
  EXPECT_TRUE(contains(error_of<TypeError>([&] { lerp(a, e, tensor({0.5})); }), "weight"));
}

TEST(TernaryOps, AddcmulAddcdivForms) {
  const Tensor s = tensor({1.0, 2.0}), x = tensor({2.0, 3.0}), y = tensor({4.0, 6.0});
  EXPECT_EQ(addcmul(s, x, y, 0.5).to_vector<double>(), (std::vector<double>{5, 11}));
  EXPECT_EQ(s.addcdiv(x, y, 2).to_vector<double>(), (std::vector<double>{2, 3}));
  EXPECT_EQ(addcmul(tensor({1}), tensor({2}), tensor({3}), 2).to_vector<int64_t>(), (std::vector<int64_t>{13}));
  Tensor t = s.clone();
  EXPECT_EQ(&t.addcmul_(x, y), &t);
  EXPECT_EQ(&t.addcdiv_(x, y), &t);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{9.5, 20.5}));
  Tensor out = empty({2}, kDouble);
  addcdiv_out(out, s, x, y);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1.5, 2.5}));
  EXPECT_TRUE(contains(error_of<TypeError>([] { addcdiv(tensor({1.0}), tensor({1}), tensor({1})); }),
                       "integer division"));
  EXPECT_TRUE(contains(error_of<TypeError>([] { addcmul(tensor({1}), tensor({1}), tensor({1}), 0.5); }), "value"));
  EXPECT_TRUE(contains(error_of<ValueError>([&] { addcmul(s, x, ones({3}, kDouble)); }), "addcmul"));
}
