// float32 erf and exact gelu on whole vectors. SLEEF's erff (u10) and erfcf
// (u15) spend most of their time in double-float arithmetic that float32
// results do not need: over 1M elements at AVX-512 these ran 2.5x (erf) and
// 3.3x (gelu) faster than them in the same loop.
//
// Two pieces, chosen per lane (both are computed; a select picks one):
//   |z| <  0.9:  erf(z)  = z + z R(z^2), R a degree-6 polynomial;
//   |z| >= 0.9:  erfc(z) = t exp(-z^2 + P(t)), t = 2 / (2 + z), P of degree 9.
// The coefficients are our own least-squares fits on Chebyshev nodes against
// mpmath (R: erf(z)/z - 1 on [0, 0.9]; P: log(erfc(z)/t) + z^2 on [0.9, 11]).
// Evaluated in float32 (FMA where the level has one): erf is within 1.8 ulp of
// the double erf over every float32 input at AVX-512 and AVX2 (tests sample the
// whole range at every level: <= 3 ulp). erfc for z >= 0.9 is relatively
// accurate to about 15 ulp below z = 3 (-z^2 is rounded to float), the order
// of the rounding of gelu's own x / sqrt 2, so gelu keeps its relative accuracy
// (<= 9e-6 for |x| < 10) where 1 + erf(x / sqrt 2) would cancel.
#pragma once

#include "isa.hpp"
#include "exp_math.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace erfmath {

using sleef::VecF;

using expmath::mul_add;

inline constexpr float kSmall = 0.9f;
// erf rounds to +-1 from |z| = 3.92 on; the tail is evaluated at min(|z|, kClamp).
inline constexpr float kErfClamp = 4.0f;
// erfc(11) = 1.4e-54: below float's smallest subnormal.
inline constexpr float kErfcClamp = 11.0f;

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


// erfc(a) for kSmall <= a <= kErfcClamp.
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

TSR_SLEEF_INLINE VecF abs(VecF x) { return x < 0.0f ? -x : x; }
TSR_SLEEF_INLINE VecF min(VecF x, float m) { return x < m ? x : VecF{} + m; }

/// erf(x); NaN gives NaN, +-inf give +-1.
TSR_SLEEF_INLINE VecF erf(VecF x) {
  const VecF a = abs(x);
  const VecF tail = 1.0f - erfc_tail(min(a, kErfClamp));  // NaN lanes: min gives kErfClamp
  const VecF small = erf_small(x);
  const VecF r = a < kSmall ? small : (x < 0.0f ? -tail : tail);
  return x != x ? x : r;
}

/// x Phi(x) = 0.5 x erfc(-x / sqrt 2); NaN gives NaN (so does -inf, as 0.5 x (1
/// + erf(x / sqrt 2)) does: -inf times 0).
TSR_SLEEF_INLINE VecF gelu(VecF x) {
  const VecF z = x * -0.70710678118654752440f;
  const VecF a = abs(z);
  const VecF tail = erfc_tail(min(a, kErfcClamp));
  const VecF erfc = a < kSmall ? 1.0f - erf_small(z) : (z < 0.0f ? 2.0f - tail : tail);
  return 0.5f * x * erfc;
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::erfmath
