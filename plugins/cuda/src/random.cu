// The CUDA plugin's random kernels: uniform_, normal_, random_, bernoulli_
// (.float, .Tensor), randperm, dropout, with the cpu plugin's dtypes. Element i
// (row-major order of the output, whatever its strides) draws from the Philox
// block of counter (offset + i) under key seed and goes through the SDK's
// transforms (tessera/sdk/philox.hpp), the very code cpu runs, so a seed gives
// the same bits on both devices (issue 17). Conversions to the dtype are
// common.cuh's convert, which rounds as cpu does (16-bit types through float).
// Everything is queued on the call's stream; nothing synchronizes.
#include <tessera/sdk/philox.hpp>

#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"
#include "elementwise.cuh"
#include "kernels.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

namespace philox = ::tessera::sdk::philox;

// Dimensions left after merging (row-major order kept); more is refused.
inline constexpr int kMaxRandomDims = 16;

/// Where element i (row-major index) of N same-shape operands lives. Dims of
/// size 1 are dropped and neighbours merged where every operand is contiguous
/// across them, so the usual dense case is one flat index.
template <int N>
struct Indexer {
  char* base[N];
  int64_t elem[N];                        // element size in bytes
  int64_t stride[N][kMaxRandomDims];      // bytes
  int64_t shape[kMaxRandomDims];
  int ndim = 0;
  bool dense = true;                      // every operand contiguous: i * elem

  __device__ __forceinline__ void locate(int64_t i, char** q) const {
    if (dense) {
      for (int n = 0; n < N; ++n) q[n] = base[n] + i * elem[n];
      return;
    }
    int64_t off[N] = {};
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t idx = i % shape[d];
      i /= shape[d];
      for (int n = 0; n < N; ++n) off[n] += idx * stride[n][d];
    }
    for (int n = 0; n < N; ++n) q[n] = base[n] + off[n];
  }
};

/// The indexer of `ops` (the output first), all of shape_of's shape.
template <int N>
Indexer<N> make_indexer(const DLTensor& shape_of, const std::array<const DLTensor*, N>& ops,
                        const std::array<int64_t, N>& elem_sizes) {
  Indexer<N> ix{};
  for (int n = 0; n < N; ++n) {
    ix.base[n] = sdk::data_ptr(*ops[n]);
    ix.elem[n] = elem_sizes[n];
  }
  int64_t shape[64];
  int64_t stride[N][64];
  int nd = 0;
  for (int32_t d = 0; d < shape_of.ndim; ++d) {
    const int64_t size = shape_of.shape[d];
    if (size == 1) continue;
    bool merge = nd > 0;
    for (int n = 0; n < N && merge; ++n) merge = stride[n][nd - 1] == ops[n]->strides[d] * elem_sizes[n] * size;
    if (merge) {
      shape[nd - 1] *= size;
      for (int n = 0; n < N; ++n) stride[n][nd - 1] = ops[n]->strides[d] * elem_sizes[n];
      continue;
    }
    if (nd == 64) sdk::invalid("random ops support at most 64 dimensions, got " + std::to_string(shape_of.ndim));
    shape[nd] = size;
    for (int n = 0; n < N; ++n) stride[n][nd] = ops[n]->strides[d] * elem_sizes[n];
    ++nd;
  }
  if (nd > kMaxRandomDims) {
    sdk::invalid("cuda random kernels handle at most " + std::to_string(kMaxRandomDims) +
                 " non-mergeable dimensions, got " + std::to_string(nd) + " (shape " + sdk::shape_text(shape_of) + ")");
  }
  ix.ndim = nd;
  for (int d = 0; d < nd; ++d) ix.shape[d] = shape[d];
  for (int n = 0; n < N; ++n) {
    for (int d = 0; d < nd; ++d) ix.stride[n][d] = stride[n][d];
    if (nd > 1 || (nd == 1 && stride[n][0] != elem_sizes[n])) ix.dense = false;
  }
  return ix;
}

