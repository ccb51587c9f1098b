#include "abi_bridge.h"

#include <cstring>
#include <new>

namespace tessera {
namespace {
void destroy_host_error(TsrError* self) noexcept { ::operator delete(static_cast<void*>(self)); }
TsrError g_oom_error = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, "out of memory while reporting an error",
                        [](TsrError*) {}};
}  // namespace

TsrError* make_host_error(TsrErrorCode code, const std::string& message) noexcept {
  // Error and text in one block so destroy is a single free.
  void* block = ::operator new(sizeof(TsrError) + message.size() + 1, std::nothrow);
  if (block == nullptr) return &g_oom_error;
  auto* err = static_cast<TsrError*>(block);
  char* text = reinterpret_cast<char*>(err + 1);
  std::memcpy(text, message.c_str(), message.size() + 1);
  std::memset(static_cast<void*>(err), 0, sizeof(TsrError));  // the padding after `code` too (H6)
  err->struct_size = sizeof(TsrError);
  err->code = code;
  err->message = text;
  err->destroy = &destroy_host_error;
  return err;
}

ErrorCode error_code_from_abi(TsrErrorCode code) {
  switch (code) {
    case TSR_ERROR_INVALID_ARGUMENT: return ErrorCode::InvalidArgument;
    case TSR_ERROR_OUT_OF_MEMORY: return ErrorCode::OutOfMemory;
    case TSR_ERROR_UNIMPLEMENTED: return ErrorCode::Unimplemented;
    case TSR_ERROR_UNAVAILABLE: return ErrorCode::Unavailable;
    case TSR_ERROR_VERSION_MISMATCH: return ErrorCode::PluginError;
    case TSR_ERROR_NOT_FOUND: return ErrorCode::InvalidArgument;
    case TSR_ERROR_ALREADY_EXISTS: return ErrorCode::InvalidArgument;
    case TSR_ERROR_OUT_OF_RANGE: return ErrorCode::IndexError;
    case TSR_ERROR_UNKNOWN_DEVICE_TYPE: return ErrorCode::InvalidArgument;
    default: return ErrorCode::Internal;
  }
}

std::string take_error_message(TsrError* err) {
  // A plugin built against a broken SDK could hand us garbage; stay defensive.
  std::string message = (err->struct_size >= offsetof(TsrError, message) + sizeof(err->message) && err->message)
                            ? err->message
                            : "(no message)";
  if (err->destroy != nullptr) err->destroy(err);
  return message;
}

void throw_abi_error(TsrError* err, const std::string& context) {
  const ErrorCode code = error_code_from_abi(err->code);
  throw_error(code, context + ": " + take_error_message(err));
}

}  // namespace tessera
