// The CUDA plugin's nn kernels (docs/ops/nn.md): softmax, log_softmax,
// layer_norm, _layer_norm_backward, nll_loss, _nll_loss_smoothed, max_pool2d, _max_pool2d_backward and avg_pool2d, with
// the cpu plugin's semantics (plugins/cpu/src/nn.cpp, nn_conv.cpp).
//
// softmax / log_softmax / layer_norm are fused per row. A dense row along the
// innermost dim of up to 1024 elements is held in a warp's registers; a
// longer one takes a block, which keeps it in shared memory when it fits
// (read once, 128-bit loads and stores when aligned) and re-reads it from
// global memory otherwise. Along a dim that is not innermost, each thread owns
// one column and loops over the dim (neighbouring threads read neighbouring
// columns). A softmax input that is not dense is first gathered into
// workspace memory. float16/bfloat16 compute in float, float64 in double;
// layer_norm accumulates its mean and variance in double, as cpu does.
//
// nll_loss works in double (as cpu); its reductions sum per-block partials in
// a fixed order (no atomics on floats: the same bits every run). A target out
// of range sets a flag in workspace memory that the host reads back after
// synchronizing the call's stream, and raises TSR_ERROR_OUT_OF_RANGE.
//
// Pooling: one thread per output element, visiting only the taps inside the
// input (windows may be far larger than the input).
#include "common.cuh"
#include "kernels.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

using sdk::invalid;

inline constexpr int kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;
// Rows up to this length take one warp each, held in registers.
inline constexpr int64_t kWarpRowMax = 1024;
// Shared memory a block may use to hold its row: under the 48 KiB a launch
// gets without opting in, leaving room for the reductions' scratch.
inline constexpr size_t kRowCacheBytes = 44 * 1024;
// Dims walked with per-dim strides (cpu's limit too).
inline constexpr int kMaxNdim = 64;
// Grid cap for grid-stride loops.
inline constexpr int64_t kMaxBlocks = int64_t{1} << 20;
// Blocks of per-block partial sums in nll_loss's reductions (fixed for a given
// size, so the summation order is too).
inline constexpr int64_t kMaxPartials = 1024;

// Elements per 128-bit access.
template <typename T>
inline constexpr int kVec = static_cast<int>(16 / sizeof(T));

bool is_dense(const DLTensor& t) {
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int grid_for(int64_t items, int threads) {
  return static_cast<int>(std::clamp<int64_t>((items + threads - 1) / threads, 1, kMaxBlocks));
}

// ---- device helpers ----

template <typename A>
__device__ __forceinline__ A neg_inf() {
  return -std::numeric_limits<A>::infinity();
}

// max ignoring NaN (a NaN reaches the row's result through the sum instead),
// commutative so every lane of a butterfly ends with the same value.
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};
struct SumOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a + b;
  }
};

// Every lane gets the warp's result. All 32 lanes must call it.
template <typename A, typename Op>
__device__ __forceinline__ A warp_reduce(A v, Op op) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Every thread gets the block's result; every thread of the block must call
// it (blockDim.x a multiple of 32). The two barriers also make back-to-back
// calls safe: no thread writes `part` again before all have read it.
template <typename A, typename Op>
__device__ A block_reduce(A v, Op op, A identity) {
  __shared__ A part[kWarp + 1];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_reduce(v, op);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = lane < static_cast<int>(blockDim.x / kWarp) ? part[lane] : identity;
    w = warp_reduce(w, op);
    if (lane == 0) part[kWarp] = w;
  }
  __syncthreads();
  return part[kWarp];
}

// e^d for d = x - max <= 0. float flushes below FLT_MIN's range to 0, as cpu's
// exp does (so -inf entries give exactly 0); NaN stays NaN.
__device__ __forceinline__ float exp_shifted(float d) { return d < -87.33654475f ? 0.0f : expf(d); }
__device__ __forceinline__ double exp_shifted(double d) { return exp(d); }
__device__ __forceinline__ float log_of(float v) { return logf(v); }
__device__ __forceinline__ double log_of(double v) { return log(v); }

// double -> T rounded once (cpu rounds double to the half types in one step).
template <typename T>
__device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __double2half(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __double2bfloat16(v);
  } else {
    return static_cast<T>(v);
  }
}

// V consecutive elements from/to global memory; one 128-bit access when V > 1
// (the caller guarantees 16-byte alignment then).
template <typename T, int V>
__device__ __forceinline__ void load_chunk(const T* p, compute_t<T> (&v)[V]) {
  if constexpr (V == 1) {
    v[0] = load(p[0]);
  } else {
    static_assert(V * sizeof(T) == 16, "a chunk is one 128-bit access");
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = load(e[j]);
  }
}
template <typename T, int V>
__device__ __forceinline__ void store_chunk(T* p, const compute_t<T> (&v)[V]) {
  if constexpr (V == 1) {
    p[0] = store<T>(v[0]);
  } else {
    alignas(16) T e[V];
#pragma unroll
    for (int j = 0; j < V; ++j) e[j] = store<T>(v[j]);
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(e);
  }
}

