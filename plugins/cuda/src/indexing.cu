// The CUDA plugin's indexing kernels: gather (also index_select), scatter_,
// scatter_.value, scatter_add_ (also index_add_), _scatter, take, masked_fill,
// masked_select and nonzero. Semantics are the cpu plugin's
// (plugins/cpu/src/indexing.cpp, indexing_nonzero.cpp; docs/ops/indexing.md).
//
// Index checks: kernels record the first bad index position (row-major) with
// atomicMin in a workspace flag; the host reads it back (one stream sync) and
// reports TSR_ERROR_OUT_OF_RANGE with cpu's message. The in-place ops validate
// in a first kernel and write in a second, only after the host has seen the
// flag, so a bad index leaves self untouched.
//
// scatter_add_ / index_add_ use no atomics: one thread per line along `dim`
// (every other coordinate fixed) walks it in increasing position, cpu's order,
// so float sums are cpu's bit for bit and the same on every run. scatter_ uses
// the same scheme, so duplicated indices keep cpu's (last) value.
//
// masked_select and nonzero count on the device (CUB), read the count back,
// allocate the output through allocate_output, then select in row-major order
// (cub::DeviceSelect is stable).
#include "elementwise.cuh"
#include "kernels.hpp"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

using sdk::invalid;

// Most dims a tensor may have here (the elementwise geometry's scratch size).
constexpr int32_t kMaxTensorDims = 64;
constexpr int64_t kInt32Limit = int64_t{1} << 31;

// ---- types ---------------------------------------------------------------

// Calls f(TypeTag<I>) with I the index tensor's element type (int64 or int32).
template <typename F>
void dispatch_index(const DLTensor& index, F&& f) {
  const TsrDType d = sdk::dtype_of(index, "index");
  if (d == TSR_DTYPE_INT64) {
    f(sdk::TypeTag<int64_t>{});
  } else if (d == TSR_DTYPE_INT32) {
    f(sdk::TypeTag<int32_t>{});
  } else {
    invalid(std::string("index must be int64 or int32, got ") + sdk::dtype_name(d));
  }
}

// A scalar converted to V as cpu's indexing kernels do (scalar_as in
// indexing.cpp: through double; integers from INT wrap). Out-of-range floats
// for integer types (which the core refuses first) saturate instead of UB.
template <typename V>
storage_t<V> scalar_as(const TsrValue& v) {
  sdk::check_scalar(v, "value");
  const double d = v.tag == TSR_VALUE_FLOAT ? v.as.f
                   : v.tag == TSR_VALUE_INT ? static_cast<double>(v.as.i)
                                            : static_cast<double>(v.as.b);
  if constexpr (std::is_same_v<V, bool>) {
    return static_cast<uint8_t>(d != 0);
  } else if constexpr (kIsHalf<V>) {
    return store<V>(static_cast<float>(d));
  } else if constexpr (kIsInteger<V>) {
    if (v.tag == TSR_VALUE_INT) return static_cast<V>(static_cast<uint64_t>(v.as.i));
    if (!(d == d)) return V{0};
    if (d <= static_cast<double>(std::numeric_limits<V>::min())) return std::numeric_limits<V>::min();
    if (d >= static_cast<double>(std::numeric_limits<V>::max())) return std::numeric_limits<V>::max();
    return static_cast<V>(d);
  } else {
    return static_cast<V>(d);
  }
}

// ---- geometry helpers -----------------------------------------------------------

// Whether the element count and every operand's extent fit 32-bit math.
template <int N>
bool fits_int32(const Geometry<N>& g) {
  if (g.numel >= kInt32Limit) return false;
  for (int k = 0; k < N; ++k) {
    int64_t extent = 0;
    for (int d = 0; d < g.ndim; ++d) extent += (g.shape[d] - 1) * (g.strides[k].s[d] < 0 ? -g.strides[k].s[d] : g.strides[k].s[d]);
    if (extent >= kInt32Limit) return false;
  }
  return true;
}

// Grid-stride loop bounds: the counter is 64-bit so that i + stride never overflows.
__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

