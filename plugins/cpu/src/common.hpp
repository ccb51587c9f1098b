// Shared helpers of the CPU plugin's kernels: the boxed-kernel adaptor, dtype
// masks and integer arithmetic without UB; argument access is the SDK's
// (tessera/sdk/kernel_args.hpp).
#pragma once

#include "isa.hpp"
#include <tessera/abi.h>
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/iterate.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

namespace sdk = ::tessera::sdk;

// ---------------------------------------------------------------------------
// dtype masks
// ---------------------------------------------------------------------------

using sdk::kAllMask;  // the SDK's masks (tessera/sdk/dtype.hpp)
using sdk::kBoolMask;
using sdk::kFloatMask;
using sdk::kIntMask;
using sdk::kNumericMask;

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
#define TSR_CPU_COLD TSR_SDK_COLD

using sdk::fail;
using sdk::invalid;

/// "cpu kernel add(float32)" — how errors name the failing call.
inline std::string kernel_where(const TsrKernelCall& call) { return sdk::kernel_where(call, "cpu"); }

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
// Arguments: the SDK's checked accessors (tessera/sdk/kernel_args.hpp)
// ---------------------------------------------------------------------------

using sdk::arg;
using sdk::bool_arg;
using sdk::check_binary_shapes;
using sdk::check_dtype;
using sdk::check_same_shape;
using sdk::check_scalar;
using sdk::check_tensor;
using sdk::data_ptr;
using sdk::dlpack_dtype;
using sdk::dtype_of;
using sdk::float_arg;
using sdk::int_arg;
using sdk::output;
using sdk::plain_operand;
using sdk::same_shape;
using sdk::shape_text;
using sdk::tag_name;
using sdk::tag_text;
using sdk::tensor_arg;

}}  // namespace tessera::cpu::TSR_CPU_ISA
