// Element conversions shared by copy_, fill_, sum and arange. The rules
// (the copy_ kernel contract, docs/ops/shape.md), made precise here:
//  - to bool: x != 0 (NaN -> true);
//  - integer -> integer: modulo 2^bits (two's complement wrap);
//  - floating -> integer: truncate toward zero. Values outside the target's
//    range are defined, never UB: NaN -> 0, otherwise saturate to int32 (for
//    targets of <= 32 bits) or int64, then wrap to the target width (so -1.0
//    -> uint8 gives 255, as on NumPy and PyTorch for x86);
//  - to float16/bfloat16: one correctly rounded step (nearest even), also from
//    float64 and wide integers, which go through float with round-to-odd so
//    the second rounding cannot go wrong (double rounding);
//  - to float32/float64: the usual IEEE conversions (nearest even).
#pragma once

#include "isa.hpp"
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

/// double -> float rounded to odd: truncate, and set the last bit if inexact.
/// Rounding that to a type with <= 22 significant bits gives the correctly
/// rounded result of the original double.
inline float to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  const double back = static_cast<double>(f);
  if (back == d || d != d) return f;  // exact, or NaN
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::fabs(back) > std::fabs(d)) bits -= 1;  // rounded away from zero: step back (inf -> FLT_MAX)
  bits |= 1u;                                      // sticky: "more bits followed"
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

/// int64 -> float rounded to odd (see above); exact below 2^24.
inline float to_float_round_odd(int64_t v) {
  const uint64_t mag = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (mag < (uint64_t{1} << 24)) return static_cast<float>(v);
  const int shift = 64 - __builtin_clzll(mag) - 24;  // keep the top 24 bits
  uint64_t kept = mag >> shift;
  if ((mag & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1u;
  const float f = std::ldexp(static_cast<float>(kept), shift);  // both steps exact
  return v < 0 ? -f : f;
}

/// Truncation toward zero with saturation; NaN -> 0. I is int32_t or int64_t.
template <typename I, typename F>
inline I float_to_int_saturate(F x) {
  static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>);
  // -2^(bits-1) and 2^(bits-1) are exact in float and double.
  constexpr F kLow = -static_cast<F>(uint64_t{1} << (sizeof(I) * 8 - 1));
  constexpr F kHigh = static_cast<F>(uint64_t{1} << (sizeof(I) * 8 - 1));
  if (!(x == x)) return 0;
  if (x >= kHigh) return std::numeric_limits<I>::max();
  if (x < kLow) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

/// The float that float16/bfloat16 are rounded from (once) when converting x
/// to them: exact, or rounded to odd (From: any value type but the half ones).
template <typename From>
inline float half_staging(From x) {
  if constexpr (std::is_same_v<From, bool>) {
    return x ? 1.0f : 0.0f;
  } else if constexpr (std::is_same_v<From, float>) {
    return x;
  } else if constexpr (std::is_same_v<From, double>) {
    return to_float_round_odd(x);
  } else if constexpr (sizeof(From) <= 2) {
    return static_cast<float>(x);  // exact in float
  } else {
    return to_float_round_odd(static_cast<int64_t>(x));
  }
}

/// Converts a value of type From to type To (value types: bool, the integer
/// types, sdk::Half, sdk::BFloat16, float, double).
template <typename To, typename From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsHalfLike<From>) {
      return (x.bits & 0x7fffu) != 0;  // anything but +-0 (NaN included)
    } else {
      return x != 0;
    }
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (kIsHalfLike<To>) {
      return To(half_staging(x));
    } else {
      return static_cast<To>(x ? 1 : 0);
    }
  } else if constexpr (kIsInteger<To>) {
    if constexpr (kIsInteger<From>) {
      return static_cast<To>(x);  // modular
    } else {
      using Wide = std::conditional_t<(sizeof(To) <= 4), int32_t, int64_t>;
      return static_cast<To>(float_to_int_saturate<Wide>(static_cast<compute_t<From>>(x)));
    }
  } else if constexpr (kIsHalfLike<To>) {
    if constexpr (kIsHalfLike<From>) {
      return To(static_cast<float>(x));  // float -> half: the only rounding
    } else {
      return To(half_staging(x));
    }
  } else {  // To is float or double
    if constexpr (kIsHalfLike<From>) {
      return static_cast<To>(static_cast<float>(x));
    } else {
      return static_cast<To>(x);
    }
  }
}