void check_dims(const DLTensor& t, const char* name) {
  if (t.ndim > kMaxTensorDims)
    invalid(std::string("'") + name + "' has " + std::to_string(t.ndim) + " dims; at most 64 are supported");
}

// A shape-and-strides view (no data) for make_geometry.
DLTensor geometry_view(int32_t ndim, int64_t* shape, int64_t* strides) {
  DLTensor t{};
  t.ndim = ndim;
  t.shape = shape;
  t.strides = strides;
  return t;
}

// ---- bad-index flag -------------------------------------------------------------

constexpr unsigned long long kNoBadIndex = ~0ull;

__device__ __forceinline__ void note_bad_index(unsigned long long* flag, int64_t position) {
  atomicMin(flag, static_cast<unsigned long long>(position));
}

// The first bad position found by kernels on the call's stream.
class BadIndexFlag {
 public:
  explicit BadIndexFlag(const TsrKernelCall& call)
      : stream_(stream_of(call)), flag_(static_cast<unsigned long long*>(workspace(call, sizeof(unsigned long long)))) {
    check_cuda(cudaMemsetAsync(flag_, 0xff, sizeof(unsigned long long), stream_), "index check: cudaMemsetAsync");
  }
  unsigned long long* device() const { return flag_; }

  /// Waits for the work queued so far; the first bad position or kNoBadIndex.
  unsigned long long read() const {
    unsigned long long host = kNoBadIndex;
    check_cuda(cudaMemcpyAsync(&host, flag_, sizeof host, cudaMemcpyDeviceToHost, stream_), "index check: cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_), "index check: cudaStreamSynchronize");
    return host;
  }

 private:
  cudaStream_t stream_;
  unsigned long long* flag_;
};

// Reads the bad index (operand k of g at `position`) and throws cpu's error.
template <typename I, int N>
[[noreturn]] void report_bad_index(cudaStream_t stream, const Geometry<N>& g, int k, const I* index,
                                   unsigned long long position, int64_t dim, int64_t size) {
  const int64_t off = strided_offset<int64_t>(static_cast<int64_t>(position), g.ndim, g.shape, g.strides[k].s);
  I value{};
  check_cuda(cudaMemcpyAsync(&value, index + off, sizeof(I), cudaMemcpyDeviceToHost, stream), "index check: cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "index check: cudaStreamSynchronize");
  sdk::fail(TSR_ERROR_OUT_OF_RANGE, "index " + std::to_string(static_cast<int64_t>(value)) +
                                        " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                                        std::to_string(size));
}

template <typename Index, typename I>
__global__ void check_indices_kernel(Geometry<1> g, const I* index, int64_t size, unsigned long long* flag) {
  for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
    const int64_t v = index[strided_offset<Index>(static_cast<Index>(i), g.ndim, g.shape, g.strides[0].s)];
    if (v < 0 || v >= size) note_bad_index(flag, i);
  }
}

// Throws unless every value of `index` is in [0, size). Waits for the stream.
// Stride-0 (expanded) dims are visited once.
template <typename I>
void validate_indices(const TsrKernelCall& call, const DLTensor& index, int64_t dim, int64_t size) {
  int64_t shape[kMaxTensorDims], strides[kMaxTensorDims];
  int32_t nd = 0;
  for (int32_t d = 0; d < index.ndim; ++d) {
    if (index.shape[d] == 1 || (index.strides[d] == 0 && index.shape[d] != 0)) continue;
    shape[nd] = index.shape[d];
    strides[nd] = index.strides[d];
    ++nd;
  }
  const DLTensor view = geometry_view(nd, shape, strides);
  const Geometry<1> g = make_geometry<1>({&view});
  if (g.numel == 0) return;
  const cudaStream_t stream = stream_of(call);
  const BadIndexFlag flag(call);
  const I* data = data_as<const I>(index);
  if (fits_int32(g)) check_indices_kernel<int32_t, I><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, data, size, flag.device());
  else check_indices_kernel<int64_t, I><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, data, size, flag.device());
  check_launch("index check launch");
  const unsigned long long bad = flag.read();
  if (bad != kNoBadIndex) report_bad_index(stream, g, 0, data, bad, dim, size);
}

