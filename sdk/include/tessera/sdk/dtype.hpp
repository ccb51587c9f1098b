// tessera/sdk/dtype.hpp — element types for plugin kernels: C++ types for every
// TsrDType (including half and bfloat16), compile-time dispatch over dtypes, and
// small DLTensor helpers. Header-only, C++17, no state; safe from any thread.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::sdk {

/// IEEE 754 binary16 storage type; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit, like a built-in float type
  operator float() const { return to_float(bits); }

  // Both conversions select every case with masks, not branches, so loops
  // calling them vectorize (a branchy to_float ran a float16 sum 28x slower
  // than PyTorch's). Bits: nearest even; overflow -> inf; subnormals kept;
  // from_float gives every NaN as the quiet NaN of its sign (sign | 0x7e00);
  // to_float keeps a NaN's payload, unquieted (mantissa << 13).
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    // Normal: rebias the exponent (-112 << 23) and round to nearest even on the 13 dropped bits.
    const uint32_t normal = (absx + 0xc8000fffu + ((absx >> 13) & 1u)) >> 13;
    // Subnormal or zero in half: adding 0.5 = 2^-1 aligns the half subnormal
    // grid with float's mantissa LSBs, so the FPU rounds.
    float a;
    std::memcpy(&a, &absx, 4);
    a += 0.5f;
    uint32_t sub;
    std::memcpy(&sub, &a, 4);
    sub -= 0x3f000000u;
    const uint32_t special = absx > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN, or inf / overflow
    const uint32_t is_big = 0u - static_cast<uint32_t>(absx >= 0x477ff000u);
    const uint32_t is_sub = 0u - static_cast<uint32_t>(absx < 0x38800000u);
    return static_cast<uint16_t>(sign | (special & is_big) | (sub & is_sub) | (normal & ~(is_big | is_sub)));
  }
  static float to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t em = uint32_t(h & 0x7fffu) << 13;  // exponent and mantissa at float's position
    const uint32_t exp = h & 0x7c00u;
    const uint32_t normal = em + 0x38000000u;   // exponent bias 15 -> 127
    const uint32_t special = em + 0x70000000u;  // inf / NaN: all-ones exponent, payload kept
    // Subnormal or zero: 2^-14 (1 + m / 1024) - 2^-14 = m 2^-24, exact.
    float hi, lo;
    const uint32_t hi_bits = em + 0x38800000u, lo_bits = 0x38800000u;
    std::memcpy(&hi, &hi_bits, 4);
    std::memcpy(&lo, &lo_bits, 4);
    const float sub_value = hi - lo;
    uint32_t sub;
    std::memcpy(&sub, &sub_value, 4);
    const uint32_t is_special = 0u - static_cast<uint32_t>(exp == 0x7c00u);
    const uint32_t is_sub = 0u - static_cast<uint32_t>(exp == 0);
    const uint32_t x = sign | (special & is_special) | (sub & is_sub) | (normal & ~(is_special | is_sub));
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

/// bfloat16 storage type (the upper half of a float32); arithmetic through float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT: implicit, like a built-in float type
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
  static float to_float(uint16_t b) {
    const uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "half types must be 2 bytes");

/// The C++ element type of each TsrDType.
template <TsrDType D> struct DTypeTraits;
template <> struct DTypeTraits<TSR_DTYPE_BOOL> { using type = bool; };
template <> struct DTypeTraits<TSR_DTYPE_UINT8> { using type = uint8_t; };
template <> struct DTypeTraits<TSR_DTYPE_INT8> { using type = int8_t; };
template <> struct DTypeTraits<TSR_DTYPE_INT16> { using type = int16_t; };
template <> struct DTypeTraits<TSR_DTYPE_INT32> { using type = int32_t; };
template <> struct DTypeTraits<TSR_DTYPE_INT64> { using type = int64_t; };
template <> struct DTypeTraits<TSR_DTYPE_FLOAT16> { using type = Half; };
template <> struct DTypeTraits<TSR_DTYPE_BFLOAT16> { using type = BFloat16; };
template <> struct DTypeTraits<TSR_DTYPE_FLOAT32> { using type = float; };
template <> struct DTypeTraits<TSR_DTYPE_FLOAT64> { using type = double; };

/// dtype masks for Host::register_kernel, by family (TSR_DTYPE_BIT of each member).
inline constexpr uint64_t kBoolMask = TSR_DTYPE_BIT(TSR_DTYPE_BOOL);
inline constexpr uint64_t kIntMask = TSR_DTYPE_BIT(TSR_DTYPE_UINT8) | TSR_DTYPE_BIT(TSR_DTYPE_INT8) |
                                     TSR_DTYPE_BIT(TSR_DTYPE_INT16) | TSR_DTYPE_BIT(TSR_DTYPE_INT32) |
                                     TSR_DTYPE_BIT(TSR_DTYPE_INT64);
