#include <tessera/dtype.h>
#include <tessera/error.h>
#include <tessera/scalar.h>

namespace tessera {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::TypeError: return "TypeError";
    case ErrorCode::IndexError: return "IndexError";
    case ErrorCode::Unimplemented: return "Unimplemented";
    case ErrorCode::OutOfMemory: return "OutOfMemory";
    case ErrorCode::Unavailable: return "Unavailable";
    case ErrorCode::PluginError: return "PluginError";
    case ErrorCode::Internal: return "Internal";
    case ErrorCode::Autograd: return "Autograd";
  }
  return "?";
}

void throw_error(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::InvalidArgument: throw ValueError(message);
    case ErrorCode::TypeError: throw TypeError(message);
    case ErrorCode::IndexError: throw IndexError(message);
    case ErrorCode::Unimplemented: throw NotImplementedError(message);
    case ErrorCode::OutOfMemory: throw OutOfMemoryError(message);
    case ErrorCode::Unavailable: throw UnavailableError(message);
    case ErrorCode::PluginError: throw PluginError(message);
    case ErrorCode::Autograd: throw AutogradError(message);
    case ErrorCode::Internal: break;
  }
  throw InternalError(message);
}

std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kByte: return "uint8";
    case kChar: return "int8";
    case kShort: return "int16";
    case kInt: return "int32";
    case kLong: return "int64";
    case kHalf: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat: return "float32";
    case kDouble: return "float64";
    default: return "undefined";
  }
}

ScalarType parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (dtype_name(static_cast<ScalarType>(i)) == name) return static_cast<ScalarType>(i);
  if (name == "float" ) return kFloat;
  if (name == "double") return kDouble;
  if (name == "half") return kHalf;
  if (name == "long") return kLong;
  if (name == "int") return kInt;
  throw TypeError(detail::str("unknown dtype '", name, "' (expected one of bool, uint8, int8, int16, int32, int64, "
                              "float16, bfloat16, float32, float64)"));
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  TSR_CHECK(is_valid(a) && is_valid(b), TypeError, "promote_types: undefined dtype");
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  const bool fa = is_floating_type(a), fb = is_floating_type(b);
  if (fa && fb) {
    if ((a == kHalf && b == kBFloat16) || (a == kBFloat16 && b == kHalf)) return kFloat;
    return element_size(a) >= element_size(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integers. uint8 mixed with a signed type needs the next wider signed type.
  if (a == kByte || b == kByte) {
    const ScalarType s = a == kByte ? b : a;
    return s == kChar ? kShort : s;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_type(from) && is_integral_type(to)) return false;
  if (is_floating_type(from) && to == kBool) return false;
  if (is_integral_type(from) && to == kBool) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return os << (s.to_bool() ? "True" : "False");
    case Scalar::Kind::Int: return os << s.to_long();
    default: return os << s.to_double();
  }
}

}  // namespace tessera