// ---- argument checks (as cpu) ---------------------------------------------------

int32_t dim_arg(const TsrKernelCall& call, size_t i, const DLTensor& self) {
  const int64_t dim = sdk::int_arg(call, i, "dim");
  const int64_t nd = std::max<int32_t>(self.ndim, 1);
  if (dim < 0 || dim >= nd) invalid("dim " + std::to_string(dim) + " out of range (the core wraps dims)");
  return static_cast<int32_t>(dim);
}

void check_same_ndim(const DLTensor& a, const char* an, const DLTensor& b, const char* bn) {
  if (std::max<int32_t>(a.ndim, 1) != std::max<int32_t>(b.ndim, 1))
    invalid(std::string("'") + an + "' and '" + bn + "' must have the same number of dims");
}

// index.size(d) <= self.size(d) outside dim (the core checks it; a violation
// here would address memory outside self).
void check_index_within(const DLTensor& self, const DLTensor& index, int32_t dim) {
  if (self.ndim != index.ndim) return;  // 0-d against 1-D: nothing outside dim
  for (int32_t d = 0; d < self.ndim; ++d) {
    if (d != dim && index.shape[d] > self.shape[d])
      invalid("index shape " + sdk::shape_text(index) + " exceeds self shape " + sdk::shape_text(self) + " in dim " +
              std::to_string(d));
  }
}

// ---- gather, index_select ---------------------------------------------------------

// Operands: 0 out, 1 index, 2 self with stride 0 along dim (the index supplies it).
template <typename Index, typename I, typename U>
__global__ void gather_kernel(Geometry<3> g, U* out, const I* index, const U* self, int64_t along, int64_t size,
                              unsigned long long* flag) {
  for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
    const Index j = static_cast<Index>(i);
    const int64_t v = index[strided_offset<Index>(j, g.ndim, g.shape, g.strides[1].s)];
    if (v < 0 || v >= size) {
      note_bad_index(flag, i);
      continue;
    }
    const int64_t from = static_cast<int64_t>(strided_offset<Index>(j, g.ndim, g.shape, g.strides[2].s)) + v * along;
    out[strided_offset<Index>(j, g.ndim, g.shape, g.strides[0].s)] = self[from];
  }
}

// out[p] = self[p with coordinate dim replaced by index[p]]. index_select
// arrives with its 1-D index expanded to out's shape.
void gather_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = sdk::tensor_arg(call, 2, "index");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(index, "index", out, "out");
  check_same_ndim(self, "self", index, "index");
  check_dims(self, "self");
  check_dims(out, "out");
  check_index_within(self, index, dim);
  const int64_t size = self.ndim == 0 ? 1 : self.shape[dim];
  int64_t self_strides[kMaxTensorDims];
  for (int32_t d = 0; d < out.ndim; ++d) self_strides[d] = (self.ndim == out.ndim && d != dim) ? self.strides[d] : 0;
  const DLTensor self_view = geometry_view(out.ndim, out.shape, self_strides);
  const int64_t along = self.ndim == 0 ? 0 : self.strides[dim];
  const Geometry<3> g = make_geometry<3>({&out, &index, &self_view});
  if (g.numel == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const BadIndexFlag flag(call);
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = data_as<const I>(index);
    dispatch(call.dtype, [&](auto tag) {
      using U = bits_t<typename decltype(tag)::type>;
      U* o = data_as<U>(out);
      const U* s = data_as<const U>(self);
      if (fits_int32(g)) {
        gather_kernel<int32_t, I, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, o, idx, s, along, size, flag.device());
      } else {
        gather_kernel<int64_t, I, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, o, idx, s, along, size, flag.device());
      }
      check_launch("gather launch");
    });
    const unsigned long long bad = flag.read();
    if (bad != kNoBadIndex) report_bad_index(stream, g, 1, idx, bad, dim, size);
  });
}

