// The CUDA plugin's shape kernels: copy_ (any dtype pair, any strides, broadcast
// sources), _cat, fill_, arange, tril and triu. Semantics are the cpu plugin's
// (plugins/cpu/src/shape.cpp, shape_copy.cpp, convert.hpp; docs/ops/shape.md),
// including its conversion rules, which differ from plain C++ casts: NaN -> int
// is 0, float -> int saturates, and float64/wide integers -> float16/bfloat16
// round once (through float rounded to odd).
#include "elementwise.cuh"
#include "kernels.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

using sdk::invalid;

// ---- types ---------------------------------------------------------------

// Calls f(TypeTag<U>) with U the unsigned type of the element size of `d`.
template <typename F>
void dispatch_raw(TsrDType d, F&& f) {
  dispatch(d, [&](auto tag) { f(sdk::TypeTag<bits_t<typename decltype(tag)::type>>{}); });
}

// ---- cpu's conversion rules (plugins/cpu/src/convert.hpp) ------------------

__host__ __device__ __forceinline__ uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

__host__ __device__ __forceinline__ float float_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

__host__ __device__ __forceinline__ int leading_zeros(uint64_t x) {
#ifdef __CUDA_ARCH__
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

// double -> float rounded to odd (truncate, set the last bit if inexact): a
// second rounding to a type of <= 22 significant bits is then correct.
__host__ __device__ __forceinline__ float round_odd_float(double d) {
  const float f = static_cast<float>(d);
  const double back = static_cast<double>(f);
  if (back == d || d != d) return f;  // exact, or NaN
  uint32_t bits = float_bits(f);
  if (fabs(back) > fabs(d)) bits -= 1;  // rounded away from zero: step back (inf -> FLT_MAX)
  return float_from_bits(bits | 1u);
}

// int64 -> float rounded to odd; exact below 2^24.
__host__ __device__ __forceinline__ float round_odd_float(int64_t v) {
  const uint64_t mag = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (mag < (uint64_t{1} << 24)) return static_cast<float>(v);
  const int shift = 64 - leading_zeros(mag) - 24;  // keep the top 24 bits
  uint64_t kept = mag >> shift;
  if ((mag & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1u;
  const float f = static_cast<float>(kept) * static_cast<float>(uint64_t{1} << shift);  // both steps exact
  return v < 0 ? -f : f;
}

// Truncation toward zero with saturation; NaN -> 0. I is int32_t or int64_t.
template <typename I, typename F>
__host__ __device__ __forceinline__ I float_to_int_saturate(F x) {
  constexpr F kLow = -static_cast<F>(uint64_t{1} << (sizeof(I) * 8 - 1));
  constexpr F kHigh = static_cast<F>(uint64_t{1} << (sizeof(I) * 8 - 1));
  if (!(x == x)) return 0;
  if (x >= kHigh) return std::numeric_limits<I>::max();
  if (x < kLow) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

// Value types (bool, integers, __half, __nv_bfloat16, float, double) and what a
// loaded element of one looks like: float for the half types, a byte for bool.
template <typename T>
using loaded_t = compute_t<storage_t<T>>;

// From -> To as cpu's convert<To, From>, on loaded values. For a half To the
// result is a float that store<To> (round to nearest even) rounds correctly.
template <typename To, typename From>
__host__ __device__ __forceinline__ loaded_t<To> cpu_convert(loaded_t<From> x) {
  using R = loaded_t<To>;
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<R>(x != 0 ? 1 : 0);  // NaN -> true; half arrives as float
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<R>(x != 0 ? 1 : 0);
  } else if constexpr (kIsInteger<To>) {
    if constexpr (kIsInteger<From>) {
      return static_cast<To>(x);  // modular
    } else {
      using Wide = std::conditional_t<(sizeof(To) <= 4), int32_t, int64_t>;
      return static_cast<To>(float_to_int_saturate<Wide>(x));
    }
  } else if constexpr (kIsHalf<To>) {
    if constexpr (kIsHalf<From> || std::is_same_v<From, float>) {
      return x;  // float -> half: the only rounding
    } else if constexpr (std::is_same_v<From, double>) {
      return round_odd_float(x);
    } else if constexpr (sizeof(From) <= 2) {
      return static_cast<float>(x);  // exact in float
    } else {
      return round_odd_float(static_cast<int64_t>(x));
    }
  } else {  // float or double; a half From is already float (exact)
    return static_cast<To>(x);
  }
}

// A scalar argument converted to T's storage as cpu's scalar_to<T> (fill_, arange).
template <typename T>
storage_t<T> scalar_to(const TsrValue& v, const char* name) {
  switch (v.tag) {
    case TSR_VALUE_INT: return store<storage_t<T>>(cpu_convert<T, int64_t>(v.as.i));
    case TSR_VALUE_FLOAT: return store<storage_t<T>>(cpu_convert<T, double>(v.as.f));
    case TSR_VALUE_BOOL: return store<storage_t<T>>(cpu_convert<T, bool>(static_cast<uint8_t>(v.as.b != 0)));
    default: sdk::check_scalar(v, name);
  }
  invalid(std::string("argument '") + name + "' must be a scalar");
}

// ---- geometry helpers ---------------------------------------------------------

constexpr int64_t kInt32Limit = int64_t{1} << 31;

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

// make_geometry's scratch holds 64 dims.
void check_dims(const DLTensor& t, const char* name) {
  if (t.ndim > 64) invalid(std::string("'") + name + "' has " + std::to_string(t.ndim) + " dims; at most 64 are supported");
}

// Grid-stride loop bounds: the counter is 64-bit so that i + stride never overflows.
__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---- copy_ --------------------------------------------------------------------

template <typename To, typename From>
struct ConvertFn {
  __device__ loaded_t<To> operator()(loaded_t<From> x) const { return cpu_convert<To, From>(x); }
};

template <typename U>
struct IdentityFn {
  __device__ U operator()(U x) const { return x; }
};

// dst = src, both of `dtype`, same shape, any strides: the bits moved on `stream`.
void copy_bits(TsrDType dtype, DLTensor& dst, const DLTensor& src, cudaStream_t stream) {
  const Geometry<2> g = make_geometry<2>({&dst, &src});
  if (g.numel == 0) return;
  char* out = sdk::data_ptr(dst);
  const std::array<const char*, 1> in = {sdk::data_ptr(src)};
  dispatch_raw(dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if (g.dense) {
      if (out != in[0])
        check_cuda(cudaMemcpyAsync(out, in[0], static_cast<size_t>(g.numel) * sizeof(U), cudaMemcpyDeviceToDevice,
                                   stream),
                   "cudaMemcpyAsync");
      return;
    }
    launch_elementwise<U, U>(g, out, in, IdentityFn<U>{}, stream);
  });
}

void copy_kernel(const TsrKernelCall& call) {
  DLTensor& dst = sdk::output(call, 0);
  const DLTensor& src = sdk::tensor_arg(call, 1, "src", call.dtype);
  sdk::check_same_shape(src, "src", dst, "self");
  const TsrDType dst_dtype = sdk::dtype_of(dst, "self");
  check_dims(dst, "self");
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  if (dst_dtype == call.dtype) {  // same dtype: move bits
    copy_bits(call.dtype, dst, src, stream);
    return;
  }
  const Geometry<2> g = make_geometry<2>({&dst, &src});
  if (g.numel == 0) return;
  char* out = sdk::data_ptr(dst);
  const std::array<const char*, 1> in = {sdk::data_ptr(src)};
  dispatch(call.dtype, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch(dst_dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      if constexpr (!std::is_same_v<To, From>) {
        launch_elementwise<storage_t<To>, storage_t<From>>(g, out, in, ConvertFn<To, From>{}, stream);
      }
    });
  });
}

