// tessera/sdk/plugin.hpp — header-only C++17 helpers for writing a Tessera plugin
// over the C ABI (tessera/abi.h). A plugin includes only abi/ and sdk/ headers and
// never links libtessera.
//
// What is here:
//  - sdk::Error, an exception plugin code may throw; sdk::guard() turns any C++
//    exception into a TsrError* so that none crosses the C boundary (ABI rule 4);
//  - sdk::make_error(), error objects the host frees through their destroy slot;
//  - sdk::Host, a thin wrapper over TsrHostApi for registering device types and
//    kernels;
//  - TSR_SDK_PLUGIN(...), which defines the one exported entry point.
//
// Threading: everything here is stateless or per-object; safe from any thread.
#pragma once

#include <tessera/abi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace tessera::sdk {

/// An error raised inside plugin code. Caught by guard() and returned to the host
/// as a TsrError with the same code and message.
class Error : public std::runtime_error {
 public:
  Error(TsrErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  TsrErrorCode code() const noexcept { return code_; }

 private:
  TsrErrorCode code_;
};

namespace detail {
// The error object and its message live in one allocation, freed by destroy.
inline void destroy_error(TsrError* self) noexcept { ::operator delete(static_cast<void*>(self)); }
}  // namespace detail

/// Creates an error object owned by the receiver (who calls err->destroy(err)).
/// Never throws: if memory is exhausted it returns a static out-of-memory error
/// whose destroy does nothing.
inline TsrError* make_error(TsrErrorCode code, const char* message) noexcept {
  if (message == nullptr) message = "";
  const size_t len = std::strlen(message);
  void* block = ::operator new(sizeof(TsrError) + len + 1, std::nothrow);
  if (block == nullptr) {
    static TsrError oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY,
                           "out of memory while reporting an error", [](TsrError*) {}};
    return &oom;
  }
  auto* err = static_cast<TsrError*>(block);
  char* text = reinterpret_cast<char*>(err + 1);
  std::memcpy(text, message, len + 1);
  err->struct_size = sizeof(TsrError);
  err->code = code;
  err->message = text;
  err->destroy = &detail::destroy_error;
  return err;
}

inline TsrError* make_error(TsrErrorCode code, const std::string& message) noexcept {
  return make_error(code, message.c_str());
}

/// Throws sdk::Error carrying `err`'s code and message, and destroys `err`.
/// Does nothing for NULL. Use on errors the host returned to the plugin.
inline void throw_if_error(TsrError* err) {
  if (err == nullptr) return;
  Error ex(err->code, err->message ? err->message : "");
  err->destroy(err);
  throw ex;
}

/// Runs f() and converts any exception into an error object; NULL on success.
/// Wrap the body of every function the host calls with it (ABI rule 4).
template <typename F>
TsrError* guard(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(TSR_ERROR_OUT_OF_MEMORY, "out of memory (std::bad_alloc) in plugin code");
  } catch (const std::out_of_range& e) {
    return make_error(TSR_ERROR_OUT_OF_RANGE, std::string("C++ exception std::out_of_range: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return make_error(TSR_ERROR_INVALID_ARGUMENT,
                      std::string("C++ exception std::invalid_argument: ") + e.what());
  } catch (const std::exception& e) {
    return make_error(TSR_ERROR_INTERNAL, std::string("C++ exception in plugin: ") + e.what());
  } catch (...) {
    return make_error(TSR_ERROR_INTERNAL, "unknown C++ exception in plugin");
  }
}

/// Thin wrapper over the host's function table, valid during initialize.
class Host {
 public:
  explicit Host(const TsrHostApi* api) : api_(api) {}

  const TsrHostApi* api() const { return api_; }

  /// Registers a device type; throws sdk::Error on failure.
  void register_device_type(TsrDeviceTypeDesc desc) const {
    desc.struct_size = sizeof(TsrDeviceTypeDesc);
    throw_if_error(api_->register_device_type(api_->context, &desc));
  }

  /// Registers a kernel for (op, device type, dtypes). An op the host does not
  /// know, or a mask of dtypes none of which it knows (an older core), is logged
  /// at info level and skipped rather than failing the plugin, so a newer plugin
  /// still loads into an older 1.x core; returns false then. Any other failure
  /// throws sdk::Error — among them a device type no loaded plugin registered
  /// (TSR_ERROR_UNKNOWN_DEVICE_TYPE from a 1.1 host). A 1.0 host answers
  /// TSR_ERROR_NOT_FOUND for that too, so there it is skipped as well (with the
  /// host's message in the log). Returns true when the kernel was registered.
  bool register_kernel(const char* op_name, const char* device_type, uint64_t dtype_mask,
                       TsrKernelFn fn, void* context = nullptr) const {
    TsrKernelDesc desc{};
    desc.struct_size = sizeof(TsrKernelDesc);
    desc.op_name = op_name;
    desc.device_type = device_type;
    desc.dtype_mask = dtype_mask;
    desc.fn = fn;
    desc.context = context;
    TsrError* err = api_->register_kernel(api_->context, &desc);
    if (err != nullptr && err->code == TSR_ERROR_NOT_FOUND) {
      log(TSR_LOG_INFO, (std::string("kernel skipped: ") + (err->message ? err->message : "")).c_str());
      err->destroy(err);
      return false;
    }
    throw_if_error(err);
    return true;
  }

  void log(int32_t level, const char* message) const {
    if (api_->struct_size >= offsetof(TsrHostApi, log) + sizeof(api_->log) && api_->log != nullptr) {
      api_->log(api_->context, level, message);
    }
  }

 private:
  const TsrHostApi* api_;
};

}  // namespace tessera::sdk

/// Defines the plugin's one exported symbol. `init` has the signature
/// `void init(const tessera::sdk::Host& host, void** state)` and may throw;
/// `shutdown` is `void shutdown(void* state) noexcept` or nullptr.
#define TSR_SDK_PLUGIN(NAME, VERSION, DESCRIPTION, INIT, SHUTDOWN)                               \
  extern "C" TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* o) { \
    static TsrError* (*const init_thunk)(const TsrHostApi*, void**) =                            \
        [](const TsrHostApi* api, void** state) -> TsrError* {                                   \
      return ::tessera::sdk::guard([&] { INIT(::tessera::sdk::Host(api), state); });             \
    };                                                                                            \
    static const TsrPluginInfo info = {sizeof(TsrPluginInfo),                                     \
                                       {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR},            \
                                       NAME,                                                      \
                                       VERSION,                                                   \
                                       DESCRIPTION,                                               \
                                       init_thunk,                                                \
                                       SHUTDOWN};                                                 \
    (void)o; /* the host checks the version and refuses a major it lacks */                      \
    return &info;                                                                                 \
  }