/// Storage-level conversion for loops over storage_t<> elements (bool as byte).
template <typename To, typename From>
inline storage_t<To> convert_storage(storage_t<From> x) {
  if constexpr (std::is_same_v<From, bool>) {
    return static_cast<storage_t<To>>(convert<To>(x != 0));
  } else {
    return static_cast<storage_t<To>>(convert<To>(x));
  }
}

/// A scalar argument (INT, FLOAT or BOOL) converted to T as copy_ would.
template <typename T>
inline T scalar_to(const TsrValue& v, const char* name) {
  switch (v.tag) {
    case TSR_VALUE_INT: return convert<T>(v.as.i);
    case TSR_VALUE_FLOAT: return convert<T>(v.as.f);
    case TSR_VALUE_BOOL: return convert<T>(v.as.b != 0);
    default:
      invalid(std::string("argument '") + name + "' must be a scalar (int, float or bool), got " + tag_text(v.tag));
  }
}

// ---------------------------------------------------------------------------
// Block conversions between float16/bfloat16 arrays and float32, the hot part
// of every half-precision elementwise op. Bit for bit what sdk::Half and
// sdk::BFloat16 convert one element to (nearest even; inf, NaN and subnormals
// kept; a NaN rounds to the quiet NaN of its sign for float16 and keeps its top
// payload bits, quieted, for bfloat16). F16C / AVX-512 where compiled for,
// else branch-free integer code that GCC vectorizes.
// ---------------------------------------------------------------------------

#define TSR_CONVERT_INLINE inline __attribute__((always_inline))

namespace half_block {

inline uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
inline float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// float -> bfloat16 bits: sdk::BFloat16::from_float without branches.
inline uint16_t float_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

inline void widen_portable_half(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = sdk::Half::to_float(src[i]);  // branch-free: vectorizes
}
inline void narrow_portable_half(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = sdk::Half::from_float(src[i]);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// GCC 12 warns inside its own AVX-512 intrinsics (their _mm512_undefined_*
// operands) once inlined: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The hardware quiets a signaling NaN (sets float bit 22); the scalar
// conversion keeps the half's bit 9 there. Rare: fixed up behind a branch.
inline __m512 widen16(__m256i h) {
  __m512 f = _mm512_cvtph_ps(h);
  const __mmask16 nan =
      _mm256_cmpgt_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)), _mm256_set1_epi16(0x7c00));
  if (nan != 0) [[unlikely]] {
    const __m512i q = _mm512_andnot_si512(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 13),
                                          _mm512_set1_epi32(0x00400000));
    const __m512i fi = _mm512_castps_si512(f);
    f = _mm512_castsi512_ps(_mm512_mask_xor_epi32(fi, nan, fi, q));
  }
  return f;
}
// The hardware keeps a NaN's top payload bits; the scalar conversion gives the
// plain quiet NaN of its sign (h & 0xfe00).
inline __m256i narrow16(__m512 f) {
  __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  if (nan != 0) [[unlikely]]
    h = _mm256_mask_blend_epi16(nan, h, _mm256_and_si256(h, _mm256_set1_epi16(static_cast<short>(0xfe00))));
  return h;
}
inline void widen_half(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, widen16(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}
inline void narrow_half(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), narrow16(_mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(dst + i, m, narrow16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}
#pragma GCC diagnostic pop
#elif defined(__F16C__) && defined(__AVX2__)
inline __m256 widen8(__m128i h) {  // see widen16
  __m256 f = _mm256_cvtph_ps(h);
  const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
  if (!_mm_testz_si128(nan, nan)) [[unlikely]] {
    const __m256i q = _mm256_and_si256(
        _mm256_andnot_si256(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 13), _mm256_set1_epi32(0x00400000)),
        _mm256_cvtepi16_epi32(nan));
    f = _mm256_xor_ps(f, _mm256_castsi256_ps(q));
  }
  return f;
}
inline __m128i narrow8(__m256 f) {  // see narrow16
  __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
  const __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
  if (!_mm256_testz_ps(nan, nan)) [[unlikely]] {
    const __m256i n32 = _mm256_castps_si256(nan);
    const __m128i n16 = _mm_packs_epi32(_mm256_castsi256_si128(n32), _mm256_extracti128_si256(n32, 1));
    h = _mm_andnot_si128(_mm_and_si128(n16, _mm_set1_epi16(0x01ff)), h);
  }
  return h;
}
inline void widen_half(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i < n) {  // the tail through a padded copy: same vector code, same results
    alignas(16) uint16_t h[8] = {};
    alignas(32) float f[8];
    std::memcpy(h, src + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    _mm256_store_ps(f, widen8(_mm_load_si128(reinterpret_cast<const __m128i*>(h))));
    std::memcpy(dst + i, f, static_cast<size_t>(n - i) * sizeof(float));
  }
}
inline void narrow_half(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), narrow8(_mm256_loadu_ps(src + i)));
  if (i < n) {
    alignas(32) float f[8] = {};
    alignas(16) uint16_t h[8];
    std::memcpy(f, src + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_store_si128(reinterpret_cast<__m128i*>(h), narrow8(_mm256_load_ps(f)));
    std::memcpy(dst + i, h, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}
#else
inline void widen_half(const uint16_t* src, float* dst, int64_t n) { widen_portable_half(src, dst, n); }
inline void narrow_half(const float* src, uint16_t* dst, int64_t n) { narrow_portable_half(src, dst, n); }
#endif

inline void widen_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_of(uint32_t{src[i]} << 16);
}
// Integer code on every level: AVX512_BF16's conversion flushes subnormals.
inline void narrow_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

template <typename T>
inline const uint16_t* raw(const T* p) {
  static_assert(kIsHalfLike<T> && sizeof(T) == sizeof(uint16_t));
  return reinterpret_cast<const uint16_t*>(p);
}
template <typename T>
inline uint16_t* raw(T* p) {
  static_assert(kIsHalfLike<T> && sizeof(T) == sizeof(uint16_t));
  return reinterpret_cast<uint16_t*>(p);
}

}  // namespace half_block

