// tessera/sdk/kernel_args.hpp — checked, typed access to a kernel's arguments
// and outputs (TsrKernelCall, docs/ops.md), so that no kernel indexes
// call.args[i] unchecked. Header-only C++17 over abi.h; a plugin includes it
// and never links libtessera. The CPU, meta and sim plugins and the SDK
// example use it.
//
// Errors: every accessor throws sdk::Error (TSR_ERROR_INVALID_ARGUMENT) naming
// the argument, its index, and what was got and expected: "argument 'dim'
// (index 1) must be an int, got float (value tag 3)". kernel_entry<Label,
// Body> turns such a throw (and std::bad_alloc) into a TsrError whose message
// starts with "<label> kernel <op>(<dtype>): ". The checks are a few inline
// compares; messages are built only on failure, out of line.
//
// Lifetime: what the accessors return points into the TsrKernelCall, valid
// until the kernel returns. Threading: stateless; any thread.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

namespace tessera::sdk {

/// Marks error paths: out of line and out of the way of the hot code.
#define TSR_SDK_COLD __attribute__((noinline, cold))

/// Throws sdk::Error with `code` (kernel_entry prefixes the op and dtype).
[[noreturn]] TSR_SDK_COLD inline void fail(TsrErrorCode code, const std::string& message) {
  throw Error(code, message);
}
/// Throws sdk::Error(TSR_ERROR_INVALID_ARGUMENT, message).
[[noreturn]] TSR_SDK_COLD inline void invalid(const std::string& message) { fail(TSR_ERROR_INVALID_ARGUMENT, message); }

/// "<label> kernel add(float32)": how errors name the failing call.
inline std::string kernel_where(const TsrKernelCall& call, const char* label) {
  return std::string(label) + " kernel " + (call.op_name ? call.op_name : "?") + "(" + dtype_name(call.dtype) + ")";
}

/// Turns `void Body(const TsrKernelCall&)` into a TsrKernelFn: checks the call
/// (not NULL, struct_size covering the 1.0 fields), runs Body inside guard()
/// so that no exception crosses the C ABI, and prefixes sdk::Error and
/// std::bad_alloc messages with kernel_where(call, Label). `Label` names the
/// plugin or device in messages: `inline constexpr char kToy[] = "toy";`
/// then `host.register_kernel("add", "toy", mask, &sdk::kernel_entry<kToy, add>)`.
template <const char* Label, void (*Body)(const TsrKernelCall&)>
[[gnu::noinline]] TsrError* kernel_entry(const TsrKernelCall* call) noexcept {
  return guard([call] {
    if (call == nullptr) invalid(std::string(Label) + " kernel called with a NULL TsrKernelCall");
    if (call->struct_size < offsetof(TsrKernelCall, handle)) {
      invalid(kernel_where(*call, Label) + ": TsrKernelCall.struct_size " + std::to_string(call->struct_size) +
              " is too small");
    }
    try {
      Body(*call);
    } catch (const Error& e) {
      throw Error(e.code(), kernel_where(*call, Label) + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw Error(TSR_ERROR_OUT_OF_MEMORY, kernel_where(*call, Label) + ": out of memory for a temporary buffer");
    }
  });
}

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

inline const char* tag_name(TsrValueTag tag) {
  switch (tag) {
    case TSR_VALUE_NONE: return "none";
    case TSR_VALUE_TENSOR: return "tensor";
    case TSR_VALUE_INT: return "int";
    case TSR_VALUE_FLOAT: return "float";
    case TSR_VALUE_BOOL: return "bool";
    case TSR_VALUE_INT_LIST: return "int list";
    case TSR_VALUE_DTYPE: return "dtype";
    case TSR_VALUE_STRING: return "string";
    case TSR_VALUE_TENSOR_LIST: return "tensor list";
    default: return "unknown";
  }
}

inline std::string tag_text(TsrValueTag tag) {
  return std::string(tag_name(tag)) + " (value tag " + std::to_string(tag) + ")";
}

// Validation runs on every call, also for one-element tensors, so the checks
// below are a few compares inline; building a message happens only on failure,
// in the cold, out-of-line functions of namespace detail.

namespace detail {

[[noreturn]] TSR_SDK_COLD inline void missing_arg(const TsrKernelCall& call, size_t index, const char* name) {
  invalid(std::string("missing argument '") + name + "' (index " + std::to_string(index) + ", got " +
          std::to_string(call.num_args) + " arguments)");
}

[[noreturn]] TSR_SDK_COLD inline void bad_dlpack_dtype(const DLTensor& t, const char* name) {
  invalid(std::string("tensor '") + name + "' has an unsupported DLPack dtype (code " + std::to_string(t.dtype.code) +
          ", bits " + std::to_string(t.dtype.bits) + ", lanes " + std::to_string(t.dtype.lanes) + ")");
}

[[noreturn]] TSR_SDK_COLD inline void malformed_tensor(const char* name) {
  invalid(std::string("tensor '") + name + "' is malformed (NULL data, shape or strides, or negative ndim)");
}

[[noreturn]] TSR_SDK_COLD inline void not_a_tensor(const TsrValue& v, const char* name) {
  invalid(std::string("argument '") + name + "' must be a tensor, got " + tag_text(v.tag));
}

[[noreturn]] TSR_SDK_COLD inline void wrong_dtype(TsrDType got, TsrDType want, const char* name) {
  invalid(std::string("tensor '") + name + "' has dtype " + dtype_name(got) + ", expected " +
          dtype_name(want));
}

[[noreturn]] TSR_SDK_COLD inline void missing_output(const TsrKernelCall& call, size_t index) {
  invalid("missing output " + std::to_string(index) + " (got " + std::to_string(call.num_outputs) + " outputs)");
}

}  // namespace detail

/// Argument `index` (named `name` in messages); throws if absent.
inline const TsrValue& arg(const TsrKernelCall& call, size_t index, const char* name) {
  if (__builtin_expect(call.args == nullptr || index >= call.num_args, 0)) detail::missing_arg(call, index, name);
  return call.args[index];
}

/// The TsrDType of a tensor; throws for a DLPack dtype Tessera does not know.
inline TsrDType dtype_of(const DLTensor& t, const char* name) {
  const TsrDType d = dtype_from_dlpack(t.dtype);
  if (__builtin_expect(d < 0, 0)) detail::bad_dlpack_dtype(t, name);
  return d;
}

inline void check_tensor(const DLTensor* t, const char* name) {
  if (__builtin_expect(t == nullptr || t->ndim < 0 || (t->ndim > 0 && (t->shape == nullptr || t->strides == nullptr)) ||
                           (t->data == nullptr && numel(*t) != 0),
                       0)) {
    detail::malformed_tensor(name);
  }
}

/// The DLPack encoding of a TsrDType (lanes 1); {0, 0, 0} for an unknown one.
inline DLDataType dlpack_dtype(TsrDType d) {
  static constexpr DLDataType kTable[TSR_DTYPE_COUNT_1_0] = {
      {kDLBool, 8, 1},   {kDLUInt, 8, 1},  {kDLInt, 8, 1},    {kDLInt, 16, 1},   {kDLInt, 32, 1},
      {kDLInt, 64, 1},   {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}};
  return (d >= 0 && d < TSR_DTYPE_COUNT_1_0) ? kTable[d] : DLDataType{0, 0, 0};
}

/// Throws unless t's dtype is `dtype`: one comparison of the packed
/// (code, bits, lanes) triple on the hot path.
inline void check_dtype(const DLTensor& t, TsrDType dtype, const char* name) {
  const DLDataType want = dlpack_dtype(dtype);
  if (__builtin_expect(t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes, 0)) {
    detail::wrong_dtype(dtype_of(t, name), dtype, name);
  }
}

/// Tensor argument `index`; when `dtype` >= 0 its dtype must match.
inline const DLTensor& tensor_arg(const TsrKernelCall& call, size_t index, const char* name, TsrDType dtype = -1) {
  const TsrValue& v = arg(call, index, name);
  if (__builtin_expect(v.tag != TSR_VALUE_TENSOR, 0)) detail::not_a_tensor(v, name);
  check_tensor(v.as.tensor, name);
  if (dtype >= 0) check_dtype(*v.as.tensor, dtype, name);
  return *v.as.tensor;
}

/// Argument `index` as an int (TSR_VALUE_INT); throws naming `name` otherwise.
inline int64_t int_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_INT) invalid(std::string("argument '") + name + "' must be an int, got " + tag_text(v.tag));
  return v.as.i;
}
/// Argument `index` as a double: a float, or an int converted; throws naming `name` otherwise.
inline double float_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag == TSR_VALUE_FLOAT) return v.as.f;
  if (v.tag == TSR_VALUE_INT) return static_cast<double>(v.as.i);
  invalid(std::string("argument '") + name + "' must be a float, got " + tag_text(v.tag));
}
/// Argument `index` as a bool (TSR_VALUE_BOOL); throws naming `name` otherwise.
inline bool bool_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_BOOL) invalid(std::string("argument '") + name + "' must be a bool, got " + tag_text(v.tag));
  return v.as.b != 0;
}