// ---- scatter_, scatter_.value, scatter_add_, index_add_ ---------------------------

template <typename U>
struct Assign {
  using type = U;
  static constexpr bool kReads = false;
  __device__ U operator()(U, U v) const { return v; }
};

// scatter_add_: bool is logical or, integers wrap, half types add in float.
template <typename V>
struct Accumulate {
  using type = storage_t<V>;
  static constexpr bool kReads = true;
  __device__ type operator()(type a, type b) const {
    if constexpr (std::is_same_v<V, bool>) {
      return static_cast<type>(a | b);
    } else if constexpr (kIsInteger<V>) {
      return wrap_add(a, b);
    } else {
      return store<V>(load(a) + load(b));
    }
  }
};

// Lines along dim: operands 0 self, 1 index, 2 src over index's shape with dim
// collapsed; `along` steps each operand one position along dim.
struct Lines {
  Geometry<3> g;
  int64_t len = 0;
  int64_t along[3] = {};
};

Lines make_lines(const DLTensor& self, const DLTensor& index, const DLTensor* src, int32_t dim) {
  const int32_t nd = index.ndim;
  int64_t shape[kMaxTensorDims];
  int64_t strides[3][kMaxTensorDims];
  for (int32_t d = 0; d < nd; ++d) {
    shape[d] = d == dim ? 1 : index.shape[d];
    strides[0][d] = self.ndim == nd ? self.strides[d] : 0;
    strides[1][d] = index.strides[d];
    strides[2][d] = (src != nullptr && src->ndim == nd) ? src->strides[d] : 0;
  }
  const DLTensor views[3] = {geometry_view(nd, shape, strides[0]), geometry_view(nd, shape, strides[1]),
                             geometry_view(nd, shape, strides[2])};
  Lines lines;
  lines.g = make_geometry<3>({&views[0], &views[1], &views[2]});
  lines.len = nd == 0 ? 1 : index.shape[dim];
  lines.along[0] = self.ndim == 0 ? 0 : self.strides[dim];
  lines.along[1] = nd == 0 ? 0 : index.strides[dim];
  lines.along[2] = (src != nullptr && src->ndim > 0) ? src->strides[dim] : 0;
  return lines;
}

// One thread per line, positions in increasing order (cpu's order). Lines
// write disjoint elements of self: they differ in a coordinate outside dim.
template <typename Op, bool ScalarSrc, typename Index, typename I>
__global__ void scatter_lines(Lines l, typename Op::type* self, const I* index, const typename Op::type* src,
                              typename Op::type value) {
  using T = typename Op::type;
  const Op op;
  for (int64_t o = first_index(); o < l.g.numel; o += grid_stride()) {
    const Index j = static_cast<Index>(o);
    T* s = self + strided_offset<Index>(j, l.g.ndim, l.g.shape, l.g.strides[0].s);
    const I* x = index + strided_offset<Index>(j, l.g.ndim, l.g.shape, l.g.strides[1].s);
    const T* v = ScalarSrc ? nullptr : src + strided_offset<Index>(j, l.g.ndim, l.g.shape, l.g.strides[2].s);
    for (int64_t k = 0; k < l.len; ++k) {
      T& dst = s[static_cast<int64_t>(x[k * l.along[1]]) * l.along[0]];
      const T val = ScalarSrc ? value : v[k * l.along[2]];
      if constexpr (Op::kReads) dst = op(dst, val);
      else dst = op(T{}, val);
    }
  }
}

template <typename Op, typename I>
void launch_scatter(const Lines& l, cudaStream_t stream, typename Op::type* self, const I* index,
                    const typename Op::type* src, typename Op::type value) {
  const int blocks = blocks_for(l.g.numel);
  if (src == nullptr) {
    if (fits_int32(l.g)) scatter_lines<Op, true, int32_t, I><<<blocks, kThreads, 0, stream>>>(l, self, index, src, value);
    else scatter_lines<Op, true, int64_t, I><<<blocks, kThreads, 0, stream>>>(l, self, index, src, value);
  } else {
    if (fits_int32(l.g)) scatter_lines<Op, false, int32_t, I><<<blocks, kThreads, 0, stream>>>(l, self, index, src, value);
    else scatter_lines<Op, false, int64_t, I><<<blocks, kThreads, 0, stream>>>(l, self, index, src, value);
  }
  check_launch("scatter launch");
}

