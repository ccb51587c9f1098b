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
  if (out.ndim > 64)
    throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "cuda elementwise: " + std::to_string(out.ndim) +
                                                  " dimensions (at most 64 are supported)");
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

template <typename Out, typename... In, typename F, size_t... I>
__device__ __forceinline__ void apply(Out* out, const std::array<const char*, sizeof...(In)>& in, int64_t o,
                                      const int64_t* offs, F f, std::index_sequence<I...>) {
  out[o] = store<Out>(f(load(reinterpret_cast<const In*>(in[I])[offs[I]])...));
}

template <typename Index, typename Out, typename F, typename... In>
__global__ void strided_kernel(Geometry<1 + sizeof...(In)> g, char* out, std::array<const char*, sizeof...(In)> in,
                               F f) {
  constexpr int N = 1 + sizeof...(In);
  // The loop counter is 64-bit: i + grid size may pass 2^31 even when every offset fits in 32 bits.
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t offs[N];
    for (int k = 0; k < N; ++k) offs[k] = strided_offset<Index>(static_cast<Index>(i), g.ndim, g.shape, g.strides[k].s);
    apply<Out, In...>(reinterpret_cast<Out*>(out), in, offs[0], offs + 1, f, std::index_sequence_for<In...>{});
  }
}

// 128-bit vector access: V elements of T move as one aligned load or store.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// One pack per input, loaded once and read element by element.
template <int V, typename... Ts>
struct PackSet {};
template <int V, typename T, typename... Ts>
struct PackSet<V, T, Ts...> {
  Pack<T, V> head;
  PackSet<V, Ts...> tail;
};
template <size_t I, int V, typename T, typename... Ts>
__device__ __forceinline__ const auto& pack_at(const PackSet<V, T, Ts...>& s) {
  if constexpr (I == 0) return s.head;
  else return pack_at<I - 1>(s.tail);
}
template <int V, typename T, typename... Ts>
__device__ __forceinline__ PackSet<V, T, Ts...> load_packs(const char* const* ptrs, int64_t p) {
  PackSet<V, T, Ts...> s;
  s.head = reinterpret_cast<const Pack<T, V>*>(ptrs[0])[p];
  if constexpr (sizeof...(Ts) > 0) s.tail = load_packs<V, Ts...>(ptrs + 1, p);
  return s;
}

template <typename Out, typename... In, int V, typename F, size_t... I>
__device__ __forceinline__ Out apply_pack(const PackSet<V, In...>& s, int v, F f, std::index_sequence<I...>) {
  return store<Out>(f(load(pack_at<I>(s).v[v])...));
}

// Dense operands whose addresses are aligned to their pack: each thread moves
// whole packs (16 bytes of the widest operand); the n % V tail goes scalar.
template <int V, typename Out, typename F, typename... In>
__global__ void vector_kernel(int64_t n, char* out, std::array<const char*, sizeof...(In)> in, F f) {
  const int64_t packs = n / V;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = first; p < packs; p += step) {
    const PackSet<V, In...> loaded = load_packs<V, In...>(in.data(), p);
    Pack<Out, V> r;
#pragma unroll
    for (int v = 0; v < V; ++v) r.v[v] = apply_pack<Out, In...>(loaded, v, f, std::index_sequence_for<In...>{});
    reinterpret_cast<Pack<Out, V>*>(out)[p] = r;
  }
  const int64_t i = packs * V + first;
  if (i < n) {
    int64_t offs[sizeof...(In)];
    for (size_t k = 0; k < sizeof...(In); ++k) offs[k] = i;
    apply<Out, In...>(reinterpret_cast<Out*>(out), in, i, offs, f, std::index_sequence_for<In...>{});
  }
}

}  // namespace detail

template <typename Out, typename... In, typename F>
void launch_elementwise(const Geometry<1 + sizeof...(In)>& g, char* out, const std::array<const char*, sizeof...(In)>& in,
                        F f, cudaStream_t stream) {
  if (g.numel == 0) return;
  if (g.dense) {
    constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
    constexpr int V = static_cast<int>(16 / widest) > 0 ? static_cast<int>(16 / widest) : 1;
    bool aligned = reinterpret_cast<uintptr_t>(out) % (sizeof(Out) * V) == 0;
    {
      size_t k = 0;
      ((aligned = aligned && reinterpret_cast<uintptr_t>(in[k++]) % (sizeof(In) * V) == 0), ...);
    }
    if (V > 1 && aligned) {
      const int64_t threads_needed = std::max<int64_t>(g.numel / V, g.numel % V);
      detail::vector_kernel<V, Out, F, In...><<<blocks_for(threads_needed, kThreads), kThreads, 0, stream>>>(
          g.numel, out, in, f);
      check_launch("cuda elementwise (vector) launch");
      return;
    }
    // Unaligned dense operands (a view at an odd offset): the strided path over one dim.
  }
  // 32-bit index math when the element count and every operand's extent fit.
  bool small = g.numel < (int64_t{1} << 31);
  for (int k = 0; k < 1 + static_cast<int>(sizeof...(In)) && small; ++k) {
    int64_t extent = 0;
    for (int d = 0; d < g.ndim; ++d) extent += (g.shape[d] - 1) * (g.strides[k].s[d] < 0 ? -g.strides[k].s[d] : g.strides[k].s[d]);
    small = extent < (int64_t{1} << 31);
  }
  const int blocks = blocks_for(g.numel, kThreads);
  if (small) detail::strided_kernel<int32_t, Out, F, In...><<<blocks, kThreads, 0, stream>>>(g, out, in, f);
  else detail::strided_kernel<int64_t, Out, F, In...><<<blocks, kThreads, 0, stream>>>(g, out, in, f);
  check_launch("cuda elementwise (strided) launch");
}

}  // namespace tessera::cuda
