// float32 e^x, 2^x, sigmoid and tanh on whole vectors, inlined. SLEEF's expf is a call
// into libsleef: every live vector register is caller-saved, and the call
// itself cost more than the arithmetic (1M-element exp at AVX-512 ran 1.3-1.6x
// PyTorch's time on it). Used by unary.cpp (exp, exp2, sigmoid, silu, softplus,
// tanh and gelu's tanh form), log1p_math.hpp (mul_add, fma) and erf_math.hpp
// (erfc's tail).
//
// x = n ln2 + r, |r| <= ln2 / 2 (ln2 split so n * kLn2Hi is exact);
// e^r = 1 + r + r^2 Q(r), Q a degree-4 least-squares fit of our own; 2^n
// applied with vscalefps at AVX-512 (rounded once, subnormals included), else
// in two halves so each factor stays a normal float and the product rounds
// once. Within about 1 ulp of the double exp (tests check <= 4 ulp over the
// whole range at every level).
#pragma once

#include "isa.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace expmath {

using sleef::VecF;
using VecI = int32_t __attribute__((vector_size(sizeof(VecF))));

// a * b + c: one FMA where the level has it (halves the polynomials' latency
// chains), two roundings on the SSE2 baseline.
TSR_SLEEF_INLINE VecF mul_add(VecF a, VecF b, float c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, _mm512_set1_ps(c));
#elif defined(__AVX2__) && defined(__FMA__)
  return _mm256_fmadd_ps(a, b, _mm256_set1_ps(c));
#else
  return a * b + c;
#endif
}

/// a * b + c on whole vectors (two roundings on the SSE2 baseline, as mul_add).
TSR_SLEEF_INLINE VecF fma(VecF a, VecF b, VecF c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__AVX2__) && defined(__FMA__)
  return _mm256_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}

/// p 2^n for an integer-valued nf = n, -151 <= n <= 129, p in [0.5, 2]: the
/// result rounded once, subnormals included.
TSR_SLEEF_INLINE VecF scale_pow2(VecF p, VecF nf) {
#if defined(__AVX512F__)
  // One instruction (the all-ones mask form: GCC 12's unmasked one warns
  // about its own undefined operand).
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(0xffff), p, nf);
#else
  // In two halves, so each factor stays a normal float.
  const VecI n = __builtin_convertvector(nf, VecI);
  const VecI n1 = n >> 1, n2 = n - n1;
  return p * (VecF)((n1 + 127) << 23) * (VecF)((n2 + 127) << 23);
#endif
}

/// e^q for -150 <= q <= 89 (NaN-free): beyond 88.72 the scale overflows to
/// +inf, below -103.3 the result rounds to 0, as the true value does.
TSR_SLEEF_INLINE VecF exp_core(VecF q) {
  constexpr float kLog2e = 1.44269504f, kShift = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const VecF nf = mul_add(q, VecF{} + kLog2e, kShift) - kShift;
  // Every step an FMA where the level has one (12 vector operations; the
  // separate multiplies and adds of -ffp-contract=off took 15).
  const VecF r = fma(nf, VecF{} - kLn2Lo, fma(nf, VecF{} - kLn2Hi, q));
  VecF p = mul_add(r, VecF{} + 0.00139336521f, 0.00836318173f);
  p = mul_add(p, r, 0.0416664667f);
  p = mul_add(p, r, 0.166665763f);
  p = mul_add(p, r, 0.5f);
  p = 1.0f + fma(r * r, p, r);
  return scale_pow2(p, nf);
}

/// e^x over the whole float range: +inf gives +inf, -inf gives 0, NaN NaN.
TSR_SLEEF_INLINE VecF exp(VecF x) {
  // Clamped into exp_core's range, written as maxps/minps compute it (one
  // instruction each; a NaN becomes the bound, and is put back below).
  VecF q = x > -104.0f ? x : VecF{} - 104.0f;
  q = q < 89.0f ? q : VecF{} + 89.0f;
  const VecF r = exp_core(q);
  return x != x ? x : r;
}

/// max(lo, x) with a NaN x kept (maxps returns its second operand when one is NaN).
TSR_SLEEF_INLINE VecF max_keep_nan(float lo, VecF x) {
#if defined(__AVX512F__)
  return _mm512_maskz_max_ps(static_cast<__mmask16>(0xffff), _mm512_set1_ps(lo), x);  // see scale_pow2
#elif defined(__AVX__)
  return _mm256_max_ps(_mm256_set1_ps(lo), x);
#elif defined(__SSE2__)
  return _mm_max_ps(_mm_set1_ps(lo), x);
#else
  return x > lo || x != x ? x : VecF{} + lo;
#endif
}
/// min(hi, x) with a NaN x kept, as max_keep_nan.
TSR_SLEEF_INLINE VecF min_keep_nan(float hi, VecF x) {
#if defined(__AVX512F__)
  return _mm512_maskz_min_ps(static_cast<__mmask16>(0xffff), _mm512_set1_ps(hi), x);
#elif defined(__AVX__)
  return _mm256_min_ps(_mm256_set1_ps(hi), x);
#elif defined(__SSE2__)
  return _mm_min_ps(_mm_set1_ps(hi), x);
#else
  return x < hi || x != x ? x : VecF{} + hi;
#endif
}

