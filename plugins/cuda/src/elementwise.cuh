// The CUDA plugin's elementwise path (issue 17 point 3): one launcher for
// every pointwise kernel. Operands arrive with the output's shape (docs/ops.md;
// stride 0 where broadcast, any stride, possibly negative). The launcher
//  - merges dimensions that are contiguous for every operand (a dense N-d
//    problem becomes one flat loop);
//  - uses 32-bit index math when every offset fits, 64-bit otherwise;
//  - takes a vector path when every operand is contiguous and aligned (each
//    thread loads and stores whole 16-byte packs of the widest operand, the
//    narrower ones in packs of as many elements), a scalar dense path when
//    contiguous but unaligned, and a strided path otherwise;
//  - launches on the call's stream.
// float16/bfloat16 compute in float and round once, as on cpu.
#pragma once

#include "common.cuh"

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

/// Element offset of row-major flat index i of a shape with these strides
/// (host and device; Index: int32_t where every offset fits, else int64_t).
template <typename Index>
__host__ __device__ __forceinline__ Index strided_offset(Index i, int ndim, const int64_t* shape, const int64_t* strides) {
  Index off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const Index size = static_cast<Index>(shape[d]);
    off += (i % size) * static_cast<Index>(strides[d]);
    i /= size;
  }
  return off;
}

/// Launches out[i] = f(in0[i], in1[i], ...) over the geometry on `stream`.
/// Out and In are storage types; F is a device functor taking compute types.
template <typename Out, typename... In, typename F>
void launch_elementwise(const Geometry<1 + sizeof...(In)>& g, char* out, const std::array<const char*, sizeof...(In)>& in,
                        F f, cudaStream_t stream);

}  // namespace tessera::cuda

#include "elementwise_impl.cuh"
