// Internal: converting between the C ABI's error objects and tessera::Error, and
// between ABI dtype codes and ScalarType.
#pragma once

#include <tessera/abi.h>
#include <tessera/dtype.h>
#include <tessera/error.h>
#include <tessera/scalar.h>

#include <bit>
#include <cstring>
#include <string>

namespace tessera {

/// An error object the core hands to a plugin; freed by its destroy slot.
TsrError* make_host_error(TsrErrorCode code, const std::string& message) noexcept;

/// The tessera::ErrorCode matching an ABI error code.
ErrorCode error_code_from_abi(TsrErrorCode code);

/// The message of `err` (or "(no message)"); destroys `err`.
std::string take_error_message(TsrError* err);

/// Throws the Error matching `err`, with message "<context>: <plugin message>",
/// and destroys `err` first. `err` must be non-null.
[[noreturn]] void throw_abi_error(TsrError* err, const std::string& context);

/// Calls `f` (a plugin function returning TsrError*). A C++ exception escaping
/// it — a violation of ABI rule 4 — becomes an INTERNAL error object instead of
/// unwinding through the core.
template <typename F>
[[gnu::always_inline]] inline TsrError* call_plugin(F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_host_error(TSR_ERROR_INTERNAL, std::string("C++ exception crossed the C ABI: ") + e.what());
  } catch (...) {
    return make_host_error(TSR_ERROR_INTERNAL, "C++ exception crossed the C ABI");
  }
}

/// Sets a kernel argument's tag and its reserved field (0, as abi.h says) with
/// one 8-byte store: arguments are built per call, on the tiny-op path too.
[[gnu::always_inline]] inline void set_value_tag(TsrValue& v, TsrValueTag tag) {
  static_assert(offsetof(TsrValue, tag) == 0 && offsetof(TsrValue, reserved) == 4);
  const uint64_t word = static_cast<uint32_t>(tag);
  const uint64_t head = std::endian::native == std::endian::little ? word : word << 32;
  std::memcpy(static_cast<void*>(&v), &head, sizeof head);
}

/// A number as a kernel argument for dtype `as`: BOOL (nonzero) for bool, FLOAT
/// for floating dtypes, else INT. The one Scalar -> TsrValue conversion: meta
/// rules (StructuredCall::set_scalar) and the pointwise lane both use it.
[[gnu::always_inline]] inline void set_scalar_value(TsrValue& v, const Scalar& s, ScalarType as) {
  if (as == kBool) {
    set_value_tag(v, TSR_VALUE_BOOL);
    v.as.b = s.to_bool() ? 1 : 0;
  } else if (is_floating_type(as)) {
    set_value_tag(v, TSR_VALUE_FLOAT);
    v.as.f = s.to_double();
  } else {
    set_value_tag(v, TSR_VALUE_INT);
    v.as.i = s.to_long();
  }
}

inline TsrDType to_abi_dtype(ScalarType t) { return static_cast<TsrDType>(t); }
namespace detail {
constexpr uint32_t dl_dtype_word(uint8_t code, uint8_t bits) { return uint32_t(code) | uint32_t(bits) << 8 | 1u << 16; }
// Hidden: read directly, not through the GOT as a default-visibility table would be.
[[gnu::visibility("hidden")]] inline constexpr uint32_t kDLDTypeWords[kNumScalarTypes] = {
    dl_dtype_word(kDLBool, 8),   dl_dtype_word(kDLUInt, 8),     dl_dtype_word(kDLInt, 8),
    dl_dtype_word(kDLInt, 16),   dl_dtype_word(kDLInt, 32),     dl_dtype_word(kDLInt, 64),
    dl_dtype_word(kDLFloat, 16), dl_dtype_word(kDLBfloat, 16), dl_dtype_word(kDLFloat, 32),
    dl_dtype_word(kDLFloat, 64)};
}  // namespace detail
/// The DLPack encoding of a dtype, as kernels see it (bool is kDLBool/8). Read
/// and written as one 32-bit word: a kernel reads it so, and a load spanning two
/// narrower stores made a moment ago stalls on store forwarding.
inline DLDataType to_dl_dtype(ScalarType t) {
  static_assert(sizeof(DLDataType) == sizeof(uint32_t));
  DLDataType d;
  std::memcpy(&d, &detail::kDLDTypeWords[static_cast<int>(t)], sizeof d);
  return d;
}

}  // namespace tessera