// self[..index[..i..]..] (+)= src[..i..], src a tensor of index's shape or a
// scalar (argument 3 of call); self is written.
template <bool Add>
void scatter_into(const TsrKernelCall& call, const DLTensor& self, int32_t dim, const DLTensor& index) {
  const TsrValue& src_v = sdk::arg(call, 3, "src");
  check_same_ndim(self, "self", index, "index");
  check_dims(self, "self");
  check_dims(index, "index");
  check_index_within(self, index, dim);
  const DLTensor* src = nullptr;
  if (src_v.tag == TSR_VALUE_TENSOR) {
    src = &sdk::tensor_arg(call, 3, "src", call.dtype);
    sdk::check_same_shape(*src, "src", index, "index");
  } else {
    sdk::check_scalar(src_v, "value");
  }
  const int64_t size = self.ndim == 0 ? 1 : self.shape[dim];
  const Lines lines = make_lines(self, index, src, dim);
  if (lines.g.numel == 0 || lines.len == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    validate_indices<I>(call, index, dim, size);  // before any write
    const I* idx = data_as<const I>(index);
    dispatch(call.dtype, [&](auto tag) {
      using V = typename decltype(tag)::type;
      using Op = std::conditional_t<Add, Accumulate<V>, Assign<bits_t<V>>>;
      using T = typename Op::type;
      T value{};
      if (src == nullptr) {
        const storage_t<V> v = scalar_as<V>(src_v);
        std::memcpy(&value, &v, sizeof(T));
      }
      launch_scatter<Op, I>(lines, stream, data_as<T>(self), idx, src == nullptr ? nullptr : data_as<const T>(*src), value);
    });
  });
}

// scatter_, scatter_.value, scatter_add_, index_add_: outputs[0] is self.
template <bool Add>
void scatter_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = sdk::tensor_arg(call, 2, "index");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (out.data != self.data) invalid("the output must be self (an in-place op)");
  scatter_into<Add>(call, self, dim, index);
}

template <typename U>
struct Identity {
  __device__ U operator()(U x) const { return x; }
};

// _scatter(self, dim, index, src, add): self's bits copied into the new out
// (one cudaMemcpyAsync where both are dense), then scatter_ / scatter_add_ into
// out, as the in-place kernels. The GPU copies at full bandwidth, so the copy
// is not fused into the scatter as on cpu.
void scatter_copy_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = sdk::tensor_arg(call, 2, "index");
  const bool add = sdk::bool_arg(call, 4, "add");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  if (out.data == self.data && sdk::numel(out) > 0) invalid("_scatter writes a new tensor: out must not be self");
  check_dims(self, "self");
  {
    DeviceScope scope(call.device_index);
    const Geometry<2> g = make_geometry<2>({&out, &self});
    if (g.numel > 0) {
      char* dst = sdk::data_ptr(out);
      const std::array<const char*, 1> in = {sdk::data_ptr(self)};
      dispatch(call.dtype, [&](auto tag) {
        using U = bits_t<typename decltype(tag)::type>;
        if (g.dense) {
          check_cuda(cudaMemcpyAsync(dst, in[0], static_cast<size_t>(g.numel) * sizeof(U), cudaMemcpyDeviceToDevice,
                                     stream_of(call)),
                     "cudaMemcpyAsync");
        } else {
          launch_elementwise<U, U>(g, dst, in, Identity<U>{}, stream_of(call));
        }
      });
    }
  }
  if (add) {
    scatter_into<true>(call, out, dim, index);
  } else {
    scatter_into<false>(call, out, dim, index);
  }
}

// ---- take -------------------------------------------------------------------------

