// Scalar math of the binary kernels that C++ does not give directly with the
// semantics Tessera wants (Python's remainder, integer powers, shifts past the
// bit width), free of undefined behaviour for every integer input.
#pragma once

#include "isa.hpp"
#include "common.hpp"

#include <cmath>
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

/// Python's a % b for integers; b != 0 (checked by the caller).
template <typename T>
inline T int_remainder(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
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
  if constexpr (std::is_signed_v<T>) {
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
