// Square blocks of 4-byte elements transposed in vector registers, for the
// transposing copy (shape_copy.cpp): B rows of src are loaded whole (one
// vector each), shuffled, and stored as B rows of dst. Each cache line is
// touched once. An element-by-element tile instead revisits the same lines
// of B src rows, and when those rows are a power-of-two multiple of 4 KiB apart
// (a 1024-float row) they all fall into one L1 set and evict each other: a
// 1024^2 float32 t().contiguous() took 2.3 ms with 32x32 element tiles and
// 0.4 ms with this 16x16 block (AMD Zen 4, one thread).
//
// B = 16 at AVX-512, 8 at AVX2, 4 with SSE (the x86-64 baseline); elsewhere 0
// (no block: the caller's element loop does all of it).
#pragma once

#include "isa.hpp"

#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

#if defined(__AVX512F__)
inline constexpr int64_t kTransposeBlock = 16;
#elif defined(__AVX2__)
inline constexpr int64_t kTransposeBlock = 8;
#elif defined(__SSE2__)
inline constexpr int64_t kTransposeBlock = 4;
#else
inline constexpr int64_t kTransposeBlock = 0;
#endif

/// dst[i * dst_row + j] = src[j * src_row + i] for 0 <= i, j < kTransposeBlock,
/// on 4-byte elements; strides in bytes. Bit exact (no arithmetic).
inline __attribute__((always_inline)) void transpose_block4(const char* src, int64_t src_row, char* dst,
                                                            int64_t dst_row) {
#if defined(__AVX512F__)
  // The all-ones mask forms: GCC 12's unmasked ones warn about their own undefined operand.
  constexpr __mmask16 kAll = 0xffff;
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_row);
  // 2x2 blocks of single elements, then of pairs (within 128-bit lanes)...
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0xEE);
  }
  // ...then of 128-bit lanes across rows 4 apart, and 8 apart.
  for (int i = 0; i < 8; ++i) {
    const int a = (i / 4) * 8 + i % 4, b = a + 4;
    t[a] = _mm512_maskz_shuffle_f32x4(kAll, r[a], r[b], 0x88);
    t[b] = _mm512_maskz_shuffle_f32x4(kAll, r[a], r[b], 0xDD);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0xDD);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(reinterpret_cast<float*>(dst + i * dst_row), r[i]);
#elif defined(__AVX2__)
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_row));
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_row), t[i]);
#elif defined(__SSE2__)
  __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src));
  __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src + src_row));
  __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 2 * src_row));
  __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 3 * src_row));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(reinterpret_cast<float*>(dst), r0);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + dst_row), r1);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + 2 * dst_row), r2);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + 3 * dst_row), r3);
#else
  (void)src, (void)src_row, (void)dst, (void)dst_row;
#endif
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
