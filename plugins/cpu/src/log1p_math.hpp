// float32 log(1 + x) on whole vectors, inlined. SLEEF's log1pf (u10) is a
// library call on double-float arithmetic: 1M elements took 1.02x-1.04x
// PyTorch's time (the same SLEEF function there), ~0.78 ms at AVX-512.
//
// u = 1 + x rounded, u = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1
// (exact), or f = x itself where k = 0 (no rounding of u at all). Then
// log(1 + f) = f - (f^2/2 - s (f^2/2 + R)), s = f / (2 + f), R = 2z/3 + 2z^2/5
// + 2z^3/7 + 2z^4/9 with z = s^2 (the series of 2 atanh(s) - 2s, truncated
// 2^-29 below the result): f is exact and the bracket small next to it, so
// its rounding errors hardly reach the result. u's rounding error
// c = (1 + x) - u is exact in float (Sterbenz) and adds c / u. Within 0.854
// ulp of the true value over every float32 (an exhaustive check at AVX-512
// while writing it; tests check <= 1 ulp against the long double log1p on a
// sweep of bit patterns at every level).
//
// Special values as the C library: log1p(-1) = -inf, x < -1 NaN, +inf +inf,
// NaN NaN, -0 -0 (and every |x| < 2^-26 gives x: log1p(x) rounds to x there).
#pragma once

#include "isa.hpp"
#include "exp_math.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace log1pmath {

using sleef::VecF;
using expmath::fma;
using expmath::mul_add;
using VecI = int32_t __attribute__((vector_size(sizeof(VecF))));

TSR_SLEEF_INLINE VecF log1p(VecF x) {
  constexpr float kLn2Hi = 0.693145751953125f;  // 16 significant bits: k kLn2Hi is exact
  constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  constexpr int32_t kSqrtHalfBits = 0x3f3504f3;
  const VecF u = 1.0f + x;
  const VecI bits = (VecI)u;
  // k: the exponent of u / sqrt(1/2) (an arithmetic shift; u <= 0 and NaN give
  // garbage here, replaced below).
  const VecI k = (bits - kSqrtHalfBits) >> 23;
  const VecF m = (VecF)(bits - (k << 23));
  const VecF kf = __builtin_convertvector(k, VecF);
  const VecF f = k == 0 ? x : m - 1.0f;
  // c exactly: for x < 1, 1 - u and x are within a factor 2 of each other's
  // negation; for x >= 1, u - x lies in [1/2, 2].
  const VecF c = x < 1.0f ? (1.0f - u) + x : 1.0f - (u - x);
  const VecF cu = k == 0 ? VecF{} : c / u;
  const VecF s = f / (2.0f + f);
  const VecF z = s * s;
  VecF r = mul_add(z, VecF{} + 2.0f / 9.0f, 2.0f / 7.0f);
  r = mul_add(r, z, 2.0f / 5.0f);
  r = mul_add(r, z, 2.0f / 3.0f);
  r = r * z;
  const VecF hfsq = (0.5f * f) * f;
  const VecF bracket = hfsq - fma(s, hfsq + r, fma(kf, VecF{} + kLn2Lo, cu));
  VecF y = kf * kLn2Hi + (f - bracket);  // k kLn2Hi exact
  // Special values, and -0 (+0 + -0 lost its sign).
  const VecF ax = (VecF)((VecI)x & 0x7fffffff);
  y = ax < 0x1p-26f ? x : y;
  y = x == -1.0f ? VecF{} - __builtin_inff() : y;
  y = x < -1.0f ? VecF{} + __builtin_nanf("") : y;
  y = x == __builtin_inff() ? x : y;
  return x != x ? x : y;
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::log1pmath
