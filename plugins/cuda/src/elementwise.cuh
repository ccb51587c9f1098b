// The CUDA plugin's elementwise path (issue 17 point 3): one launcher for
// every pointwise kernel. Operands arrive with the output's shape (docs/ops.md;
// stride 0 where broadcast, any stride, possibly negative). The launcher
//  - merges dimensions that are contiguous for every operand (a dense N-d
//    problem becomes one flat loop);
//  - uses 32-bit index math when every offset fits, 64-bit otherwise;
//  - takes a dense path when every operand is contiguous (each thread handles
//    16 bytes' worth of consecutive elements of the widest operand; explicit
//    128-bit vector loads are still to come), a strided path otherwise;
//  - launches on the call's stream.
// float16/bfloat16 compute in float and round once, as on cpu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <tessera/abi.h>

#include <array>
#include <cstdint>

namespace tessera::cuda {

inline constexpr int kMaxDims = 8;

/// One operand's strides (in elements) over the merged shape.
struct Strides {
  int64_t s[kMaxDims];
};

/// The problem after merging: shape and each operand's strides; operand 0 is the output.
template <int N>
struct Geometry {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  Strides strides[N] = {};
  int64_t numel = 1;
  bool dense = true;  // every operand contiguous (or stride-0 broadcast of one element, never here)
};

/// Builds the merged geometry of N operands of `out`'s shape. Throws sdk::Error
/// for more than kMaxDims dimensions left after merging.
template <int N>
Geometry<N> make_geometry(const std::array<const DLTensor*, N>& ops);

/// Converts between storage and compute types (float for half types).
template <typename T> struct Compute { using type = T; };
template <> struct Compute<__half> { using type = float; };
template <> struct Compute<__nv_bfloat16> { using type = float; };
template <typename T> __device__ __forceinline__ typename Compute<T>::type load(T v) { return v; }
template <> __device__ __forceinline__ float load(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T store(typename Compute<T>::type v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// Launches out[i] = f(in0[i], in1[i], ...) over the geometry on `stream`.
/// Out and In are storage types; F is a device functor taking compute types.
template <typename Out, typename... In, typename F>
void launch_elementwise(const Geometry<1 + sizeof...(In)>& g, char* out, const std::array<const char*, sizeof...(In)>& in,
                        F f, cudaStream_t stream);

}  // namespace tessera::cuda

#include "elementwise_impl.cuh"
