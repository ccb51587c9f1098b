// The SDK's float16 conversions (tessera/sdk/dtype.hpp) against the x86
// F16C instructions (IEEE 754 conversions in hardware), the independent oracle:
// every float16 widened, and floats at every rounding boundary narrowed. NaNs
// follow the SDK's documented rule instead of the hardware's (widening keeps
// a signaling NaN signaling; narrowing gives the quiet NaN of the sign).
#include <gtest/gtest.h>
#include <tessera/sdk/dtype.hpp>

#include <cstdint>
#include <cstring>
#include <random>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using tessera::sdk::Half;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) float hw_widen(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_narrow(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
bool have_f16c() { return __builtin_cpu_supports("f16c"); }
#else
float hw_widen(uint16_t) { return 0; }
uint16_t hw_narrow(float) { return 0; }
bool have_f16c() { return false; }
#endif

TEST(SdkHalf, EveryFloat16WidensExactly) {
  if (!have_f16c()) GTEST_SKIP() << "no F16C on this machine to compare with";
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const uint32_t got = bits_of(Half::to_float(b));
    if ((b & 0x7fffu) > 0x7c00u) {  // NaN: sign, all-ones exponent, payload << 13, not quieted
      EXPECT_EQ(got, (uint32_t(b & 0x8000u) << 16) | 0x7f800000u | (uint32_t(b & 0x3ffu) << 13)) << h;
    } else {
      EXPECT_EQ(got, bits_of(hw_widen(b))) << h;
    }
  }
}

TEST(SdkHalf, FloatsNarrowToTheNearestEvenFloat16) {
  if (!have_f16c()) GTEST_SKIP() << "no F16C on this machine to compare with";
  // Every sign, exponent and top-10 mantissa pattern, each with low bits at
  // the rounding boundaries of normal float16 (0x1000 is the tie) and of the
  // subnormal range (a tie sits higher there, at the top bits' patterns), plus
  // random low bits.
  std::mt19937 rng(7);
  const uint32_t lows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
  int64_t checked = 0;
  for (uint32_t top = 0; top < (1u << 19); ++top) {
    for (int k = 0; k < 8; ++k) {
      const uint32_t low = k < 6 ? lows[k] : (rng() & 0x1fffu);
      const float f = float_of((top << 13) | low);
      const uint16_t got = Half::from_float(f);
      if (f != f) {
        EXPECT_EQ(got, ((bits_of(f) >> 16) & 0x8000u) | 0x7e00u) << std::hex << bits_of(f);
      } else {
        ASSERT_EQ(got, hw_narrow(f)) << std::hex << bits_of(f);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, int64_t{8} << 19);
}

TEST(SdkHalf, RoundTripsEveryFloat16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const uint16_t back = Half::from_float(Half::to_float(b));
    EXPECT_EQ(back, (b & 0x7fffu) > 0x7c00u ? static_cast<uint16_t>((b & 0x8000u) | 0x7e00u) : b) << h;
  }
}

}  // namespace