// ---- _cat ---------------------------------------------------------------------

// Each input's bits into its slice of out along dim: a strided copy per input
// (one cudaMemcpyAsync where the slice and the input are dense). The GPU copies
// every slice at full bandwidth, so no fused single-pass kernel is needed here.
void cat_kernel(const TsrKernelCall& call) {
  const sdk::TensorList list = sdk::tensor_list_arg(call, 0, "tensors");
  const int64_t dim = sdk::int_arg(call, 1, "dim");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  check_dims(out, "out");
  if (list.size == 0) invalid("_cat: expected a non-empty list of tensors");
  if (dim < 0 || dim >= out.ndim)
    invalid("_cat: dim " + std::to_string(dim) + " is out of range for out of shape " + sdk::shape_text(out));
  int64_t total = 0;
  bool overflow = false;  // sizes a caller made up can pass int64
  for (size_t k = 0; k < list.size; ++k) {
    const DLTensor& in = list[k];
    sdk::check_dtype(in, call.dtype, "tensors");
    bool fits = in.ndim == out.ndim;
    for (int d = 0; fits && d < out.ndim; ++d) fits = d == dim || in.shape[d] == out.shape[d];
    if (!fits)
      invalid("_cat: tensor " + std::to_string(k) + " of shape " + sdk::shape_text(in) + " does not fit out of shape " +
              sdk::shape_text(out) + " along dim " + std::to_string(dim));
    overflow = overflow || __builtin_add_overflow(total, in.shape[dim], &total);
  }
  if (overflow || total != out.shape[dim])
    invalid("_cat: the tensors' sizes along dim " + std::to_string(dim) + " add up to " + std::to_string(total) +
            ", out has " + std::to_string(out.shape[dim]));
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const int64_t elem = (out.dtype.bits * out.dtype.lanes + 7) / 8;
  int64_t at = 0;
  for (size_t k = 0; k < list.size; ++k) {
    const DLTensor& in = list[k];
    DLTensor slice = out;
    slice.shape = in.shape;
    slice.data = sdk::data_ptr(out) + at * out.strides[dim] * elem;
    slice.byte_offset = 0;
    if (sdk::numel(in) != 0) copy_bits(call.dtype, slice, in, stream);
    at += in.shape[dim];
  }
}