// Operands: 0 out, 1 index; self is contiguous with n elements.
template <typename Index, typename I, typename U>
__global__ void take_kernel(Geometry<2> g, U* out, const I* index, const U* self, int64_t n, unsigned long long* flag) {
  for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
    const Index j = static_cast<Index>(i);
    const int64_t v = index[strided_offset<Index>(j, g.ndim, g.shape, g.strides[1].s)];
    if (v < -n || v >= n) {
      note_bad_index(flag, i);
      continue;
    }
    out[strided_offset<Index>(j, g.ndim, g.shape, g.strides[0].s)] = self[v < 0 ? v + n : v];
  }
}

bool is_contiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 0) return true;
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// out[i] = flat(self)[index[i]], negative indices counting from the end.
void take_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& index = sdk::tensor_arg(call, 1, "index");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(index, "index", out, "out");
  if (!is_contiguous(self)) invalid("self must be contiguous");
  check_dims(out, "out");
  const int64_t n = sdk::numel(self);
  const Geometry<2> g = make_geometry<2>({&out, &index});
  if (g.numel == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const BadIndexFlag flag(call);
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = data_as<const I>(index);
    dispatch(call.dtype, [&](auto tag) {
      using U = bits_t<typename decltype(tag)::type>;
      U* o = data_as<U>(out);
      const U* s = data_as<const U>(self);
      if (fits_int32(g)) take_kernel<int32_t, I, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, o, idx, s, n, flag.device());
      else take_kernel<int64_t, I, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, o, idx, s, n, flag.device());
      check_launch("take launch");
    });
    const unsigned long long bad = flag.read();
    if (bad != kNoBadIndex) report_bad_index(stream, g, 1, idx, bad, 0, n);
  });
}

// ---- masked_fill ------------------------------------------------------------------

template <typename U>
struct MaskedFillFn {
  U value;
  __device__ U operator()(U x, uint8_t m) const { return m ? value : x; }
};

// out = mask ? value : self, self and mask expanded to out's shape; out may be
// self (masked_fill_: each element is read, then written, by one thread).
void masked_fill_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mask = sdk::tensor_arg(call, 1, "mask", TSR_DTYPE_BOOL);
  const TsrValue& value = sdk::arg(call, 2, "value");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  sdk::check_same_shape(mask, "mask", out, "out");
  check_dims(out, "out");
  DeviceScope scope(call.device_index);
  const Geometry<3> g = make_geometry<3>({&out, &self, &mask});
  dispatch(call.dtype, [&](auto tag) {
    using V = typename decltype(tag)::type;
    using U = bits_t<V>;
    const storage_t<V> v = scalar_as<V>(value);
    U bits;
    std::memcpy(&bits, &v, sizeof(U));
    launch_elementwise<U, U, uint8_t>(g, sdk::data_ptr(out), {sdk::data_ptr(self), sdk::data_ptr(mask)},
                                      MaskedFillFn<U>{bits}, stream_of(call));
  });
}

// ---- masked_select, nonzero ----------------------------------------------------------

// Device functors over row-major flat positions (CUB's inputs, flags and predicates).
struct MaskAt {  // operand 1 of a (self, mask) geometry
  Geometry<2> g;
  const uint8_t* mask;
  __host__ __device__ bool operator()(int64_t i) const {
    return mask[strided_offset<int64_t>(i, g.ndim, g.shape, g.strides[1].s)] != 0;
  }
};

template <typename U>
struct ValueAt {  // operand 0 of a (self, mask) geometry
  Geometry<2> g;
  const U* self;
  __host__ __device__ U operator()(int64_t i) const { return self[strided_offset<int64_t>(i, g.ndim, g.shape, g.strides[0].s)]; }
};

// "Non-zero" as copy_ to bool sees it: floats by their bits without the sign
// (NaN counts, -0.0 does not).
template <typename U, bool Floating>
struct NonZeroAt {
  Geometry<1> g;
  const U* self;
  __host__ __device__ bool operator()(int64_t i) const {
    const U x = self[strided_offset<int64_t>(i, g.ndim, g.shape, g.strides[0].s)];
    if constexpr (Floating) {
      constexpr U kMagnitude = static_cast<U>(~(U{1} << (8 * sizeof(U) - 1)));
      return (x & kMagnitude) != 0;
    } else {
      return x != 0;
    }
  }
};