/// Output `index`; when `dtype` >= 0 its dtype must match.
inline DLTensor& output(const TsrKernelCall& call, size_t index, TsrDType dtype = -1) {
  if (__builtin_expect(call.outputs == nullptr || index >= call.num_outputs, 0)) detail::missing_output(call, index);
  DLTensor& t = call.outputs[index];
  check_tensor(&t, "out");
  if (dtype >= 0) check_dtype(t, dtype, "out");
  return t;
}

/// Address of a tensor's first element. byte_offset is 0 in every kernel call
/// (docs/ops.md), but honouring it costs nothing and keeps views imported from
/// elsewhere right.
inline char* data_ptr(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

inline std::string shape_text(const DLTensor& t) {
  std::string s = "[";
  for (int32_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

inline bool same_shape(const DLTensor& a, const DLTensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

namespace detail {
[[noreturn]] TSR_SDK_COLD inline void shape_mismatch(const DLTensor& a, const char* a_name, const DLTensor& b,
                                                     const char* b_name) {
  invalid(std::string("'") + a_name + "' has shape " + shape_text(a) + " but '" + b_name + "' has shape " +
          shape_text(b));
}
}  // namespace detail

inline void check_same_shape(const DLTensor& a, const char* a_name, const DLTensor& b, const char* b_name) {
  if (__builtin_expect(!same_shape(a, b), 0)) detail::shape_mismatch(a, a_name, b, b_name);
}

/// Whether t is a well-formed tensor of dtype `want` holding data: the test
/// every operand of a call passes, done with few branches. A caller falls back
/// to tensor_arg/output, whose finer checks say what is wrong, when it fails.
[[gnu::always_inline]] inline bool plain_operand(const DLTensor* t, DLDataType want) {
  if (t == nullptr) return false;
  uint32_t got_bits, want_bits;
  std::memcpy(&got_bits, &t->dtype, sizeof got_bits);
  std::memcpy(&want_bits, &want, sizeof want_bits);
  return (got_bits == want_bits) & (t->data != nullptr) & (t->ndim >= 0) &
         ((t->ndim == 0) | ((t->shape != nullptr) & (t->strides != nullptr)));
}

/// Checks that self and other have out's shape (the kernel's contract for
/// pointwise ops), in one pass over the dims.
[[gnu::always_inline]] inline void check_binary_shapes(const DLTensor& self, const DLTensor& other,
                                                     const DLTensor& out) {
  if (__builtin_expect(self.ndim != out.ndim, 0)) detail::shape_mismatch(self, "self", out, "out");
  if (__builtin_expect(other.ndim != out.ndim, 0)) detail::shape_mismatch(other, "other", out, "out");
  for (int32_t d = out.ndim - 1; d >= 0; --d) {
    const int64_t n = out.shape[d];
    if (__builtin_expect(self.shape[d] != n, 0)) detail::shape_mismatch(self, "self", out, "out");
    if (__builtin_expect(other.shape[d] != n, 0)) detail::shape_mismatch(other, "other", out, "out");
  }
}

/// Rejects a scalar argument whose tag is not INT, FLOAT or BOOL.
namespace detail {
[[noreturn]] TSR_SDK_COLD inline void not_a_scalar(const TsrValue& v, const char* name) {
  invalid(std::string("argument '") + name + "' must be a scalar (int, float or bool), got " + tag_text(v.tag));
}
}  // namespace detail

inline void check_scalar(const TsrValue& v, const char* name) {
  if (__builtin_expect(v.tag != TSR_VALUE_INT && v.tag != TSR_VALUE_FLOAT && v.tag != TSR_VALUE_BOOL, 0)) {
    detail::not_a_scalar(v, name);
  }
}


// ---------------------------------------------------------------------------
// The other value tags
// ---------------------------------------------------------------------------

namespace detail {
[[noreturn]] TSR_SDK_COLD inline void wrong_tag(const TsrValue& v, size_t index, const char* name, const char* want) {
  invalid(std::string("argument '") + name + "' (index " + std::to_string(index) + ") must be " + want + ", got " +
          tag_text(v.tag));
}
}  // namespace detail

/// A list of ints (TSR_VALUE_INT_LIST): data and size, borrowed from the call.
struct IntList {
  const int64_t* data = nullptr;
  size_t size = 0;
  int64_t operator[](size_t i) const { return data[i]; }
  const int64_t* begin() const { return data; }
  const int64_t* end() const { return data + size; }
};

/// Argument `index` as an int list; throws naming `name` otherwise.
inline IntList int_list_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_INT_LIST) detail::wrong_tag(v, index, name, "an int list");
  if (v.as.int_list.size != 0 && v.as.int_list.data == nullptr) detail::wrong_tag(v, index, name, "a non-NULL int list");
  return IntList{v.as.int_list.data, v.as.int_list.size};
}

/// Argument `index` as a string (TSR_VALUE_STRING, NUL-terminated); throws naming `name` otherwise.
inline std::string_view string_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_STRING || v.as.string == nullptr) detail::wrong_tag(v, index, name, "a string");
  return std::string_view(v.as.string);
}

