// What every kernel file of the CUDA plugin shares: the dtype masks and the
// dispatch over CUDA storage types, the call's stream and device, CUDA error
// checks that name the call, wrapping integer arithmetic, scratch memory from
// the core's allocator (TsrKernelCall.workspace) and launch-size helpers.
// Header-only; every function is safe from any thread (no state).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/kernel_args.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tessera::cuda {

namespace sdk = ::tessera::sdk;

/// Label of every kernel's messages: "cuda kernel add(float32): ...".
inline constexpr char kCuda[] = "cuda";

using sdk::kAllMask;  // the SDK's masks (tessera/sdk/dtype.hpp)
using sdk::kBoolMask;
using sdk::kFloatMask;
using sdk::kIntMask;
using sdk::kNumericMask;

/// The call's stream (NULL: the legacy default stream, never used by the core).
inline cudaStream_t stream_of(const TsrKernelCall& call) { return reinterpret_cast<cudaStream_t>(call.stream); }

/// Throws sdk::Error naming `what` and the CUDA error; clears CUDA's sticky
/// non-fatal error state first so the next call starts clean.
[[noreturn]] inline void fail_cuda(cudaError_t e, const std::string& what) {
  cudaGetLastError();
  const TsrErrorCode code = e == cudaErrorMemoryAllocation ? TSR_ERROR_OUT_OF_MEMORY : TSR_ERROR_INTERNAL;
  throw sdk::Error(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail_cuda(e, what);
}
/// After a <<<...>>> launch: reports a bad configuration or an earlier fault.
inline void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

/// Makes the call's device current for the scope and restores the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int index) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    restore_ = previous_ != index;
    if (restore_) check_cuda(cudaSetDevice(index), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (restore_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

/// Calls f(sdk::TypeTag<T>{}) with T the CUDA storage type of `d` (bool,
/// the integers, __half, __nv_bfloat16, float, double).
template <typename F>
decltype(auto) dispatch(TsrDType d, F&& f) {
  switch (d) {
    case TSR_DTYPE_BOOL: return f(sdk::TypeTag<bool>{});
    case TSR_DTYPE_UINT8: return f(sdk::TypeTag<uint8_t>{});
    case TSR_DTYPE_INT8: return f(sdk::TypeTag<int8_t>{});
    case TSR_DTYPE_INT16: return f(sdk::TypeTag<int16_t>{});
    case TSR_DTYPE_INT32: return f(sdk::TypeTag<int32_t>{});
    case TSR_DTYPE_INT64: return f(sdk::TypeTag<int64_t>{});
    case TSR_DTYPE_FLOAT16: return f(sdk::TypeTag<__half>{});
    case TSR_DTYPE_BFLOAT16: return f(sdk::TypeTag<__nv_bfloat16>{});
    case TSR_DTYPE_FLOAT32: return f(sdk::TypeTag<float>{});
    case TSR_DTYPE_FLOAT64: return f(sdk::TypeTag<double>{});
    default: throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, "no cuda kernel for dtype code " + std::to_string(d));
  }
}

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr bool kIsFloating = kIsHalf<T> || std::is_floating_point_v<T>;
template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// How a dtype's elements are read and written: bool as its byte (any nonzero
/// byte reads as true, as on cpu, and no byte value is undefined behaviour).
template <typename T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

/// The unsigned integer of N bytes, for bit-exact moves (NaN payloads, -0.0).
template <size_t N> struct UintOfSize;
template <> struct UintOfSize<1> { using type = uint8_t; };
template <> struct UintOfSize<2> { using type = uint16_t; };
template <> struct UintOfSize<4> { using type = uint32_t; };
template <> struct UintOfSize<8> { using type = uint64_t; };
template <typename T>
using bits_t = typename UintOfSize<sizeof(T)>::type;

/// The type arithmetic runs in: float for the half types, the type itself otherwise.
template <typename T> struct Compute { using type = T; };
template <> struct Compute<__half> { using type = float; };
template <> struct Compute<__nv_bfloat16> { using type = float; };
template <typename T>
using compute_t = typename Compute<T>::type;

/// Storage -> compute and compute -> storage (round to nearest even for the half types).
template <typename T> __host__ __device__ __forceinline__ compute_t<T> load(T v) { return v; }
template <> __host__ __device__ __forceinline__ float load(__half v) { return __half2float(v); }
template <> __host__ __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __host__ __device__ __forceinline__ T store(compute_t<T> v) { return static_cast<T>(v); }
template <> __host__ __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// An in-range value -> T as a cpu kernel's `T(v)` does: C++ conversion, half types
/// through float (so double -> half rounds twice, as sdk::Half(double) does), to bool:
/// nonzero. Out-of-range float -> integer is undefined here as in C++: copy_'s
/// defined dtype conversions (cpu's convert.hpp) are shape.cu's cpu_convert.
template <typename To, typename From>
__host__ __device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsHalf<From>) return load(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (kIsHalf<To>) {
    if constexpr (kIsHalf<From>) return store<To>(load(v));
    else return store<To>(static_cast<float>(v));
  } else {
    if constexpr (kIsHalf<From>) return static_cast<To>(load(v));
    else return static_cast<To>(v);
  }
}

/// Wrapping integer arithmetic (two's complement, no signed-overflow UB), as on cpu.
template <typename T>
using wrap_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T>
__host__ __device__ __forceinline__ T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) + static_cast<wrap_unsigned_t<T>>(b));
}
template <typename T>
__host__ __device__ __forceinline__ T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) - static_cast<wrap_unsigned_t<T>>(b));
}
template <typename T>
__host__ __device__ __forceinline__ T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) * static_cast<wrap_unsigned_t<T>>(b));
}
template <typename T>
__host__ __device__ __forceinline__ T wrap_neg(T a) {
  return static_cast<T>(wrap_unsigned_t<T>(0) - static_cast<wrap_unsigned_t<T>>(a));
}

/// Scratch memory on the call's device for work queued on the call's stream,
/// freed by the core (stream-ordered) when the kernel returns.
inline void* workspace(const TsrKernelCall& call, size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (call.struct_size < offsetof(TsrKernelCall, workspace) + sizeof(call.workspace) || call.workspace == nullptr)
    throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "the host offers no kernel workspace (ABI 1.2)");
  void* p = nullptr;
  sdk::throw_if_error(call.workspace(&call, nbytes, &p));
  return p;
}

inline constexpr int kThreads = 256;

/// Blocks of `threads` covering n items, capped for grid-stride loops.
inline int blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(b, 1), int64_t{65535} * 8));
}

/// Element (not byte) address of a tensor's first element.
template <typename T>
inline T* data_as(const DLTensor& t) {
  return reinterpret_cast<T*>(sdk::data_ptr(t));
}

}  // namespace tessera::cuda
