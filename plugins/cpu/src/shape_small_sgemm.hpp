// A register-blocked float32 GEMM for small and medium products (up to about
// 256^3 multiply-adds), where OpenBLAS's fixed costs (packing both operands,
// waking threads) are a large share of the time. A 6 x 16 block of C lives in
// 12 AVX registers; A's elements are broadcast one at a time (any strides, no
// packing); B's rows must be dense. K is cut into chunks whose 16-wide B panel
// stays in L1 (copied into a dense buffer when B's rows are far apart, to avoid
// L1 set conflicts), rows into blocks that stay in L2; column panels are split
// over OpenMP threads when the work is large enough. Compiled only where AVX2
// and FMA are available (the plugin builds for the host ISA): kAvailable.
#pragma once

#include "isa.hpp"
#include <algorithm>
#include <cstdint>

#include "parallel.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace small_sgemm {

inline constexpr bool kAvailable = true;

// C[R, cols] = A[R, K] @ B[K, cols] for cols <= 16 (masked when < 16). The
// accumulators are named variables, not an array: GCC keeps an array of vectors
// on the stack and stores it every iteration.
template <int R, bool Full, bool Acc>
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
    if (Acc) {  // a later K chunk: add to what the earlier chunks wrote
      lo = _mm256_add_ps(lo, Full ? _mm256_loadu_ps(c + r * ldc) : _mm256_maskload_ps(c + r * ldc, m0));
      hi = _mm256_add_ps(hi, Full ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_maskload_ps(c + r * ldc + 8, m1));
    }
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

template <bool Full, bool Acc>
inline void rows(int64_t rows_left, int64_t K, const float* a, int64_t sar, int64_t sac, const float* b, int64_t ldb,
                 float* c, int64_t ldc, __m256i m0, __m256i m1) {
  constexpr int kRows = 6;  // 12 accumulators: enough independent FMAs to hide their latency
  int64_t i = 0;
  for (; i + kRows <= rows_left; i += kRows)
    block<kRows, Full, Acc>(K, a + i * sar, sar, sac, b, ldb, c + i * ldc, ldc, m0, m1);
  const float* ai = a + i * sar;
  float* ci = c + i * ldc;
  switch (rows_left - i) {
    case 5: block<5, Full, Acc>(K, ai, sar, sac, b, ldb, ci, ldc, m0, m1); break;
    case 4: block<4, Full, Acc>(K, ai, sar, sac, b, ldb, ci, ldc, m0, m1); break;
    case 3: block<3, Full, Acc>(K, ai, sar, sac, b, ldb, ci, ldc, m0, m1); break;
    case 2: block<2, Full, Acc>(K, ai, sar, sac, b, ldb, ci, ldc, m0, m1); break;
    case 1: block<1, Full, Acc>(K, ai, sar, sac, b, ldb, ci, ldc, m0, m1); break;
    default: break;
  }
}

inline constexpr int64_t kKc = 384;  // K chunk: a packed B panel (kKc x 16) stays in L1
inline constexpr int64_t kMc = 96;   // rows per A block: kMc x kKc stays in L2 while panels sweep

// One 16-wide (or narrower, masked) column panel for a block of rows and a K chunk.
inline void panel(int64_t mc, int64_t kc, const float* a, int64_t sar, int64_t sac, const float* b, int64_t ldb,
                  float* c, int64_t ldc, int64_t w, bool acc, bool pack, float* buf) {
  if (w == 16) {
    const __m256i ones = _mm256_set1_epi32(-1);
    if (pack) {
      // Rows of B far apart (1 KiB for N = 256) would map the panel onto a few L1
      // sets; a dense copy is cheap next to the mc x kc x 16 multiply-adds.
      for (int64_t k = 0; k < kc; ++k) {
        _mm256_store_ps(buf + k * 16, _mm256_loadu_ps(b + k * ldb));
        _mm256_store_ps(buf + k * 16 + 8, _mm256_loadu_ps(b + k * ldb + 8));
      }
      b = buf;
      ldb = 16;
    }
    if (acc) rows<true, true>(mc, kc, a, sar, sac, b, ldb, c, ldc, ones, ones);
    else rows<true, false>(mc, kc, a, sar, sac, b, ldb, c, ldc, ones, ones);
  } else {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w)), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w) - 8), lane);
    if (acc) rows<false, true>(mc, kc, a, sar, sac, b, ldb, c, ldc, m0, m1);
    else rows<false, false>(mc, kc, a, sar, sac, b, ldb, c, ldc, m0, m1);
  }
}

/// C[M, N] (rows ldc apart, dense) = A[M, K] (strides sar, sac) @ B[K, N] (rows
/// ldb apart, dense). Column panels are split over threads when the work is
/// large enough; K > 0.
inline void gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t sar, int64_t sac, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  const int64_t npanels = (N + 15) / 16;
  const bool pack = M > 16 && ldb >= 128;
  constexpr int64_t kWorkPerThread = int64_t{1} << 18;  // multiply-adds worth a thread (OpenBLAS: 64^3)
  const int64_t grain = std::max<int64_t>(1, kWorkPerThread / std::max<int64_t>(1, M * K * 16));
  parallel_for(npanels, grain, [&](int64_t p0, int64_t p1) {
    alignas(64) float buf[kKc * 16];
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t kc = std::min(kKc, K - k0);
      for (int64_t i0 = 0; i0 < M; i0 += kMc) {
        const int64_t mc = std::min(kMc, M - i0);
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t j = p * 16;
          panel(mc, kc, a + i0 * sar + k0 * sac, sar, sac, b + k0 * ldb + j, ldb, c + i0 * ldc + j, ldc,
                std::min<int64_t>(16, N - j), k0 > 0, pack, buf);
        }
      }
    }
  });
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::small_sgemm

#else

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace small_sgemm {
inline constexpr bool kAvailable = false;
inline void gemm(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t) {}
}}}  // namespace tessera::cpu::TSR_CPU_ISA::small_sgemm

#endif