// ---- fill_ --------------------------------------------------------------------

template <typename Index, typename U>
__global__ void fill_strided(Geometry<1> g, U* out, U value) {
  for (int64_t i = first_index(); i < g.numel; i += grid_stride())
    out[strided_offset<Index>(static_cast<Index>(i), g.ndim, g.shape, g.strides[0].s)] = value;
}

template <typename U>
bool all_bytes_equal(U v) {
  unsigned char b[sizeof(U)];
  std::memcpy(b, &v, sizeof(U));
  for (size_t k = 1; k < sizeof(U); ++k)
    if (b[k] != b[0]) return false;
  return true;
}

void fill_kernel(const TsrKernelCall& call) {
  DLTensor& self = sdk::output(call, 0, call.dtype);
  const TsrValue& value = sdk::arg(call, 1, "value");
  sdk::check_scalar(value, "value");
  check_dims(self, "self");
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  const Geometry<1> g = make_geometry<1>({&self});
  if (g.numel == 0) return;
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = bits_t<T>;
    const storage_t<T> v = scalar_to<T>(value, "value");
    U bits;
    std::memcpy(&bits, &v, sizeof(U));
    char* out = sdk::data_ptr(self);
    if (g.dense && all_bytes_equal(bits)) {  // zeros (and the like): a memset
      unsigned char byte;
      std::memcpy(&byte, &bits, 1);
      check_cuda(cudaMemsetAsync(out, byte, static_cast<size_t>(g.numel) * sizeof(U), stream), "fill_: cudaMemsetAsync");
      return;
    }
    if (fits_int32(g)) fill_strided<int32_t, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, reinterpret_cast<U*>(out), bits);
    else fill_strided<int64_t, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, reinterpret_cast<U*>(out), bits);
    check_launch("fill_ launch");
  });
}

// ---- arange -------------------------------------------------------------------

