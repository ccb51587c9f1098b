// tessera/sdk/philox.hpp — Tessera's random-number specification: the
// Philox4x32-10 counter rule and the per-element transforms of the random ops
// (docs/ops/random.md). Every plugin that wants the cpu plugin's random numbers
// bit for bit — the cpu and cuda plugins do — computes each element with these
// functions, so the same seed gives the same bits on every device.
//
// Header-only C++17, usable from host C++ and from CUDA device code (every
// function is TSR_SDK_HOST_DEVICE). No state, no allocation, no exceptions:
// every function is pure and safe from any thread.
//
// The rule. A random op with (seed, offset) gives element i of its output —
// the i-th in row-major order, whatever the strides — the Philox4x32-10 block
// of counter (offset + i) under key seed: philox::at(seed, offset + i). The
// op's value is then a fixed function of that block's four words x0..x3:
//
//   uniform_   from + (to - from) * u, u = uniform_float(x0) for float16,
//              bfloat16 and float32, u = uniform_double(x0, x1) for float64
//              (uniform_value); then rounded to the dtype, and replaced by from
//              if the rounding reached `to` (a half-open interval).
//   normal_    mean + std * z, in double, then rounded to the dtype. The
//              exception to one block per element: counters 2j and 2j + 1
//              share the block of 2j, Box-Muller's two normals: z =
//              sqrt(-2 log u1) cos(2 pi u2) for 2j and sqrt(-2 log u1)
//              sin(2 pi u2) for 2j + 1, u1 = 1 - uniform_double(x0, x1), u2 =
//              uniform_double(x2, x3) (normal_value), with the portable log,
//              cos_2pi and sin_2pi below.
//   random_    from + u64(x0, x1) mod (to - from), with wrapping 64-bit
//              arithmetic (random_int), then converted to the dtype.
//   bernoulli_ uniform_double(x0, x1) < p (bernoulli); dropout drops an
//              element when that holds.
//   randperm   the indices 0..n-1 sorted by the key u64(x0, x1) of their own
//              counter (offset + k), ties by index (randperm_key).
//
// Rounding to a dtype: to float32 by IEEE round-to-nearest-even; to float16 and
// bfloat16 by first rounding to float32, then to the 16-bit type (also nearest
// even); integers to a floating dtype likewise (int64 -> float32 -> 16-bit).
//
// Exactness. Everything above is integer arithmetic or IEEE-754 double
// operations that are correctly rounded on every conforming machine (+, -, *,
// /, sqrt), written so that no compiler may fuse a multiply and an add into an
// FMA (mul_rn / add_rn). The log, cos and sin of Box-Muller are computed
// here from those operations (no libm, no CUDA math library), so normal_ too
// is bitwise equal on host and device. Do not compile users of this header with
// -ffast-math (it is refused below) or with x87 excess precision.
#pragma once

#include <cstdint>
#include <cstring>
#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

#if defined(__FAST_MATH__)
#error "tessera/sdk/philox.hpp: -ffast-math breaks the bit-exact random numbers (reassociation, no NaN/inf); compile without it"
#endif
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ != 0 && __FLT_EVAL_METHOD__ != -1
#error "tessera/sdk/philox.hpp: needs double arithmetic evaluated in double (FLT_EVAL_METHOD 0), e.g. SSE2 on x86"
#endif

/// Marks a function callable from host code and, under nvcc, from device code.
#ifndef TSR_SDK_HOST_DEVICE
#if defined(__CUDACC__)
#define TSR_SDK_HOST_DEVICE __host__ __device__
#else
#define TSR_SDK_HOST_DEVICE
#endif
#endif

namespace tessera::sdk::philox {

// ---------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------

/// One Philox output block: four 32-bit words x0..x3.
struct Block {
  uint32_t v[4];
};

namespace detail {
/// hi and lo words of the 64-bit product a * b.
TSR_SDK_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
  hi = __umulhi(a, b);
  lo = a * b;
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
#endif
}
}  // namespace detail

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
/// as 1, 2, 3", SC'11): the block of counter (c0, c1, c2, c3) under key (k0,
/// k1), ten rounds, the paper's multipliers and Weyl key increments. Matches
/// Random123's published known answers (tests/conformance/sdk_philox_test.cpp).
TSR_SDK_HOST_DEVICE inline Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                               uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    detail::mulhilo(kM0, c0, hi0, lo0);
    detail::mulhilo(kM1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;  // the key schedule; the bump after the last round is unused
    k1 += kW1;
  }
  return Block{{c0, c1, c2, c3}};
}