/// dst[i] = float(src[i]) for n dense float16/bfloat16 elements.
template <typename T>
inline void widen_block(const T* src, float* dst, int64_t n) {
  if constexpr (std::is_same_v<T, sdk::Half>) {
    half_block::widen_half(half_block::raw(src), dst, n);
  } else {
    half_block::widen_bf16(half_block::raw(src), dst, n);
  }
}

/// dst[i] = T(src[i]) for n dense elements (T float16 or bfloat16).
template <typename T>
inline void narrow_block(const float* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<T, sdk::Half>) {
    half_block::narrow_half(src, half_block::raw(dst), n);
  } else {
    half_block::narrow_bf16(src, half_block::raw(dst), n);
  }
}

/// Elements per block of a half-precision loop. Small, so that the
/// out-of-order core overlaps one block's arithmetic (a division, say) with the
/// next block's loads: 128 ran float16 div ~25% faster than 512, add the same.
inline constexpr int64_t kHalfBlock = 128;

namespace half_block {

// One operand's block, in the type arithmetic sees: float for float16/bfloat16
// (converted by the block functions), the storage type otherwise (copied).
template <typename T>
struct Block {
  using S = storage_t<T>;
  using V = compute_t<S>;
  alignas(64) V v[kHalfBlock];

  void load(const char* p, int64_t stride, int64_t m) {
    if (stride == static_cast<int64_t>(sizeof(S))) {
      if constexpr (kIsHalfLike<S>) {
        widen_block(reinterpret_cast<const S*>(p), v, m);
      } else {
        std::memcpy(v, p, static_cast<size_t>(m) * sizeof(S));
      }
    } else if (stride == 0) {
      std::fill(v, v + m, static_cast<V>(*reinterpret_cast<const S*>(p)));
    } else {
      for (int64_t i = 0; i < m; ++i) v[i] = static_cast<V>(*reinterpret_cast<const S*>(p + i * stride));
    }
  }
  void store(char* p, int64_t stride, int64_t m) const {
    if (stride == static_cast<int64_t>(sizeof(S))) {
      if constexpr (kIsHalfLike<S>) {
        narrow_block(v, reinterpret_cast<S*>(p), m);
      } else {
        std::memcpy(p, v, static_cast<size_t>(m) * sizeof(S));
      }
    } else {
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<S*>(p + i * stride) = static_cast<S>(v[i]);
    }
  }
};

// 16 dense float16/bfloat16 elements to float / back, in registers where the
// level converts in vectors (widen_block and narrow_block over 16 elements
// were not inlined into the fused loop below and ran it 2x slower).
inline constexpr int64_t kFusedLanes = 16;
template <typename S>
TSR_CONVERT_INLINE void widen16_to(const S* src, float* dst) {
  const uint16_t* h = raw(src);
  if constexpr (std::is_same_v<S, sdk::Half>) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    _mm512_storeu_ps(dst, widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h))));
#elif defined(__F16C__) && defined(__AVX2__)
    _mm256_storeu_ps(dst, widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
    _mm256_storeu_ps(dst + 8, widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 8))));
