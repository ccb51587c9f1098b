// softmax / log_softmax of one dense float or double row, for the nn kernels.
//
// float rows take three sweeps over a row that stays in cache: max, then
// exp(x - max) (written out for softmax) with its sum, then the scale (softmax)
// or the shift (x - max) - log(sum) (log_softmax). exp is a branch-free
// polynomial (Cody-Waite range reduction to |r| <= ln2/2, a degree-6
// polynomial of e^r, 2^n through the exponent bits): ~1 ulp, 8 lanes per AVX2
// instruction (16 per AVX-512 one, the same bits). Arguments are x - max <= 0, NaN stays NaN, and anything below
// the float range flushes to 0 (so -inf entries get exactly 0). double rows use
// std::exp. Without AVX2 the scalar form runs in loops GCC vectorizes (SSE2),
// with a * b + c in place of FMA there (within an ulp of the AVX2 bits). Also
// used by logsumexp (reduce_ops.hpp).
#pragma once

#include "isa.hpp"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TSR_NN_AVX2 1
#endif

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace nn {

// Range reduction and polynomial constants of e^x (the classic Cephes expf
// values): ln 2 split in a part exact in float and a correction.
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                       kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
inline constexpr float kExpLow = -87.33654475f;  // below: e^x is under FLT_MIN, flushed to 0
inline constexpr float kExpHigh = 88.3762626647949f;

// a * b + c: fused where the ISA has FMA (the bits of the AVX2 vector form);
// on the SSE2 baseline std::fma would be a libm call, tens of ns.
inline float mul_add(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// c ? a : b through bit masks: GCC (-ftrapping-math) keeps a `?:` of floats
// as a branch, which stops the loop from vectorizing.
inline float select(bool c, float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  const int32_t mask = -static_cast<int32_t>(c);
  const int32_t r = (ia & mask) | (ib & ~mask);
  float f;
  std::memcpy(&f, &r, sizeof f);
  return f;
}

/// e^x for one float, the same steps as the vector form; branch-free, so
/// loops calling it vectorize on any ISA.
inline float exp_scalar(float x) {
  const bool under = x < kExpLow;  // false for NaN
  x = select(x > kExpHigh, kExpHigh, x);
  x = select(x < kExpLow, kExpLow, x);  // NaN stays NaN
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer (to even)
  const float nr = x * kLog2e + kRound;
  const float n = nr - kRound;
  float r = mul_add(n, -kLn2Hi, x);
  r = mul_add(n, -kLn2Lo, r);
  float p = kP0;
  p = mul_add(p, r, kP1);
  p = mul_add(p, r, kP2);
  p = mul_add(p, r, kP3);
  p = mul_add(p, r, kP4);
  p = mul_add(p, r, kP5);
  p = mul_add(p, r * r, r + 1.0f);
  int32_t k, kr, bits;
  std::memcpy(&kr, &nr, sizeof kr);
  const float round = kRound;
  std::memcpy(&k, &round, sizeof k);
  k = kr - k;  // n as an integer, without a float -> int conversion (NaN would be UB)
  bits = static_cast<int32_t>(static_cast<uint32_t>(k + 127) << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return select(under, 0.0f, p * scale);
}

#ifdef TSR_NN_AVX2
inline __m256 exp_avx2(__m256 x) {
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(kExpLow), _CMP_LT_OQ);
  // min(c, x) returns x when x is NaN (the second operand wins): NaN survives.
  x = _mm256_min_ps(_mm256_set1_ps(kExpHigh), x);
  x = _mm256_max_ps(_mm256_set1_ps(kExpLow), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(under, y);
}

#if defined(__AVX512F__)
// GCC 12's own intrinsics (min, max, roundscale) pass _mm512_undefined_ps()
// as a masked-off source and then warn about it (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// exp_avx2's steps on 16 lanes: the same bits per element.
inline __m512 exp_avx512(__m512 x) {
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpLow), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_set1_ps(kExpHigh), x);  // NaN survives, as in exp_avx2
  x = _mm512_max_ps(_mm512_set1_ps(kExpLow), x);
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~under), p, _mm512_castsi512_ps(e));
}
#pragma GCC diagnostic pop
#endif

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
#endif

inline float row_max(const float* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
#ifdef TSR_NN_AVX2
  if (n >= 32) {
    __m256 m0 = _mm256_loadu_ps(x), m1 = _mm256_loadu_ps(x + 8), m2 = _mm256_loadu_ps(x + 16),
           m3 = _mm256_loadu_ps(x + 24);
    for (i = 32; i + 32 <= n; i += 32) {
      m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
      m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
      m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
      m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
    }
    m = hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  }
#endif
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

/// Sum of e^(x - m); when Store, y[i] = e^(x[i] - m) too (y may be x).
template <bool Store>
inline float exp_sum(const float* x, float* y, int64_t n, float m) {
  int64_t i = 0;
  float s = 0.0f;
#ifdef TSR_NN_AVX2
  const __m256 vm = _mm256_set1_ps(m);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
#if defined(__AVX512F__)
  // One 16-lane vector per block: its low and high halves are s0 and s1 of
  // the AVX2 loop below, so the sums (and bits) are the same.
  const __m512 vm16 = _mm512_set1_ps(m);
  __m512 s16 = _mm512_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm16));
    if constexpr (Store) _mm512_storeu_ps(y + i, e);
    s16 = _mm512_add_ps(s16, e);
  }
  alignas(64) float halves[16];  // (GCC 12 warns on its own extract intrinsics)
  _mm512_store_ps(halves, s16);
  s0 = _mm256_load_ps(halves);
  s1 = _mm256_load_ps(halves + 8);