// The block's row cache in dynamic shared memory.
template <typename A>
__device__ __forceinline__ A* row_cache() {
  extern __shared__ __align__(16) unsigned char nn_row_cache[];
  return reinterpret_cast<A*>(nn_row_cache);
}
// Chunk c of the cache, in 128-bit accesses where the chunk allows.
template <typename A, int V>
__device__ __forceinline__ void cache_put(A* cache, int64_t c, const A (&v)[V]) {
  if constexpr (std::is_same_v<A, float> && V % 4 == 0) {
    float4* p = reinterpret_cast<float4*>(cache + c * V);
#pragma unroll
    for (int u = 0; u < V / 4; ++u) p[u] = make_float4(v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3]);
  } else if constexpr (std::is_same_v<A, double> && V % 2 == 0) {
    double2* p = reinterpret_cast<double2*>(cache + c * V);
#pragma unroll
    for (int u = 0; u < V / 2; ++u) p[u] = make_double2(v[2 * u], v[2 * u + 1]);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) cache[c * V + j] = v[j];
  }
}
template <typename A, int V>
__device__ __forceinline__ void cache_get(const A* cache, int64_t c, A (&v)[V]) {
  if constexpr (std::is_same_v<A, float> && V % 4 == 0) {
    const float4* p = reinterpret_cast<const float4*>(cache + c * V);
#pragma unroll
    for (int u = 0; u < V / 4; ++u) {
      const float4 q = p[u];
      v[4 * u] = q.x, v[4 * u + 1] = q.y, v[4 * u + 2] = q.z, v[4 * u + 3] = q.w;
    }
  } else if constexpr (std::is_same_v<A, double> && V % 2 == 0) {
    const double2* p = reinterpret_cast<const double2*>(cache + c * V);
#pragma unroll
    for (int u = 0; u < V / 2; ++u) {
      const double2 q = p[u];
      v[2 * u] = q.x, v[2 * u + 1] = q.y;
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = cache[c * V + j];
  }
}

// Calls f(std::integral_constant<int, K>) with the fewest values per lane K
// (a power of two) that hold a row of n <= 1024 elements in one warp.
template <typename F>
void with_lane_count(int64_t n, F&& f) {
  if (n <= 32) return f(std::integral_constant<int, 1>{});
  if (n <= 64) return f(std::integral_constant<int, 2>{});
  if (n <= 128) return f(std::integral_constant<int, 4>{});
  if (n <= 256) return f(std::integral_constant<int, 8>{});
  if (n <= 512) return f(std::integral_constant<int, 16>{});
  return f(std::integral_constant<int, 32>{});
}

// Threads of a block-per-row kernel: about 4 chunks each, 128 to 1024.
int row_block_threads(int64_t chunks) {
  int threads = 128;
  while (threads < 1024 && int64_t{threads} * 4 < chunks) threads *= 2;
  return threads;
}

constexpr int kWarpRowsThreads = 128;  // 4 rows per block in the warp-per-row kernels

// ---- gather: a strided tensor into contiguous order ----

// Shape and strides with size-1 dims dropped and contiguous neighbours merged.
struct Strided {
  int ndim = 0;
  int64_t shape[kMaxNdim] = {};
  int64_t stride[kMaxNdim] = {};
};

Strided merged_layout(const DLTensor& t) {
  Strided g;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 1) continue;
    if (g.ndim > 0 && g.stride[g.ndim - 1] == t.strides[d] * t.shape[d]) {
      g.shape[g.ndim - 1] *= t.shape[d];
      g.stride[g.ndim - 1] = t.strides[d];
    } else {
      g.shape[g.ndim] = t.shape[d];
      g.stride[g.ndim] = t.strides[d];
      ++g.ndim;
    }
  }
  return g;
}

template <typename T>
__global__ void gather_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t total, Strided g) {
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t rem = i, off = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t q = rem / g.shape[d];
      off += (rem - q * g.shape[d]) * g.stride[d];
      rem = q;
    }
    out[i] = x[off];
  }
}

// ---- softmax / log_softmax ----

// One warp per dense row of n <= 32 * K elements, held in registers.
template <typename T, bool Log, int K>
__global__ void softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int n) {
  using A = compute_t<T>;
  const int lane = threadIdx.x % kWarp;
  const int64_t warps_per_block = blockDim.x / kWarp;
  const int64_t step = int64_t{gridDim.x} * warps_per_block;
  for (int64_t r = int64_t{blockIdx.x} * warps_per_block + threadIdx.x / kWarp; r < rows; r += step) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    A v[K];
    A m = neg_inf<A>();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = lane + k * kWarp;
      v[k] = i < n ? load(xr[i]) : A(0);
      if (i < n) m = MaxOp{}(m, v[k]);
    }
    m = warp_reduce(m, MaxOp{});
    A s = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (lane + k * kWarp < n) {
        const A e = exp_shifted(v[k] - m);
        s += e;
        if constexpr (!Log) v[k] = e;
      }
    }
    s = warp_reduce(s, SumOp{});
    if constexpr (Log) {
      const A ls = log_of(s);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = lane + k * kWarp;
        if (i < n) yr[i] = store<T>((v[k] - m) - ls);  // x - max first: exact near the max
      }
    } else {
      const A inv = A(1) / s;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = lane + k * kWarp;
        if (i < n) yr[i] = store<T>(v[k] * inv);
      }
    }
  }
}

// One block per dense row, chunks of V elements (thread t owns chunks t,
// t + blockDim.x, ...: the same ones in every pass, so the cache needs no
// barrier). Cached: the row lives in shared memory after the first read.
// Launched with up to 1024 threads (row_block_threads): the bound keeps ptxas
// (or the driver's JIT of the PTX) within 64 registers a thread.
template <typename T, bool Log, int V, bool Cached>
__global__ void __launch_bounds__(1024, 1) softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  using A = compute_t<T>;
  A* cache = row_cache<A>();
  const int64_t chunks = n / V;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    A m = neg_inf<A>();
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V];
      load_chunk<T, V>(xr + c * V, v);
      if constexpr (Cached) cache_put<A, V>(cache, c, v);
#pragma unroll
      for (int j = 0; j < V; ++j) m = MaxOp{}(m, v[j]);
    }
    m = block_reduce(m, MaxOp{}, neg_inf<A>());
    A s = 0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V];
      if constexpr (Cached) {
        cache_get<A, V>(cache, c, v);
      } else {
        load_chunk<T, V>(xr + c * V, v);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const A e = exp_shifted(v[j] - m);
        s += e;
        v[j] = e;
      }
      if constexpr (Cached && !Log) cache_put<A, V>(cache, c, v);
    }
    s = block_reduce(s, SumOp{}, A(0));
    const A ls = Log ? log_of(s) : A(0);
    const A inv = A(1) / s;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V];
      if constexpr (Cached) {
        cache_get<A, V>(cache, c, v);  // Log: x; otherwise e^(x - max)
      } else {
        load_chunk<T, V>(xr + c * V, v);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if constexpr (Log) {
          v[j] = (v[j] - m) - ls;
        } else if constexpr (Cached) {
          v[j] = v[j] * inv;
        } else {
          v[j] = exp_shifted(v[j] - m) * inv;
        }
      }
      store_chunk<T, V>(yr + c * V, v);
    }
  }
}

// Dense [outer, n, inner] with inner > 1: a block owns 32 neighbouring
// (outer, inner) columns (threadIdx.x; a warp reads 32 neighbouring
// elements) and its blockDim.y threads split each column's n elements, their
// partial max and sum combined in a fixed order.
inline constexpr int kColsX = 32, kColsMaxY = 32;

