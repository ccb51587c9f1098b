// The spine's ops on the CPU plugin, against hand-computed values and a second
// path (double precision loops in the test).
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <random>

using namespace tessera;

namespace {
const ScalarType kAll[] = {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};
const ScalarType kNumeric[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};

std::vector<int64_t> vec_sizes(const Tensor& t) { return t.sizes().vec(); }

Tensor random_tensor(IntArrayRef shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return tensor(ArrayRef<double>(v)).view(shape);
}
}  // namespace

TEST(Ops, AddSubMulDivOnEveryNumericDtype) {
  for (ScalarType t : kNumeric) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = tensor({6, 8, 10}, t), b = tensor({1, 2, 4}, t);
    EXPECT_EQ((a + b).to_vector<double>(), (std::vector<double>{7, 10, 14}));
    EXPECT_EQ(add(a, b, 2).to_vector<double>(), (std::vector<double>{8, 12, 18}));
    EXPECT_EQ((a - b).to_vector<double>(), (std::vector<double>{5, 6, 6}));
    EXPECT_EQ((a * b).to_vector<double>(), (std::vector<double>{6, 16, 40}));
    EXPECT_EQ((a + b).scalar_type(), t);
    const Tensor q = a / b;  // true division: integers promote to float32
    EXPECT_EQ(q.scalar_type(), is_floating_type(t) ? t : kFloat);
    EXPECT_EQ(q.to_vector<double>(), (std::vector<double>{6, 4, 2.5}));
  }
}

TEST(Ops, BoolArithmetic) {
  const Tensor a = tensor({true, true, false, false}), b = tensor({true, false, true, false});
  EXPECT_EQ((a + b).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));   // or
  EXPECT_EQ((a * b).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));  // and
  EXPECT_EQ((a + b).scalar_type(), kBool);
}

TEST(Ops, DivRoundingModes) {
  const Tensor a = tensor({7, -7, 7, -7}), b = tensor({2, 2, -2, -2});
  EXPECT_EQ(div(a, b, "trunc").to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(div(a, b, "floor").to_vector<int64_t>(), (std::vector<int64_t>{3, -4, -4, 3}));
  EXPECT_EQ(div(a, b, "floor").scalar_type(), kLong);
  EXPECT_EQ(div(a.to(kFloat), b.to(kFloat), "floor").to_vector<float>(), (std::vector<float>{3, -4, -4, 3}));
  EXPECT_EQ(div(a, b).to_vector<float>(), (std::vector<float>{3.5f, -3.5f, -3.5f, 3.5f}));
}

TEST(Ops, TypePromotionFollowsPyTorch) {
  const Tensor i32 = tensor({1, 2}, kInt), u8 = tensor({1, 2}, kByte), i8 = tensor({1, 2}, kChar);
  const Tensor f16 = tensor({1, 2}, kHalf), bf16 = tensor({1, 2}, kBFloat16), f64 = tensor({1, 2}, kDouble);
  EXPECT_EQ((i32 + tensor({1.0f, 2.0f})).scalar_type(), kFloat);
  EXPECT_EQ((u8 + i8).scalar_type(), kShort);
  EXPECT_EQ((f16 + bf16).scalar_type(), kFloat);
  EXPECT_EQ((f16 + f64).scalar_type(), kDouble);
  EXPECT_EQ((i32 + 2.5).scalar_type(), kFloat);                   // numbers lift the category only
  EXPECT_EQ((f16 + 2.5).scalar_type(), kHalf);
  EXPECT_EQ((i32 + 3).scalar_type(), kInt);
  EXPECT_EQ((u8 + scalar_tensor(300)).scalar_type(), kByte);      // 0-d tensors rank below dimensioned ones
  EXPECT_EQ((tensor({true}) + 1).scalar_type(), kLong);
  EXPECT_EQ((i32 + 2.5).to_vector<float>(), (std::vector<float>{3.5f, 4.5f}));
  EXPECT_EQ((10 - i32).to_vector<int32_t>(), (std::vector<int32_t>{9, 8}));
  EXPECT_EQ((1.0 / tensor({2.0, 4.0})).to_vector<double>(), (std::vector<double>{0.5, 0.25}));
}

TEST(Ops, BroadcastingAndStridedInputs) {
  const Tensor a = arange(6, kFloat).view({2, 3});
  const Tensor col = tensor({10.0f, 20.0f}).view({2, 1});
  EXPECT_EQ((a + col).to_vector<float>(), (std::vector<float>{10, 11, 12, 23, 24, 25}));
  const Tensor t = a.t();  // [3, 2], strided
  EXPECT_EQ((t * t).contiguous().to_vector<float>(), (std::vector<float>{0, 9, 1, 16, 4, 25}));
  const Tensor rev = arange(4, kFloat).as_strided({2, 2}, {1, 2});
  EXPECT_EQ((rev + 0).to_vector<float>(), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_EQ(vec_sizes(add(zeros({4, 1, 3}), zeros({2, 1}))), (std::vector<int64_t>{4, 2, 3}));
}

TEST(Ops, InPlaceOps) {
  Tensor a = arange(4, kFloat);
  a += tensor({1.0f, 1.0f, 1.0f, 1.0f});
  a.mul_(2);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  a.add_(tensor({1.0}), 0.5);  // broadcast other, float64 computed then stored as float32
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2.5, 4.5, 6.5, 8.5}));
  EXPECT_EQ(a.scalar_type(), kFloat);
  Tensor view = a.view({2, 2}).select(1, 0);  // in-place through a strided view
  view.neg_();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{-2.5, 4.5, -6.5, 8.5}));
  a.relu_();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 4.5, 0, 8.5}));
  Tensor r = arange(5, kFloat);
  r.narrow(0, 1, 4).add_(r.narrow(0, 0, 4));  // partial overlap: reads a snapshot
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 1, 3, 5, 7}));
  Tensor sq = arange(4, kFloat).view({2, 2});
  sq.mul_(sq.t());  // same memory, other layout
  EXPECT_EQ(sq.to_vector<float>(), (std::vector<float>{0, 2, 2, 9}));
  const uint32_t v0 = a.storage()->version();
  a.zero_();
  EXPECT_GT(a.storage()->version(), v0);
}

