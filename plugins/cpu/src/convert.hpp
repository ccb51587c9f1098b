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

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

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
      return To(x ? 1.0f : 0.0f);
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
    if constexpr (kIsHalfLike<From> || std::is_same_v<From, float>) {
      return To(static_cast<float>(x));  // float -> half: the only rounding
    } else if constexpr (std::is_same_v<From, double>) {
      return To(to_float_round_odd(x));
    } else if constexpr (sizeof(From) <= 2) {
      return To(static_cast<float>(x));  // exact in float
    } else {
      return To(to_float_round_odd(static_cast<int64_t>(x)));
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

}}  // namespace tessera::cpu::TSR_CPU_ISA