// out[i] = start + i * step in int64 arithmetic that wraps (as cpu), then converted.
template <typename T>
__global__ void arange_int(T* out, int64_t n, int64_t stride, uint64_t first, uint64_t delta) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i * stride] = static_cast<T>(static_cast<int64_t>(first + static_cast<uint64_t>(i) * delta));
}

// out[i] = start + i * step in float64, rounded as cpu (no fused multiply-add:
// the cpu plugin is built with -ffp-contract=off), then converted.
template <typename T>
__global__ void arange_float(T* out, int64_t n, int64_t stride, double first, double delta) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i * stride] = store<T>(cpu_convert<T, double>(__dadd_rn(first, __dmul_rn(static_cast<double>(i), delta))));
}

void arange_kernel(const TsrKernelCall& call) {
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (out.ndim != 1) invalid("out must be 1-D, got shape " + sdk::shape_text(out));
  const TsrValue& start = sdk::arg(call, 0, "start");
  const TsrValue& step = sdk::arg(call, 2, "step");
  sdk::check_scalar(start, "start");
  sdk::check_scalar(step, "step");
  const int64_t n = out.shape[0];
  const int64_t stride = out.strides[0];
  if (n == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = data_as<T>(out);
    if constexpr (std::is_same_v<T, bool>) {
      invalid("arange is not defined for bool");
    } else if constexpr (kIsInteger<T>) {
      const uint64_t first = static_cast<uint64_t>(scalar_to<int64_t>(start, "start"));
      const uint64_t delta = static_cast<uint64_t>(scalar_to<int64_t>(step, "step"));
      arange_int<T><<<blocks_for(n), kThreads, 0, stream>>>(o, n, stride, first, delta);
      check_launch("arange launch");
    } else {
      const double first = scalar_to<double>(start, "start");
      const double delta = scalar_to<double>(step, "step");
      arange_float<T><<<blocks_for(n), kThreads, 0, stream>>>(o, n, stride, first, delta);
      check_launch("arange launch");
    }
  });
}

// ---- tril, triu ---------------------------------------------------------------

// The last two dims plus the batch dims merged where both operands allow.
struct TriGeometry {
  int nbatch = 0;
  int64_t batch_shape[kMaxDims] = {};
  int64_t in_batch[kMaxDims] = {};
  int64_t out_batch[kMaxDims] = {};
  int64_t rows = 0, cols = 0;
  int64_t in_sr = 0, in_sc = 0, out_sr = 0, out_sc = 0;
  int64_t diagonal = 0;
  int64_t numel = 0;
};

TriGeometry make_tri_geometry(const DLTensor& self, const DLTensor& out, int64_t diagonal) {
  TriGeometry g;
  const int nd = self.ndim;
  g.rows = self.shape[nd - 2];
  g.cols = self.shape[nd - 1];
  g.in_sr = self.strides[nd - 2];
  g.in_sc = self.strides[nd - 1];
  g.out_sr = out.strides[nd - 2];
  g.out_sc = out.strides[nd - 1];
  g.diagonal = std::clamp<int64_t>(diagonal, -g.rows - 1, g.cols + 1);  // no overflow in col - row vs diagonal
  g.numel = g.rows * g.cols;
  int m = 0;
  for (int d = 0; d < nd - 2; ++d) {
    g.numel *= self.shape[d];
    if (self.shape[d] == 1) continue;
    if (m > 0 && g.in_batch[m - 1] == self.strides[d] * self.shape[d] &&
        g.out_batch[m - 1] == out.strides[d] * self.shape[d]) {  // merge into the inner neighbour
      g.batch_shape[m - 1] *= self.shape[d];
      g.in_batch[m - 1] = self.strides[d];
      g.out_batch[m - 1] = out.strides[d];
      continue;
    }
    if (m == kMaxDims)
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "more than " + std::to_string(kMaxDims) +
                                                    " batch dimensions left after merging are not supported");
    g.batch_shape[m] = self.shape[d];
    g.in_batch[m] = self.strides[d];
    g.out_batch[m] = out.strides[d];
    ++m;
  }
  g.nbatch = m;
  return g;
}

