// float32 erf and exact gelu on whole vectors. SLEEF's erff (u10) and erfcf
// (u15) spend most of their time in double-float arithmetic that float32
// results do not need: over 1M elements at AVX-512 these ran 2.5x (erf) and
// 3.3x (gelu) faster than them in the same loop.
//
// erf: two pieces, chosen per lane (both are computed; a select picks one):
//   |z| <  0.9:  erf(z)  = z + z R(z^2), R a degree-6 polynomial;
//   |z| >= 0.9:  erfc(z) = t exp(-z^2 + P(t)), t = 2 / (2 + z), P of degree 9.
// The coefficients are our own least-squares fits on Chebyshev nodes against
// mpmath (R: erf(z)/z - 1 on [0, 0.9]; P: log(erfc(z)/t) + z^2 on [0.9, 11]).
// Evaluated in float32 (FMA where the level has one): erf is within 1.8 ulp of
// the double erf over every float32 input at AVX-512 and AVX2 (tests sample the
// whole range at every level: <= 3 ulp).
//
// gelu needs relative accuracy where erf would cancel, not erf's last ulp: one
// piece of the second form on the whole range (see gelu below).
#pragma once

#include "isa.hpp"
#include "exp_math.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace erfmath {

using sleef::VecF;

using expmath::fma;
using expmath::mul_add;

inline constexpr float kSmall = 0.9f;
// erf rounds to +-1 from |z| = 3.92 on; the tail is evaluated at min(|z|, kClamp).
inline constexpr float kErfClamp = 4.0f;

// erf(z) for |z| < kSmall (odd: the sign of z, -0 included, is kept).
TSR_SLEEF_INLINE VecF erf_small(VecF z) {
  const VecF w = z * z;
  VecF r = mul_add(w, VecF{} + 8.57875275e-05f, -0.000819211709f);
  r = mul_add(r, w, 0.00520542637f);
  r = mul_add(r, w, -0.0268612076f);
  r = mul_add(r, w, 0.112837292f);
  r = mul_add(r, w, -0.376126349f);
  r = mul_add(r, w, 0.128379166f);
  return z + z * r;
}


// erfc(a) for kSmall <= a <= kErfClamp.
TSR_SLEEF_INLINE VecF erfc_tail(VecF a) {
  const VecF t = 2.0f / (2.0f + a);
  // Estrin's scheme: four short chains instead of one of nine steps.
  const VecF t2 = t * t, t4 = t2 * t2;
  const VecF p01 = mul_add(t, VecF{} + 1.00044775f, -1.26552641f);
  const VecF p23 = mul_add(t, VecF{} + 0.130174011f, 0.368933499f);
  const VecF p45 = mul_add(t, VecF{} + 0.573193014f, -0.313152552f);
  const VecF p67 = mul_add(t, VecF{} + 1.83609033f, -1.55265391f);
  const VecF p89 = mul_add(t, VecF{} + 0.196191207f, -0.973903894f);
  const VecF p03 = p23 * t2 + p01, p47 = p67 * t2 + p45;
  const VecF p = (p89 * t4 + p47) * t4 + p03;
  return t * expmath::exp_core(-(a * a) + p);
}

/// |x| by clearing the sign bit (one instruction).
TSR_SLEEF_INLINE VecF abs(VecF x) {
  using VecI = expmath::VecI;
  return (VecF)((VecI)x & 0x7fffffff);
}
/// x < m ? x : m (one minps: a NaN x gives m).
TSR_SLEEF_INLINE VecF min(VecF x, float m) {
#if defined(__AVX512F__)
  return _mm512_maskz_min_ps(static_cast<__mmask16>(0xffff), x, _mm512_set1_ps(m));  // see scale_pow2
#elif defined(__AVX2__)
  return _mm256_min_ps(x, _mm256_set1_ps(m));
#elif defined(__SSE2__)
  return _mm_min_ps(x, _mm_set1_ps(m));
#else
  return x < m ? x : m;
#endif
}

/// erf(x); NaN gives NaN, +-inf give +-1.
TSR_SLEEF_INLINE VecF erf(VecF x) {
  const VecF a = abs(x);
  const VecF tail = 1.0f - erfc_tail(min(a, kErfClamp));  // NaN lanes: min gives kErfClamp
  const VecF small = erf_small(x);
  const VecF r = a < kSmall ? small : (x < 0.0f ? -tail : tail);
  return x != x ? x : r;
}

/// x Phi(x) for float32 exact gelu, relatively accurate to about 5e-6 (1.2e-5
/// on the SSE2 baseline, which has no FMA; tested:
/// <= 2e-5 everywhere, down to the subnormal results); NaN gives NaN, and so
/// does -inf (as 0.5 x (1 + erf(x / sqrt 2)) does: -inf times 0).
///
/// One piece for every x, in 26 vector operations (erf's two pieces take ~45;
/// a 1M-element loop is bound by their count, 1 AVX-512 operation per cycle
/// on AMD Zen 4): with a = |x| / sqrt 2, Phi(-|x|) = erfc(a) / 2 =
/// t exp(-x^2 / 2 + G(t)), t = 1 / (1 + 0.385 a), where G(t) = log(erfc(a) / t)
/// + a^2 - log 2 is smooth on (0, 1]: a degree-6 polynomial (our own fit,
/// tools/fit_gelu_erfc.py: within 1.3e-6 for |x| <= 15; beyond, Phi(-|x|) is
/// below float's subnormals and |x| is clamped). -x^2 / 2 + G enters e^q
/// through one FMA, so x^2 is never rounded alone (up to 6e-6 at x = -14).
/// Then x Phi(x) is x (1 - Phi(-|x|)) for x >= 0, with no cancellation since
/// Phi(-|x|) <= 1/2, and x Phi(-|x|) below.
TSR_SLEEF_INLINE VecF gelu(VecF x) {
  const VecF ax = min(abs(x), 15.0f);  // NaN gives 15: only the last product sees the NaN
  const VecF t = 1.0f / mul_add(ax, VecF{} + 0.272236109f, 1.0f);
  VecF g = mul_add(t, VecF{} + 0.266574115f, -0.901824176f);
  g = mul_add(g, t, 0.86365962f);
  g = mul_add(g, t, -0.225172579f);
  g = mul_add(g, t, 0.538910151f);
  g = mul_add(g, t, 0.983790517f);
  g = mul_add(g, t, -2.21908355f);
  const VecF q = fma(ax, ax * -0.5f, g);  // -113 < q < 0
  // e^q as expmath::exp_core, with a polynomial of degree 5 (relatively within
  // 1.1e-7 on |r| <= ln2 / 2) and ln2 in one part (|n| <= 163: r is off by at
  // most 3e-7).
  constexpr float kLog2e = 1.44269504f, kShift = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const VecF nf = mul_add(q, VecF{} + kLog2e, kShift) - kShift;
  const VecF r = fma(nf, VecF{} - 0.693147182f, q);
  VecF p = mul_add(r, VecF{} + 0.00831253454f, 0.0418901108f);
  p = mul_add(p, r, 0.166671142f);
  p = mul_add(p, r, 0.499992311f);
  p = mul_add(p, r, 1.0f);
  p = mul_add(p, r, 1.0f);
  const VecF half_erfc = t * expmath::scale_pow2(p, nf);
  const VecF phi = x >= 0.0f ? 1.0f - half_erfc : half_erfc;
  return x * phi;
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::erfmath
