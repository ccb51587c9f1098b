// SLEEF (libsleef, the vectorized math library PyTorch uses) for the
// transcendental functions of the elementwise kernels: one call per vector
// instead of a libm call per element.
//
// Each ISA level's compilation (isa.hpp) calls SLEEF's functions for its own
// vector width, chosen from the compiler's predefined macros: AVX-512F ->
// 16 floats / 8 doubles, AVX2 (with FMA) -> 8 / 4, SSE2 -> 4 / 2; elsewhere
// SLEEF's scalar functions. Accuracy: the u10 variants (at most 1.0 ulp; erfc
// only comes as u15), no worse than glibc's libm on these functions.
// Without FMA (the SSE2 baseline), SLEEF's double-double arithmetic makes a few
// functions slower than glibc's (measured, 1M elements): those lanes call libm
// there (TSR_LIBM_* below).
//
// vector_map / vector_map2 run such a function over a kernel's operands: a
// contiguous float32/float64 run goes straight through SLEEF (the tail through
// a zero-padded vector); anything else (strides, broadcasts, float16/bfloat16)
// is gathered into a small float/double buffer, computed, and scattered back,
// so every layout and dtype gets the same results.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "elementwise.hpp"
#include "convert.hpp"

#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace sleef {

#if defined(__AVX512F__)
using VecF = __m512;
using VecD = __m512d;
#define TSR_SLEEF_F(fn, acc) Sleef_##fn##f16_##acc##avx512f
#define TSR_SLEEF_D(fn, acc) Sleef_##fn##d8_##acc##avx512f
#elif defined(__AVX2__) && defined(__FMA__)
using VecF = __m256;
using VecD = __m256d;
#define TSR_SLEEF_F(fn, acc) Sleef_##fn##f8_##acc##avx2
#define TSR_SLEEF_D(fn, acc) Sleef_##fn##d4_##acc##avx2
#elif defined(__SSE2__)
using VecF = __m128;
using VecD = __m128d;
#define TSR_SLEEF_F(fn, acc) Sleef_##fn##f4_##acc##sse2
#define TSR_SLEEF_D(fn, acc) Sleef_##fn##d2_##acc##sse2
#else
using VecF = float;
using VecD = double;
#define TSR_SLEEF_F(fn, acc) Sleef_##fn##f_##acc
#define TSR_SLEEF_D(fn, acc) Sleef_##fn##_##acc
#endif

// (A traits struct, not std::conditional_t: the vector types' attributes would
// be dropped as template arguments.)
template <typename C>
struct VecOf;
template <>
struct VecOf<float> {
  using type = VecF;
};
template <>
struct VecOf<double> {
  using type = VecD;
};
template <typename C>
using Vec = typename VecOf<C>::type;
template <typename C>
inline constexpr int64_t kLanes = static_cast<int64_t>(sizeof(Vec<C>) / sizeof(C));

// vec_math.hpp's functions (exp, expm1, log, tanh, sigmoid, rounding) are
// straight-line code that GCC vectorizes, fast where std::fma is an instruction;
// without it (x86-64 below AVX2) std::fma is a libm call, 10x slower than SLEEF.
#if defined(__FMA__) || defined(__aarch64__)
#define TSR_VM_FAST 1
#else
#define TSR_VM_FAST 0
#endif

#define TSR_SLEEF_INLINE inline __attribute__((always_inline))