bool tri_fits_int32(const TriGeometry& g) {
  if (g.numel >= kInt32Limit) return false;
  const auto extent = [&](const int64_t* batch, int64_t sr, int64_t sc) {
    int64_t e = (g.rows - 1) * (sr < 0 ? -sr : sr) + (g.cols - 1) * (sc < 0 ? -sc : sc);
    for (int d = 0; d < g.nbatch; ++d) e += (g.batch_shape[d] - 1) * (batch[d] < 0 ? -batch[d] : batch[d]);
    return e;
  };
  return extent(g.in_batch, g.in_sr, g.in_sc) < kInt32Limit && extent(g.out_batch, g.out_sr, g.out_sc) < kInt32Limit;
}

// One thread per output element; out may be self (same strides): each element
// is read and then written by the same thread.
template <bool Lower, typename Index, typename U>
__global__ void tri_kernel(TriGeometry g, const U* in, U* out) {
  for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
    Index rest = static_cast<Index>(i);
    const Index col = rest % static_cast<Index>(g.cols);
    rest /= static_cast<Index>(g.cols);
    const Index row = rest % static_cast<Index>(g.rows);
    rest /= static_cast<Index>(g.rows);
    Index in_off = row * static_cast<Index>(g.in_sr) + col * static_cast<Index>(g.in_sc);
    Index out_off = row * static_cast<Index>(g.out_sr) + col * static_cast<Index>(g.out_sc);
    for (int d = g.nbatch - 1; d >= 0; --d) {
      const Index size = static_cast<Index>(g.batch_shape[d]);
      const Index idx = rest % size;
      rest /= size;
      in_off += idx * static_cast<Index>(g.in_batch[d]);
      out_off += idx * static_cast<Index>(g.out_batch[d]);
    }
    const int64_t offset = static_cast<int64_t>(col) - static_cast<int64_t>(row);
    const bool keep = Lower ? offset <= g.diagonal : offset >= g.diagonal;
    out[out_off] = keep ? in[in_off] : U{0};
  }
}

template <bool Lower>
void tri_kernel_entry(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const int64_t diagonal = sdk::int_arg(call, 1, "diagonal");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (self.ndim < 2 || !sdk::same_shape(self, out))
    invalid("expected self and out of one shape with at least 2 dims, got " + sdk::shape_text(self) + " and " +
            sdk::shape_text(out));
  const TriGeometry g = make_tri_geometry(self, out, diagonal);
  if (g.numel == 0) return;
  DeviceScope scope(call.device_index);
  const cudaStream_t stream = stream_of(call);
  dispatch_raw(call.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* in = data_as<const U>(self);
    U* o = data_as<U>(out);
    if (tri_fits_int32(g)) tri_kernel<Lower, int32_t, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, in, o);
    else tri_kernel<Lower, int64_t, U><<<blocks_for(g.numel), kThreads, 0, stream>>>(g, in, o);
    check_launch(Lower ? "tril launch" : "triu launch");
  });
}

}  // namespace

void register_shape(const sdk::Host& host) {
  host.register_kernel("copy_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, copy_kernel>);
  host.register_kernel("_cat", "cuda", kAllMask, &sdk::kernel_entry<kCuda, cat_kernel>);
  host.register_kernel("fill_", "cuda", kAllMask, &sdk::kernel_entry<kCuda, fill_kernel>);
  // bool is left out of arange, as on cpu: the core then reports a missing kernel.
  host.register_kernel("arange", "cuda", kIntMask | kFloatMask, &sdk::kernel_entry<kCuda, arange_kernel>);
  host.register_kernel("tril", "cuda", kAllMask, &sdk::kernel_entry<kCuda, tri_kernel_entry<true>>);
  host.register_kernel("triu", "cuda", kAllMask, &sdk::kernel_entry<kCuda, tri_kernel_entry<false>>);
}

}  // namespace tessera::cuda
