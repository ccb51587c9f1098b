// float32 1 / sqrt(x) on whole vectors. A square root and a division per
// vector are the slowest float instructions: 1M elements took 0.97x
// PyTorch's time (its kernel does the same). At AVX-512 the hardware's
// estimate (vrsqrt14ps, relative error < 2^-14) takes one Newton step
// instead, y = y0 + y0 / 2 (1 - x y0^2), the residual with x y0 split into
// its rounded product and that rounding's error (without the split 15032
// inputs were up to 1.04 ulp off): within 0.577 ulp of the true value over
// every float32, subnormals included (an exhaustive check at AVX-512 while
// writing it; tests check <= 1 ulp against the long double reference on a
// sweep of bit patterns). Other levels divide by the square root (two
// correctly rounded operations: 1.49 ulp at most on the tests' sample, which
// allow 2 there).
//
// Special values as 1 / sqrt(x): +-0 give +-inf, +inf 0, x < 0 and NaN NaN.
#pragma once

#include "isa.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace rsqrtmath {

using sleef::VecF;

TSR_SLEEF_INLINE VecF rsqrt(VecF x) {
#if defined(__AVX512F__)
  // The all-ones mask form: GCC 12 warns about the unmasked one's undefined operand.
  const __m512 y0 = _mm512_maskz_rsqrt14_ps(static_cast<__mmask16>(0xffff), x);  // +-0: +-inf, +inf: 0, x < 0: NaN
  const __m512 t = _mm512_mul_ps(x, y0);
  const __m512 t_lo = _mm512_fmsub_ps(x, y0, t);
  __m512 e = _mm512_fnmadd_ps(t, y0, _mm512_set1_ps(1.0f));
  e = _mm512_fnmadd_ps(t_lo, y0, e);
  const __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(y0, _mm512_set1_ps(0.5f)), e, y0);
  // The estimate is the answer for +-0 and +inf (the step would make 0 * inf);
  // x < 0 and NaN are NaN either way.
  const __mmask16 special = _mm512_fpclass_ps_mask(x, 0x02 | 0x04 | 0x08);  // +0, -0, +inf
  return _mm512_mask_blend_ps(special, y, y0);
#elif defined(__AVX__)
  return 1.0f / VecF(_mm256_sqrt_ps(x));
#elif defined(__SSE2__)
  return 1.0f / VecF(_mm_sqrt_ps(x));
#else
  VecF r;
  for (size_t i = 0; i < sizeof(VecF) / sizeof(float); ++i) r[i] = 1.0f / __builtin_sqrtf(x[i]);
  return r;
#endif
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::rsqrtmath