template <typename A, typename Op>
__device__ A column_reduce(A (&red)[kColsMaxY][kColsX], A v, Op op) {
  red[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  A r = red[0][threadIdx.x];
  for (unsigned k = 1; k < blockDim.y; ++k) r = op(r, red[k][threadIdx.x]);
  __syncthreads();  // every thread has read before `red` is written again
  return r;
}

template <typename T, bool Log>
__global__ void __launch_bounds__(kColsX * kColsMaxY, 1) softmax_cols_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n,
                                    int64_t inner) {
  using A = compute_t<T>;
  __shared__ A red[kColsMaxY][kColsX];
  const int64_t cols = outer * inner;
  // The loop is uniform over the block (column_reduce has barriers).
  for (int64_t col0 = int64_t{blockIdx.x} * kColsX; col0 < cols; col0 += int64_t{gridDim.x} * kColsX) {
    const int64_t col = col0 + threadIdx.x;
    const bool active = col < cols;
    const T* xc = x + (active ? (col / inner) * n * inner + col % inner : 0);
    T* yc = y + (xc - x);
    A m = neg_inf<A>();
    if (active) {
      for (int64_t j = threadIdx.y; j < n; j += blockDim.y) m = MaxOp{}(m, load(xc[j * inner]));
    }
    m = column_reduce(red, m, MaxOp{});
    A s = 0;
    if (active) {
      for (int64_t j = threadIdx.y; j < n; j += blockDim.y) s += exp_shifted(load(xc[j * inner]) - m);
    }
    s = column_reduce(red, s, SumOp{});
    if (!active) continue;
    if constexpr (Log) {
      const A ls = log_of(s);
      for (int64_t j = threadIdx.y; j < n; j += blockDim.y) yc[j * inner] = store<T>((load(xc[j * inner]) - m) - ls);
    } else {
      const A inv = A(1) / s;
      for (int64_t j = threadIdx.y; j < n; j += blockDim.y)
        yc[j * inner] = store<T>(exp_shifted(load(xc[j * inner]) - m) * inv);
    }
  }
}

// softmax of dense x ([outer, n, inner]) into dense y.
template <typename T, bool Log>
void launch_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  using A = compute_t<T>;
  if (inner > 1) {
    // About 16 elements of a column per thread, up to 32 threads per column.
    int ny = 1;
    while (ny < kColsMaxY && int64_t{ny} * 16 < n) ny *= 2;
    softmax_cols_kernel<T, Log><<<grid_for(outer * inner, kColsX), dim3(kColsX, ny), 0, stream>>>(x, y, outer, n, inner);
    check_launch("softmax column kernel launch");
    return;
  }
  if (n <= kWarpRowMax) {
    with_lane_count(n, [&](auto k) {
      constexpr int K = decltype(k)::value;
      softmax_warp_kernel<T, Log, K><<<grid_for(outer, kWarpRowsThreads / kWarp), kWarpRowsThreads, 0, stream>>>(
          x, y, outer, static_cast<int>(n));
    });
    check_launch("softmax warp kernel launch");
    return;
  }
  const bool vec = aligned16(x) && aligned16(y) && n % kVec<T> == 0;
  const bool cached = static_cast<size_t>(n) * sizeof(A) <= kRowCacheBytes;
  const int threads = row_block_threads(vec ? n / kVec<T> : n);
  const int blocks = static_cast<int>(std::min(outer, kMaxBlocks));
  const size_t smem = cached ? static_cast<size_t>(n) * sizeof(A) : 0;
  if (vec && cached) {
    softmax_block_kernel<T, Log, kVec<T>, true><<<blocks, threads, smem, stream>>>(x, y, outer, n);
  } else if (vec) {
    softmax_block_kernel<T, Log, kVec<T>, false><<<blocks, threads, smem, stream>>>(x, y, outer, n);
  } else if (cached) {
    softmax_block_kernel<T, Log, 1, true><<<blocks, threads, smem, stream>>>(x, y, outer, n);
  } else {
    softmax_block_kernel<T, Log, 1, false><<<blocks, threads, smem, stream>>>(x, y, outer, n);
  }
  check_launch("softmax block kernel launch");
}

template <bool Log>
void softmax_kernel(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(x, "self", out, "out");
  const int64_t dim = sdk::int_arg(call, 1, "dim");
  if (x.ndim > kMaxNdim) invalid("tensors of more than 64 dims are not supported");
  if (x.ndim > 0 && (dim < 0 || dim >= x.ndim)) invalid("dim " + std::to_string(dim) + " is out of range");
  if (!is_dense(out)) invalid("out must be contiguous");
  const int64_t total = sdk::numel(x);
  if (total == 0) return;
  const int64_t n = x.ndim == 0 ? 1 : x.shape[dim];
  int64_t inner = 1;
  for (int32_t d = static_cast<int32_t>(dim) + 1; d < x.ndim; ++d) inner *= x.shape[d];
  const int64_t outer = total / (n * inner);
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("softmax needs a floating dtype");
    } else {
      const T* in = data_as<const T>(x);
      if (!is_dense(x)) {
        T* buf = static_cast<T*>(workspace(call, static_cast<size_t>(total) * sizeof(T)));
        gather_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(in, buf, total, merged_layout(x));
        check_launch("softmax gather kernel launch");
        in = buf;
      }
      launch_softmax<T, Log>(in, data_as<T>(out), outer, n, inner, stream);
    }
  });
}

// ---- layer_norm ----

// A row's mean and 1 / sqrt(var + eps) in A, from sums in double (as cpu):
// y = (x - mean) * rstd [* w] [+ b] in A.
template <typename A>
struct Norm {
  A mean, rstd;
};

template <typename A>
__device__ __forceinline__ Norm<A> make_norm(double sum_sq, double mean, int64_t m, double eps) {
  return {static_cast<A>(mean), static_cast<A>(1.0 / sqrt(sum_sq / static_cast<double>(m) + eps))};
}

