// A register-blocked float32 GEMM for small products (matmul's per-call cost at
// sizes like 64x64x64, where OpenBLAS spends a noticeable share of the time
// packing operands). No packing: B's rows must be dense (a K x 16 panel stays in
// L1 while it is reused across all rows of A); A may have any strides (its
// elements are broadcast one at a time). Compiled only where AVX2 and FMA are
// available (the plugin builds for the host ISA); callers check kSmallSgemm.
#pragma once

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace tessera::cpu::small_sgemm {

inline constexpr bool kAvailable = true;

// C[R, cols] = A[R, K] @ B[K, cols] for cols <= 16 (masked when < 16). The
// accumulators are named variables, not an array: GCC keeps an array of vectors
// on the stack and stores it every iteration.
template <int R, bool Full>
inline void block(int64_t K, const float* a, int64_t sar, int64_t sac, const float* b, int64_t ldb, float* c,
                  int64_t ldc, __m256i m0, __m256i m1) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < K; ++k) {
    const float* brow = b + k * ldb;
    const __m256 b0 = Full ? _mm256_loadu_ps(brow) : _mm256_maskload_ps(brow, m0);
    const __m256 b1 = Full ? _mm256_loadu_ps(brow + 8) : _mm256_maskload_ps(brow + 8, m1);
    const float* ak = a + k * sac;
#define TSR_SMALL_SGEMM_ROW(r)                                  \
  if constexpr (R > r) {                                      \
    const __m256 av = _mm256_broadcast_ss(ak + r * sar);      \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);               \
    c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);               \
  }
    TSR_SMALL_SGEMM_ROW(0)
    TSR_SMALL_SGEMM_ROW(1)
    TSR_SMALL_SGEMM_ROW(2)
    TSR_SMALL_SGEMM_ROW(3)
    TSR_SMALL_SGEMM_ROW(4)
    TSR_SMALL_SGEMM_ROW(5)
#undef TSR_SMALL_SGEMM_ROW
  }
  auto store = [&](int r, __m256 lo, __m256 hi) {
    if (Full) {
      _mm256_storeu_ps(c + r * ldc, lo);
      _mm256_storeu_ps(c + r * ldc + 8, hi);
    } else {
      _mm256_maskstore_ps(c + r * ldc, m0, lo);
      _mm256_maskstore_ps(c + r * ldc + 8, m1, hi);
    }
  };
  store(0, c00, c01);
  if constexpr (R > 1) store(1, c10, c11);
  if constexpr (R > 2) store(2, c20, c21);
  if constexpr (R > 3) store(3, c30, c31);
  if constexpr (R > 4) store(4, c40, c41);
  if constexpr (R > 5) store(5, c50, c51);
}

template <bool Full>
inline void rows(int64_t rows_left, int64_t K, const float* a, int64_t sar, int64_t sac, const float* b, int64_t ldb,
                 float* c, int64_t ldc, __m256i m0, __m256i m1) {
  constexpr int kRows = 6;  // 12 accumulators: enough independent FMAs to hide their latency
  int64_t i = 0;
  for (; i + kRows <= rows_left; i += kRows)
    block<kRows, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1);
  switch (rows_left - i) {
    case 5: block<5, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1); break;
    case 4: block<4, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1); break;
    case 3: block<3, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1); break;
    case 2: block<2, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1); break;
    case 1: block<1, Full>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1); break;
    default: break;
  }
}

/// C[M, N] (rows ldc apart, dense) = A[M, K] (strides sar, sac) @ B[K, N] (rows ldb apart, dense).
inline void gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t sar, int64_t sac, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  const __m256i ones = _mm256_set1_epi32(-1);
  for (int64_t j = 0; j < N; j += 16) {
    const int64_t w = N - j < 16 ? N - j : 16;
    if (w == 16) {
      rows<true>(M, K, a, sar, sac, b + j, ldb, c + j, ldc, ones, ones);
    } else {
      const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w)), lane);
      const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w) - 8), lane);
      rows<false>(M, K, a, sar, sac, b + j, ldb, c + j, ldc, m0, m1);
    }
  }
}

}  // namespace tessera::cpu::small_sgemm

#else

namespace tessera::cpu::small_sgemm {
inline constexpr bool kAvailable = false;
inline void gemm(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t) {}
}  // namespace tessera::cpu::small_sgemm

#endif
