// Scalar math of the binary kernels that C++ does not give directly with the
// semantics Tessera wants (Python's remainder, integer powers, shifts past the
// bit width), free of undefined behaviour for every integer input.
#pragma once

#include "isa.hpp"
#include "common.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

/// Python's a % b for floating point: the sign of the divisor; b == 0 gives NaN.
template <typename C>
inline C float_remainder(C a, C b) {
  C r = std::fmod(a, b);
  if (r != C(0)) {
    if ((r < C(0)) != (b < C(0))) r += b;
  } else {
    r = std::copysign(C(0), b);
  }
  return r;
}

/// Integer types whose division goes through one double division: every
/// value of 32 bits or less is exact in double, and so is trunc(a / b) (for
/// |a| < 2^53 the rounding of a / b never crosses an integer), and the loop
/// vectorizes (a hardware integer division is scalar: int32 remainder of 1M
/// took 2.8 ms, as PyTorch's).
template <typename T>
inline constexpr bool kDivideInDouble = std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 4 &&
                                        (std::is_signed_v<T> || sizeof(T) < 4);

/// q = trunc(a / b) (wrapping: MIN / -1 is MIN) and r = a - q b, b != 0.
/// A divisor of -1 divides by 1 and negates, so the conversion back from
/// double stays in int32's range. Branch-free, in uint32 where it may wrap:
/// with a ternary and an &&, GCC kept the loop scalar when b is a tensor.
inline void trunc_divmod32(int32_t a, int32_t b, int32_t& q, int32_t& r) {
  const uint32_t minus_one = 0u - static_cast<uint32_t>(b == -1);  // all ones when b == -1
  const auto d = static_cast<int32_t>(static_cast<uint32_t>(b) + (minus_one & 2u));
  const auto t = static_cast<int32_t>(static_cast<double>(a) / static_cast<double>(d));
  r = static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(t) * static_cast<uint32_t>(d));
  q = static_cast<int32_t>((static_cast<uint32_t>(t) ^ minus_one) - minus_one);
}

/// 1 when a nonzero remainder r and the divisor b differ in sign (Python's
/// floor rounding moves the quotient down by one), else 0.
inline uint32_t floor_step32(int32_t r, int32_t b) {
  return static_cast<uint32_t>(r != 0) & static_cast<uint32_t>((r ^ b) < 0);
}

/// Python's a % b for integers; b != 0 (checked by the caller).
template <typename T>
inline T int_remainder(T a, T b) {
  if constexpr (kDivideInDouble<T>) {
    int32_t q, r;
    trunc_divmod32(a, b, q, r);
    const uint32_t step = 0u - floor_step32(r, b);
    return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(r) + (static_cast<uint32_t>(int32_t{b}) & step)));
  } else if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;  // MIN % -1 overflows in C++
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

/// C's fmod for integers (sign of the dividend); b != 0.
template <typename T>
inline T int_fmod(T a, T b) {
  if constexpr (kDivideInDouble<T>) {
    int32_t q, r;
    trunc_divmod32(a, b, q, r);
    return static_cast<T>(r);
  } else if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

/// base ** exp for exp >= 0 (checked by the caller), wrapping like repeated
/// multiplication in two's complement.
template <typename T>
inline T int_pow(T base, T exp) {
  using U = wrap_t<T>;
  U result = 1;
  U b = static_cast<U>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e != 0) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<T>(result);
}

/// a << b; amounts outside [0, bits) give 0.
template <typename T>
inline T shift_left(T a, T b) {
  constexpr auto kBits = sizeof(T) * 8;
  if (static_cast<std::make_unsigned_t<T>>(b) >= kBits) return 0;
  return static_cast<T>(static_cast<wrap_t<T>>(a) << b);
}

/// a >> b (arithmetic for signed types); amounts outside [0, bits) give the
/// sign fill (0 or -1).
template <typename T>
inline T shift_right(T a, T b) {
  constexpr auto kBits = sizeof(T) * 8;
  if (static_cast<std::make_unsigned_t<T>>(b) >= kBits) {
    if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
    return 0;
  }
  return static_cast<T>(a >> b);
}

/// maximum / minimum that propagate NaN (either operand).
template <typename C>
inline C nan_max(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <typename C>
inline C nan_min(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
