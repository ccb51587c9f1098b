// Implementation of elementwise.cuh (templates: included by it).
#pragma once

#include <tessera/sdk/plugin.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace tessera::cuda {

template <int N>
Geometry<N> make_geometry(const std::array<const DLTensor*, N>& ops) {
  Geometry<N> g;
  const DLTensor& out = *ops[0];
  // Drop size-1 dims; keep the others innermost-last.
  int64_t shape[64];
  int64_t strides[N][64];
  int nd = 0;
  for (int d = 0; d < out.ndim; ++d) {
    g.numel *= out.shape[d];
    if (out.shape[d] == 1) continue;
    shape[nd] = out.shape[d];
    for (int k = 0; k < N; ++k) strides[k][nd] = ops[k]->strides[d];
    ++nd;
  }
  if (g.numel == 0) return g;
  // Merge dim d into d+1 (inner) when every operand steps over d as over d+1 times its size.
  int m = 0;
  int64_t mshape[64];
  int64_t mstrides[N][64];
  for (int d = 0; d < nd; ++d) {
    if (m > 0) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k) mergeable &= mstrides[k][m - 1] == strides[k][d] * shape[d];
      if (mergeable) {
        mshape[m - 1] *= shape[d];
        for (int k = 0; k < N; ++k) mstrides[k][m - 1] = strides[k][d];
        continue;
      }
    }
    mshape[m] = shape[d];
    for (int k = 0; k < N; ++k) mstrides[k][m] = strides[k][d];
    ++m;
  }
  if (m > kMaxDims)
    throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "cuda elementwise: " + std::to_string(m) +
                                                  " dimensions left after merging (at most 8 are supported)");
  g.ndim = m;
  for (int d = 0; d < m; ++d) g.shape[d] = mshape[d];
  for (int k = 0; k < N; ++k)
    for (int d = 0; d < m; ++d) g.strides[k].s[d] = mstrides[k][d];
  g.dense = m <= 1;
  for (int k = 0; k < N && g.dense; ++k) g.dense = m == 0 || g.strides[k].s[0] == 1;
  return g;
}

namespace detail {

// The element offset of flat index i for one operand (row-major over the shape).
template <typename Index>
__device__ __forceinline__ Index offset_of(Index i, int ndim, const int64_t* shape, const int64_t* strides) {
  Index off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const Index size = static_cast<Index>(shape[d]);
    off += (i % size) * static_cast<Index>(strides[d]);
    i /= size;
  }
  return off;
}

template <typename Out, typename... In, typename F, size_t... I>
__device__ __forceinline__ void apply(Out* out, const std::array<const char*, sizeof...(In)>& in, int64_t o,
                                      const int64_t* offs, F f, std::index_sequence<I...>) {
  out[o] = store<Out>(f(load(reinterpret_cast<const In*>(in[I])[offs[I]])...));
}

template <typename Index, typename Out, typename F, typename... In>
__global__ void strided_kernel(Geometry<1 + sizeof...(In)> g, char* out, std::array<const char*, sizeof...(In)> in,
                               F f) {
  constexpr int N = 1 + sizeof...(In);
  const Index n = static_cast<Index>(g.numel);
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    int64_t offs[N];
    for (int k = 0; k < N; ++k) offs[k] = offset_of<Index>(i, g.ndim, g.shape, g.strides[k].s);
    apply<Out, In...>(reinterpret_cast<Out*>(out), in, offs[0], offs + 1, f, std::index_sequence_for<In...>{});
  }
}

// Dense operands: each thread handles V consecutive elements (V = 16 bytes /
// the widest element size).
template <int V, typename Out, typename F, typename... In>
__global__ void dense_kernel(int64_t n, char* out, std::array<const char*, sizeof...(In)> in, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * V;
  for (int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V; base < n; base += stride) {
    if (base + V <= n) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        int64_t offs[sizeof...(In)];
        for (size_t k = 0; k < sizeof...(In); ++k) offs[k] = base + v;
        apply<Out, In...>(reinterpret_cast<Out*>(out), in, base + v, offs, f, std::index_sequence_for<In...>{});
      }
    } else {
      for (int64_t i = base; i < n; ++i) {
        int64_t offs[sizeof...(In)];
        for (size_t k = 0; k < sizeof...(In); ++k) offs[k] = i;
        apply<Out, In...>(reinterpret_cast<Out*>(out), in, i, offs, f, std::index_sequence_for<In...>{});
      }
    }
  }
}

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw sdk::Error(TSR_ERROR_INTERNAL, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline int blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(b, 1), 65535 * 8));
}

}  // namespace detail

template <typename Out, typename... In, typename F>
void launch_elementwise(const Geometry<1 + sizeof...(In)>& g, char* out, const std::array<const char*, sizeof...(In)>& in,
                        F f, cudaStream_t stream) {
  if (g.numel == 0) return;
  constexpr int kThreads = 256;
  if (g.dense) {
    constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
    constexpr int V = static_cast<int>(16 / widest) > 0 ? static_cast<int>(16 / widest) : 1;
    detail::dense_kernel<V, Out, F, In...><<<detail::blocks_for((g.numel + V - 1) / V, kThreads), kThreads, 0, stream>>>(
        g.numel, out, in, f);
    detail::check_launch("cuda elementwise (dense) launch");
    return;
  }
  // 32-bit index math when the element count and every operand's extent fit.
  bool small = g.numel < (int64_t{1} << 31);
  for (int k = 0; k < 1 + static_cast<int>(sizeof...(In)) && small; ++k) {
    int64_t extent = 0;
    for (int d = 0; d < g.ndim; ++d) extent += (g.shape[d] - 1) * (g.strides[k].s[d] < 0 ? -g.strides[k].s[d] : g.strides[k].s[d]);
    small = extent < (int64_t{1} << 31);
  }
  const int blocks = detail::blocks_for(g.numel, kThreads);
  if (small) detail::strided_kernel<int32_t, Out, F, In...><<<blocks, kThreads, 0, stream>>>(g, out, in, f);
  else detail::strided_kernel<int64_t, Out, F, In...><<<blocks, kThreads, 0, stream>>>(g, out, in, f);
  detail::check_launch("cuda elementwise (strided) launch");
}

}  // namespace tessera::cuda
