// Branch-free float32/float64 exp, expm1, log, tanh, sigmoid and rounding for the unary
// kernels. Every function is straight-line code (bitwise selects instead of
// branches, bit casts through memcpy, std::fma), so GCC vectorizes loops calling
// them with AVX2/FMA; std::exp and friends are opaque calls that never vectorize.
// Under the default -ftrapping-math GCC will not if-convert `c ? x * k : x`
// (the multiply could trap) nor inline floor, hence select() and integer halving.
//
// Accuracy: within ~2 ulp of the correctly rounded result over the whole range
// (tests/python/test_ops_unary.py checks against a float64 / long double
// reference). Special values follow the C library: exp(-inf) = 0, exp(+inf) =
// inf, exp overflows to inf and underflows through the denormals to 0, log of
// a negative number is NaN, log(0) = -inf, NaN propagates.
#pragma once

#include "isa.hpp"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace vm {

// Forced inline: called out of line (as GCC chooses in a file with many kernel
// instantiations) the loops calling these would not vectorize.
#define TSR_VM_INLINE inline __attribute__((always_inline))

template <typename To, typename From>
TSR_VM_INLINE To bit_cast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}

// Per-precision constants. exp uses x = n ln2 + r with |r| <= ln2/2 and a
// Taylor polynomial of expm1(r) (degree 7 for float, 13 for double: the
// truncation error is below 0.01 ulp there).
template <typename T>
struct Consts;

template <>
struct Consts<float> {
  using Int = int32_t;
  static constexpr int kMantBits = 23;
  static constexpr Int kBias = 127;
  static constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  static constexpr float kLog2e = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693145751953125f;  // 16 significant bits: n * kLn2Hi is exact
  static constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  static constexpr float kExpMax = 88.72283935546875f;       // above: exp overflows
  static constexpr float kExpMin = -103.972084045410156f;    // below: exp rounds to 0
  static constexpr float kClampHi = 89.0f;
  static constexpr float kClampLo = -105.0f;
  static constexpr float kExpm1Min = -17.5f;  // below: expm1 rounds to -1
  static constexpr int kExpTerms = 7;
  static constexpr float kTanhOne = 9.1f;  // above: tanh rounds to 1
  static constexpr int kLogTerms = 5;      // odd powers of s up to s^9
};

template <>
struct Consts<double> {
  using Int = int64_t;
  static constexpr int kMantBits = 52;
  static constexpr Int kBias = 1023;
  static constexpr double kRoundMagic = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr double kLog2e = 1.4426950408889634074;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;  // fdlibm's split: n * kLn2Hi is exact
  static constexpr double kLn2Lo = 1.90821492927058770002e-10;
  static constexpr double kExpMax = 709.782712893383973096;
  static constexpr double kExpMin = -745.133219101941108420;
  static constexpr double kClampHi = 710.0;
  static constexpr double kClampLo = -746.0;
  static constexpr double kExpm1Min = -38.0;
  static constexpr int kExpTerms = 13;
  static constexpr double kTanhOne = 19.1;
  static constexpr int kLogTerms = 11;  // odd powers of s up to s^21
};

// 1/k!, k = 0..13.
inline constexpr double kInvFact[14] = {1.0,
                                        1.0,
                                        0.5,
                                        1.66666666666666666667e-1,
                                        4.16666666666666666667e-2,
                                        8.33333333333333333333e-3,
                                        1.38888888888888888889e-3,
                                        1.98412698412698412698e-4,
                                        2.48015873015873015873e-5,
                                        2.75573192239858906526e-6,
                                        2.75573192239858906526e-7,
                                        2.50521083854417187751e-8,
                                        2.08767569878680989792e-9,
                                        1.60590438368216145994e-10};

// c ? a : b as a bit mask, so both sides are computed and no branch is left.
template <typename T>
TSR_VM_INLINE T select(bool c, T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  const I m = -static_cast<I>(c);
  return bit_cast<T>(static_cast<I>((bit_cast<I>(a) & m) | (bit_cast<I>(b) & ~m)));
}

// lo <= x <= hi; NaN becomes lo, so the integer exponent arithmetic that
// follows stays defined (callers select the NaN result from x itself).
template <typename T>
TSR_VM_INLINE T clamp(T x, T lo, T hi) {
  x = select(x >= lo, x, lo);
  return select(x > hi, hi, x);
}