/// Argument `index` as a dtype (TSR_VALUE_DTYPE, a known one); throws naming `name` otherwise.
inline TsrDType dtype_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_DTYPE) detail::wrong_tag(v, index, name, "a dtype");
  if (v.as.dtype < 0 || v.as.dtype >= TSR_DTYPE_COUNT_1_0)
    invalid(std::string("argument '") + name + "' (index " + std::to_string(index) + ") holds unknown dtype " +
            std::to_string(v.as.dtype));
  return v.as.dtype;
}

/// Whether argument `index` was omitted (TSR_VALUE_NONE); throws if it is absent from the call.
inline bool is_none(const TsrKernelCall& call, size_t index, const char* name) {
  return arg(call, index, name).tag == TSR_VALUE_NONE;
}

/// Argument `index` as a tensor, or nullptr when omitted (an optional tensor, `Tensor?`).
inline const DLTensor* optional_tensor_arg(const TsrKernelCall& call, size_t index, const char* name,
                                           TsrDType dtype = -1) {
  if (is_none(call, index, name)) return nullptr;
  return &tensor_arg(call, index, name, dtype);
}

/// A tensor list (TSR_VALUE_TENSOR_LIST), every element checked as tensor_arg checks one.
struct TensorList {
  const DLTensor* const* data = nullptr;
  size_t size = 0;
  const DLTensor& operator[](size_t i) const { return *data[i]; }
};
inline TensorList tensor_list_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_TENSOR_LIST) detail::wrong_tag(v, index, name, "a tensor list");
  if (v.as.tensor_list.size != 0 && v.as.tensor_list.data == nullptr)
    detail::wrong_tag(v, index, name, "a non-NULL tensor list");
  for (size_t i = 0; i < v.as.tensor_list.size; ++i) check_tensor(v.as.tensor_list.data[i], name);
  return TensorList{v.as.tensor_list.data, v.as.tensor_list.size};
}

/// A scalar argument (INT, FLOAT or BOOL) converted to T (scalar_as in dtype.hpp's rules).
template <typename T>
inline T scalar_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  check_scalar(v, name);
  return scalar_as<T>(v);
}

}  // namespace tessera::sdk
