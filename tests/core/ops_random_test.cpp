// C++ tests of the random ops: known answers through the ops, generator state,
// reproducibility and argument errors (statistics are in test_ops_random.py).
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <algorithm>
#include <cstdint>

using namespace tessera;

namespace {

// The Philox known answers are tests/conformance/sdk_philox_test.cpp (the SDK header).

TEST(Random, KnownAnswerThroughTheOps) {
  // Seed 0, offset 0: element 0 is built from the block of counter 0.
  Generator g(0);
  const double want = static_cast<double>(((uint64_t{0xe169c58du} << 32) | 0x6627e8d5u) >> 11) * std::ldexp(1.0, -53);
  EXPECT_EQ(rand({1}, g, kDouble).item<double>(), want);
  EXPECT_EQ(g.offset(), 1u);
  g.manual_seed(0);
  EXPECT_EQ(rand({1}, g).item<float>(), static_cast<float>(0x6627e8d5u >> 8) * std::ldexp(1.0f, -24));
}

TEST(Random, SameSeedSameTensorsDifferentSeedsDiffer) {
  Generator a(42), b(42), c(43);
  EXPECT_TRUE(equal(randn({100}, a), randn({100}, b)));
  EXPECT_FALSE(equal(randn({100}, a), randn({100}, c)));
  manual_seed(7);
  const Tensor x = rand({5, 5});
  manual_seed(7);
  EXPECT_TRUE(equal(x, rand({5, 5})));
  EXPECT_EQ(initial_seed(), 7u);
}

TEST(Random, OffsetsAdvanceAndStateRoundTrips) {
  Generator g(5);
  const Tensor state = g.get_state();
  const Tensor first = rand({10}, g);
  EXPECT_EQ(g.offset(), 10u);
  // Two calls of 5 continue the stream of one call of 10.
  g.set_state(state);
  const Tensor a = rand({5}, g), b = rand({5}, g);
  EXPECT_TRUE(equal(first.narrow(0, 5, 5), b));
  EXPECT_TRUE(equal(first.narrow(0, 0, 5), a));
  EXPECT_THROW(g.set_state(zeros({3}, kByte)), ValueError);
  // Copies share the state.
  Generator h = g;
  rand({3}, h);
  EXPECT_EQ(g.offset(), 13u);
}

TEST(Random, FactoriesAndInPlaceForms) {
  Generator g(1);
  const Tensor r = randint(-3, 4, {1000}, g);
  EXPECT_EQ(r.scalar_type(), kLong);
  for (int64_t v : r.to_vector<int64_t>()) {
    EXPECT_GE(v, -3);
    EXPECT_LT(v, 4);
  }
  const Tensor p = randperm(50, g);
  std::vector<int64_t> v = p.to_vector<int64_t>();
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], i);
  Tensor u = empty({100}, kHalf);
  EXPECT_TRUE(u.uniform_(2, 3, g).is_same(u));
  for (float x : u.to_vector<float>()) {
    EXPECT_GE(x, 2.0f);
    EXPECT_LT(x, 3.0f);
  }
  Tensor b = empty({64}, kInt);
  b.bernoulli_(1.0, g);
  EXPECT_EQ(b.to_vector<int>(), std::vector<int>(64, 1));
  EXPECT_EQ(bernoulli(zeros({8}), g).to_vector<float>(), std::vector<float>(8, 0.0f));
  Tensor n = empty({3}, kDouble);
  EXPECT_TRUE(n.normal_(0, 0, g).is_same(n));
  EXPECT_EQ(n.to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(Random, Dropout) {
  Generator g(3);
  const Tensor x = ones({1000});
  EXPECT_TRUE(dropout(x, 0.5, false, g).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true, g).is_same(x));
  EXPECT_EQ(dropout(x, 1.0, true, g).to_vector<float>(), std::vector<float>(1000, 0.0f));
  int kept = 0;
  for (float v : dropout(x, 0.25, true, g).to_vector<float>()) {
    EXPECT_TRUE(v == 0.0f || std::fabs(v - 4.0f / 3.0f) < 1e-6f);
    kept += v != 0.0f;
  }
  EXPECT_NEAR(kept, 750, 60);
  EXPECT_THROW(dropout(x, 1.5), ValueError);
  EXPECT_THROW(dropout(ones({2}, kLong), 0.5), TypeError);
}

TEST(Random, ArgumentErrors) {
  EXPECT_THROW(rand({2}, std::nullopt, kLong), TypeError);
  EXPECT_THROW(empty({2}).uniform_(1, 0), ValueError);
  EXPECT_THROW(empty({2}).normal_(0, -1), ValueError);
  EXPECT_THROW(randint(5, 5, {2}), ValueError);
  EXPECT_THROW(randint(0, 300, {2}, std::nullopt, kByte), ValueError);
  EXPECT_THROW(empty({2}).bernoulli_(1.5), ValueError);
  EXPECT_THROW(empty({2}).bernoulli_(full({2}, 2.0)), ValueError);  // the kernel checks tensor probabilities
  EXPECT_THROW(randperm(-1), ValueError);
  EXPECT_THROW(randperm(3000, std::nullopt, kHalf), ValueError);
  EXPECT_THROW(empty({2}, kInt).normal_(), TypeError);
}

}  // namespace
