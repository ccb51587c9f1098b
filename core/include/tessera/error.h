// tessera/error.h — the exception hierarchy of the C++ API.
//
// Every failure the core reports is a tessera::Error (derived from
// std::runtime_error) whose message names the op, the arguments' shapes, dtypes
// and devices, and the plugin when one is involved. The subclasses map onto the
// Python exception types (ValueError, TypeError, IndexError, NotImplementedError,
// MemoryError, RuntimeError). Errors are values: throwing one leaves the runtime
// usable. Thread-safe: error objects are immutable.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

enum class ErrorCode {
  InvalidArgument,  // bad shapes, values, devices
  TypeError,        // a dtype that an op cannot take
  IndexError,       // a dim or index out of range
  Unimplemented,    // unknown op, no kernel for (op, device, dtype)
  OutOfMemory,
  Unavailable,      // a device runtime or device is absent
  PluginError,      // a plugin could not be loaded or initialized
  Internal,
  Autograd,         // misuse of autograd: backward twice, modified saved tensor, leaf in-place
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

#define TESSERA_DEFINE_ERROR(Name, Code)                                          \
  class Name : public Error {                                                     \
   public:                                                                        \
    explicit Name(const std::string& message) : Error(ErrorCode::Code, message) {} \
  };
TESSERA_DEFINE_ERROR(ValueError, InvalidArgument)
TESSERA_DEFINE_ERROR(TypeError, TypeError)
TESSERA_DEFINE_ERROR(IndexError, IndexError)
TESSERA_DEFINE_ERROR(NotImplementedError, Unimplemented)
TESSERA_DEFINE_ERROR(OutOfMemoryError, OutOfMemory)
TESSERA_DEFINE_ERROR(UnavailableError, Unavailable)
TESSERA_DEFINE_ERROR(PluginError, PluginError)
TESSERA_DEFINE_ERROR(InternalError, Internal)
TESSERA_DEFINE_ERROR(AutogradError, Autograd)
#undef TESSERA_DEFINE_ERROR

/// Throws the Error subclass that matches `code`.
[[noreturn]] void throw_error(ErrorCode code, const std::string& message);

namespace detail {
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace tessera

/// TSR_CHECK(cond, ErrorClass, message parts...): throws ErrorClass(message) if !cond.
#define TSR_CHECK(cond, ErrorClass, ...)                              \
  do {                                                                \
    if (!(cond)) [[unlikely]] {                                       \
      throw ::tessera::ErrorClass(::tessera::detail::str(__VA_ARGS__)); \
    }                                                                 \
  } while (0)
