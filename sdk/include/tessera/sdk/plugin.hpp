// tessera/sdk/plugin.hpp — header-only C++17 helpers for writing a Tessera plugin
// over the C ABI (tessera/abi.h). A plugin includes only abi/ and sdk/ headers and
// never links libtessera.
//
// What is here:
//  - sdk::Error, an exception plugin code may throw; sdk::guard() turns any C++
//    exception into a TsrError* so that none crosses the C boundary (ABI rule 4);
//  - sdk::make_error(), error objects the host frees through their destroy slot;
//  - sdk::Host, a thin wrapper over TsrHostApi for registering device types,
//    kernels and (ABI 1.3) new operators;
//  - op_desc(), a TsrOpDesc with sensible defaults, and the TsrOpArg builders
//    of an operator's derivative (grad_output, input, output, step, constant,
//    none, no_grad);
//  - TSR_SDK_PLUGIN(...), which defines the one exported entry point.
//
// Threading: everything here is stateless or per-object; safe from any thread
// (sdk::Host itself only during initialize, on its thread: see below).
#pragma once

#include <tessera/abi.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
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

/// Thin wrapper over the host's function table. Borrows the TsrHostApi, which
/// the host owns and keeps valid until the plugin's shutdown returns; the
/// register_* functions work only during initialize, on its thread (the host
/// refuses them otherwise), log() from any thread at any time.
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

  /// Whether the host can define operators (register_op, ABI 1.3): its
  /// TsrHostApi is large enough to hold the slot and the slot is not NULL.
  bool has_register_op() const noexcept {
    return api_->struct_size >= offsetof(TsrHostApi, register_op) + sizeof(api_->register_op) &&
           api_->register_op != nullptr;
  }

  /// Defines an operator in the plugin's namespace ("<plugin>::<op>", ABI 1.3;
  /// abi.h's TsrOpDesc is the specification). `desc` is borrowed: the SDK
  /// copies it, sets struct_size, and the host copies everything it points to
  /// (schema, arrays, steps, constants) before returning, except shape_fn and
  /// shape_context, which must stay valid until shutdown returns. Only during
  /// initialize, on its thread.
  ///
  /// Returns false, and logs at info level, when the host predates register_op
  /// (an older 1.x core: has_register_op() is false); the plugin still loads,
  /// and the kernels it then registers for the op are skipped by
  /// register_kernel (the host answers TSR_ERROR_NOT_FOUND for them). Any
  /// refusal throws sdk::Error with the host's code and message:
  /// TSR_ERROR_INVALID_ARGUMENT for a malformed description (the message names
  /// the field), TSR_ERROR_NOT_FOUND for a derivative step or backward op this
  /// core lacks, TSR_ERROR_ALREADY_EXISTS for a name taken. Nothing of a
  /// refused op is kept. Returns true when the op was registered.
  bool register_op(const TsrOpDesc& desc) const {
    if (!has_register_op()) {
      log(TSR_LOG_INFO, (std::string("op skipped: this core (ABI ") + std::to_string(api_->host_version.major) +
                         "." + std::to_string(api_->host_version.minor) +
                         ") cannot define operators (register_op is ABI 1.3): " +
                         (desc.schema ? desc.schema : "(no schema)"))
                            .c_str());
      return false;
    }
    TsrOpDesc copy = desc;
    copy.struct_size = sizeof(TsrOpDesc);
    throw_if_error(api_->register_op(api_->context, &copy));
    return true;
  }

  /// Writes `message` (NUL-terminated, borrowed) to the host's log at `level`
  /// (TSR_LOG_*). Any thread, until shutdown returns; does nothing when the
  /// host has no log slot.
  void log(int32_t level, const char* message) const {
    if (api_->struct_size >= offsetof(TsrHostApi, log) + sizeof(api_->log) && api_->log != nullptr) {
      api_->log(api_->context, level, message);
    }
  }

 private:
  const TsrHostApi* api_;
};

// ---- Operator descriptions (ABI 1.3) ----------------------------------------

