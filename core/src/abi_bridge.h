// Internal: converting between the C ABI's error objects and tessera::Error, and
// between ABI dtype codes and ScalarType.
#pragma once

#include <tessera/abi.h>
#include <tessera/dtype.h>
#include <tessera/error.h>

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
TsrError* call_plugin(F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_host_error(TSR_ERROR_INTERNAL, std::string("C++ exception crossed the C ABI: ") + e.what());
  } catch (...) {
    return make_host_error(TSR_ERROR_INTERNAL, "C++ exception crossed the C ABI");
  }
}

inline TsrDType to_abi_dtype(ScalarType t) { return static_cast<TsrDType>(t); }

}  // namespace tessera