template <typename P>
struct CountOf {
  P p;
  __host__ __device__ int64_t operator()(int64_t i) const { return p(i) ? 1 : 0; }
};

// Scratch for CUB (never NULL: CUB reads a NULL buffer as a size query).
void* cub_temp(const TsrKernelCall& call, size_t bytes) { return workspace(call, std::max<size_t>(bytes, 16)); }

// How many of the n positions satisfy p. Waits for the stream.
template <typename P>
int64_t count_where(const TsrKernelCall& call, const P& p, int64_t n) {
  const cudaStream_t stream = stream_of(call);
  const auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), CountOf<P>{p});
  int64_t* d_total = static_cast<int64_t*>(workspace(call, sizeof(int64_t)));
  size_t bytes = 0;
  check_cuda(cub::DeviceReduce::Sum(nullptr, bytes, flags, d_total, n, stream), "cub::DeviceReduce::Sum");
  void* temp = cub_temp(call, bytes);
  check_cuda(cub::DeviceReduce::Sum(temp, bytes, flags, d_total, n, stream), "cub::DeviceReduce::Sum");
  int64_t total = 0;
  check_cuda(cudaMemcpyAsync(&total, d_total, sizeof total, cudaMemcpyDeviceToHost, stream), "count: cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "count: cudaStreamSynchronize");
  return total;
}

void check_allocate_output(const TsrKernelCall& call, const char* op) {
  if (call.outputs == nullptr || call.num_outputs < 1) invalid(std::string(op) + " needs one (unallocated) output");
  if (call.struct_size < offsetof(TsrKernelCall, allocate_output) + sizeof(call.allocate_output) ||
      call.allocate_output == nullptr) {
    invalid(std::string(op) + " needs TsrKernelCall.allocate_output (its output size depends on the data)");
  }
}

DLTensor& allocate(const TsrKernelCall& call, TsrDType dtype, int32_t ndim, const int64_t* shape) {
  DLTensor* out = nullptr;
  sdk::throw_if_error(call.allocate_output(call.handle, 0, dtype, ndim, shape, &out));
  if (out == nullptr) sdk::fail(TSR_ERROR_INTERNAL, "allocate_output succeeded but returned no tensor");
  return *out;
}

// The elements of self where mask is true, row-major, as a 1-D tensor.
void masked_select_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mask = sdk::tensor_arg(call, 1, "mask", TSR_DTYPE_BOOL);
  sdk::check_same_shape(self, "self", mask, "mask");
  check_allocate_output(call, "masked_select");
  check_dims(self, "self");
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const Geometry<2> g = make_geometry<2>({&self, &mask});
  const MaskAt selected{g, data_as<const uint8_t>(mask)};
  const int64_t total = g.numel == 0 ? 0 : count_where(call, selected, g.numel);
  DLTensor& out = allocate(call, call.dtype, 1, &total);
  if (total == 0) return;
  dispatch(call.dtype, [&](auto tag) {
    using U = bits_t<typename decltype(tag)::type>;
    const auto values = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                        ValueAt<U>{g, data_as<const U>(self)});
    const auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), selected);
    int64_t* d_selected = static_cast<int64_t*>(workspace(call, sizeof(int64_t)));
    U* o = data_as<U>(out);
    size_t bytes = 0;
    check_cuda(cub::DeviceSelect::Flagged(nullptr, bytes, values, flags, o, d_selected, g.numel, stream),
               "cub::DeviceSelect::Flagged");
    void* temp = cub_temp(call, bytes);
    check_cuda(cub::DeviceSelect::Flagged(temp, bytes, values, flags, o, d_selected, g.numel, stream),
               "cub::DeviceSelect::Flagged");
  });
}