// One warp per row of m <= 32 * K elements.
template <typename T, int K>
__global__ void layer_norm_warp_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                       T* __restrict__ y, int64_t rows, int m, double eps) {
  using A = compute_t<T>;
  const int lane = threadIdx.x % kWarp;
  const int64_t warps_per_block = blockDim.x / kWarp;
  const int64_t step = int64_t{gridDim.x} * warps_per_block;
  for (int64_t r = int64_t{blockIdx.x} * warps_per_block + threadIdx.x / kWarp; r < rows; r += step) {
    const T* xr = x + r * m;
    T* yr = y + r * m;
    A v[K];
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = lane + k * kWarp;
      v[k] = i < m ? load(xr[i]) : A(0);
      s += static_cast<double>(v[k]);  // the padding adds 0
    }
    const double mean = warp_reduce(s, SumOp{}) / static_cast<double>(m);
    // Centred second pass (no cancellation, unlike E[x^2] - E[x]^2).
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (lane + k * kWarp < m) {
        const double d = static_cast<double>(v[k]) - mean;
        ss += d * d;
      }
    }
    const Norm<A> norm = make_norm<A>(warp_reduce(ss, SumOp{}), mean, m, eps);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = lane + k * kWarp;
      if (i < m) {
        A o = (v[k] - norm.mean) * norm.rstd;
        if (w) o *= load(w[i]);
        if (b) o += load(b[i]);
        yr[i] = store<T>(o);
      }
    }
  }
}

// One block per row, chunks of V as softmax_block_kernel (up to 1024 threads).
template <typename T, int V, bool Cached>
__global__ void __launch_bounds__(1024, 1) layer_norm_block_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                        T* __restrict__ y, int64_t rows, int64_t m, double eps) {
  using A = compute_t<T>;
  A* cache = row_cache<A>();
  const int64_t chunks = m / V;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * m;
    T* yr = y + r * m;
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V];
      load_chunk<T, V>(xr + c * V, v);
      if constexpr (Cached) cache_put<A, V>(cache, c, v);
#pragma unroll
      for (int j = 0; j < V; ++j) s += static_cast<double>(v[j]);
    }
    const double mean = block_reduce(s, SumOp{}, 0.0) / static_cast<double>(m);
    double ss = 0.0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V];
      if constexpr (Cached) {
        cache_get<A, V>(cache, c, v);
      } else {
        load_chunk<T, V>(xr + c * V, v);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const double d = static_cast<double>(v[j]) - mean;
        ss += d * d;
      }
    }
    const Norm<A> norm = make_norm<A>(block_reduce(ss, SumOp{}, 0.0), mean, m, eps);
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      A v[V], wv[V], bv[V];
      if constexpr (Cached) {
        cache_get<A, V>(cache, c, v);
      } else {
        load_chunk<T, V>(xr + c * V, v);
      }
      if (w) load_chunk<T, V>(w + c * V, wv);
      if (b) load_chunk<T, V>(b + c * V, bv);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        A o = (v[j] - norm.mean) * norm.rstd;
        if (w) o *= wv[j];
        if (b) o += bv[j];
        v[j] = o;
      }
      store_chunk<T, V>(yr + c * V, v);
    }
  }
}

void layer_norm_kernel(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "input", call.dtype);
  const DLTensor* w = sdk::optional_tensor_arg(call, 1, "weight", call.dtype);
  const DLTensor* b = sdk::optional_tensor_arg(call, 2, "bias", call.dtype);
  const int64_t k = sdk::int_arg(call, 3, "normalized_ndim");
  const double eps = sdk::float_arg(call, 4, "eps");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(x, "input", out, "out");
  if (k < 1 || k > x.ndim) invalid("normalized_ndim " + std::to_string(k) + " out of range");
  if (!is_dense(x)) invalid("input must be contiguous");
  if (!is_dense(out)) invalid("out must be contiguous");
  int64_t m = 1;
  for (int32_t d = x.ndim - static_cast<int32_t>(k); d < x.ndim; ++d) m *= x.shape[d];
  const int64_t total = sdk::numel(x);
  if (total == 0) return;
  for (const DLTensor* p : {w, b}) {
    if (p && (sdk::numel(*p) != m || !is_dense(*p))) invalid("weight and bias must be dense with normalized_shape's size");
  }
  const int64_t rows = total / m;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("layer_norm needs a floating dtype");
    } else {
      using A = compute_t<T>;
      const T* xp = data_as<const T>(x);
      const T* wp = w ? data_as<const T>(*w) : nullptr;
      const T* bp = b ? data_as<const T>(*b) : nullptr;
      T* yp = data_as<T>(out);
      if (m <= kWarpRowMax) {
        with_lane_count(m, [&](auto lanes) {
          constexpr int K = decltype(lanes)::value;
          layer_norm_warp_kernel<T, K><<<grid_for(rows, kWarpRowsThreads / kWarp), kWarpRowsThreads, 0, stream>>>(
              xp, wp, bp, yp, rows, static_cast<int>(m), eps);
        });
        check_launch("layer_norm warp kernel launch");
        return;
      }
      const bool vec = aligned16(xp) && aligned16(yp) && (!wp || aligned16(wp)) && (!bp || aligned16(bp)) &&
                       m % kVec<T> == 0;
      const bool cached = static_cast<size_t>(m) * sizeof(A) <= kRowCacheBytes;
      const int threads = row_block_threads(vec ? m / kVec<T> : m);
      const int blocks = static_cast<int>(std::min(rows, kMaxBlocks));
      const size_t smem = cached ? static_cast<size_t>(m) * sizeof(A) : 0;
      if (vec && cached) {
        layer_norm_block_kernel<T, kVec<T>, true><<<blocks, threads, smem, stream>>>(xp, wp, bp, yp, rows, m, eps);
      } else if (vec) {
        layer_norm_block_kernel<T, kVec<T>, false><<<blocks, threads, smem, stream>>>(xp, wp, bp, yp, rows, m, eps);
      } else if (cached) {
        layer_norm_block_kernel<T, 1, true><<<blocks, threads, smem, stream>>>(xp, wp, bp, yp, rows, m, eps);
      } else {
        layer_norm_block_kernel<T, 1, false><<<blocks, threads, smem, stream>>>(xp, wp, bp, yp, rows, m, eps);
      }
      check_launch("layer_norm block kernel launch");
    }
  });
}

// ---- _layer_norm_backward ----
//
// One block per row: the row's mean and rstd (sums in double, as the forward),
// then s1 = sum gh and s2 = sum gh * (x - mean) with gh = grad * weight (or
// grad), in double, and grad_input = rstd * gh - rstd^3 * s2 / m * (x - mean)
// - rstd * s1 / m. The row's mean and rstd go to workspace memory when the
// weight and bias gradients are wanted; a second kernel then gives each column
// one thread that sums grad * (x - mean) * rstd and grad over the rows in
// order (no atomics: the same bits every run).

