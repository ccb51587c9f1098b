// Philox4x32-10 and the random ops' per-element transforms for a batch of
// consecutive counters at a time, in vector lanes: the SDK's rule
// (tessera/sdk/philox.hpp) computed for many elements at once, bit for bit.
//
// Why the results are identical to the scalar SDK functions: Philox is integer
// arithmetic; the transforms are the same sequence of IEEE double operations
// (+, -, *, / and sqrt, each correctly rounded per lane, as in the scalar
// code), and the kernel files are compiled with -ffp-contract=off, so no
// multiply and add below is ever fused into an FMA (the scalar SDK blocks that
// with mul_rn's empty asm instead). The scalar code's branches (log's mantissa
// reduction, cos_2pi's and sin_2pi's quadrant) become selects of the value the
// taken branch computes; the special cases log, cos_2pi and sin_2pi check for (NaN, 0, negative,
// subnormal, infinite) cannot occur for the arguments Box-Muller gives them.
// Used by random.cpp only; tests/python/test_random_bits.py checks every op
// against an independent implementation of the spec.
#pragma once

#include "isa.hpp"
#include <tessera/sdk/philox.hpp>

#if defined(__SSE2__)
#include <immintrin.h>
#else
#include <cmath>
#endif

#include <cstdint>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace philox_batch {

// 64-bit lanes: a 32-bit Philox word sits in the low half of each lane, where
// pmuludq reads it and leaves the full 64-bit product (hi and lo words of
// Philox's mulhilo at once).
#if defined(__AVX512F__)
inline constexpr int kLanes = 8;
#elif defined(__AVX2__)
inline constexpr int kLanes = 4;
#else  // SSE2, or generic vectors elsewhere
inline constexpr int kLanes = 2;
#endif

typedef uint64_t U __attribute__((vector_size(8 * kLanes)));
typedef int64_t I __attribute__((vector_size(8 * kLanes)));  // what a comparison of D gives
typedef double D __attribute__((vector_size(8 * kLanes)));
typedef float F __attribute__((vector_size(4 * kLanes)));

inline U uvec(uint64_t x) { return U{} + x; }
inline D dvec(double x) {  // not D{} + x, which turns -0 into +0
  D r;
  for (int l = 0; l < kLanes; ++l) r[l] = x;
  return r;
}
inline D as_double(U x) { return reinterpret_cast<D>(x); }  // the bits, reinterpreted
inline U as_bits(D x) { return reinterpret_cast<U>(x); }