/// 1 / (1 + e^-x), as sleef_math.hpp's sigmoid: e = e^-|x| never overflows,
/// and for x < 0, e / (1 + e) keeps the relative accuracy where 1 / (1 + e^-x)
/// would round to 0. NaN gives NaN.
TSR_SLEEF_INLINE VecF sigmoid(VecF x) {
  // -|x| by setting the sign bit, clamped to exp_core's range with a NaN kept,
  // so a NaN x runs through as NaN without exp's own clamps and fix-up.
  const VecF neg = (VecF)((VecI)x | static_cast<int32_t>(0x80000000u));
  const VecF q = max_keep_nan(-104.0f, neg);
  const VecF e = exp_core(q);
  const VecF r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/// tanh x: odd, computed on |x| and given x's sign. For |x| < 0.625,
/// |x| + |x|^3 P(x^2), P a degree-5 least-squares fit of our own to
/// (tanh x - x) / x^3 (0.007 ulp from it there); above, 1 - 2 / (e^2|x| + 1),
/// whose rounding errors stay below 1.5 ulp of a result >= 0.55 (2|x|
/// clamped at 20: tanh rounds to 1 from 9.01). Within 1.3 ulp of the long
/// double tanh on sampled bit patterns (tests check <= 2 ulp at every level).
/// -0 gives -0, +-inf +-1, NaN NaN.
TSR_SLEEF_INLINE VecF tanh(VecF x) {
  const VecF ax = (VecF)((VecI)x & 0x7fffffff);
  const VecF z = ax * ax;
  VecF p = mul_add(z, VecF{} + 0.0021474f, -0.00817938f);
  p = mul_add(p, z, 0.0217f);
  p = mul_add(p, z, -0.05394626f);
  p = mul_add(p, z, 0.13333197f);
  p = mul_add(p, z, -0.3333333f);
  const VecF small = fma(ax * z, p, ax);
  const VecF q = ax + ax < 20.0f ? ax + ax : VecF{} + 20.0f;
  const VecF big = 1.0f - 2.0f / (exp_core(q) + 1.0f);
  const VecF r = ax < 0.625f ? small : big;
  const VecF y = (VecF)((VecI)r | ((VecI)x & static_cast<int32_t>(0x80000000u)));
  return x != x ? x : y;
}

/// 2^x: x = n + f, n the nearest integer (after clamping x to [-151, 129],
/// beyond which 2^x rounds to 0 or overflows anyway), f = x - n exact with
/// |f| <= 1/2; 2^f = e^(f ln2) with exp_core's polynomial, 2^n by scale_pow2.
/// Within 0.97 ulp of the long double exp2 over every float32 at AVX-512
/// (tests check <= 1 ulp with FMA, <= 2 ulp on the SSE2 baseline). SLEEF's
/// exp2f is a call that cost 1.3x this inlined loop over 1M elements
/// (AVX-512). NaN gives NaN (the clamps keep it), +inf +inf, -inf 0.
TSR_SLEEF_INLINE VecF exp2(VecF x) {
  const VecF q = min_keep_nan(129.0f, max_keep_nan(-151.0f, x));
#if defined(__AVX512F__)
  const VecF nf = _mm512_maskz_roundscale_ps(static_cast<__mmask16>(0xffff), q,  // see scale_pow2
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif defined(__AVX__)
  const VecF nf = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const VecF nf = (q + kShift) - kShift;
#endif
  // r = f ln2 rounded, and what the rounding and ln2's own float lost (without
  // it 4411 inputs near f = -1/2 were 1.07 ulp off).
  constexpr float kLn2 = 0.693147182f, kLn2Lo = -1.90465421e-09f;
  const VecF f = q - nf;
  const VecF r = f * kLn2;
  const VecF r_lo = fma(f, VecF{} + kLn2, -r) + f * kLn2Lo;
  VecF p = mul_add(r, VecF{} + 0.00139336521f, 0.00836318173f);
  p = mul_add(p, r, 0.0416664667f);
  p = mul_add(p, r, 0.166665763f);
  p = mul_add(p, r, 0.5f);
  p = 1.0f + (r + fma(r * r, p, r_lo));
  return scale_pow2(p, nf);
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::expmath