/// Tessera's counter rule: the block of 64-bit counter value `counter` under
/// the 64-bit key `seed`. Counter words (low, high, 0, 0), key words (low,
/// high). Element i of a call with (seed, offset) uses at(seed, offset + i)
/// (unsigned, wrapping).
TSR_SDK_HOST_DEVICE inline Block at(uint64_t seed, uint64_t counter) {
  return philox4x32_10(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// The 64-bit value (hi << 32) | lo.
TSR_SDK_HOST_DEVICE inline uint64_t u64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

/// Uniform in [0, 1) from the top 24 bits of x: (x >> 8) * 2^-24, exact in float.
TSR_SDK_HOST_DEVICE inline float uniform_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// ---------------------------------------------------------------------------
// Correctly rounded double operations that no compiler fuses
// ---------------------------------------------------------------------------
//
// A compiler may contract a*b + c into one FMA (nvcc does by default, gcc does
// across statements unless -ffp-contract=off), which rounds once instead of
// twice and so changes the bits. On the device the _rn intrinsics are never
// contracted; on the host the product passes through an empty asm statement
// the optimizer cannot see through (a volatile store where no such statement
// exists), so it is rounded to double before any addition uses it.

namespace detail {
#if !defined(__CUDA_ARCH__)
inline void opaque(double& x) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__)))
  __asm__("" : "+x"(x));
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile double v = x;
  x = v;
#endif
}
#endif
}  // namespace detail

/// a * b, rounded to nearest even, never fused with a later add.
TSR_SDK_HOST_DEVICE inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  double p = a * b;
  detail::opaque(p);
  return p;
#endif
}
/// a + b, rounded to nearest even.
TSR_SDK_HOST_DEVICE inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
/// a - b, rounded to nearest even.
TSR_SDK_HOST_DEVICE inline double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
/// a / b, rounded to nearest even.
TSR_SDK_HOST_DEVICE inline double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
/// The square root, rounded to nearest even (IEEE-754 requires it).
TSR_SDK_HOST_DEVICE inline double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

namespace detail {
TSR_SDK_HOST_DEVICE inline uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
TSR_SDK_HOST_DEVICE inline double from_bits(uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}
}  // namespace detail

/// Uniform in [0, 1) from the top 53 bits of u64(lo, hi): (u64 >> 11) * 2^-53,
/// exact in double.
TSR_SDK_HOST_DEVICE inline double uniform_double(uint32_t lo, uint32_t hi) {
  // Exact, so an FMA could not change it; mul_rn keeps the generated code free of them anyway.
  return mul_rn(static_cast<double>(u64(lo, hi) >> 11), 1.0 / 9007199254740992.0);
}

// ---------------------------------------------------------------------------
// Portable log, cos(2 pi u) and sin(2 pi u)
// ---------------------------------------------------------------------------

/// The natural logarithm of x, within 1 ulp of the exact value (the SDK test
/// bounds it against long double and std::log). Built from mul_rn/add_rn/sub_rn/div_rn
/// only, so it returns the same bits on every IEEE-754 machine. log(+0) =
/// -inf, log(1) = +0, log(+inf) = +inf, NaN or x < 0 gives NaN; subnormals
/// are handled.
///
/// Method: x = 2^k m with m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact),
/// s = f / (2 + f), so that log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 +
/// R)) with R = sum_{n>=1} 2 s^(2n) / (2n + 1) (|s| <= 0.1716: ten terms
/// reach double precision); log x = k ln2_hi + (log(1 + f) + k ln2_lo), with
/// ln2 split so that k * ln2_hi is exact.
TSR_SDK_HOST_DEVICE inline double log(double x) {
  if (x != x) return x;                                                 // NaN
  if (x < 0.0) return detail::from_bits(0x7ff8000000000000ull);           // NaN
  if (x == 0.0) return detail::from_bits(0xfff0000000000000ull);          // -inf
  if (detail::bits_of(x) == 0x7ff0000000000000ull) return x;              // +inf
  int k = 0;
  if (x < 2.2250738585072014e-308) {  // subnormal: scale by 2^54 (exact)
    x = mul_rn(x, 18014398509481984.0);
    k = -54;
  }
  uint64_t b = detail::bits_of(x);
  k += static_cast<int>((b >> 52) & 0x7ff) - 1023;
  b &= 0x000fffffffffffffull;
  // m in [1, 2); above sqrt(2) (mantissa of 0x3ff6a09e667f3bcd) halve it.
  if (b > 0x0006a09e667f3bcdull) {
    b |= 0x3fe0000000000000ull;
    ++k;
  } else {
    b |= 0x3ff0000000000000ull;
  }
  const double f = sub_rn(detail::from_bits(b), 1.0);
  const double s = div_rn(f, add_rn(2.0, f));
  const double z = mul_rn(s, s);
  // Horner: the coefficients 2/(2n+1), n = 1..10.
  double r = 2.0 / 21.0;
  r = add_rn(2.0 / 19.0, mul_rn(z, r));
  r = add_rn(2.0 / 17.0, mul_rn(z, r));
  r = add_rn(2.0 / 15.0, mul_rn(z, r));
  r = add_rn(2.0 / 13.0, mul_rn(z, r));
  r = add_rn(2.0 / 11.0, mul_rn(z, r));
  r = add_rn(2.0 / 9.0, mul_rn(z, r));
  r = add_rn(2.0 / 7.0, mul_rn(z, r));
  r = add_rn(2.0 / 5.0, mul_rn(z, r));
  r = add_rn(2.0 / 3.0, mul_rn(z, r));
  r = mul_rn(z, r);
  const double hfsq = mul_rn(mul_rn(0.5, f), f);
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;   // ln 2 to 32 bits: k * kLn2Hi is exact
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;  // ln 2 - kLn2Hi, rounded
  const double dk = static_cast<double>(k);
  const double tail = add_rn(mul_rn(s, add_rn(hfsq, r)), mul_rn(dk, kLn2Lo));
  return add_rn(mul_rn(dk, kLn2Hi), sub_rn(f, sub_rn(hfsq, tail)));
}