/// Products of the low 32 bits of a's and b's lanes, as full 64-bit values.
inline U mul_32x32(U a, U b) {
#if defined(__AVX512F__)  // maskz with every lane: plain vpmuludq, without GCC 12's -Wuninitialized false alarm
  return reinterpret_cast<U>(_mm512_maskz_mul_epu32(0xff, reinterpret_cast<__m512i>(a), reinterpret_cast<__m512i>(b)));
#elif defined(__AVX2__)
  return reinterpret_cast<U>(_mm256_mul_epu32(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
#elif defined(__SSE2__)
  return reinterpret_cast<U>(_mm_mul_epu32(reinterpret_cast<__m128i>(a), reinterpret_cast<__m128i>(b)));
#else
  return (a & 0xffffffffu) * (b & 0xffffffffu);
#endif
}

/// Each lane's high 32 bits, in its low half (the high half is garbage). A
/// shuffle, not a shift: Intel cores run vector shifts on a port that the
/// multiplies need too (a few percent faster here).
inline U high_word(U x) {
#if defined(__AVX512F__)  // see mul_32x32
  return reinterpret_cast<U>(_mm512_maskz_shuffle_epi32(0xffff, reinterpret_cast<__m512i>(x), _MM_PERM_DDBB));
#elif defined(__AVX2__)
  return reinterpret_cast<U>(_mm256_shuffle_epi32(reinterpret_cast<__m256i>(x), 0xf5));
#elif defined(__SSE2__)
  return reinterpret_cast<U>(_mm_shuffle_epi32(reinterpret_cast<__m128i>(x), 0xf5));
#else
  return x >> 32;
#endif
}

/// Correctly rounded square root of each lane.
inline D sqrt(D x) {
#if defined(__AVX512F__)
  return reinterpret_cast<D>(_mm512_maskz_sqrt_pd(0xff, reinterpret_cast<__m512d>(x)));  // see mul_32x32
#elif defined(__AVX2__)
  return reinterpret_cast<D>(_mm256_sqrt_pd(reinterpret_cast<__m256d>(x)));
#elif defined(__SSE2__)
  return reinterpret_cast<D>(_mm_sqrt_pd(reinterpret_cast<__m128d>(x)));
#else
  for (int l = 0; l < kLanes; ++l) x[l] = std::sqrt(x[l]);
  return x;
#endif
}

/// What generate() needs of a seed: the round keys, broadcast (the scalar
/// code bumps them per round), and each lane's counter offset in the batch.
struct Key {
  U k0[10], k1[10];
  U lane;  // 0, 1, ..., kLanes - 1
  explicit Key(uint64_t seed) {
    uint32_t a = static_cast<uint32_t>(seed), b = static_cast<uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r, a += 0x9E3779B9u, b += 0xBB67AE85u) {
      k0[r] = uvec(a);
      k1[r] = uvec(b);
    }
    for (int l = 0; l < kLanes; ++l) lane[l] = static_cast<uint64_t>(l);
  }
};

/// The blocks of the N * kLanes counters first, first + Stride, ... (wrapping
/// at 2^64): vector v, lane l holds counter first + Stride * (v * kLanes + l). Only the low
/// 32 bits of each lane are the word; the high bits are left-over garbage (the
/// multiplies ignore them), cleared by the readers below. Each round runs on
/// all N vectors before the next: independent chains side by side for the
/// out-of-order core.
template <int N>
struct Words {
  U x0[N], x1[N], x2[N], x3[N];
};

template <int N, int Stride = 1>
[[gnu::always_inline]] inline Words<N> generate(const Key& key, uint64_t first) {
  const U m0 = uvec(uint64_t{0xD2511F53u}), m1 = uvec(uint64_t{0xCD9E8D57u});
  Words<N> w;
  U (&c0)[N] = w.x0, (&c1)[N] = w.x1, (&c2)[N] = w.x2, (&c3)[N] = w.x3;
  // Round 0 with counter words (lo, hi, 0, 0): the second product is 0. A
  // 64-bit lane holds the whole counter, so the low word's wrap carries.
  for (int v = 0; v < N; ++v) {
    const U counter = key.lane * uint64_t{Stride} + (first + static_cast<uint64_t>(Stride * v * kLanes));
    const U p0 = mul_32x32(counter, m0);
    c0[v] = (counter >> 32) ^ key.k0[0];
    c1[v] = U{};
    c2[v] = high_word(p0) ^ key.k1[0];
    c3[v] = p0;
  }

  for (int r = 1; r < 10; ++r) {
    for (int v = 0; v < N; ++v) {
      const U p0 = mul_32x32(c0[v], m0), p1 = mul_32x32(c2[v], m1);
      c0[v] = high_word(p1) ^ c1[v] ^ key.k0[r];
      c1[v] = p1;
      c2[v] = high_word(p0) ^ c3[v] ^ key.k1[r];
      c3[v] = p0;
    }
  }
  return w;
}

/// philox::u64(lo, hi) per lane.
inline U u64(U lo, U hi) { return (hi << 32) | (lo & 0xffffffffu); }

/// philox::uniform_float(x0) as a double: (x0 >> 8) * 2^-24. The 24 bits become
/// the low mantissa bits of 2^28, whose last place is 2^-24; subtracting 2^28
/// is exact.
inline D uniform24(U x0) {
  const U bits = ((x0 & 0xffffffffu) >> 8) | uvec(uint64_t{0x41B0000000000000u});  // 2^28
  return as_double(bits) - 268435456.0;
}

/// u64(lo, hi) >> 11, the 53-bit integer of uniform_double, as a double (exact).
inline D top53(U lo, U hi) {
#if defined(__AVX512DQ__)
  return __builtin_convertvector(reinterpret_cast<I>(u64(lo, hi) >> 11), D);
#else
  // hi * 2^21 + (lo >> 11): each part exact as in uniform24 (the last place of
  // 2^73 is 2^21, of 2^52 is 1); their bits do not overlap and the sum is
  // below 2^53, so it is exact too.
  const D h = as_double((hi & 0xffffffffu) | uvec(uint64_t{0x4480000000000000u})) - 0x1p73;
  const D l = as_double(((lo & 0xffffffffu) >> 11) | uvec(uint64_t{0x4330000000000000u})) - 0x1p52;
  return h + l;
#endif
}

/// philox::uniform_double(lo, hi): top53 * 2^-53, exact.
inline D uniform53(U lo, U hi) { return top53(lo, hi) * 0x1p-53; }

// Box-Muller's arithmetic runs on N vectors at once (Dx<N>): every operation
// on all N before the next, so that N dependency chains (the Horner schemes
// are long ones) advance side by side instead of one after the other.
template <int N>
struct Dx {
  D v[N];
};
template <int N, typename F>
inline Dx<N> each(const F& f) {
  Dx<N> r;
  for (int i = 0; i < N; ++i) r.v[i] = f(i);
  return r;
}
template <int N>
inline Dx<N> operator+(const Dx<N>& a, const Dx<N>& b) { return each<N>([&](int i) { return a.v[i] + b.v[i]; }); }
template <int N>
inline Dx<N> operator-(const Dx<N>& a, const Dx<N>& b) { return each<N>([&](int i) { return a.v[i] - b.v[i]; }); }
template <int N>
inline Dx<N> operator*(const Dx<N>& a, const Dx<N>& b) { return each<N>([&](int i) { return a.v[i] * b.v[i]; }); }
template <int N>
inline Dx<N> operator/(const Dx<N>& a, const Dx<N>& b) { return each<N>([&](int i) { return a.v[i] / b.v[i]; }); }
template <int N>
inline Dx<N> operator+(double a, const Dx<N>& b) { return each<N>([&](int i) { return a + b.v[i]; }); }
template <int N>
inline Dx<N> operator-(double a, const Dx<N>& b) { return each<N>([&](int i) { return a - b.v[i]; }); }
template <int N>
inline Dx<N> operator*(double a, const Dx<N>& b) { return each<N>([&](int i) { return a * b.v[i]; }); }
template <int N>
inline Dx<N> operator+(const Dx<N>& a, double b) { return each<N>([&](int i) { return a.v[i] + b; }); }
template <int N>
inline Dx<N> operator-(const Dx<N>& a, double b) { return each<N>([&](int i) { return a.v[i] - b; }); }
template <int N>
inline Dx<N> operator*(const Dx<N>& a, double b) { return each<N>([&](int i) { return a.v[i] * b; }); }

/// c[0] z^(K-1) + ... + c[K-1] by Horner's rule in the scalar code's order: p
/// = c[0], then p = c[k] + z p for k = 1 .. K-1.
template <int N, size_t K>
[[gnu::always_inline]] inline Dx<N> horner(const Dx<N>& z, const double (&c)[K]) {
  Dx<N> p = each<N>([&](int) { return dvec(c[0]); });
  for (size_t k = 1; k < K; ++k) p = c[k] + z * p;
  return p;
}

/// philox::log(m * 2^-53) for integers m in [1, 2^53], the same operations in
/// the same order: the argument is normal and positive, so none of the scalar
/// code's special cases applies; its exponent is m's less 53.
template <int N>
[[gnu::always_inline]] inline Dx<N> log_scaled(const Dx<N>& m) {
  Dx<N> a, dk;
  for (int i = 0; i < N; ++i) {
    // m = 2^e x with x in [1, 2): e from the exponent bits (exact: the last
    // place of 2^52 is 1), x from the mantissa bits.
    const U b = as_bits(m.v[i]);
    const D e = as_double((b >> 52) | uvec(uint64_t{0x4330000000000000u})) - (0x1p52 + 1023.0);
    const D x = as_double((b & 0x000fffffffffffffu) | uvec(uint64_t{0x3ff0000000000000u}));
    // The scalar code compares the mantissa bits with sqrt(2)'s: the same
    // order as comparing x with the double of those bits. Halving x is exact.
    const I big = x > as_double(uvec(uint64_t{0x3ff6a09e667f3bcdu}));
    a.v[i] = big ? x * 0.5 : x;
    // k as a double: small integers, every step exact, +0 when k is 0 (as the
    // scalar code's conversion of an int).
    const D k = e - 53.0;
    dk.v[i] = big ? k + 1.0 : k;
  }
  const Dx<N> f = a - 1.0;
  const Dx<N> s = f / (2.0 + f);
  const Dx<N> z = s * s;
  static constexpr double kAtanh[] = {2.0 / 21.0, 2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0, 2.0 / 13.0,
                                      2.0 / 11.0, 2.0 / 9.0,  2.0 / 7.0,  2.0 / 5.0,  2.0 / 3.0};
  const Dx<N> r = z * horner(z, kAtanh);
  const Dx<N> hfsq = (0.5 * f) * f;
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  const Dx<N> tail = s * (hfsq + r) + dk * kLn2Lo;
  return dk * kLn2Hi + (f - (hfsq - tail));
}

/// philox::cos_2pi and sin_2pi of n * 2^-53 for integers n in [0, 2^53): the
/// scalar code's reduction, then both of detail::quarter_turns' polynomials
/// for every lane (each the same operations in the same order as the scalar
/// branch), each lane's cos and sin picking the one its quadrant takes.
template <int N>
struct CosSin {
  Dx<N> cos, sin;
};
template <int N>
[[gnu::always_inline]] inline CosSin<N> cos_sin_2pi_scaled(const Dx<N>& n) {
  const Dx<N> t = n * 0x1p-51;  // 4u, exact
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const Dx<N> tq = t + kRound;
  const Dx<N> r = t - (tq - kRound);
  const Dx<N> z = r * r;
  // philox::detail::quarter_turns' polynomials, their coefficients in order.
  static constexpr double kCos[] = {6.565963114979473e-11,  -6.386603083791852e-09, 4.710874778818172e-07,
                                    -2.5202042373060607e-05, 0.0009192602748394266, -0.02086348076335296,
                                    0.25366950790104803,     -1.2337005501361697,   1.0};
  static constexpr double kSin[] = {6.0669357311061955e-12, -6.688035109811468e-10, 5.692172921967927e-08,
                                    -3.598843235212085e-06, 0.00016044118478735983, -0.004681754135318688,
                                    0.07969262624616705,    -0.6459640975062463};
  const Dx<N> c = horner(z, kCos);  // cos(pi/2 r)
  Dx<N> s = horner(z, kSin);
  s = r * 1.5707963267948966 + (r * z) * s;  // sin(pi/2 r)
  // q (0..4) is the low bits of tq's mantissa: the scalar int64(q) & 3. cos
  // takes quadrant q, sin quadrant q - 1: an odd quadrant takes the sin
  // polynomial; quadrants 1 and 2 negate (cos: bit 1 of q + 1, sin: bit 1 of q).
  CosSin<N> out;
  for (int i = 0; i < N; ++i) {
    const U q = as_bits(tq.v[i]) & 3u;
    const I odd = reinterpret_cast<I>(q & 1u) != 0;
    const D cos_p = odd ? s.v[i] : c.v[i], sin_p = odd ? c.v[i] : s.v[i];
    out.cos.v[i] = reinterpret_cast<I>((q + 1u) & 2u) != 0 ? -cos_p : cos_p;
    out.sin.v[i] = reinterpret_cast<I>(q & 2u) != 0 ? -sin_p : sin_p;
  }
  return out;
}

/// philox::standard_normal of the counters c and c + 1 for each of the N *
/// kLanes blocks c (even) of w: radius * cos and radius * sin of
/// box_muller_polar, where u1 = 1 - uniform_double(x0, x1) is (2^53 -
/// top53) * 2^-53 and u2 = top53(x2, x3) * 2^-53, both exact.
template <int N>
[[gnu::always_inline]] inline CosSin<N> standard_normal_pairs(const Words<N>& w) {
  const Dx<N> m1 = each<N>([&](int i) { return 0x1p53 - top53(w.x0[i], w.x1[i]); });
  const Dx<N> n2 = each<N>([&](int i) { return top53(w.x2[i], w.x3[i]); });
  const Dx<N> l = -2.0 * log_scaled(m1);
  const CosSin<N> cs = cos_sin_2pi_scaled(n2);
  CosSin<N> z;
  for (int i = 0; i < N; ++i) {
    const D radius = sqrt(l.v[i]);
    z.cos.v[i] = radius * cs.cos.v[i];
    z.sin.v[i] = radius * cs.sin.v[i];
  }
  return z;
}

/// The lanes of a and b interleaved: a0 b0 a1 b1 ..., the first kLanes of
/// them (Half 0) or the last (Half 1).
template <int Half>
inline D interleave(D a, D b) {
#if defined(__AVX512F__)
  return Half == 0 ? __builtin_shuffle(a, b, I{0, 8, 1, 9, 2, 10, 3, 11})
                   : __builtin_shuffle(a, b, I{4, 12, 5, 13, 6, 14, 7, 15});
#elif defined(__AVX2__)
  return Half == 0 ? __builtin_shuffle(a, b, I{0, 4, 1, 5}) : __builtin_shuffle(a, b, I{2, 6, 3, 7});
#else
  return Half == 0 ? __builtin_shuffle(a, b, I{0, 2}) : __builtin_shuffle(a, b, I{1, 3});
#endif
}

/// Rounds each lane to float (nearest even, as static_cast<float>).
inline F to_float(D x) { return __builtin_convertvector(x, F); }
inline D to_double(F x) {
#if defined(__AVX512F__)  // GCC 12 splits the generic conversion in two halves
  return reinterpret_cast<D>(_mm512_maskz_cvtps_pd(0xff, reinterpret_cast<__m256>(x)));
#else
  return __builtin_convertvector(x, D);
#endif
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::philox_batch