// Multi-index of row-major flat positions: step[d] = product of shape[d+1..].
struct Unravel {
  int32_t ndim = 0;
  int64_t shape[kMaxTensorDims] = {};
  int64_t step[kMaxTensorDims] = {};
};

// out[k][d] = coordinate d of flat[k]; one thread per output element (coalesced writes).
__global__ void unravel_kernel(const int64_t* flat, int64_t* out, int64_t total, Unravel u) {
  for (int64_t j = first_index(); j < total; j += grid_stride()) {
    const int64_t k = j / u.ndim;
    const int32_t d = static_cast<int32_t>(j - k * u.ndim);
    out[j] = (flat[k] / u.step[d]) % u.shape[d];
  }
}

// The row-major indices of self's non-zero elements as an int64 [n, ndim] tensor.
void nonzero_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  check_allocate_output(call, "nonzero");
  check_dims(self, "self");
  const int32_t nd = self.ndim;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const Geometry<1> g = make_geometry<1>({&self});
  dispatch(call.dtype, [&](auto tag) {
    using V = typename decltype(tag)::type;
    using U = bits_t<V>;
    const NonZeroAt<U, kIsFloating<V>> nonzero{g, data_as<const U>(self)};
    const int64_t total = g.numel == 0 ? 0 : count_where(call, nonzero, g.numel);
    const int64_t shape[2] = {total, nd};
    DLTensor& out = allocate(call, TSR_DTYPE_INT64, 2, shape);
    if (total == 0 || nd == 0) return;
    // Flat positions of the non-zeros, in order, then their multi-indices.
    int64_t* flat = static_cast<int64_t*>(workspace(call, static_cast<size_t>(total) * sizeof(int64_t)));
    int64_t* d_selected = static_cast<int64_t*>(workspace(call, sizeof(int64_t)));
    const thrust::counting_iterator<int64_t> positions(0);
    size_t bytes = 0;
    check_cuda(cub::DeviceSelect::If(nullptr, bytes, positions, flat, d_selected, g.numel, nonzero, stream),
               "cub::DeviceSelect::If");
    void* temp = cub_temp(call, bytes);
    check_cuda(cub::DeviceSelect::If(temp, bytes, positions, flat, d_selected, g.numel, nonzero, stream),
               "cub::DeviceSelect::If");
    Unravel u;
    u.ndim = nd;
    int64_t step = 1;
    for (int32_t d = nd - 1; d >= 0; --d) {
      u.shape[d] = self.shape[d];
      u.step[d] = step;
      step *= self.shape[d];
    }
    const int64_t elements = total * nd;
    unravel_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(flat, data_as<int64_t>(out), elements, u);
    check_launch("nonzero launch");
  });
}

}  // namespace

void register_indexing(const sdk::Host& host) {
  host.register_kernel("gather", "cuda", kAllMask, &sdk::kernel_entry<kCuda, gather_entry>);
  host.register_kernel("index_select", "cuda", kAllMask, &sdk::kernel_entry<kCuda, gather_entry>);
  host.register_kernel("scatter_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, scatter_entry<false>>);
  host.register_kernel("scatter_.value", "cuda", kAllMask, &sdk::kernel_entry<kCuda, scatter_entry<false>>);
  host.register_kernel("scatter_add_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, scatter_entry<true>>);
  host.register_kernel("index_add_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, scatter_entry<true>>);
  host.register_kernel("_scatter", "cuda", kAllMask, &sdk::kernel_entry<kCuda, scatter_copy_entry>);
  host.register_kernel("take", "cuda", kAllMask, &sdk::kernel_entry<kCuda, take_entry>);
  host.register_kernel("masked_fill", "cuda", kAllMask, &sdk::kernel_entry<kCuda, masked_fill_entry>);
  host.register_kernel("masked_select", "cuda", kAllMask, &sdk::kernel_entry<kCuda, masked_select_entry>);
  host.register_kernel("nonzero", "cuda", kAllMask, &sdk::kernel_entry<kCuda, nonzero_entry>);
}

}  // namespace tessera::cuda