namespace detail {
/// cos(pi/2 (q + r)) for q = quadrant in 0..3 and |r| <= 1/2, z = r * r:
/// +-cos or +-sin of x = pi/2 r, |x| <= pi/4, both Taylor polynomials in r
/// (through r^16 and r^17) with the coefficients (pi/2)^n / n!.
TSR_SDK_HOST_DEVICE inline double quarter_turns(int64_t quadrant, double r, double z) {
  double p;
  if (quadrant == 0 || quadrant == 2) {  // cos(pi/2 r)
    p = 6.565963114979473e-11;
    p = add_rn(-6.386603083791852e-09, mul_rn(z, p));
    p = add_rn(4.710874778818172e-07, mul_rn(z, p));
    p = add_rn(-2.5202042373060607e-05, mul_rn(z, p));
    p = add_rn(0.0009192602748394266, mul_rn(z, p));
    p = add_rn(-0.02086348076335296, mul_rn(z, p));
    p = add_rn(0.25366950790104803, mul_rn(z, p));
    p = add_rn(-1.2337005501361697, mul_rn(z, p));
    p = add_rn(1.0, mul_rn(z, p));
  } else {  // sin(pi/2 r)
    p = 6.0669357311061955e-12;
    p = add_rn(-6.688035109811468e-10, mul_rn(z, p));
    p = add_rn(5.692172921967927e-08, mul_rn(z, p));
    p = add_rn(-3.598843235212085e-06, mul_rn(z, p));
    p = add_rn(0.00016044118478735983, mul_rn(z, p));
    p = add_rn(-0.004681754135318688, mul_rn(z, p));
    p = add_rn(0.07969262624616705, mul_rn(z, p));
    p = add_rn(-0.6459640975062463, mul_rn(z, p));
    // r * (pi/2 + z p), with the leading term's product kept separate for accuracy.
    p = add_rn(mul_rn(r, 1.5707963267948966), mul_rn(mul_rn(r, z), p));
  }
  // cos(pi/2 (q + r)): q = 0: cos x, 1: -sin x, 2: -cos x, 3: sin x.
  return (quadrant == 1 || quadrant == 2) ? -p : p;
}

/// The exact reduction of 2 pi u to quarter turns: t = 4u = q + r with q the
/// nearest integer and |r| <= 1/2. Returns q mod 4 and sets r.
TSR_SDK_HOST_DEVICE inline int64_t reduce_turns(double u, double& r) {
  const double t = mul_rn(u, 4.0);
  // Round to the nearest integer: adding 1.5 * 2^52 leaves no fraction bits.
  constexpr double kRound = 6755399441055744.0;
  const double q = sub_rn(add_rn(t, kRound), kRound);
  r = sub_rn(t, q);
  return static_cast<int64_t>(q) & 3;
}
}  // namespace detail

/// cos(2 pi u) for finite u with |u| < 2^49, within about 1 ulp (the SDK test
/// bounds it). The reduction is exact: t = 4u = q + r with q the nearest
/// integer and |r| <= 1/2, then cos(2 pi u) = cos(pi/2 (q + r)) is +-cos or
/// +-sin of x = pi/2 r, |x| <= pi/4, by q mod 4 (detail::quarter_turns).
/// Built from mul_rn/add_rn/sub_rn only: the same bits on every IEEE-754
/// machine. Non-finite u gives NaN.
TSR_SDK_HOST_DEVICE inline double cos_2pi(double u) {
  if (!(sub_rn(u, u) == 0.0)) return detail::from_bits(0x7ff8000000000000ull);  // inf or NaN
  double r;
  const int64_t quadrant = detail::reduce_turns(u, r);
  return detail::quarter_turns(quadrant, r, mul_rn(r, r));
}