// An integer-valued n, |n| < 2^22, as the integer type, and back, through the
// rounding constant: AVX2 has no int64 <-> double conversions, this vectorizes.
template <typename T>
TSR_VM_INLINE typename Consts<T>::Int to_int(T n) {
  using C = Consts<T>;
  using I = typename C::Int;
  return bit_cast<I>(n + C::kRoundMagic) - bit_cast<I>(C::kRoundMagic);
}
template <typename T>
TSR_VM_INLINE T from_int(typename Consts<T>::Int k) {
  using C = Consts<T>;
  using I = typename C::Int;
  return bit_cast<T>(static_cast<I>(bit_cast<I>(C::kRoundMagic) + k)) - C::kRoundMagic;
}

// 2^k for an integer kBias-1 >= k >= 1-kBias (a normal number).
template <typename T>
TSR_VM_INLINE T pow2(typename Consts<T>::Int k) {
  using C = Consts<T>;
  using I = typename C::Int;
  using U = std::make_unsigned_t<I>;
  return bit_cast<T>(static_cast<I>(static_cast<U>(k + C::kBias) << C::kMantBits));
}

// 2^k = pow2(k1) * pow2(k - k1), k1 = floor(k / 2): both factors stay normal
// over exp's whole range. Halving with a logical shift of k + 2048 (AVX2 has no
// 64-bit arithmetic shift).
template <typename T>
TSR_VM_INLINE typename Consts<T>::Int half_floor(typename Consts<T>::Int k) {
  using I = typename Consts<T>::Int;
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(k + 2048) >> 1) - 1024;
}

// Reduction shared by exp and expm1: x = n ln2 + r, |r| <= ln2/2 (plus rounding);
// returns expm1(r) and sets n (integer-valued).
template <typename T>
TSR_VM_INLINE T expm1_reduced(T x, T& n) {
  using C = Consts<T>;
  n = std::fma(x, C::kLog2e, C::kRoundMagic) - C::kRoundMagic;
  T r = std::fma(-n, C::kLn2Hi, x);
  r = std::fma(-n, C::kLn2Lo, r);
  // Horner on r * (1 + r/2! + ... + r^(k-1)/k!).
  T p = static_cast<T>(kInvFact[C::kExpTerms]);
  _Pragma("GCC unroll 16") for (int k = C::kExpTerms - 1; k >= 1; --k) p = std::fma(p, r, static_cast<T>(kInvFact[k]));
  return p * r;
}

template <typename T>
TSR_VM_INLINE T exp(T x) {
  using C = Consts<T>;
  const T xc = clamp(x, C::kClampLo, C::kClampHi);  // keeps n in range
  T n;
  const T p = expm1_reduced(xc, n) + T(1);
  // 2^n as two factors, so results in the denormal range are not flushed to 0.
  const auto k = to_int(n);
  const auto k1 = half_floor<T>(k);
  T y = p * pow2<T>(k1) * pow2<T>(k - k1);
  y = select(x > C::kExpMax, std::numeric_limits<T>::infinity(), y);
  y = select(x < C::kExpMin, T(0), y);
  return select(x != x, x, y);
}

template <typename T>
TSR_VM_INLINE T expm1(T x) {
  using C = Consts<T>;
  const T xc = clamp(x, C::kExpm1Min, C::kClampHi);
  T n;
  const T p = expm1_reduced(xc, n);
  // expm1(x) = 2^n p + (2^n - 1), with 2^n = s1 s2 (2^n alone overflows for
  // n = 128 in float): (p s1 + s1 - 1/s2) s2, all powers of two exact; it is
  // exactly p when n = 0, so small arguments keep full relative accuracy.
  const auto k = to_int(n);
  const auto k1 = half_floor<T>(k);
  const T s1 = pow2<T>(k1);
  const T s2 = pow2<T>(k - k1);
  T y = std::fma(p, s1, s1 - T(1) / s2) * s2;
  y = select(x > C::kExpMax, std::numeric_limits<T>::infinity(), y);
  y = select(x < C::kExpm1Min, T(-1), y);
  return select(x != x, x, y);
}

