// The SDK's random-number specification (tessera/sdk/philox.hpp): Philox
// known answers, the counter rule, the portable log, cos_2pi and sin_2pi
// against the C library (in ulps), and the statistics of the normal deviates
// they make.
#include <gtest/gtest.h>
#include <tessera/sdk/philox.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace {

namespace ph = tessera::sdk::philox;

// Distance in ulps of `got` from a reference computed in long double (where
// long double is wider than double), in units of the double result's ulp.
double ulp_error(double got, long double ref) {
  if (ref == 0) return got == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  int e = 0;
  std::frexp(static_cast<double>(ref), &e);
  const long double ulp = std::ldexp(1.0L, e - 53);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / ulp);
}

// Ulps between two doubles of the same sign.
int64_t ulps_apart(double a, double b) {
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  return ia > ib ? ia - ib : ib - ia;
}

// The u1 of Box-Muller: 1 - k 2^-53, k in [0, 2^53).
double u53(uint64_t bits) { return std::ldexp(static_cast<double>(bits >> 11), -53); }

TEST(SdkPhilox, Random123KnownAnswers) {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines (counter, key -> result).
  const ph::Block a = ph::philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  const ph::Block b = ph::philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  const ph::Block c = ph::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(SdkPhilox, CounterRule) {
  // Counter words (low, high, 0, 0), key words (low, high).
  const uint64_t seed = 0x0123456789abcdefull, counter = 0xfedcba9876543210ull;
  const ph::Block x = ph::at(seed, counter);
  const ph::Block y = ph::philox4x32_10(0x76543210u, 0xfedcba98u, 0, 0, 0x89abcdefu, 0x01234567u);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(x.v[w], y.v[w]);
  const ph::Block z = ph::at(0, 0);
  EXPECT_EQ(z.v[0], 0x6627e8d5u);
  EXPECT_EQ(ph::u64(0x6627e8d5u, 0xe169c58du), 0xe169c58d6627e8d5ull);
}

TEST(SdkPhilox, UniformsAndIntegers) {
  EXPECT_EQ(ph::uniform_float(0), 0.0f);
  EXPECT_EQ(ph::uniform_float(0xffffffffu), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_EQ(ph::uniform_float(0x6627e8d5u), static_cast<float>(0x6627e8d5u >> 8) * std::ldexp(1.0f, -24));
  EXPECT_EQ(ph::uniform_double(0, 0), 0.0);
  EXPECT_EQ(ph::uniform_double(~0u, ~0u), 1.0 - std::ldexp(1.0, -53));
  EXPECT_EQ(ph::uniform_double(0x6627e8d5u, 0xe169c58du), u53(0xe169c58d6627e8d5ull));

  const ph::Block b = ph::at(0, 0);
  EXPECT_EQ(ph::uniform_value(b, true, -2.0, 5.0), -2.0 + 5.0 * u53(0xe169c58d6627e8d5ull));
  EXPECT_EQ(ph::uniform_value(b, false, 0.0, 1.0), static_cast<double>(ph::uniform_float(0x6627e8d5u)));
  // Full int64 range: the raw 64 bits, shifted by 2^63 (wrapping).
  EXPECT_EQ(static_cast<uint64_t>(ph::random_int(b, std::numeric_limits<int64_t>::min(), ~uint64_t{0})),
            0xe169c58d6627e8d5ull % ~uint64_t{0} + (uint64_t{1} << 63));
  for (uint64_t i = 0; i < 1000; ++i) {
    const int64_t v = ph::random_int(ph::at(7, i), -3, 10);
    EXPECT_GE(v, -3);
    EXPECT_LT(v, 7);
    EXPECT_FALSE(ph::bernoulli(ph::at(7, i), 0.0));
    EXPECT_TRUE(ph::bernoulli(ph::at(7, i), 1.0));
  }
  EXPECT_EQ(ph::randperm_key(b), 0xe169c58d6627e8d5ull);
}

TEST(SdkPhilox, LogWithinOneUlp) {
  EXPECT_EQ(ph::log(1.0), 0.0);
  EXPECT_EQ(ph::log(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(ph::log(-1.0)));
  EXPECT_TRUE(std::isnan(ph::log(std::nan(""))));
  EXPECT_EQ(ph::log(std::numeric_limits<double>::infinity()), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ph::log(2.0), std::log(2.0));
  EXPECT_LE(ulps_apart(ph::log(std::numeric_limits<double>::denorm_min()),
                       std::log(std::numeric_limits<double>::denorm_min())), 1);

  std::mt19937_64 rng(1);
  double worst = 0, worst_at = 0;
  int64_t worst_vs_libm = 0;
  for (int i = 0; i < 400000; ++i) {
    double x;
    switch (i % 4) {
      case 0: x = 1.0 - u53(rng());                                   // Box-Muller's u1 in (0, 1]
        break;
      case 1: x = 1.0 - std::ldexp(static_cast<double>(rng() & 0xfffff), -53);  // just below 1
        break;
      case 2: x = std::ldexp(static_cast<double>((rng() & 0xffff) + 1), -53);  // the smallest u1
        break;
      default: {                                                      // any positive finite double
        const uint64_t bits = rng() % 0x7ff0000000000000ull + 1;
        std::memcpy(&x, &bits, 8);
      }
    }
    const double got = ph::log(x);
    const double err = ulp_error(got, std::log(static_cast<long double>(x)));
    if (err > worst) worst = err, worst_at = x;
    worst_vs_libm = std::max(worst_vs_libm, ulps_apart(got, std::log(x)));
  }
  if (std::numeric_limits<long double>::digits > 53) {
    EXPECT_LE(worst, 1.0) << "at x = " << worst_at;
  }
  EXPECT_LE(worst_vs_libm, 2);
}

TEST(SdkPhilox, Cos2PiAndSin2PiWithinTwoUlps) {
  EXPECT_EQ(ph::cos_2pi(0.0), 1.0);
  EXPECT_EQ(ph::cos_2pi(0.5), -1.0);
  EXPECT_EQ(ph::cos_2pi(0.25), 0.0);
  EXPECT_EQ(ph::cos_2pi(0.75), 0.0);
  EXPECT_EQ(ph::cos_2pi(0.125), ph::cos_2pi(-0.125));
  EXPECT_TRUE(std::isnan(ph::cos_2pi(std::numeric_limits<double>::infinity())));
  EXPECT_EQ(ph::sin_2pi(0.0), 0.0);
  EXPECT_EQ(ph::sin_2pi(0.25), 1.0);
  EXPECT_EQ(ph::sin_2pi(0.5), 0.0);
  EXPECT_EQ(ph::sin_2pi(0.75), -1.0);
  EXPECT_EQ(ph::sin_2pi(0.125), -ph::sin_2pi(-0.125));
  EXPECT_TRUE(std::isnan(ph::sin_2pi(std::numeric_limits<double>::quiet_NaN())));

  const long double kPi = 3.141592653589793238462643383279502884L;
  std::mt19937_64 rng(2);
  double worst = 0, worst_at = 0, worst_abs = 0;
  for (int i = 0; i < 400000; ++i) {
    double u = u53(rng());
    // Near the quadrant edges, where the sin and cos polynomials hand over.
    if (i % 3 == 0) u = std::ldexp(static_cast<double>((rng() & 0xfffff) + (rng() & 3) * (uint64_t{1} << 51)), -53);
    // Reference: the same (exact) reduction, then the long double library;
    // sin(2 pi u) = cos(pi/2 (q - 1 + r)).
    const long double t = 4.0L * u, q = std::nearbyint(t), x = kPi / 2 * (t - q);
    for (int back = 0; back < 2; ++back) {
      const double got = back == 0 ? ph::cos_2pi(u) : ph::sin_2pi(u);
      const int quadrant = static_cast<int>((static_cast<int64_t>(q) - back) & 3);
      const long double ref =
          quadrant == 0 ? std::cos(x) : quadrant == 1 ? -std::sin(x) : quadrant == 2 ? -std::cos(x) : std::sin(x);
      const double err = ulp_error(got, ref);
      if (err > worst) worst = err, worst_at = u;
      const double libm = back == 0 ? std::cos(6.283185307179586 * u) : std::sin(6.283185307179586 * u);
      worst_abs = std::max(worst_abs, std::fabs(got - libm));
    }
  }
  if (std::numeric_limits<long double>::digits > 53) {
    EXPECT_LE(worst, 2.5) << "at u = " << worst_at;
  }
  EXPECT_LE(worst_abs, 2e-15);  // the C library's cos of the rounded 2 pi u
}

TEST(SdkPhilox, NormalMomentsAndTheTextbookFormula) {
  const int n = 1000000;
  double sum = 0, sum_sq = 0, max_diff = 0, pair_products = 0, even = 0;
  for (int i = 0; i < n; ++i) {
    const double z = ph::standard_normal(99, static_cast<uint64_t>(i));
    sum += z;
    sum_sq += z * z;
    // Counters 2j and 2j + 1: Box-Muller's cos and sin of the block of 2j.
    const ph::Block b = ph::at(99, static_cast<uint64_t>(i & ~1));
    const double u1 = 1.0 - ph::uniform_double(b.v[0], b.v[1]), u2 = ph::uniform_double(b.v[2], b.v[3]);
    const double angle = 6.283185307179586 * u2;
    const double textbook = std::sqrt(-2.0 * std::log(u1)) * (i % 2 == 0 ? std::cos(angle) : std::sin(angle));
    max_diff = std::max(max_diff, std::fabs(z - textbook));
    if (i % 2 == 0) {
      even = z;
    } else {
      pair_products += even * z;
    }
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 5.0 / std::sqrt(static_cast<double>(n)));
  EXPECT_LT(std::fabs(var - 1.0), 0.01);
  // The two normals of a block are independent: their correlation is ~0.
  EXPECT_LT(std::fabs(pair_products / (n / 2)), 5.0 / std::sqrt(n / 2.0));
  EXPECT_LT(max_diff, 1e-13);  // the libm formula, up to a few ulps of log, cos and sin
  EXPECT_EQ(ph::normal_value(99, 0, 2.0, 0.0), 2.0);
  EXPECT_EQ(ph::normal_value(99, 7, 0.0, 1.0), ph::standard_normal(99, 7));
  // The last counter pairs with the one before it; counter 0 starts a pair.
  const ph::Polar last = ph::box_muller_polar(ph::at(5, ~uint64_t{1}));
  EXPECT_EQ(ph::standard_normal(5, ~uint64_t{0}), ph::mul_rn(last.radius, ph::sin_2pi(last.turn)));
  const ph::Polar first = ph::box_muller_polar(ph::at(5, 0));
  EXPECT_EQ(ph::standard_normal(5, 0), ph::mul_rn(first.radius, ph::cos_2pi(first.turn)));
}

}  // namespace