#else
    widen_portable_half(h, dst, kFusedLanes);
#endif
  } else {
    widen_bf16(h, dst, kFusedLanes);
  }
}
template <typename S>
TSR_CONVERT_INLINE void narrow16_from(const float* src, S* dst) {
  uint16_t* h = raw(dst);
  if constexpr (std::is_same_v<S, sdk::Half>) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h), narrow16(_mm512_loadu_ps(src)));
#elif defined(__F16C__) && defined(__AVX2__)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), narrow8(_mm256_loadu_ps(src)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 8), narrow8(_mm256_loadu_ps(src + 8)));
#else
    narrow_portable_half(src, h, kFusedLanes);
#endif
  } else {
    narrow_bf16(src, h, kFusedLanes);
  }
}
struct FusedLanes {
  float v[kFusedLanes];
};

// float16 through run_fused without a NaN fix-up per vector: once f has run,
// an input NaN's quiet bit can no longer matter (float arithmetic maps any NaN
// to a NaN of the same sign, and the scalar conversion stores every NaN as
// sign|0x7e00), so the plain hardware conversions serve and the loop only
// tracks the largest magnitude it stored; canonicalize_half_nans fixes the
// rare NaN outputs afterwards. Conversions with no f between (casts) keep
// widen16/narrow16's bit-exact fix-ups.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#pragma GCC diagnostic push  // as for widen16 / narrow16 above
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline constexpr bool kHalfWatchedFusion = true;
struct HalfNanWatch {
  __m256i largest = _mm256_setzero_si256();
  bool any() const { return _mm256_cmpgt_epu16_mask(largest, _mm256_set1_epi16(0x7c00)) != 0; }
};
TSR_CONVERT_INLINE void widen16_plain(const sdk::Half* src, float* dst) {
  _mm512_storeu_ps(dst, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(raw(src)))));
}
TSR_CONVERT_INLINE void narrow16_watched(const float* src, sdk::Half* dst, HalfNanWatch& watch) {
  const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT);
  watch.largest = _mm256_max_epu16(watch.largest, _mm256_and_si256(h, _mm256_set1_epi16(0x7fff)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(raw(dst)), h);
}
#pragma GCC diagnostic pop
#elif defined(__F16C__) && defined(__AVX2__)
inline constexpr bool kHalfWatchedFusion = true;
struct HalfNanWatch {
  __m128i largest = _mm_setzero_si128();
  bool any() const {  // magnitudes are at most 0x7fff: a signed compare serves
    return _mm_movemask_epi8(_mm_cmpgt_epi16(largest, _mm_set1_epi16(0x7c00))) != 0;
  }
};
TSR_CONVERT_INLINE void widen16_plain(const sdk::Half* src, float* dst) {
  const uint16_t* h = raw(src);
  _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
  _mm256_storeu_ps(dst + 8, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 8))));
}
TSR_CONVERT_INLINE void narrow16_watched(const float* src, sdk::Half* dst, HalfNanWatch& watch) {
  uint16_t* h = raw(dst);
  const __m128i lo = _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT);
  const __m128i hi = _mm256_cvtps_ph(_mm256_loadu_ps(src + 8), _MM_FROUND_TO_NEAREST_INT);
  const __m128i abs = _mm_set1_epi16(0x7fff);
  watch.largest = _mm_max_epu16(watch.largest, _mm_max_epu16(_mm_and_si128(lo, abs), _mm_and_si128(hi, abs)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), lo);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 8), hi);
}
#else  // unused (kHalfWatchedFusion is false): declared for run_fused's discarded branch
inline constexpr bool kHalfWatchedFusion = false;
struct HalfNanWatch {
  bool any() const { return false; }
};
TSR_CONVERT_INLINE void widen16_plain(const sdk::Half* src, float* dst) { widen16_to(src, dst); }
TSR_CONVERT_INLINE void narrow16_watched(const float* src, sdk::Half* dst, HalfNanWatch&) { narrow16_from(src, dst); }
#endif
/// float(src[i]) for N (a multiple of 16) dense float16 elements, for
/// reductions' loads (element by element, a float16 sum ran at 3.9x
/// PyTorch's time): the plain hardware conversion, which quiets a signaling
/// NaN that widen16_to keeps signaling; the arithmetic that follows would
/// quiet it anyway.
template <int N>
TSR_CONVERT_INLINE void widen_half_n(const sdk::Half* src, float* dst) {
  static_assert(N % kFusedLanes == 0);
  for (int k = 0; k < N; k += static_cast<int>(kFusedLanes)) widen16_plain(src + k, dst + k);
}
// The hardware keeps a NaN's top payload bits and quiets it; the scalar
// conversion stores sign|0x7e00.
inline void canonicalize_half_nans(sdk::Half* dst, int64_t n) {
  uint16_t* h = raw(dst);
  for (int64_t i = 0; i < n; ++i)
    if ((h[i] & 0x7fffu) > 0x7c00u) h[i] = static_cast<uint16_t>(h[i] & 0xfe00u);
}

