// float32 sin and cos on whole vectors, inlined where the level has FMA.
// SLEEF's sinf / cosf (u10) are library calls in double-float arithmetic:
// over 32K elements at AVX-512 on an Intel Xeon (Emerald Rapids) they took
// 23-32 / 30-40 us against these 19-24 / 20-25 us in the same loop, and 1M sin
// took 1.24x-1.43x PyTorch's time there.
//
// n = round(x 2/pi); r = x - n pi/2 in FMA steps (the first exact for
// |x| <= kMax, the second a two-sum), with r's rounding error and pi/2's third
// part carried as r_lo;
//   sin r = r + (r^3 S(r^2) + r_lo),
//   cos r = (1 - r^2/2) + (r^4 C(r^2) + the rounding of 1 - r^2/2 and of r^2
//           - r r_lo);
// S and C of degree 2 in r^2 are our own fits (tools/fit_sincos.py: relative
// 3.8e-9 and 1.2e-10 on |r| <= pi/4). The quadrant n picks one and its sign.
// Within 0.92 ulp of the true value (a check at AVX-512 while writing it, of
// every 7th float32 with |x| <= kMax and of the tests' inputs, dense around
// multiples of pi/2; tests check <= 1 ulp at every level: without r_lo 478
// ulp for sin, 13.8 for cos; a third part of pi/2 from math.pi: 22). A
// vector with any |x| > kMax, inf or NaN goes to SLEEF whole (kMax is where the
// dense checks stop: every 61st float32 up to 8192 also stayed within 0.86 ulp,
// but the tests do not cover it). The SSE2 baseline keeps SLEEF.
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
  // r = r1 - q kPio2Mid by Knuth's two-sum (r1 can be the smaller near a
  // multiple of pi/2, where r nearly cancels): r_lo gets its rounding error,
  // the product's and the third part.
  const VecF t = q * -kPio2Mid;
  const VecF t_lo = fma(q, VecF{} - kPio2Mid, -t);
  const VecF r = r1 + t;
  const VecF b = r - r1;
  const VecF r_lo = ((r1 - (r - b)) + (t - b)) + (t_lo - q * kPio2Lo);
  const VecF w = r * r;
  VecF s = mul_add(w, VecF{} - 0.000195145956f, 0.00833215564f);
  s = mul_add(s, w, -0.166666552f);
  s = r + fma(r * w, s, r_lo);
  VecF c = mul_add(w, VecF{} + 2.4432471e-05f, -0.00138873106f);
  c = mul_add(c, w, 0.0416666456f);
  const VecF hi = fma(w, VecF{} - 0.5f, VecF{} + 1.0f);
  const VecF w_lo = fma(r, r, -w);
  const VecF corr = fma(w_lo, VecF{} - 0.5f, (1.0f - hi) - 0.5f * w) - r * r_lo;
  c = hi + fma(w * w, c, corr);
  const VecF v = (n & 1) != 0 ? c : s;
  return (VecF)((VecI)v ^ ((n & 2) << 30));  // quadrants 2 and 3: the negation
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