template <typename C>
TSR_SLEEF_INLINE Vec<C> load(const C* p) {
  Vec<C> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename C>
TSR_SLEEF_INLINE void store(C* p, Vec<C> v) {
  std::memcpy(p, &v, sizeof v);
}

// libm on each lane, where it beats SLEEF (see above).
#define TSR_SLEEF_LANEWISE(V, C)                                   \
  template <typename F>                                           \
  TSR_SLEEF_INLINE V lanewise(V x, F f) {                         \
    C a[kLanes<C>];                                               \
    std::memcpy(a, &x, sizeof x);                                 \
    for (C& v : a) v = f(v);                                      \
    std::memcpy(&x, a, sizeof x);                                 \
    return x;                                                     \
  }                                                               \
  template <typename F>                                           \
  TSR_SLEEF_INLINE V lanewise(V x, V y, F f) {                    \
    C a[kLanes<C>], b[kLanes<C>];                                 \
    std::memcpy(a, &x, sizeof x);                                 \
    std::memcpy(b, &y, sizeof y);                                 \
    for (int64_t i = 0; i < kLanes<C>; ++i) a[i] = f(a[i], b[i]); \
    std::memcpy(&x, a, sizeof x);                                 \
    return x;                                                     \
  }
TSR_SLEEF_LANEWISE(VecF, float)
TSR_SLEEF_LANEWISE(VecD, double)
#undef TSR_SLEEF_LANEWISE

// fn(VecF), fn(VecD): the SLEEF function at this level's width. With GCC's
// vector extensions the results combine with +, *, scalars and ?: like floats.
#define TSR_SLEEF_UNARY_F(fn, acc) \
  TSR_SLEEF_INLINE VecF fn(VecF x) { return TSR_SLEEF_F(fn, acc)(x); }
#define TSR_SLEEF_UNARY_D(fn, acc) \
  TSR_SLEEF_INLINE VecD fn(VecD x) { return TSR_SLEEF_D(fn, acc)(x); }
#define TSR_SLEEF_RAW(fn, acc)                                                  \
  TSR_SLEEF_INLINE VecF fn##_raw(VecF x) { return TSR_SLEEF_F(fn, acc)(x); }     \
  TSR_SLEEF_INLINE VecD fn##_raw(VecD x) { return TSR_SLEEF_D(fn, acc)(x); }
#define TSR_LIBM_UNARY_F(fn) \
  TSR_SLEEF_INLINE VecF fn(VecF x) { return lanewise(x, [](float v) { return std::fn(v); }); }
#define TSR_LIBM_UNARY_D(fn) \
  TSR_SLEEF_INLINE VecD fn(VecD x) { return lanewise(x, [](double v) { return std::fn(v); }); }
#define TSR_SLEEF_UNARY(fn, acc) TSR_SLEEF_UNARY_F(fn, acc) TSR_SLEEF_UNARY_D(fn, acc)

TSR_SLEEF_UNARY(exp, u10)
TSR_SLEEF_UNARY(expm1, u10)
TSR_SLEEF_UNARY_F(exp2, u10)
TSR_SLEEF_RAW(log1p, u10)
TSR_SLEEF_UNARY(sin, u10)
TSR_SLEEF_UNARY(cos, u10)
TSR_SLEEF_UNARY(tan, u10)
TSR_SLEEF_UNARY(asin, u10)
TSR_SLEEF_UNARY(acos, u10)
TSR_SLEEF_UNARY_F(atan, u10)
TSR_SLEEF_RAW(sinh, u10)
TSR_SLEEF_INLINE VecF cosh_raw(VecF x) { return TSR_SLEEF_F(cosh, u10)(x); }
TSR_SLEEF_UNARY(tanh, u10)
TSR_SLEEF_UNARY_F(log2, u10)
TSR_SLEEF_UNARY_F(log10, u10)
TSR_SLEEF_UNARY_F(erf, u10)
#if defined(__x86_64__) && !defined(__FMA__)
TSR_LIBM_UNARY_F(log)
TSR_LIBM_UNARY_F(erfc)
TSR_LIBM_UNARY_D(log)
TSR_LIBM_UNARY_D(exp2)
TSR_LIBM_UNARY_D(log2)
TSR_LIBM_UNARY_D(log10)
TSR_LIBM_UNARY_D(atan)
TSR_SLEEF_INLINE VecD cosh_raw(VecD x) { return lanewise(x, [](double v) { return std::cosh(v); }); }
TSR_LIBM_UNARY_D(erf)
TSR_LIBM_UNARY_D(erfc)
#else
TSR_SLEEF_UNARY(log, u10)
TSR_SLEEF_UNARY(erfc, u15)
TSR_SLEEF_UNARY_D(exp2, u10)
TSR_SLEEF_UNARY_D(log2, u10)
TSR_SLEEF_UNARY_D(log10, u10)
TSR_SLEEF_UNARY_D(atan, u10)
TSR_SLEEF_INLINE VecD cosh_raw(VecD x) { return TSR_SLEEF_D(cosh, u10)(x); }
TSR_SLEEF_UNARY_D(erf, u10)
#endif
#undef TSR_SLEEF_UNARY
#undef TSR_SLEEF_RAW
#undef TSR_SLEEF_UNARY_F
#undef TSR_SLEEF_UNARY_D
#undef TSR_LIBM_UNARY_F
#undef TSR_LIBM_UNARY_D

// C's fmod (exact) on whole vectors: libm's fmodf took 17 ns per element.
// SLEEF's fmod is exact too while x / y stays far inside the type's range and
// y is normal; past that it gives NaN (x = 1e20, y = 1e-30 in float; a
// subnormal y), so vectors with such a lane (or a NaN or infinity) take libm's
// in those lanes.
#if defined(__SSE2__)
// Whether every lane of a comparison's result (all ones or zero) is set.
template <typename M>
TSR_SLEEF_INLINE bool all_set(M m) {
#if defined(__AVX512F__)
  const __m512i v = ~reinterpret_cast<__m512i>(m);
  return _mm512_test_epi32_mask(v, v) == 0;
#elif defined(__AVX2__)
  const __m256i v = reinterpret_cast<__m256i>(m);
  return _mm256_testc_si256(v, _mm256_set1_epi32(-1)) != 0;
#else
  return _mm_movemask_epi8(reinterpret_cast<__m128i>(m)) == 0xffff;
#endif
}
template <typename V, typename C>
TSR_SLEEF_INLINE V exact_fmod(V x, V y, V r, C min_normal, C max_ratio) {
  const V ax = x < V{} ? -x : x, ay = y < V{} ? -y : y;
  const auto sleef_ok = (ay >= min_normal) & (ax < ay * max_ratio);
  if (__builtin_expect(!all_set(sleef_ok), 0)) {
    for (int64_t i = 0; i < kLanes<C>; ++i)
      if (!sleef_ok[i]) r[i] = std::fmod(x[i], y[i]);
  }
  return r;
}
TSR_SLEEF_INLINE VecF fmod(VecF x, VecF y) {
  return exact_fmod(x, y, TSR_SLEEF_F(fmod, )(x, y), std::numeric_limits<float>::min(), 0x1p100f);
}
TSR_SLEEF_INLINE VecD fmod(VecD x, VecD y) {
  return exact_fmod(x, y, TSR_SLEEF_D(fmod, )(x, y), std::numeric_limits<double>::min(), 0x1p900);
}
#else
TSR_SLEEF_INLINE VecF fmod(VecF x, VecF y) { return lanewise(x, y, [](float a, float b) { return std::fmod(a, b); }); }
TSR_SLEEF_INLINE VecD fmod(VecD x, VecD y) { return lanewise(x, y, [](double a, double b) { return std::fmod(a, b); }); }
#endif
TSR_SLEEF_INLINE VecF atan2(VecF y, VecF x) { return TSR_SLEEF_F(atan2, u10)(y, x); }
TSR_SLEEF_INLINE VecD atan2(VecD y, VecD x) { return TSR_SLEEF_D(atan2, u10)(y, x); }
#if defined(__x86_64__) && !defined(__FMA__)
TSR_SLEEF_INLINE VecF pow(VecF x, VecF y) { return lanewise(x, y, [](float a, float b) { return std::pow(a, b); }); }
TSR_SLEEF_INLINE VecD pow(VecD x, VecD y) { return lanewise(x, y, [](double a, double b) { return std::pow(a, b); }); }
#else
TSR_SLEEF_INLINE VecF pow(VecF x, VecF y) { return TSR_SLEEF_F(pow, u10)(x, y); }
TSR_SLEEF_INLINE VecD pow(VecD x, VecD y) { return TSR_SLEEF_D(pow, u10)(x, y); }
#endif

// SLEEF's sinh and cosh overflow early (float past |x| = 88.72, where the
// result overflows at 89.42; double past 709.78, not 710.48), and log1p
// gives inf for float x > ~1e38, double x > ~1e307. Fixed with cheap selects:
// - for |x| > kBig, sinh|x| = cosh|x| = e^|x| / 2 = exp(|x| - kLn2Hi) * kExpLn2Lo,
//   with |x| - kLn2Hi exact (kLn2Hi has few significant bits) and kExpLn2Lo =
//   e^(kLn2Hi - ln2); SLEEF's exp is cheap next to its sinh (< 1/3 the time);
// - for x > kHuge, log1p(x) = log1p(x 2^-k) + k ln2 (1 + x rounds to x there).
template <typename C>
struct Fix;
template <>
struct Fix<float> {
  static constexpr float kBig = 88.0f;
  static constexpr float kLn2Hi = 0.693145751953125f;  // a multiple of 2^-17, ulp of [64, 128)
  static constexpr float kExpLn2Lo = 0.9999985713942001f;
  static constexpr float kHuge = 1e30f;
  static constexpr float kDown = 0x1p-64f;
  static constexpr float kDownLog = 44.3614195558365f;  // 64 ln2
};
template <>
struct Fix<double> {
  static constexpr double kBig = 709.0;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;  // a multiple of 2^-32 (fdlibm's split)
  static constexpr double kExpLn2Lo = 0.9999999998091785;
  static constexpr double kHuge = 1e300;
  static constexpr double kDown = 0x1p-512;
  static constexpr double kDownLog = 354.891356446692;  // 512 ln2
};

template <typename C, typename V>
TSR_SLEEF_INLINE V half_exp_abs(V ax) {
  return exp(ax - Fix<C>::kLn2Hi) * Fix<C>::kExpLn2Lo;
}
template <typename C, typename V>
TSR_SLEEF_INLINE V sinh(V x) {
  const V ax = x < C(0) ? -x : x;
  const V big = half_exp_abs<C>(ax);
  return ax > Fix<C>::kBig ? (x < C(0) ? -big : big) : sinh_raw(x);
}
template <typename C, typename V>
TSR_SLEEF_INLINE V cosh(V x) {
  const V ax = x < C(0) ? -x : x;
  return ax > Fix<C>::kBig ? half_exp_abs<C>(ax) : cosh_raw(x);
}
template <typename C, typename V>
TSR_SLEEF_INLINE V log1p(V x) {
  const auto huge = x > Fix<C>::kHuge;
  const V y = log1p_raw(huge ? x * Fix<C>::kDown : x);
  return huge ? y + Fix<C>::kDownLog : y;
}

/// 1 / (1 + exp(-x)), as vec_math.hpp's: e = exp(-|x|) never overflows, and
/// for x < 0, e / (1 + e) keeps the relative accuracy where 1 / (1 + exp(-x))
/// would round to 0. NaN: e is NaN, so is the result.
template <typename C, typename V>
TSR_SLEEF_INLINE V sigmoid(V x) {
  const V e = exp(x >= C(0) ? -x : x);
  const V r = C(1) / (C(1) + e);
  return x >= C(0) ? r : e * r;
}

/// y[i] = f(x[i]) over n contiguous elements, f mapping Vec<C> to Vec<C>; y
/// may be x (each vector is loaded before its result is stored).
template <typename C, typename F>
TSR_SLEEF_INLINE void apply(const C* x, C* y, int64_t n, const F& f) {
  constexpr int64_t L = kLanes<C>;
  // Reading 1 KiB ahead: on an Intel Xeon (Emerald Rapids) a 1M-element exp loop
  // ran ~10% faster with it (the hardware prefetcher alone left the math waiting);
  // a prefetch past the end is harmless (it never faults; the address is
  // formed as an integer, not as a pointer past the array).
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(x + i) + 1024));
    store(y + i, f(load(x + i)));
  }
  if (i < n) {  // tail: zero padding, whose results are dropped
    C buf[L] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(C));
    store(buf, f(load(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(C));
  }
}

