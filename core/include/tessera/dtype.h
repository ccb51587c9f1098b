// tessera/dtype.h — element types (ScalarType) and PyTorch's type promotion.
// Values equal the ABI's TSR_DTYPE_* codes. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace tessera {

enum class ScalarType : int8_t {
  Bool = 0,
  Byte = 1,  // uint8
  Char = 2,  // int8
  Short = 3,
  Int = 4,
  Long = 5,
  Half = 6,
  BFloat16 = 7,
  Float = 8,
  Double = 9,
  Undefined = -1,
};
inline constexpr int kNumScalarTypes = 10;

// ATen-style constants and NumPy-style aliases.
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kByte = ScalarType::Byte;
inline constexpr ScalarType kChar = ScalarType::Char;
inline constexpr ScalarType kShort = ScalarType::Short;
inline constexpr ScalarType kInt = ScalarType::Int;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kUInt8 = kByte, kInt8 = kChar, kInt16 = kShort, kInt32 = kInt,
                            kInt64 = kLong, kFloat16 = kHalf, kFloat32 = kFloat, kFloat64 = kDouble;

/// The dtype of floating-point factories when none is given.
inline constexpr ScalarType kDefaultFloat = kFloat;

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case kBool: case kByte: case kChar: return 1;
    case kShort: case kHalf: case kBFloat16: return 2;
    case kInt: case kFloat: return 4;
    case kLong: case kDouble: return 8;
    default: return 0;
  }
}
constexpr bool is_floating_type(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
/// Integer types, bool excluded.
constexpr bool is_integral_type(ScalarType t) {
  return t == kByte || t == kChar || t == kShort || t == kInt || t == kLong;
}
constexpr bool is_valid(ScalarType t) { return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumScalarTypes; }

/// "float32", "int64", ... (NumPy names).
std::string_view dtype_name(ScalarType t);
/// Parses a NumPy-style name ("float32", "int64", "bool", ...); throws TypeError.
ScalarType parse_dtype(std::string_view name);
std::ostream& operator<<(std::ostream& os, ScalarType t);

/// The smallest type both a and b convert to without losing range (PyTorch's
/// promote_types): uint8+int8 -> int16, float16+bfloat16 -> float32, bool loses.
ScalarType promote_types(ScalarType a, ScalarType b);

/// Whether a value of `from` may be stored into a tensor of `to` by an in-place op
/// (PyTorch's canCast: no float -> integer, no non-bool -> bool).
bool can_cast(ScalarType from, ScalarType to);

}  // namespace tessera

namespace tessera {
/// The ScalarType of a C++ element type (bool, fixed-width integers, float, double).
template <typename T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = kBool; };
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = kByte; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = kChar; };
template <> struct CppTypeToScalarType<int16_t> { static constexpr ScalarType value = kShort; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = kInt; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = kLong; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = kFloat; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = kDouble; };
}  // namespace tessera