inline constexpr uint64_t kFloatMask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT16) | TSR_DTYPE_BIT(TSR_DTYPE_BFLOAT16) |
                                       TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
inline constexpr uint64_t kAllMask = kBoolMask | kIntMask | kFloatMask;
inline constexpr uint64_t kNumericMask = kIntMask | kFloatMask;

/// Carries a type through a generic lambda: `[](auto tag){ using T = typename decltype(tag)::type; }`.
template <typename T> struct TypeTag { using type = T; };

inline const char* dtype_name(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_BOOL: return "bool";
    case TSR_DTYPE_UINT8: return "uint8";
    case TSR_DTYPE_INT8: return "int8";
    case TSR_DTYPE_INT16: return "int16";
    case TSR_DTYPE_INT32: return "int32";
    case TSR_DTYPE_INT64: return "int64";
    case TSR_DTYPE_FLOAT16: return "float16";
    case TSR_DTYPE_BFLOAT16: return "bfloat16";
    case TSR_DTYPE_FLOAT32: return "float32";
    case TSR_DTYPE_FLOAT64: return "float64";
    default: return "unknown";
  }
}

/// Calls f(TypeTag<T>{}) with T the C++ type of `d`; throws sdk::Error for an
/// unknown dtype. The switch is outside any loop: kernels dispatch once per call.
template <typename F>
decltype(auto) dispatch_dtype(TsrDType d, F&& f) {
  switch (d) {
    case TSR_DTYPE_BOOL: return f(TypeTag<bool>{});
    case TSR_DTYPE_UINT8: return f(TypeTag<uint8_t>{});
    case TSR_DTYPE_INT8: return f(TypeTag<int8_t>{});
    case TSR_DTYPE_INT16: return f(TypeTag<int16_t>{});
    case TSR_DTYPE_INT32: return f(TypeTag<int32_t>{});
    case TSR_DTYPE_INT64: return f(TypeTag<int64_t>{});
    case TSR_DTYPE_FLOAT16: return f(TypeTag<Half>{});
    case TSR_DTYPE_BFLOAT16: return f(TypeTag<BFloat16>{});
    case TSR_DTYPE_FLOAT32: return f(TypeTag<float>{});
    case TSR_DTYPE_FLOAT64: return f(TypeTag<double>{});
    default:
      throw Error(TSR_ERROR_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(d));
  }
}

/// Maps a DLPack dtype to a TsrDType; -1 if it has none.
inline TsrDType dtype_from_dlpack(DLDataType t) {
  if (t.lanes != 1) return -1;
  switch (t.code) {
    case kDLBool: return t.bits == 8 ? TSR_DTYPE_BOOL : -1;
    case kDLUInt: return t.bits == 8 ? TSR_DTYPE_UINT8 : -1;
    case kDLInt:
      switch (t.bits) {
        case 8: return TSR_DTYPE_INT8;
        case 16: return TSR_DTYPE_INT16;
        case 32: return TSR_DTYPE_INT32;
        case 64: return TSR_DTYPE_INT64;
        default: return -1;
      }
    case kDLFloat:
      switch (t.bits) {
        case 16: return TSR_DTYPE_FLOAT16;
        case 32: return TSR_DTYPE_FLOAT32;
        case 64: return TSR_DTYPE_FLOAT64;
        default: return -1;
      }
    case kDLBfloat: return t.bits == 16 ? TSR_DTYPE_BFLOAT16 : -1;
    default: return -1;
  }
}

/// Number of elements of a DLTensor (1 for 0-d).
inline int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

/// True if the tensor's elements are dense in row-major order.
inline bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

/// Reads a scalar argument (INT, FLOAT or BOOL) as T; throws for other tags.
template <typename T>
T scalar_as(const TsrValue& v) {
  constexpr bool kHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
  switch (v.tag) {
    case TSR_VALUE_INT:
      if constexpr (kHalfLike) return T(static_cast<float>(v.as.i)); else return static_cast<T>(v.as.i);
    case TSR_VALUE_FLOAT:
      if constexpr (kHalfLike) return T(static_cast<float>(v.as.f)); else return static_cast<T>(v.as.f);
    case TSR_VALUE_BOOL:
      if constexpr (kHalfLike) return T(v.as.b != 0 ? 1.0f : 0.0f); else return static_cast<T>(v.as.b != 0);
    default:
      throw Error(TSR_ERROR_INVALID_ARGUMENT,
                  "expected a scalar argument (int, float or bool), got value tag " + std::to_string(v.tag));
  }
}

}  // namespace tessera::sdk