// Every operand dense and of one float16/bfloat16 type: 16 elements at a time
// converted, computed and converted back without the blocks' round trip
// through memory (1M float16 add, AVX-512: 168 us instead of 225 us; with the
// watched float16 conversions, 99 us instead of 141 us on a Zen 4).
// Returns how many leading elements it did (a multiple of 16).
template <typename Out, typename... In, typename F, size_t... K>
inline int64_t run_fused(const F& f, char** ptrs, const int64_t* strides, int64_t n, std::index_sequence<K...>) {
  using S = storage_t<Out>;
  if constexpr (kIsHalfLike<S> && (std::is_same_v<storage_t<In>, S> && ...)) {
    constexpr auto kSize = static_cast<int64_t>(sizeof(S));
    if (strides[0] != kSize || ((strides[K + 1] != kSize) || ...)) return 0;
    int64_t i = 0;
    if constexpr (std::is_same_v<S, sdk::Half> && kHalfWatchedFusion) {
      HalfNanWatch watch;
      S* out = reinterpret_cast<S*>(ptrs[0]);
      for (; i + kFusedLanes <= n; i += kFusedLanes) {
        std::tuple<decltype((void)K, FusedLanes{})...> in;
        (widen16_plain(reinterpret_cast<const S*>(ptrs[K + 1]) + i, std::get<K>(in).v), ...);
        float r[kFusedLanes];
        for (int64_t j = 0; j < kFusedLanes; ++j) r[j] = f(std::get<K>(in).v[j]...);
        narrow16_watched(r, out + i, watch);
      }
      if (watch.any()) [[unlikely]]
        canonicalize_half_nans(out, i);
      return i;
    }
    for (; i + kFusedLanes <= n; i += kFusedLanes) {
      std::tuple<decltype((void)K, FusedLanes{})...> in;
      (widen16_to(reinterpret_cast<const S*>(ptrs[K + 1]) + i, std::get<K>(in).v), ...);
      float r[kFusedLanes];
      for (int64_t j = 0; j < kFusedLanes; ++j) r[j] = f(std::get<K>(in).v[j]...);
      narrow16_from(r, reinterpret_cast<S*>(ptrs[0]) + i);
    }
    return i;
  } else {
    (void)f, (void)ptrs, (void)strides, (void)n;
    return 0;
  }
}

template <typename Out, typename... In, typename F, size_t... K>
inline void run_blocks(const F& f, char** ptrs, const int64_t* strides, int64_t n, std::index_sequence<K...>) {
  std::tuple<Block<In>...> in;
  Block<Out> out;
  const int64_t done = run_fused<Out, In...>(f, ptrs, strides, n, std::index_sequence<K...>{});
  if (done == n) return;
  char* rest[sizeof...(In) + 1];
  for (size_t k = 0; k <= sizeof...(In); ++k) rest[k] = ptrs[k] + done * strides[k];
  ptrs = rest;
  n -= done;
  for (int64_t base = 0; base < n; base += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - base);
    (std::get<K>(in).load(ptrs[K + 1] + base * strides[K + 1], strides[K + 1], m), ...);
    for (int64_t i = 0; i < m; ++i) out.v[i] = f(std::get<K>(in).v[i]...);
    out.store(ptrs[0] + base * strides[0], strides[0], m);
  }
}

}  // namespace half_block

/// A basic_loop-style functor (sdk/iterate.hpp) for ops with float16/bfloat16
/// operands: blocks of each input are converted to float32 (other types are
/// copied as stored), f runs on the blocks, where it vectorizes, and its
/// results are rounded to Out once. f maps compute_t<storage_t<In>>... to
/// compute_t<storage_t<Out>>; the results equal an element-by-element
/// Out(f(float(x), ...)). Out may be an input (in place): each block is read
/// before it is written.
template <typename Out, typename... In, typename F>
auto half_block_loop(F f) {
  return [f](char** ptrs, const int64_t* strides, int64_t n) {
    half_block::run_blocks<Out, In...>(f, ptrs, strides, n, std::index_sequence_for<In...>{});
  };
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