template <typename C, typename F>
TSR_SLEEF_INLINE void apply2(const C* x, const C* w, C* y, int64_t n, const F& f) {
  constexpr int64_t L = kLanes<C>;
  int64_t i = 0;
  for (; i + L <= n; i += L) store(y + i, f(load(x + i), load(w + i)));
  if (i < n) {
    C bx[L] = {}, bw[L] = {};
    std::memcpy(bx, x + i, static_cast<size_t>(n - i) * sizeof(C));
    std::memcpy(bw, w + i, static_cast<size_t>(n - i) * sizeof(C));
    store(bx, f(load(bx), load(bw)));
    std::memcpy(y + i, bx, static_cast<size_t>(n - i) * sizeof(C));
  }
}

// y = f(x, w) with one w for every element (an operand broadcast from a
// number): splat once instead of gathering it per chunk. FirstIsScalar: the
// one value is x's, the run is w.
template <bool FirstIsScalar, typename C, typename F>
TSR_SLEEF_INLINE void apply2_one(C one, const C* run, C* y, int64_t n, const F& f) {
  constexpr int64_t L = kLanes<C>;
  C lanes[L];
  for (int64_t j = 0; j < L; ++j) lanes[j] = one;  // not V{} + one, which turns -0 into +0
  const Vec<C> s = load(lanes);
  const auto call = [&](Vec<C> v) { return FirstIsScalar ? f(s, v) : f(v, s); };
  int64_t i = 0;
  for (; i + L <= n; i += L) store(y + i, call(load(run + i)));
  if (i < n) {
    C b[L] = {};
    std::memcpy(b, run + i, static_cast<size_t>(n - i) * sizeof(C));
    store(b, call(load(b)));
    std::memcpy(y + i, b, static_cast<size_t>(n - i) * sizeof(C));
  }
}

