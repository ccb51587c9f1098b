// Shared helpers of the CPU plugin's kernels: the boxed-kernel adaptor, argument
// access with clear errors, dtype masks and integer arithmetic without UB.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/iterate.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::cpu {

namespace sdk = ::tessera::sdk;

// ---------------------------------------------------------------------------
// dtype masks
// ---------------------------------------------------------------------------

inline constexpr uint64_t kBoolMask = TSR_DTYPE_BIT(TSR_DTYPE_BOOL);
inline constexpr uint64_t kIntMask = TSR_DTYPE_BIT(TSR_DTYPE_UINT8) | TSR_DTYPE_BIT(TSR_DTYPE_INT8) |
                                     TSR_DTYPE_BIT(TSR_DTYPE_INT16) | TSR_DTYPE_BIT(TSR_DTYPE_INT32) |
                                     TSR_DTYPE_BIT(TSR_DTYPE_INT64);
inline constexpr uint64_t kFloatMask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT16) | TSR_DTYPE_BIT(TSR_DTYPE_BFLOAT16) |
                                       TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
inline constexpr uint64_t kAllMask = kBoolMask | kIntMask | kFloatMask;
inline constexpr uint64_t kNumericMask = kIntMask | kFloatMask;

/// One kernel of a registration table: op name, dtypes, entry point.
struct KernelRegistration {
  const char* op;
  uint64_t dtype_mask;
  TsrKernelFn fn;
};

/// Registers every kernel of `table` for the "cpu" device type.
template <size_t N>
void register_kernels(const sdk::Host& host, const KernelRegistration (&table)[N]) {
  for (const KernelRegistration& k : table) host.register_kernel(k.op, "cpu", k.dtype_mask, k.fn);
}

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, sdk::Half> || std::is_same_v<T, sdk::BFloat16>;
template <typename T>
inline constexpr bool kIsFloating = std::is_floating_point_v<T> || kIsHalfLike<T>;
template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// How elements are stored and read by kernels. bool tensors go through their
/// byte (read as `!= 0`), so a byte other than 0/1 from foreign memory is never
/// UB, and byte loops vectorize.
template <typename T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

/// Type arithmetic runs in: float for float16/bfloat16, else the type itself.
template <typename T>
using compute_t = std::conditional_t<kIsHalfLike<T>, float, T>;

/// Unsigned type wide enough that +, -, * wrap without UB for T (8/16-bit
/// operands would otherwise be promoted to signed int and could overflow).
template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
inline T wrap_add(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)); }
template <typename T>
inline T wrap_sub(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)); }
template <typename T>
inline T wrap_mul(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b)); }
template <typename T>
inline T wrap_neg(T a) { return static_cast<T>(wrap_t<T>(0) - static_cast<wrap_t<T>>(a)); }

// ---------------------------------------------------------------------------
// Errors and the kernel adaptor
// ---------------------------------------------------------------------------

/// Marks error paths: out of line and out of the way of the hot code.
#define TSR_CPU_COLD __attribute__((noinline, cold))

/// Throws sdk::Error; the adaptor prefixes the op and dtype.
[[noreturn]] TSR_CPU_COLD inline void fail(TsrErrorCode code, const std::string& message) {
  throw sdk::Error(code, message);
}
[[noreturn]] TSR_CPU_COLD inline void invalid(const std::string& message) { fail(TSR_ERROR_INVALID_ARGUMENT, message); }

/// "cpu kernel add(float32)" — how errors name the failing call.
inline std::string kernel_where(const TsrKernelCall& call) {
  return std::string("cpu kernel ") + (call.op_name ? call.op_name : "?") + "(" + sdk::dtype_name(call.dtype) + ")";
}

/// Turns a kernel body `void body(const TsrKernelCall&)` into a TsrKernelFn.
/// Everything runs inside sdk::guard, so no exception reaches the C caller;
/// sdk::Error and std::bad_alloc get the op and dtype in their message.
/// Never inlined: a fast entry falling back to it (binary_dense.hpp) then
/// tail-jumps here instead of carrying the guard's frame on its fast path.
template <void (*Body)(const TsrKernelCall&)>
[[gnu::noinline]] TsrError* kernel_entry(const TsrKernelCall* call) noexcept {
  return sdk::guard([call] {
    if (call == nullptr) invalid("cpu kernel called with a NULL TsrKernelCall");
    if (call->struct_size < offsetof(TsrKernelCall, handle)) {
      invalid(kernel_where(*call) + ": TsrKernelCall.struct_size " + std::to_string(call->struct_size) +
              " is too small");
    }
    try {
      Body(*call);
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), kernel_where(*call) + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, kernel_where(*call) + ": out of memory for a temporary buffer");
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

[[noreturn]] TSR_CPU_COLD inline void missing_arg(const TsrKernelCall& call, size_t index, const char* name) {
  invalid(std::string("missing argument '") + name + "' (index " + std::to_string(index) + ", got " +
          std::to_string(call.num_args) + " arguments)");
}

[[noreturn]] TSR_CPU_COLD inline void bad_dlpack_dtype(const DLTensor& t, const char* name) {
  invalid(std::string("tensor '") + name + "' has an unsupported DLPack dtype (code " + std::to_string(t.dtype.code) +
          ", bits " + std::to_string(t.dtype.bits) + ", lanes " + std::to_string(t.dtype.lanes) + ")");
}

[[noreturn]] TSR_CPU_COLD inline void malformed_tensor(const char* name) {
  invalid(std::string("tensor '") + name + "' is malformed (NULL data, shape or strides, or negative ndim)");
}

[[noreturn]] TSR_CPU_COLD inline void not_a_tensor(const TsrValue& v, const char* name) {
  invalid(std::string("argument '") + name + "' must be a tensor, got " + tag_text(v.tag));
}

[[noreturn]] TSR_CPU_COLD inline void wrong_dtype(TsrDType got, TsrDType want, const char* name) {
  invalid(std::string("tensor '") + name + "' has dtype " + sdk::dtype_name(got) + ", expected " +
          sdk::dtype_name(want));
}

[[noreturn]] TSR_CPU_COLD inline void missing_output(const TsrKernelCall& call, size_t index) {
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
  const TsrDType d = sdk::dtype_from_dlpack(t.dtype);
  if (__builtin_expect(d < 0, 0)) detail::bad_dlpack_dtype(t, name);
  return d;
}

inline void check_tensor(const DLTensor* t, const char* name) {
  if (__builtin_expect(t == nullptr || t->ndim < 0 || (t->ndim > 0 && (t->shape == nullptr || t->strides == nullptr)) ||
                           (t->data == nullptr && sdk::numel(*t) != 0),
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
[[noreturn]] TSR_CPU_COLD inline void shape_mismatch(const DLTensor& a, const char* a_name, const DLTensor& b,
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
[[noreturn]] TSR_CPU_COLD inline void not_a_scalar(const TsrValue& v, const char* name) {
  invalid(std::string("argument '") + name + "' must be a scalar (int, float or bool), got " + tag_text(v.tag));
}
}  // namespace detail

inline void check_scalar(const TsrValue& v, const char* name) {
  if (__builtin_expect(v.tag != TSR_VALUE_INT && v.tag != TSR_VALUE_FLOAT && v.tag != TSR_VALUE_BOOL, 0)) {
    detail::not_a_scalar(v, name);
  }
}

}  // namespace tessera::cpu