/// A TsrOpDesc for `schema` with the defaults of a plain op: struct_size set,
/// no flags, TSR_SHAPE_SAME_AS_INPUT of argument 0, dims_arg and keepdim_arg
/// -1, the rule's output dtype (output_dtype 0 without
/// TSR_OP_FIXED_OUTPUT_DTYPE), no shape function, no derivative. `schema` is
/// borrowed: keep it valid until register_op returns (a string literal is).
constexpr TsrOpDesc op_desc(const char* schema) noexcept {
  TsrOpDesc d{};
  d.struct_size = sizeof(TsrOpDesc);
  d.schema = schema;
  d.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  d.shape_input = 0;
  d.dims_arg = -1;
  d.keepdim_arg = -1;
  d.derivative = TSR_DERIVATIVE_NONE;
  return d;
}

// ---- Derivative references (TsrOpArg, ABI 1.3) ------------------------------
//
// Builders for the TsrOpArg values of a TsrOpDesc's derivative: the arguments
// of its backward op or of its composite steps, and each input's gradient:
//
//   const TsrOpArg args[] = {sdk::grad_output(0), sdk::input(0)};
//   desc.backward_op = "myplugin::fused_gelu_backward";
//   desc.backward_args = args;
//
// Plain values: they own nothing (constant_ints and constant_string borrow
// their data, which register_op copies), cost nothing, and may be built on any
// thread. The host checks each one against the schemas when the op is
// registered (an index out of range, a value the parameter's type does not
// take: TSR_ERROR_INVALID_ARGUMENT naming the step and the argument).
// Note that output(i) here is the forward op's result i, while
// output(call, i, dtype) of kernel_args.hpp is a kernel's output tensor.

/// The gradient arriving for forward output `i` (zeros when none arrived).
constexpr TsrOpArg grad_output(int32_t i = 0) noexcept { return TsrOpArg{TSR_OP_ARG_GRAD_OUTPUT, i, 0, 0, {}}; }
/// Forward argument `arg` (schema order); a Tensor argument is saved for backward.
constexpr TsrOpArg input(int32_t arg) noexcept { return TsrOpArg{TSR_OP_ARG_INPUT, arg, 0, 0, {}}; }
/// Forward output `i`, saved for backward.
constexpr TsrOpArg output(int32_t i = 0) noexcept { return TsrOpArg{TSR_OP_ARG_OUTPUT, i, 0, 0, {}}; }
/// Result `out` of composite step `k` (an earlier step of the same derivative).
constexpr TsrOpArg step(int32_t k, int32_t out = 0) noexcept { return TsrOpArg{TSR_OP_ARG_STEP, k, out, 0, {}}; }
/// An omitted (None) argument of a step: only for an optional parameter.
constexpr TsrOpArg none() noexcept { return TsrOpArg{TSR_OP_ARG_NONE, 0, 0, 0, {}}; }
/// In input_grads: this differentiable input gets no gradient.
constexpr TsrOpArg no_grad() noexcept { return none(); }

/// A constant bool (for bool, Scalar or Tensor parameters; a Tensor one gets a
/// 0-d tensor, as for a number in an op call).
inline TsrOpArg constant(bool value) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_BOOL;
  a.constant.as.b = value ? 1 : 0;
  return a;
}
/// A constant integer (for int, float, Scalar, Tensor or int[] parameters).
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
inline TsrOpArg constant(T value) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_INT;
  a.constant.as.i = static_cast<int64_t>(value);
  return a;
}
/// A constant floating value (for float, Scalar or Tensor parameters).
template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline TsrOpArg constant(T value) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_FLOAT;
  a.constant.as.f = static_cast<double>(value);
  return a;
}
/// A constant dtype (TSR_DTYPE_*, for ScalarType parameters).
inline TsrOpArg constant_dtype(TsrDType dtype) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_DTYPE;
  a.constant.as.dtype = dtype;
  return a;
}
/// A constant int list (for int[] parameters). `data` (nullable when size is
/// 0) is borrowed until register_op returns.
inline TsrOpArg constant_ints(const int64_t* data, size_t size) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_INT_LIST;
  a.constant.as.int_list.data = data;
  a.constant.as.int_list.size = size;
  return a;
}
/// A constant string (for str parameters), NUL-terminated, borrowed until
/// register_op returns.
inline TsrOpArg constant_string(const char* value) noexcept {
  TsrOpArg a{TSR_OP_ARG_CONSTANT, 0, 0, 0, {}};
  a.constant.tag = TSR_VALUE_STRING;
  a.constant.as.string = value;
  return a;
}

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