template <typename T>
__global__ void __launch_bounds__(256) layer_norm_backward_rows_kernel(
    const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ gx,
    compute_t<T>* __restrict__ stats, int64_t rows, int64_t m, double eps) {
  using A = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * m;
    const T* gr = g + r * m;
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) s += static_cast<double>(load(xr[i]));
    const double mean = block_reduce(s, SumOp{}, 0.0) / static_cast<double>(m);
    double ss = 0.0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const double d = static_cast<double>(load(xr[i])) - mean;
      ss += d * d;
    }
    const Norm<A> norm = make_norm<A>(block_reduce(ss, SumOp{}, 0.0), mean, m, eps);
    if (stats != nullptr && threadIdx.x == 0) {
      stats[2 * r] = norm.mean;
      stats[2 * r + 1] = norm.rstd;
    }
    if (gx == nullptr) continue;
    double s1 = 0.0, s2 = 0.0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const A gv = load(gr[i]);
      const double gh = static_cast<double>(w ? gv * load(w[i]) : gv);
      s1 += gh;
      s2 += gh * static_cast<double>(load(xr[i]) - norm.mean);
    }
    s1 = block_reduce(s1, SumOp{}, 0.0);
    s2 = block_reduce(s2, SumOp{}, 0.0);
    const double rstd = static_cast<double>(norm.rstd);
    const A cx = static_cast<A>(-rstd * rstd * rstd * s2 / static_cast<double>(m));
    const A c0 = static_cast<A>(-rstd * s1 / static_cast<double>(m));
    T* gxr = gx + r * m;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const A gv = load(gr[i]);
      const A gh = w ? gv * load(w[i]) : gv;
      gxr[i] = store<T>(norm.rstd * gh + cx * (load(xr[i]) - norm.mean) + c0);
    }
  }
}

template <typename T>
__global__ void layer_norm_backward_cols_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                                const compute_t<T>* __restrict__ stats, T* __restrict__ gw,
                                                T* __restrict__ gb, int64_t rows, int64_t m) {
  using A = compute_t<T>;
  for (int64_t j = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < m; j += int64_t{gridDim.x} * blockDim.x) {
    double sw = 0.0, sb = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const A gv = load(g[r * m + j]);
      sw += static_cast<double>(gv * ((load(x[r * m + j]) - stats[2 * r]) * stats[2 * r + 1]));
      sb += static_cast<double>(gv);
    }
    gw[j] = from_double<T>(sw);
    gb[j] = from_double<T>(sb);
  }
}

void layer_norm_backward_kernel(const TsrKernelCall& call) {
  const DLTensor& g = sdk::tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = sdk::tensor_arg(call, 1, "input", call.dtype);
  const DLTensor* w = sdk::optional_tensor_arg(call, 2, "weight", call.dtype);
  const int64_t k = sdk::int_arg(call, 3, "normalized_ndim");
  const double eps = sdk::float_arg(call, 4, "eps");
  const bool input_grad = sdk::bool_arg(call, 5, "input_grad");
  const bool affine_grads = sdk::bool_arg(call, 6, "affine_grads");
  DLTensor& gx = sdk::output(call, 0, call.dtype);
  DLTensor& gw = sdk::output(call, 1, call.dtype);
  DLTensor& gb = sdk::output(call, 2, call.dtype);
  sdk::check_same_shape(g, "grad_output", x, "input");
  if (k < 1 || k > x.ndim) invalid("normalized_ndim " + std::to_string(k) + " out of range");
  int64_t m = 1;
  for (int32_t d = x.ndim - static_cast<int32_t>(k); d < x.ndim; ++d) m *= x.shape[d];
  // Without elements the strides say nothing (contiguous() keeps any).
  if (sdk::numel(x) != 0 && (!is_dense(x) || !is_dense(g))) invalid("input and grad_output must be contiguous");
  if (input_grad) sdk::check_same_shape(gx, "grad_input", x, "input");
  if (w && (sdk::numel(*w) != m || !is_dense(*w))) invalid("weight must be dense with normalized_shape's size");
  for (const DLTensor* p : {&gx, &gw, &gb}) {
    if (sdk::numel(*p) != 0 && !is_dense(*p)) invalid("outputs must be contiguous");
  }
  if (affine_grads && (sdk::numel(gw) != m || sdk::numel(gb) != m))
    invalid("grad_weight and grad_bias must have normalized_shape's size");
  const int64_t rows = m == 0 ? 0 : sdk::numel(x) / m;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("_layer_norm_backward needs a floating dtype");
    } else {
      using A = compute_t<T>;
      A* stats = affine_grads && rows > 0
                     ? static_cast<A*>(workspace(call, static_cast<size_t>(rows) * 2 * sizeof(A)))
                     : nullptr;
      if (rows > 0 && (input_grad || stats != nullptr)) {
        layer_norm_backward_rows_kernel<T><<<static_cast<int>(std::min(rows, kMaxBlocks)), 256, 0, stream>>>(
            data_as<const T>(g), data_as<const T>(x), w ? data_as<const T>(*w) : nullptr,
            input_grad ? data_as<T>(gx) : nullptr, stats, rows, m, eps);
        check_launch("_layer_norm_backward rows kernel launch");
      }
      if (affine_grads && m > 0) {
        layer_norm_backward_cols_kernel<T><<<grid_for(m, 256), 256, 0, stream>>>(
            data_as<const T>(g), data_as<const T>(x), stats, data_as<T>(gw), data_as<T>(gb), rows, m);
        check_launch("_layer_norm_backward columns kernel launch");
      }
    }
  });
}

// ---- nll_loss (and its label-smoothed form) ----

// Target dims and the strides of target and input along them: target dim d
// is input dim 0 (d == 0) or d + 1.
struct NllGeom {
  int ndim = 0;
  int64_t shape[kMaxNdim] = {};
  int64_t tstride[kMaxNdim] = {};
  int64_t xstride[kMaxNdim] = {};
};

__device__ __forceinline__ void nll_offsets(const NllGeom& g, int64_t k, int64_t& toff, int64_t& xoff) {
  int64_t rem = k;
  toff = 0, xoff = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t q = rem / g.shape[d];
    const int64_t i = rem - q * g.shape[d];
    rem = q;
    toff += i * g.tstride[d];
    xoff += i * g.xstride[d];
  }
}