#endif
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    const __m256 e1 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
    if constexpr (Store) {
      _mm256_storeu_ps(y + i, e0);
      _mm256_storeu_ps(y + i + 8, e1);
    }
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e0 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    if constexpr (Store) _mm256_storeu_ps(y + i, e0);
    s0 = _mm256_add_ps(s0, e0);
  }
  s = hsum(_mm256_add_ps(s0, s1));
#else
  float lane[16] = {};  // independent sums: the loop vectorizes on SSE2 too
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) {
      const float e = exp_scalar(x[i + j] - m);
      if constexpr (Store) y[i + j] = e;
      lane[j] += e;
    }
  }
  for (int w = 8; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
  }
  s = lane[0];
#endif
  for (; i < n; ++i) {
    const float e = exp_scalar(x[i] - m);
    if constexpr (Store) y[i] = e;
    s += e;
  }
  return s;
}

/// y = x * a + b over a dense row (y may be x).
inline void axpb(const float* x, float* y, int64_t n, float a, float b) {
  int64_t i = 0;
#ifdef TSR_NN_AVX2
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), va, vb));
#endif
  for (; i < n; ++i) y[i] = std::fma(x[i], a, b);
}

/// y = (x - m) - l over a dense row (y may be x): x - m first, which is exact
/// near the max, so log-probabilities close to 0 keep their precision.
inline void shift_row(const float* x, float* y, int64_t n, float m, float l) {
  int64_t i = 0;
#ifdef TSR_NN_AVX2
  const __m256 vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(l);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vl));
#endif
  for (; i < n; ++i) y[i] = (x[i] - m) - l;
}

/// softmax (Log = false) or log_softmax of a dense row of n > 0 floats into y (y may be x).
template <bool Log>
inline void softmax_row(const float* x, float* y, int64_t n) {
  const float m = row_max(x, n);
  if constexpr (Log) {
    const float s = exp_sum<false>(x, y, n, m);
    shift_row(x, y, n, m, std::log(s));
  } else {
    const float s = exp_sum<true>(x, y, n, m);
    axpb(y, y, n, 1.0f / s, 0.0f);
  }
}

template <bool Log>
inline void softmax_row(const double* x, double* y, int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  double s = 0.0;
  if constexpr (Log) {
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    const double l = std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - l;
  } else {
    for (int64_t i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] - m));
    const double inv = 1.0 / s;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

/// out[i] = e^(a[i] - b[i]) for i < w.
inline void exp_diff(const float* a, const float* b, float* out, int64_t w) {
  int64_t i = 0;
#ifdef TSR_NN_AVX2
  for (; i + 8 <= w; i += 8)
    _mm256_storeu_ps(out + i, exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i))));
#endif
  for (; i < w; ++i) out[i] = exp_scalar(a[i] - b[i]);
}
inline void exp_diff(const double* a, const double* b, double* out, int64_t w) {
  for (int64_t i = 0; i < w; ++i) out[i] = std::exp(a[i] - b[i]);
}

/// Columns at once: softmax along j of x[j * ld + i] for n rows j and w <= kCols
/// columns i (a dim that is not the last of a dense tensor). Every sweep reads
/// whole rows of w contiguous elements, so it vectorizes along i.
inline constexpr int64_t kCols = 256;
template <bool Log, typename A>
void softmax_cols(const A* x, A* y, int64_t n, int64_t w, int64_t ld) {
  A m[kCols], s[kCols], e[kCols];
  for (int64_t i = 0; i < w; ++i) {
    m[i] = -std::numeric_limits<A>::infinity();
    s[i] = 0;
  }
  for (int64_t j = 0; j < n; ++j) {
    const A* r = x + j * ld;
    for (int64_t i = 0; i < w; ++i) m[i] = r[i] > m[i] ? r[i] : m[i];
  }
  for (int64_t j = 0; j < n; ++j) {
    A* out = Log ? e : y + j * ld;
    exp_diff(x + j * ld, m, out, w);
    for (int64_t i = 0; i < w; ++i) s[i] += out[i];
  }
  if constexpr (Log) {
    for (int64_t i = 0; i < w; ++i) s[i] = std::log(s[i]);
    for (int64_t j = 0; j < n; ++j) {
      const A* r = x + j * ld;
      A* out = y + j * ld;
      for (int64_t i = 0; i < w; ++i) out[i] = (r[i] - m[i]) - s[i];
    }
  } else {
    for (int64_t i = 0; i < w; ++i) s[i] = A(1) / s[i];
    for (int64_t j = 0; j < n; ++j) {
      A* out = y + j * ld;
      for (int64_t i = 0; i < w; ++i) out[i] *= s[i];
    }
  }
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::nn