/// Runs op(block, q) for every element i < n, q the operands' addresses of
/// element i, block the Philox block of counter (offset + i); or op(seed,
/// counter, q) for an op that picks its block itself (normal_'s pairs).
template <int N, typename Op>
__global__ void random_kernel(Indexer<N> ix, int64_t n, uint64_t seed, uint64_t offset, Op op) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    char* q[N];
    ix.locate(i, q);
    const uint64_t counter = offset + static_cast<uint64_t>(i);
    if constexpr (std::is_invocable_v<const Op&, uint64_t, uint64_t, char**>) {
      op(seed, counter, q);
    } else {
      op(philox::at(seed, counter), q);
    }
  }
}

template <int N, typename Op>
void launch(const TsrKernelCall& call, const Indexer<N>& ix, int64_t n, uint64_t seed, uint64_t offset, Op op,
            const char* what) {
  if (n == 0) return;
  random_kernel<N, Op><<<blocks_for(n), kThreads, 0, stream_of(call)>>>(ix, n, seed, offset, op);
  check_launch(what);
}

// The seed and offset (bit patterns of the unsigned values), at index i and i + 1.
struct Stream {
  uint64_t seed;
  uint64_t offset;
};
Stream stream_args(const TsrKernelCall& call, size_t index) {
  return Stream{static_cast<uint64_t>(sdk::int_arg(call, index, "seed")),
                static_cast<uint64_t>(sdk::int_arg(call, index + 1, "offset"))};
}

// In-place ops: output 0 is self (argument 0).
DLTensor& self_output(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (out.data != self.data) sdk::invalid("the output must be self (an in-place op)");
  sdk::check_same_shape(self, "self", out, "out");
  return out;
}

template <typename T>
__device__ __forceinline__ T& at_ptr(char* p) {
  return *reinterpret_cast<T*>(p);
}

// ---------------------------------------------------------------------------
// Per-element operations (T: the CUDA storage type)
// ---------------------------------------------------------------------------

template <typename T>
struct UniformOp {
  double from, range, to;
  __device__ void operator()(const philox::Block& b, char** q) const {
    T v = convert<T>(philox::uniform_value(b, std::is_same_v<T, double>, from, range));
    // Rounding to a narrow dtype may reach `to`; keep the interval half-open (as cpu).
    if (range > 0 && static_cast<double>(load(v)) >= to) v = convert<T>(from);
    at_ptr<T>(q[0]) = v;
  }
};

// Counters 2j and 2j + 1 share a block (philox::standard_normal); each
// thread computes its own element's pair, as the cpu plugin's scalar path.
template <typename T>
struct NormalOp {
  double mean, std;
  __device__ void operator()(uint64_t seed, uint64_t counter, char** q) const {
    at_ptr<T>(q[0]) = convert<T>(philox::normal_value(seed, counter, mean, std));
  }
};

template <typename T>
struct RandomOp {
  int64_t from;
  uint64_t range;
  __device__ void operator()(const philox::Block& b, char** q) const {
    at_ptr<T>(q[0]) = convert<T>(philox::random_int(b, from, range));
  }
};

template <typename T>
struct BernoulliScalarOp {
  double p;
  __device__ void operator()(const philox::Block& b, char** q) const {
    at_ptr<T>(q[0]) = convert<T>(philox::bernoulli(b, p) ? 1 : 0);
  }
};

// p arrives as float64, checked to lie in [0, 1] by check_probabilities first.
template <typename T>
struct BernoulliTensorOp {
  __device__ void operator()(const philox::Block& b, char** q) const {
    at_ptr<T>(q[0]) = convert<T>(philox::bernoulli(b, at_ptr<const double>(q[1])) ? 1 : 0);
  }
};

template <typename T>
struct DropoutOp {
  double p;
  compute_t<T> scale;  // 1 / (1 - p) rounded to the compute type, as on cpu
  __device__ void operator()(const philox::Block& b, char** q) const {
    const bool drop = philox::bernoulli(b, p);
    at_ptr<T>(q[0]) = drop ? store<T>(compute_t<T>(0)) : store<T>(load(at_ptr<const T>(q[1])) * scale);
  }
};

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

template <typename T>
Indexer<1> self_indexer(const DLTensor& out) {
  return make_indexer<1>(out, {&out}, {static_cast<int64_t>(sizeof(T))});
}