inline constexpr unsigned long long kNoBadTarget = ~0ull;

// Per sample k: loss = -(1 - eps) * w[t] * x[k, t] (- eps / C * sum_c w[c] * x[k, c]
// when Smooth: one warp per sample then), 0 for an ignored target; in double.
// Writes out[k] (reduction none) or one (loss sum, weight sum) partial per
// block. A target outside [0, C) lowers bad[0] to its sample index.
template <typename T, bool Smooth>
__global__ void nll_loss_kernel(const T* __restrict__ x, const int64_t* __restrict__ target, const T* __restrict__ w,
                                int64_t wstride, NllGeom g, int64_t count, int64_t C, int64_t cstride, int64_t ignore,
                                double eps, T* __restrict__ out, double* __restrict__ partials,
                                unsigned long long* bad) {
  constexpr int G = Smooth ? kWarp : 1;  // threads per sample
  const int lane = threadIdx.x % G;
  const int64_t step = int64_t{gridDim.x} * blockDim.x / G;
  double total = 0.0, total_weight = 0.0;
  for (int64_t k = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / G; k < count; k += step) {
    int64_t toff, xoff;
    nll_offsets(g, k, toff, xoff);
    const int64_t c = target[toff];
    double loss = 0.0, wc = 0.0;
    if (c != ignore) {
      if (c < 0 || c >= C) {
        if (lane == 0) atomicMin(bad, static_cast<unsigned long long>(k));
      } else {
        wc = w ? static_cast<double>(load(w[c * wstride])) : 1.0;
        loss = -(1.0 - eps) * wc * static_cast<double>(load(x[xoff + c * cstride]));
        if constexpr (Smooth) {  // c is the same on every lane: the warp stays converged
          double smooth = 0.0;
          for (int64_t j = lane; j < C; j += G)
            smooth += (w ? static_cast<double>(load(w[j * wstride])) : 1.0) * static_cast<double>(load(x[xoff + j * cstride]));
          loss -= eps / static_cast<double>(C) * warp_reduce(smooth, SumOp{});
        }
      }
    }
    if (lane == 0) {
      if (partials == nullptr) {
        out[k] = from_double<T>(loss);
      } else {
        total += loss;
        total_weight += wc;
      }
    }
  }
  if (partials != nullptr) {
    total = block_reduce(total, SumOp{}, 0.0);
    total_weight = block_reduce(total_weight, SumOp{}, 0.0);
    if (threadIdx.x == 0) {
      partials[2 * blockIdx.x] = total;
      partials[2 * blockIdx.x + 1] = total_weight;
    }
  }
}

// Sums the partials in a fixed order: the mean (0/0 = NaN when every target
// is ignored, as cpu) or the sum.
template <typename T>
__global__ void nll_loss_finish_kernel(const double* __restrict__ partials, int parts, bool mean, T* __restrict__ out) {
  double total = 0.0, total_weight = 0.0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) {
    total += partials[2 * i];
    total_weight += partials[2 * i + 1];
  }
  total = block_reduce(total, SumOp{}, 0.0);
  total_weight = block_reduce(total_weight, SumOp{}, 0.0);
  if (threadIdx.x == 0) out[0] = from_double<T>(mean ? total / total_weight : total);
}

// flags[0]: the first sample with a bad target (kNoBadTarget if none);
// stores that target in flags[1] for the message.
__global__ void nll_bad_target_kernel(const int64_t* __restrict__ target, NllGeom g, unsigned long long* flags) {
  if (flags[0] == kNoBadTarget) return;
  int64_t toff, xoff;
  nll_offsets(g, static_cast<int64_t>(flags[0]), toff, xoff);
  flags[1] = static_cast<unsigned long long>(target[toff]);
}

void nll_loss_kernel_entry(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& t = sdk::tensor_arg(call, 1, "target", TSR_DTYPE_INT64);
  const DLTensor* w = sdk::optional_tensor_arg(call, 2, "weight", call.dtype);
  const int64_t reduction = sdk::int_arg(call, 3, "reduction");
  const int64_t ignore = sdk::int_arg(call, 4, "ignore_index");
  const double eps = call.num_args > 5 ? sdk::float_arg(call, 5, "label_smoothing") : 0.0;
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (x.ndim < 1 || x.ndim > kMaxNdim || t.ndim != (x.ndim == 1 ? 0 : x.ndim - 1))
    invalid("input and target ranks do not match");
  NllGeom g;
  g.ndim = t.ndim;
  for (int32_t d = 0; d < t.ndim; ++d) {
    const int32_t xd = d == 0 ? 0 : d + 1;
    if (t.shape[d] != x.shape[xd]) invalid("target shape " + sdk::shape_text(t) + " does not match input shape " + sdk::shape_text(x));
    g.shape[d] = t.shape[d];
    g.tstride[d] = t.strides[d];
    g.xstride[d] = x.strides[xd];
  }
  const int64_t C = x.ndim == 1 ? x.shape[0] : x.shape[1];
  const int64_t cstride = x.ndim == 1 ? x.strides[0] : x.strides[1];
  if (w && (w->ndim != 1 || w->shape[0] != C)) invalid("weight must have one element per class");
  if (reduction < 0 || reduction > 2) invalid("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(reduction));
  const int64_t count = sdk::numel(t);
  if (reduction == 0 && sdk::numel(out) != count) invalid("out must have the target's shape");
  if (reduction != 0 && sdk::numel(out) != 1) invalid("out must have one element for a reduction");
  if (reduction == 0 && count == 0) return;
  const bool smooth = eps > 0.0;  // cpu adds the smoothing term only then
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("nll_loss needs a floating dtype");
    } else {
      const int per_sample = smooth ? kWarp : 1;
      const int blocks = static_cast<int>(
          std::clamp<int64_t>((count * per_sample + kThreads - 1) / kThreads, 1, reduction == 0 ? kMaxBlocks : kMaxPartials));
      // [bad sample, its target] then (loss, weight) partials per block.
      const size_t flag_bytes = 2 * sizeof(unsigned long long);
      char* ws = static_cast<char*>(
          workspace(call, flag_bytes + (reduction == 0 ? 0 : static_cast<size_t>(blocks) * 2 * sizeof(double))));
      auto* flags = reinterpret_cast<unsigned long long*>(ws);
      double* partials = reduction == 0 ? nullptr : reinterpret_cast<double*>(ws + flag_bytes);
      check_cuda(cudaMemsetAsync(flags, 0xff, flag_bytes, stream), "cudaMemsetAsync");
      const T* xp = data_as<const T>(x);
      const int64_t* tp = data_as<const int64_t>(t);
      const T* wp = w ? data_as<const T>(*w) : nullptr;
      const int64_t wstride = w ? w->strides[0] : 0;
      T* op = data_as<T>(out);
      if (smooth) {
        nll_loss_kernel<T, true><<<blocks, kThreads, 0, stream>>>(xp, tp, wp, wstride, g, count, C, cstride, ignore,
                                                                  eps, op, partials, flags);
      } else {
        nll_loss_kernel<T, false><<<blocks, kThreads, 0, stream>>>(xp, tp, wp, wstride, g, count, C, cstride, ignore,
                                                                   eps, op, partials, flags);
      }
      check_launch("nll_loss kernel launch");
      if (reduction != 0) {
        nll_loss_finish_kernel<T><<<1, kThreads, 0, stream>>>(partials, blocks, reduction == 1, op);
        check_launch("nll_loss reduction kernel launch");
      }
      nll_bad_target_kernel<<<1, 1, 0, stream>>>(tp, g, flags);
      check_launch("nll_loss target check kernel launch");
      // The error depends on the data: wait for it (the only sync in this file).
      unsigned long long host_flags[2] = {kNoBadTarget, 0};
      check_cuda(cudaMemcpyAsync(host_flags, flags, flag_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      if (host_flags[0] != kNoBadTarget) {
        sdk::fail(TSR_ERROR_OUT_OF_RANGE, "target " + std::to_string(static_cast<int64_t>(host_flags[1])) +
                                              " is out of bounds for " + std::to_string(C) + " classes");
      }
    }
  });
}