template <typename T>
TSR_VM_INLINE T log(T x) {
  using C = Consts<T>;
  using I = typename C::Int;
  using U = std::make_unsigned_t<I>;
  constexpr T kTwoPowMant = T(I(1) << C::kMantBits);
  // Denormals: scale into the normal range first.
  const bool tiny = x < std::numeric_limits<T>::min();
  const I bits = bit_cast<I>(select(tiny, x * kTwoPowMant, x));
  // x = 2^e m with m in [sqrt(1/2), sqrt(2)): e is the exponent of x / sqrt(1/2).
  // The offset keeps the shifted value non-negative (a logical shift: AVX2 has
  // no 64-bit arithmetic shift).
  constexpr I kSqrtHalfBits = sizeof(T) == 4 ? I(0x3f3504f3) : I(0x3fe6a09e667f3bcdLL);
  constexpr I kOffset = sizeof(T) == 4 ? I(128) : I(1024);
  // (Unsigned arithmetic: for negative x, whose log is NaN anyway, the signed
  // form would overflow.)
  const I e = static_cast<I>((static_cast<U>(bits) - static_cast<U>(kSqrtHalfBits) +
                              (static_cast<U>(kOffset) << C::kMantBits)) >> C::kMantBits) - kOffset;
  const T m = bit_cast<T>(static_cast<I>(static_cast<U>(bits) - (static_cast<U>(e) << C::kMantBits)));
  const T ef = from_int<T>(e) - select(tiny, T(C::kMantBits), T(0));
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: 1 + z/3 + z^2/5 + ...
  const T f = m - T(1);  // exact
  const T s = f / (m + T(1));
  const T z = s * s;
  T p = T(1) / T(2 * C::kLogTerms - 1);
  _Pragma("GCC unroll 16") for (int k = C::kLogTerms - 2; k >= 0; --k) p = std::fma(p, z, T(1) / T(2 * k + 1));
  const T lm = T(2) * s * p;
  // e ln2 + log(m), with ln2 split so that e * kLn2Hi is exact.
  T y = std::fma(ef, C::kLn2Hi, std::fma(ef, C::kLn2Lo, lm));
  y = select(x == std::numeric_limits<T>::infinity(), x, y);
  y = select(x == T(0), -std::numeric_limits<T>::infinity(), y);
  y = select(x < T(0), std::numeric_limits<T>::quiet_NaN(), y);
  return select(x != x, x, y);
}

template <typename T>
TSR_VM_INLINE T tanh(T x) {
  using C = Consts<T>;
  // tanh|x| = e / (e + 2) with e = expm1(2|x|): no cancellation near 0.
  const T ax = std::fabs(x);
  const T a = select(ax < C::kTanhOne, ax, C::kTanhOne);
  const T e = expm1(a + a);
  T y = e / (e + T(2));
  y = select(ax >= C::kTanhOne, T(1), y);
  y = std::copysign(y, x);
  return select(x != x, x, y);
}

template <typename T>
TSR_VM_INLINE T sigmoid(T x) {
  // e = exp(-|x|) never overflows; for x < 0, sigmoid = e / (1 + e) keeps the
  // relative accuracy where 1 / (1 + exp(-x)) would round to 0.
  const T e = exp(-std::fabs(x));
  const T r = T(1) / (T(1) + e);
  return select(x >= T(0), r, e * r);  // NaN: e is NaN, so is e * r
}

// Rounding without libm calls (GCC only inlines floor & co. under
// -fno-trapping-math): adding and subtracting 2^mant rounds |x| < 2^mant to an
// integer in the default rounding mode, halves to even; larger |x|, inf and
// NaN are already integral (or NaN) and pass through. Results keep x's sign,
// as the C functions do (ceil(-0.5) = -0.0).
template <typename T>
TSR_VM_INLINE T round_even(T x) {
  constexpr T kBig = T(1) / std::numeric_limits<T>::epsilon();  // 2^23 or 2^52
  const T a = std::fabs(x);
  return select(a < kBig, std::copysign((a + kBig) - kBig, x), x);
}
template <typename T>
TSR_VM_INLINE T floor(T x) {
  const T r = round_even(x);
  return std::copysign(select(r > x, r - T(1), r), x);
}
template <typename T>
TSR_VM_INLINE T ceil(T x) {
  const T r = round_even(x);
  return std::copysign(select(r < x, r + T(1), r), x);
}
template <typename T>
TSR_VM_INLINE T trunc(T x) {
  const T r = round_even(x);
  return std::copysign(select(std::fabs(r) > std::fabs(x), r - std::copysign(T(1), x), r), x);
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::vm