void uniform_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const double from = sdk::float_arg(call, 1, "from"), to = sdk::float_arg(call, 2, "to");
  const Stream st = stream_args(call, 3);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("uniform_ needs a floating dtype");
    } else {
      launch(call, self_indexer<T>(out), sdk::numel(out), st.seed, st.offset, UniformOp<T>{from, to - from, to},
             "uniform_ kernel launch");
    }
  });
}

void normal_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const double mean = sdk::float_arg(call, 1, "mean"), std_ = sdk::float_arg(call, 2, "std");
  const Stream st = stream_args(call, 3);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("normal_ needs a floating dtype");
    } else {
      launch(call, self_indexer<T>(out), sdk::numel(out), st.seed, st.offset, NormalOp<T>{mean, std_},
             "normal_ kernel launch");
    }
  });
}

void random_kernel_entry(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const int64_t from = sdk::int_arg(call, 1, "from"), to = sdk::int_arg(call, 2, "to");
  if (to <= from) {
    sdk::invalid("random_ expects from < to, got from=" + std::to_string(from) + " to=" + std::to_string(to));
  }
  const Stream st = stream_args(call, 3);
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(call, self_indexer<T>(out), sdk::numel(out), st.seed, st.offset, RandomOp<T>{from, range},
           "random_ kernel launch");
  });
}

// Row-major index of the first p outside [0, 1] (NaN included) into *first,
// which starts at UINT64_MAX.
__global__ void find_bad_probability(Geometry<1> g, const double* p, unsigned long long* first) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = p[strided_offset<int64_t>(i, g.ndim, g.shape, g.strides[0].s)];
    if (!(v >= 0.0 && v <= 1.0)) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// cpu refuses a probability outside [0, 1] naming it; so does cuda, at the cost
// of one stream synchronization per bernoulli_ with a tensor p (before any write).
void check_probabilities(const TsrKernelCall& call, const DLTensor& p) {
  const Geometry<1> g = make_geometry<1>({&p});
  if (g.numel == 0) return;
  auto* first = static_cast<unsigned long long*>(workspace(call, sizeof(unsigned long long)));
  cudaStream_t s = stream_of(call);
  check_cuda(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), s), "cudaMemsetAsync");
  find_bad_probability<<<blocks_for(g.numel), kThreads, 0, s>>>(g, reinterpret_cast<const double*>(sdk::data_ptr(p)), first);
  check_launch("bernoulli_ probability check launch");
  unsigned long long bad = 0;
  check_cuda(cudaMemcpyAsync(&bad, first, sizeof(bad), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (bad == ~0ull) return;
  const int64_t offset = strided_offset<int64_t>(static_cast<int64_t>(bad), g.ndim, g.shape, g.strides[0].s);
  double value = 0;
  check_cuda(cudaMemcpyAsync(&value, reinterpret_cast<const double*>(sdk::data_ptr(p)) + offset, sizeof(value),
                             cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  sdk::invalid("bernoulli_ expects all probabilities in [0, 1], got " + std::to_string(value));
}

void bernoulli_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const TsrValue& pv = sdk::arg(call, 1, "p");
  const Stream st = stream_args(call, 2);
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (pv.tag == TSR_VALUE_TENSOR) {
      const DLTensor& p = sdk::tensor_arg(call, 1, "p", TSR_DTYPE_FLOAT64);
      sdk::check_same_shape(p, "p", out, "self");
      check_probabilities(call, p);
      const Indexer<2> ix =
          make_indexer<2>(out, {&out, &p}, {static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(double))});
      launch(call, ix, sdk::numel(out), st.seed, st.offset, BernoulliTensorOp<T>{}, "bernoulli_ kernel launch");
    } else {
      const double prob = sdk::float_arg(call, 1, "p");
      launch(call, self_indexer<T>(out), sdk::numel(out), st.seed, st.offset, BernoulliScalarOp<T>{prob},
             "bernoulli_ kernel launch");
    }
  });
}