// ---- max_pool2d / avg_pool2d ----

struct Pool {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// The [N, C, H, W] view of a 3-D or 4-D tensor (N = 1 for 3-D).
struct Img {
  int64_t N, C, H, W, sN, sC, sH, sW;
};

Img img_of(const DLTensor& t, const char* name) {
  if (t.ndim == 4) return {t.shape[0], t.shape[1], t.shape[2], t.shape[3], t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
  if (t.ndim == 3) return {1, t.shape[0], t.shape[1], t.shape[2], 0, t.strides[0], t.strides[1], t.strides[2]};
  invalid(std::string("'") + name + "' must be 3-D or 4-D, got shape " + sdk::shape_text(t));
}

// The INT_LIST of 8 pool parameters at argument `index` (1 for the pools).
Pool pool_params(const TsrKernelCall& call, size_t index = 1) {
  const sdk::IntList v = sdk::int_list_arg(call, index, "params");
  if (v.size != 8) invalid("argument 'params' must be a list of 8 ints");
  const Pool p{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  if (p.kh <= 0 || p.kw <= 0 || p.sh <= 0 || p.sw <= 0 || p.dh <= 0 || p.dw <= 0 || p.ph < 0 || p.pw < 0)
    invalid("pooling: kernel_size, stride and dilation must be positive and padding non-negative");
  return p;
}

// Input and (contiguous) output views, checked against each other.
struct PoolShapes {
  Img in, out;
};
PoolShapes pool_shapes(const DLTensor& x, const DLTensor& out) {
  const PoolShapes s{img_of(x, "self"), img_of(out, "out")};
  if (s.in.N != s.out.N || s.in.C != s.out.C) invalid("pooling: input and output planes differ");
  if (!is_dense(out)) invalid("out must be contiguous");
  return s;
}

// Output element idx of a contiguous [N, C, Ho, Wo] output: its (n, c) plane's
// input address and (oh, ow).
template <typename T>
__device__ __forceinline__ const T* pool_plane(const T* x, const Img& in, const Img& o, int64_t idx, int64_t& oh,
                                               int64_t& ow) {
  ow = idx % o.W;
  int64_t rest = idx / o.W;
  oh = rest % o.H;
  rest /= o.H;
  const int64_t c = rest % o.C, n = rest / o.C;
  return x + n * in.sN + c * in.sC;
}

// The taps [lo, hi) of a window starting at `start` with k taps d apart that
// land in [0, len), computed rather than scanned (windows may be huge).
__device__ __forceinline__ void taps_inside(int64_t start, int64_t k, int64_t d, int64_t len, int64_t& lo,
                                            int64_t& hi) {
  if (start > len - 1) {
    lo = hi = 0;
    return;
  }
  lo = start >= 0 ? 0 : (-start) / d + ((-start) % d != 0);
  hi = min(k, (len - 1 - start) / d + 1);
  hi = max(lo, hi);
}

template <typename T>
__global__ void max_pool_kernel(const T* __restrict__ x, T* __restrict__ y, Img in, Img o, Pool p, int64_t total) {
  using C = compute_t<T>;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total; idx += step) {
    int64_t oh, ow;
    const T* src = pool_plane(x, in, o, idx, oh, ow);
    const int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
    int64_t i0, i1, j0, j1;
    taps_inside(h0, p.kh, p.dh, in.H, i0, i1);
    taps_inside(w0, p.kw, p.dw, in.W, j0, j1);
    C m;
    if constexpr (kIsFloating<T>) {
      m = neg_inf<C>();
    } else {
      m = std::numeric_limits<T>::lowest();
    }
    for (int64_t i = i0; i < i1; ++i) {
      const T* row = src + (h0 + i * p.dh) * in.sH;
      for (int64_t j = j0; j < j1; ++j) {
        const C v = load(row[(w0 + j * p.dw) * in.sW]);
        if constexpr (kIsFloating<T>) {
          if (v > m || isnan(v)) m = v;  // NaN wins, as in PyTorch
        } else {
          m = v > m ? v : m;
        }
      }
    }
    y[idx] = store<T>(m);
  }
}

// The end of a window starting at `start` with k taps, clipped to `limit`,
// without forming start + k (a huge kernel overflows it); start < limit.
__device__ __forceinline__ int64_t window_end(int64_t start, int64_t k, int64_t limit) {
  return k >= limit - start ? limit : start + k;
}

template <typename T>
__global__ void avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, Img in, Img o, Pool p, bool include_pad,
                                int64_t divisor, int64_t total) {
  using A = compute_t<T>;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total; idx += step) {
    int64_t oh, ow;
    const T* src = pool_plane(x, in, o, idx, oh, ow);
    int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
    int64_t h1 = window_end(h0, p.kh, in.H + p.ph), w1 = window_end(w0, p.kw, in.W + p.pw);
    const int64_t hpad = h1 - h0, wpad = w1 - w0;
    h0 = max(h0, int64_t{0}), w0 = max(w0, int64_t{0});
    h1 = min(h1, in.H), w1 = min(w1, in.W);
    A s = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) s += load(src[ih * in.sH + iw * in.sW]);
    // In floating point: the padded window's area can pass int64.
    const A div = divisor != 0 ? static_cast<A>(divisor)
                  : include_pad ? static_cast<A>(hpad) * static_cast<A>(wpad)
                                : static_cast<A>((h1 - h0) * (w1 - w0));
    y[idx] = store<T>(s / div);
  }
}

