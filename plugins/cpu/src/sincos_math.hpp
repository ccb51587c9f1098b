// float32 sin and cos on whole vectors, inlined where the level has FMA.
// SLEEF's sinf / cosf (u10) are library calls in double-float arithmetic:
// over 32K elements at AVX-512 on an Intel Xeon (Emerald Rapids) they took
// 23-32 / 30-40 us against 19-24 / 20-25 us for this code's first form in
// the same loop, and 1M sin took 1.24x-1.43x PyTorch's time there.
//
// n = round(x 2/pi); r = x - n pi/2 in FMA steps (the first exact for
// |x| <= kMax, the second a fast two-sum), with r's rounding error and pi/2's
// third part carried as r_lo;
//   sin r = r + (r^3 S(r^2) + r_lo),
//   cos r = (1 - r^2/2 rounded once) + (r^4 C(r^2) + that rounding's error
//           - r r_lo);
// S and C of degree 2 in r^2 are our own fits (tools/fit_sincos.py: relative
// 3.8e-9 and 1.2e-10 on |r| <= pi/4). The quadrant n picks one and its sign.
// About 33 vector operations (38 with a full two-sum and r^2's rounding
// error carried instead: a 32K in-cache loop 19.2 -> 16.2 us).
// Within 0.925 ulp of the long double sin and cos (a /tmp check at AVX-512
// and AVX2 of every float32 with |x| <= kMax and of every one within 2000
// ulps of each multiple of pi/2 up to kMax, which holds all the inputs where
// the fast two-sum's order can fail; tests check <= 1 ulp at every level:
// without r_lo 478 ulp for sin, 13.8 for cos; a third part of pi/2 from
// math.pi: 22). A vector with any |x| > kMax, inf or NaN goes to SLEEF whole
// (kMax is where the dense checks stop: every 61st float32 up to 8192 also
// stayed within 0.86 ulp, but the tests do not cover it). The SSE2 baseline
// keeps SLEEF.
#pragma once

#include "isa.hpp"
#include "exp_math.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace sincosmath {

using sleef::VecF;

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
using expmath::fma;
using expmath::mul_add;
using expmath::VecI;

inline constexpr float kMax = 2048.0f;

/// Whether any lane of x has |x| > kMax or is NaN.
TSR_SLEEF_INLINE bool any_beyond(VecF x) {
  const VecF ax = (VecF)((VecI)x & 0x7fffffff);
#if defined(__AVX512F__)
  return _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kMax), _CMP_NLE_UQ) != 0;
#else
  return _mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(kMax), _CMP_NLE_UQ)) != 0;
#endif
}

/// sin(x) (kCos false) or cos(x) = sin(x + pi/2) (kCos true) for |x| <= kMax.
template <bool kCos>
TSR_SLEEF_INLINE VecF sin_or_cos(VecF x) {
  constexpr float kTwoOverPi = 0.636619772f, kShift = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  constexpr float kPio2Hi = 1.57079637f, kPio2Mid = -4.37113883e-08f, kPio2Lo = -1.71512451e-15f;
  const VecF shifted = mul_add(x, VecF{} + kTwoOverPi, kShift);
  const VecF q = shifted - kShift;
  VecI n = (VecI)shifted;  // the low bits are n's: the quadrant
  if constexpr (kCos) n = n + 1;
  const VecF r1 = fma(q, VecF{} - kPio2Hi, x);  // exact: both are multiples of 2^-23 below 2
  // r = r1 + t by Dekker's fast two-sum: r_lo gets its rounding error, the
  // product's and the third part. The fast form assumes |r1| >= |t|; only
  // within 2 |t| <= 1.2e-4 of a multiple of pi/2 can r1 be the smaller, and
  // every float32 there was checked (see above).
  const VecF t = q * -kPio2Mid;
  const VecF t_lo = fma(q, VecF{} - kPio2Mid, -t);
  const VecF r = r1 + t;
  const VecF r_lo = (t - (r - r1)) + fma(q, VecF{} - kPio2Lo, t_lo);
  const VecF w = r * r;
  VecF s = mul_add(w, VecF{} - 0.000195145956f, 0.00833215564f);
  s = mul_add(s, w, -0.166666552f);
  s = r + fma(r * w, s, r_lo);
  VecF c = mul_add(w, VecF{} + 2.4432471e-05f, -0.00138873106f);
  c = mul_add(c, w, 0.0416666456f);
  const VecF m = r * -0.5f;                          // exact
  const VecF hi = fma(m, r, VecF{} + 1.0f);          // 1 - r^2/2, rounded once
  const VecF corr = fma(m, r, 1.0f - hi) - r * r_lo;  // 1 - hi is exact: hi >= 0.69
  c = hi + fma(w * w, c, corr);
  const VecF v = (n & 1) != 0 ? c : s;
  // Quadrants 2 and 3: the negation (n's bit 1 moved to the sign bit).
#if defined(__AVX512F__)
  return (VecF)_mm512_ternarylogic_epi32(reinterpret_cast<__m512i>(v), reinterpret_cast<__m512i>(n << 30),
                                         _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)), 0x78);  // v ^ (b & c)
#else
  return (VecF)((VecI)v ^ ((n & 2) << 30));
#endif
}

TSR_SLEEF_INLINE VecF sin(VecF x) {
  if (any_beyond(x)) [[unlikely]]
    return sleef::sin(x);
  return sin_or_cos<false>(x);
}
TSR_SLEEF_INLINE VecF cos(VecF x) {
  if (any_beyond(x)) [[unlikely]]
    return sleef::cos(x);
  return sin_or_cos<true>(x);
}
#else
TSR_SLEEF_INLINE VecF sin(VecF x) { return sleef::sin(x); }
TSR_SLEEF_INLINE VecF cos(VecF x) { return sleef::cos(x); }
#endif

}}}  // namespace tessera::cpu::TSR_CPU_ISA::sincosmath