void dropout_kernel(const TsrKernelCall& call) {
  const DLTensor& in = sdk::tensor_arg(call, 0, "input", call.dtype);
  const double p = sdk::float_arg(call, 1, "p");
  const Stream st = stream_args(call, 3);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(in, "input", out, "out");
  if (!(p >= 0.0 && p <= 1.0)) sdk::invalid("dropout probability has to be between 0 and 1, got " + std::to_string(p));
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("dropout needs a floating dtype");
    } else {
      using C = compute_t<T>;
      const C scale = p < 1.0 ? static_cast<C>(1.0 / (1.0 - p)) : C(0);
      const Indexer<2> ix =
          make_indexer<2>(out, {&out, &in}, {static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(T))});
      launch(call, ix, sdk::numel(out), st.seed, st.offset, DropoutOp<T>{p, scale}, "dropout kernel launch");
    }
  });
}

// randperm: keys[k] = the 64-bit key of counter (offset + k), values[k] = k;
// a stable radix sort of the pairs lists the indices by (key, index), as cpu's
// sort does.
__global__ void randperm_keys(uint64_t* keys, int64_t* values, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    keys[k] = philox::randperm_key(philox::at(seed, offset + static_cast<uint64_t>(k)));
    values[k] = k;
  }
}

template <typename T>
__global__ void randperm_store(T* out, int64_t stride, const int64_t* perm, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    out[k * stride] = convert<T>(perm[k]);
  }
}

constexpr size_t align_up(size_t n) { return (n + 255) & ~size_t{255}; }

void randperm_kernel(const TsrKernelCall& call) {
  const int64_t n = sdk::int_arg(call, 0, "n");
  const Stream st = stream_args(call, 1);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (n < 0) sdk::invalid("randperm: n must be non-negative, got " + std::to_string(n));
  if (out.ndim != 1 || out.shape[0] != n) sdk::invalid("randperm: out must have shape [n]");
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid("randperm does not support bool");
    } else {
      if (n == 0) return;
      const cudaStream_t stream = stream_of(call);
      const size_t count = static_cast<size_t>(n);
      size_t temp_bytes = 0;
      check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const uint64_t*>(nullptr),
                                                 static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
                                                 static_cast<int64_t*>(nullptr), n, 0, 64, stream),
                 "randperm: cub::DeviceRadixSort::SortPairs (temporary storage size)");
      // One workspace: keys in/out, indices in/out, CUB's temporary storage.
      const size_t key_bytes = align_up(count * sizeof(uint64_t)), value_bytes = align_up(count * sizeof(int64_t));
      char* ws = static_cast<char*>(workspace(call, 2 * key_bytes + 2 * value_bytes + align_up(temp_bytes)));
      auto* keys_in = reinterpret_cast<uint64_t*>(ws);
      auto* keys_out = reinterpret_cast<uint64_t*>(ws + key_bytes);
      auto* values_in = reinterpret_cast<int64_t*>(ws + 2 * key_bytes);
      auto* values_out = reinterpret_cast<int64_t*>(ws + 2 * key_bytes + value_bytes);
      void* temp = ws + 2 * key_bytes + 2 * value_bytes;
      randperm_keys<<<blocks_for(n), kThreads, 0, stream>>>(keys_in, values_in, n, st.seed, st.offset);
      check_launch("randperm: key kernel launch");
      check_cuda(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0, 64,
                                                 stream),
                 "randperm: cub::DeviceRadixSort::SortPairs");
      randperm_store<T><<<blocks_for(n), kThreads, 0, stream>>>(data_as<T>(out), out.strides[0], values_out, n);
      check_launch("randperm: store kernel launch");
    }
  });
}

}  // namespace

void register_random(const sdk::Host& host) {
  host.register_kernel("uniform_", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, uniform_kernel>);
  host.register_kernel("normal_", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, normal_kernel>);
  host.register_kernel("random_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, random_kernel_entry>);
  host.register_kernel("bernoulli_.float", "cuda", kAllMask, &sdk::kernel_entry<kCuda, bernoulli_kernel>);
  host.register_kernel("bernoulli_.Tensor", "cuda", kAllMask, &sdk::kernel_entry<kCuda, bernoulli_kernel>);
  host.register_kernel("randperm", "cuda", kNumericMask, &sdk::kernel_entry<kCuda, randperm_kernel>);
  host.register_kernel("dropout", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, dropout_kernel>);
}

}  // namespace tessera::cuda