void max_pool2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  const Pool p = pool_params(call);
  const PoolShapes s = pool_shapes(x, out);
  const int64_t total = sdk::numel(out);
  if (total == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("max_pool2d is not defined for bool tensors");
    } else {
      max_pool_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(data_as<const T>(x), data_as<T>(out), s.in,
                                                                            s.out, p, total);
      check_launch("max_pool2d kernel launch");
    }
  });
}

// _max_pool2d_backward, one thread per input element: it visits the windows
// holding it (in the row-major order of the windows, as cpu adds them), finds
// each one's winning tap as max_pool2d's scan does (the first maximum, the last
// NaN, the first tap inside the input when none beats it), and sums the
// gradients of the windows it wins. No atomics: the same bits every run.
template <typename T>
__global__ void max_pool_backward_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gx, Img in,
                                         Img go, Pool p, int64_t total) {
  using C = compute_t<T>;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const int64_t iw = idx % in.W;
    int64_t rest = idx / in.W;
    const int64_t ih = rest % in.H;
    rest /= in.H;
    const int64_t c = rest % in.C, n = rest / in.C;
    const T* xs = x + n * in.sN + c * in.sC;
    const T* gs = g + n * go.sN + c * go.sC;
    C acc = C(0);
    for (int64_t a = p.kh - 1; a >= 0; --a) {
      const int64_t th = ih + p.ph - a * p.dh;
      if (th < 0 || th % p.sh != 0 || th / p.sh >= go.H) continue;
      const int64_t oh = th / p.sh, h0 = oh * p.sh - p.ph;
      int64_t i0, i1;
      taps_inside(h0, p.kh, p.dh, in.H, i0, i1);
      for (int64_t b = p.kw - 1; b >= 0; --b) {
        const int64_t tw = iw + p.pw - b * p.dw;
        if (tw < 0 || tw % p.sw != 0 || tw / p.sw >= go.W) continue;
        const int64_t ow = tw / p.sw, w0 = ow * p.sw - p.pw;
        int64_t j0, j1;
        taps_inside(w0, p.kw, p.dw, in.W, j0, j1);
        int64_t bh = h0 + i0 * p.dh, bw = w0 + j0 * p.dw;
        C m = load(xs[bh * in.sH + bw * in.sW]);
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t hh = h0 + i * p.dh;
          for (int64_t j = j0; j < j1; ++j) {
            const int64_t ww = w0 + j * p.dw;
            const C v = load(xs[hh * in.sH + ww * in.sW]);
            if (v > m || isnan(v)) {
              m = v;
              bh = hh;
              bw = ww;
            }
          }
        }
        if (bh == ih && bw == iw) acc += load(gs[oh * go.sH + ow * go.sW]);
      }
    }
    gx[idx] = store<T>(acc);
  }
}

void max_pool2d_backward_kernel(const TsrKernelCall& call) {
  const DLTensor& g = sdk::tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = sdk::tensor_arg(call, 1, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(x, "self", out, "grad_input");
  if (!is_dense(out)) invalid("grad_input must be contiguous");
  const Pool p = pool_params(call, 2);
  const Img in = img_of(x, "self"), go = img_of(g, "grad_output");
  if (go.N != in.N || go.C != in.C) invalid("max_pool2d backward: grad_output and self planes differ");
  const int64_t total = sdk::numel(out);
  if (total == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("_max_pool2d_backward needs a floating dtype");
    } else {
      max_pool_backward_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
          data_as<const T>(g), data_as<const T>(x), data_as<T>(out), in, go, p, total);
      check_launch("_max_pool2d_backward kernel launch");
    }
  });
}

void avg_pool2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  const Pool p = pool_params(call);
  const bool include_pad = sdk::bool_arg(call, 2, "count_include_pad");
  const int64_t divisor = sdk::int_arg(call, 3, "divisor_override");
  const PoolShapes s = pool_shapes(x, out);
  const int64_t total = sdk::numel(out);
  if (total == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("avg_pool2d needs a floating dtype");
    } else {
      avg_pool_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(data_as<const T>(x), data_as<T>(out), s.in,
                                                                            s.out, p, include_pad, divisor, total);
      check_launch("avg_pool2d kernel launch");
    }
  });
}

}  // namespace

void register_nn(const sdk::Host& host) {
  host.register_kernel("softmax", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, softmax_kernel<false>>);
  host.register_kernel("log_softmax", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, softmax_kernel<true>>);
  host.register_kernel("layer_norm", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, layer_norm_kernel>);
  host.register_kernel("_layer_norm_backward", "cuda", kFloatMask,
                       &sdk::kernel_entry<kCuda, layer_norm_backward_kernel>);
  host.register_kernel("nll_loss", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, nll_loss_kernel_entry>);
  host.register_kernel("_nll_loss_smoothed", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, nll_loss_kernel_entry>);
  host.register_kernel("max_pool2d", "cuda", kFloatMask | kIntMask, &sdk::kernel_entry<kCuda, max_pool2d_kernel>);
  host.register_kernel("_max_pool2d_backward", "cuda", kFloatMask,
                       &sdk::kernel_entry<kCuda, max_pool2d_backward_kernel>);
  host.register_kernel("avg_pool2d", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, avg_pool2d_kernel>);
}

}  // namespace tessera::cuda