/// sin(2 pi u) for finite u with |u| < 2^49, within about 1 ulp: cos(pi/2 (q -
/// 1 + r)) with cos_2pi's q and r, the same polynomials one quadrant back
/// (exact). Non-finite u gives NaN.
TSR_SDK_HOST_DEVICE inline double sin_2pi(double u) {
  if (!(sub_rn(u, u) == 0.0)) return detail::from_bits(0x7ff8000000000000ull);  // inf or NaN
  double r;
  const int64_t quadrant = detail::reduce_turns(u, r);
  return detail::quarter_turns((quadrant + 3) & 3, r, mul_rn(r, r));
}

// ---------------------------------------------------------------------------
// The per-element transforms of the random ops
// ---------------------------------------------------------------------------

/// uniform_: from + range * u as a double (range = to - from), before
/// rounding to the dtype. `float64` selects the 53-bit u of x0, x1; otherwise
/// the 24-bit u of x0 (float32, float16, bfloat16). The caller rounds to the
/// dtype and replaces a result >= to by from (see the rule at the top).
TSR_SDK_HOST_DEVICE inline double uniform_value(const Block& b, bool float64, double from, double range) {
  const double u = float64 ? uniform_double(b.v[0], b.v[1]) : static_cast<double>(uniform_float(b.v[0]));
  return add_rn(from, mul_rn(range, u));
}

/// Box-Muller's radius sqrt(-2 log u1), u1 = 1 - uniform_double(x0, x1) in
/// (0, 1] (the log is finite), and angle u2 = uniform_double(x2, x3) of block b.
struct Polar {
  double radius, turn;
};
TSR_SDK_HOST_DEVICE inline Polar box_muller_polar(const Block& b) {
  const double u1 = sub_rn(1.0, uniform_double(b.v[0], b.v[1]));
  return Polar{sqrt_rn(mul_rn(-2.0, philox::log(u1))), uniform_double(b.v[2], b.v[3])};
}

/// The standard normal deviate of counter `counter`: Box-Muller gives two
/// independent normals per block, so an even counter c and c + 1 share the
/// block at(seed, c): radius * cos(2 pi u2) for c, radius * sin(2 pi u2) for c
/// + 1. A function of the counter alone, so calls still continue each other's
/// stream whatever their lengths and offsets. |z| <= about 8.57.
TSR_SDK_HOST_DEVICE inline double standard_normal(uint64_t seed, uint64_t counter) {
  const Polar p = box_muller_polar(at(seed, counter & ~uint64_t{1}));
  return mul_rn(p.radius, (counter & 1) ? sin_2pi(p.turn) : cos_2pi(p.turn));
}

/// normal_: mean + std * standard_normal(seed, counter), as a double before
/// rounding to the dtype.
TSR_SDK_HOST_DEVICE inline double normal_value(uint64_t seed, uint64_t counter, double mean, double std) {
  return add_rn(mean, mul_rn(std, standard_normal(seed, counter)));
}

/// random_: from + u64(x0, x1) mod range, range = to - from as unsigned (>= 1;
/// from = INT64_MIN, to = INT64_MAX gives 2^64 - 1), wrapping. The caller
/// converts the int64 to the dtype (C++ conversion; to bool: nonzero).
TSR_SDK_HOST_DEVICE inline int64_t random_int(const Block& b, int64_t from, uint64_t range) {
  return static_cast<int64_t>(static_cast<uint64_t>(from) + u64(b.v[0], b.v[1]) % range);
}

/// bernoulli_ and dropout: whether uniform_double(x0, x1) < p (always false
/// for p <= 0 or NaN, always true for p >= 1).
TSR_SDK_HOST_DEVICE inline bool bernoulli(const Block& b, double p) { return uniform_double(b.v[0], b.v[1]) < p; }

/// randperm: the sort key of index k, computed from at(seed, offset + k). The
/// permutation lists 0..n-1 by ascending (key, index): a uniform permutation
/// (keys are 64 random bits; equal keys, rare, keep index order), and a sort
/// parallelizes (a stable radix sort of (key, index) pairs gives it too).
TSR_SDK_HOST_DEVICE inline uint64_t randperm_key(const Block& b) { return u64(b.v[0], b.v[1]); }

}  // namespace tessera::sdk::philox