// Elements per gather buffer on the non-contiguous path (a few KiB of stack).
inline constexpr int64_t kChunk = 256;

template <typename T>
TSR_SLEEF_INLINE compute_t<T> read(const char* p) {
  storage_t<T> v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<compute_t<T>>(v);
}
template <typename T>
TSR_SLEEF_INLINE void write(char* p, compute_t<T> c) {
  const storage_t<T> v = static_cast<storage_t<T>>(static_cast<T>(c));
  std::memcpy(p, &v, sizeof v);
}

// buf[0..m) = the m elements at p (byte stride s) in compute_t<T>: dense
// float16/bfloat16 runs through the block conversions (F16C / AVX-512 where
// compiled for; element by element they ran float16 exp at 6.6x PyTorch's time).
template <typename T>
TSR_SLEEF_INLINE void gather(const char* p, int64_t s, compute_t<T>* buf, int64_t m) {
  if constexpr (kIsHalfLike<T>) {
    if (s == static_cast<int64_t>(sizeof(T))) {
      widen_block(reinterpret_cast<const T*>(p), buf, m);
      return;
    }
  }
  for (int64_t j = 0; j < m; ++j) buf[j] = read<T>(p + j * s);
}
// The m values of buf to p (byte stride s), rounded to T once.
template <typename T>
TSR_SLEEF_INLINE void scatter(char* p, int64_t s, const compute_t<T>* buf, int64_t m) {
  if constexpr (kIsHalfLike<T>) {
    if (s == static_cast<int64_t>(sizeof(T))) {
      narrow_block(buf, reinterpret_cast<T*>(p), m);
      return;
    }
  }
  for (int64_t j = 0; j < m; ++j) write<T>(p + j * s, buf[j]);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
inline constexpr bool kHalfInRegisters = true;
#pragma GCC diagnostic push  // as for convert.hpp's widen16 / narrow16
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// y[i] = f(x[i]) over the first n - n % 16 of n dense float16 elements,
/// converted in registers straight into the vector f takes and back (through
/// gather's float buffer, float16 exp of 1M took 387 us against float32 exp's
/// 261 us). NaN outputs then get the scalar conversion's bits
/// (canonicalize_half_nans), as convert.hpp's run_fused does: the results
/// equal the buffered path's. Returns the elements done.
template <typename F>
TSR_SLEEF_INLINE int64_t apply_half(const sdk::Half* x, sdk::Half* y, int64_t n, const F& f) {
  const uint16_t* in = half_block::raw(x);
  uint16_t* out = half_block::raw(y);
  __m256i largest = _mm256_setzero_si256();
  const __m256i abs = _mm256_set1_epi16(0x7fff);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const VecF v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    const __m256i h = _mm512_cvtps_ph(f(v), _MM_FROUND_TO_NEAREST_INT);
    largest = _mm256_max_epu16(largest, _mm256_and_si256(h, abs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  if (_mm256_cmpgt_epu16_mask(largest, _mm256_set1_epi16(0x7c00)) != 0) [[unlikely]]
    half_block::canonicalize_half_nans(y, i);
  return i;
}
#pragma GCC diagnostic pop
#else
inline constexpr bool kHalfInRegisters = false;
template <typename F>
int64_t apply_half(const sdk::Half*, sdk::Half*, int64_t, const F&) {
  return 0;  // converted through gather's buffer at this level
}
#endif

/// out = f(in) elementwise for a floating T (float16/bfloat16 computed in
/// float), f mapping Vec<compute_t<T>> to itself.
template <typename T, typename F>
void vector_map(DLTensor& out, const DLTensor& in, int64_t grain, F f) {
  using C = compute_t<T>;
  run_elementwise<2>(
      out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(in)}, grain,
      [f](char** p, const int64_t* s, int64_t n) {
        if constexpr (std::is_same_v<T, C>) {
          if (s[0] == sizeof(C) && s[1] == sizeof(C)) {
            apply(reinterpret_cast<const C*>(p[1]), reinterpret_cast<C*>(p[0]), n, f);
            return;
          }
        }
        int64_t i = 0;
        if constexpr (std::is_same_v<T, sdk::Half> && kHalfInRegisters) {
          if (s[0] == sizeof(T) && s[1] == sizeof(T))
            i = apply_half(reinterpret_cast<const T*>(p[1]), reinterpret_cast<T*>(p[0]), n, f);  // the tail below
        }
        C buf[kChunk];
        for (; i < n; i += kChunk) {
          const int64_t m = std::min(kChunk, n - i);
          gather<T>(p[1] + i * s[1], s[1], buf, m);
          apply(buf, buf, m, f);
          scatter<T>(p[0] + i * s[0], s[0], buf, m);
        }
      });
}

/// out = f(a, b) elementwise (broadcast inputs carry stride 0), as vector_map.
template <typename T, typename F>
void vector_map2(DLTensor& out, const DLTensor& a, const DLTensor& b, int64_t grain, F f) {
  using C = compute_t<T>;
  run_elementwise<3>(
      out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(a), sdk::IterOperand::of(b)}, grain,
      [f](char** p, const int64_t* s, int64_t n) {
        if constexpr (std::is_same_v<T, C>) {
          if (s[0] == sizeof(C) && s[1] == sizeof(C) && s[2] == sizeof(C)) {
            apply2(reinterpret_cast<const C*>(p[1]), reinterpret_cast<const C*>(p[2]), reinterpret_cast<C*>(p[0]),
                   n, f);
            return;
          }
          if (s[0] == sizeof(C) && s[1] == sizeof(C) && s[2] == 0) {  // x op number
            apply2_one<false>(read<T>(p[2]), reinterpret_cast<const C*>(p[1]), reinterpret_cast<C*>(p[0]), n, f);
            return;
          }
          if (s[0] == sizeof(C) && s[1] == 0 && s[2] == sizeof(C)) {  // number op x
            apply2_one<true>(read<T>(p[1]), reinterpret_cast<const C*>(p[2]), reinterpret_cast<C*>(p[0]), n, f);
            return;
          }
        }
        C ba[kChunk], bb[kChunk];
        for (int64_t i = 0; i < n; i += kChunk) {
          const int64_t m = std::min(kChunk, n - i);
          gather<T>(p[1] + i * s[1], s[1], ba, m);
          gather<T>(p[2] + i * s[2], s[2], bb, m);
          apply2(ba, bb, ba, m, f);
          scatter<T>(p[0] + i * s[0], s[0], ba, m);
        }
      });
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::sleef