TEST(Ops, UnaryOps) {
  const Tensor x = tensor({-1.5, 0.0, 2.0});
  EXPECT_EQ(neg(x).to_vector<double>(), (std::vector<double>{1.5, -0.0, -2.0}));
  EXPECT_EQ(relu(x).to_vector<double>(), (std::vector<double>{0, 0, 2}));
  const auto e = exp(x).to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(e[i], std::exp(std::vector<double>{-1.5, 0, 2}[i]));
  EXPECT_EQ(exp(tensor({0, 1})).scalar_type(), kFloat);
  EXPECT_EQ(neg(tensor({5}, kByte)).to_vector<uint8_t>(), (std::vector<uint8_t>{251}));  // wraps
  EXPECT_TRUE(std::isnan(relu(tensor({NAN})).item<double>()));
  for (ScalarType t : kNumeric) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const double lo = t == kByte ? 0 : -3;  // uint8 has no negatives
    EXPECT_EQ(relu(tensor({lo, 4.0}, t)).to_vector<double>(), (std::vector<double>{0, 4}));
  }
}

TEST(Ops, SumOverDims) {
  const Tensor a = arange(24, kFloat).view({2, 3, 4});
  EXPECT_EQ(a.sum().item<float>(), 276);
  EXPECT_EQ(a.sum().dim(), 0);
  const Tensor s1 = a.sum({1});
  EXPECT_EQ(s1.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s1.to_vector<float>(), (std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57}));
  const Tensor s02 = a.sum({0, -1}, /*keepdim=*/true);
  EXPECT_EQ(s02.sizes().vec(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(s02.to_vector<float>(), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(a.permute({2, 0, 1}).sum({1, 2}).to_vector<float>(), (std::vector<float>{60, 66, 72, 78}));
}

TEST(Ops, SumDtypes) {
  EXPECT_EQ(tensor({true, true, false}).sum().scalar_type(), kLong);
  EXPECT_EQ(tensor({true, true, false}).sum().item<int64_t>(), 2);
  EXPECT_EQ(tensor({100, 100, 100}, kByte).sum().item<int64_t>(), 300);  // no uint8 overflow
  EXPECT_EQ(tensor({1, 2}, kHalf).sum().scalar_type(), kHalf);
  EXPECT_EQ(tensor({1, 2}, kInt).sum(kDouble).scalar_type(), kDouble);
  EXPECT_EQ(zeros({0, 3}).sum({0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(scalar_tensor(4.0).sum({0}).item<double>(), 4.0);
  for (ScalarType t : kAll) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_EQ(ones({3, 5}, t).sum({1}).to_vector<double>(), (std::vector<double>{5, 5, 5}));
  }
}

TEST(Ops, SumIsAccurateOnLargeFloat32) {
  const int64_t n = 1 << 22;
  const Tensor x = random_tensor({n}, 7).to(kFloat);
  const auto v = x.to_vector<float>();
  double ref = 0;
  for (float f : v) ref += f;
  const double got = x.sum().item<float>();
  EXPECT_LE(std::abs(got - ref), 1e-6 * std::max(1.0, std::abs(ref)) + 1e-3);
}

TEST(Ops, MatmulAgainstNaiveLoops) {
  for (ScalarType t : {kFloat, kDouble, kInt, kLong, kHalf, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = arange(6, t).view({2, 3}), b = arange(12, t).view({3, 4});
    const auto c = a.matmul(b).to_vector<double>();
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double ref = 0;
        for (int k = 0; k < 3; ++k) ref += (i * 3 + k) * (k * 4 + j);
        EXPECT_EQ(c[i * 4 + j], ref);
      }
  }
  // Transposed operands, vectors, batches with broadcasting.
  const Tensor a = random_tensor({5, 3}, 1), b = random_tensor({5, 4}, 2);
  const Tensor at_b = a.t().matmul(b);  // [3, 4]
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>(), vc = at_b.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double ref = 0;
      for (int k = 0; k < 5; ++k) ref += va[k * 3 + i] * vb[k * 4 + j];
      EXPECT_NEAR(vc[i * 4 + j], ref, 1e-12);
    }
  EXPECT_EQ(tensor({1.0, 2.0}).matmul(tensor({3.0, 4.0})).item<double>(), 11);
  EXPECT_EQ(tensor({1.0, 2.0}).matmul(tensor({3.0, 4.0})).dim(), 0);
  EXPECT_EQ(vec_sizes(ones({3, 4}).matmul(ones({4}))), (std::vector<int64_t>{3}));
  EXPECT_EQ(vec_sizes(ones({4}).matmul(ones({4, 2}))), (std::vector<int64_t>{2}));
  const Tensor batched = ones({2, 1, 3, 4}).matmul(ones({5, 4, 2}));
  EXPECT_EQ(vec_sizes(batched), (std::vector<int64_t>{2, 5, 3, 2}));
  EXPECT_EQ(batched.sum().item<float>(), 2 * 5 * 3 * 2 * 4);
  const Tensor bm = arange(12, kFloat).view({2, 2, 3}).bmm(ones({2, 3, 1}));
  EXPECT_EQ(bm.to_vector<float>(), (std::vector<float>{3, 12, 21, 30}));
  EXPECT_EQ(zeros({2, 0}).mm(zeros({0, 3})).to_vector<float>(), std::vector<float>(6, 0.f));
}

TEST(Ops, CopyBetweenAllDtypes) {
  const Tensor src = tensor({0.0, 1.0, 2.0, 100.0});
  for (ScalarType from : kAll) {
    for (ScalarType to : kAll) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      const Tensor a = src.to(from);
      Tensor b = empty({4}, to);
      b.copy_(a);
      const auto got = b.to_vector<double>();
      const auto want = a.to_vector<double>();
      for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], to == kBool ? double(want[i] != 0) : want[i]);
    }
  }
  Tensor dst = zeros({2, 3});
  dst.copy_(tensor({1.0, 2.0, 3.0}));  // broadcast source
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  Tensor overlap = arange(5, kFloat);
  overlap.narrow(0, 1, 4).copy_(overlap.narrow(0, 0, 4));  // overlapping regions read a snapshot
  EXPECT_EQ(overlap.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3}));
}

TEST(Ops, NonzeroUsesTheAllocationCallback) {
  const Tensor a = tensor({0.0, 1.5, 0.0, -2.0, 3.0, 0.0}).view({2, 3});
  const Tensor nz = a.nonzero();
  EXPECT_EQ(nz.scalar_type(), kLong);
  EXPECT_EQ(vec_sizes(nz), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(nz.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(vec_sizes(zeros({4}).nonzero()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(vec_sizes(a.t().nonzero()), (std::vector<int64_t>{3, 2}));
}
