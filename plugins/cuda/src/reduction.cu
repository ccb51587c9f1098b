// Reductions and scans of the CUDA plugin (docs/ops/reduction.md): sum, prod,
// amax, amin, max.dim, min.dim, any, all, var, std, norm, logsumexp, cumsum and
// cumprod, with the cpu plugin's semantics (plugins/cpu/src/reduction.cpp,
// reduce_ops.hpp, reduce_scan.hpp): accumulation types, NaN rules, first index
// on ties, empty reductions.
//
// One engine runs every reduction. The problem is simplified as on cpu (size-1
// dims dropped, negative strides flipped, dims ordered by input stride and
// neighbours merged) into kept dims (one output each) and reduced dims; then
//  - few reduced elements: one thread per output (reduce_per_thread);
//  - the innermost dim reduced: a warp per output, or for few outputs blocks
//    that each take a fixed chunk of one output's elements, with 128-bit loads
//    on contiguous runs (reduce_inner);
//  - the innermost dim kept: threads along the outputs, so loads coalesce, and
//    rows split over threadIdx.y and, for few outputs, over blocks (reduce_outer).
// Split outputs leave per-chunk partials in workspace memory that a second
// kernel combines in chunk order. No atomics anywhere: the combination order is
// fixed, so a second run gives the same bits.
//
// Floating sum and prod over at most kExactMax elements per output follow the
// cpu plugin's own order (lane sums, cascades and lane products, from
// cpu_reduction_order.cuh), so that cancellations such as (max + x) - max give
// cpu's result, not just a close one.
//
// Scans: one thread per line, in cpu's sequential order; few long lines are
// cut into segments (segment totals, then carries per line, then a rescan).
#include "common.cuh"
#include "cpu_reduction_order.cuh"
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera::cuda {
namespace {

using sdk::invalid;

constexpr int kWarp = 32;
constexpr int kMaxDims = 16;          // kept or reduced dims after merging
constexpr int64_t kExactMax = 2048;   // floating sum/prod over at most this many: cpu's order
constexpr int64_t kSmallRed = 16;     // at most this many reduced elements: a thread per output
constexpr int64_t kWarpRed = 4096;    // at most this many (or many outputs): a warp per output
constexpr int64_t kMinChunk = 4096;   // elements per block when blocks split one output
constexpr int64_t kMinRows = 128;     // rows per block when blocks split an outer reduction
constexpr int kOuterX = 32, kOuterY = kThreads / kOuterX;
constexpr int64_t kScanSeqMax = 2048;  // longer lines may be cut into segments
constexpr int64_t kMinSegment = 512;
constexpr int64_t kMaxSegments = 16384;

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- the problem ---------------------------------------------------------------

struct Dims {
  int n;
  int64_t size[kMaxDims];
  int64_t in[kMaxDims];   // input stride, elements
  int64_t out[kMaxDims];  // output stride, elements (0 for reduced dims)
};

/// A reduction after simplification: kept and reduced dims, innermost first.
struct Problem {
  Dims kept, red;
  int64_t n_out, n_red;
  int64_t in_offset, out_offset;  // elements, from flipped dims
  bool inner;                      // the fastest-moving input dim is reduced (or none is kept)
};

/// Checks a dim list (sorted, unique, in range; a 0-d input's dim 0 is no dim)
/// and that out has the reduced shape; returns a flag per input dim.
std::vector<char> reduced_dims(const DLTensor& self, const DLTensor& out, sdk::IntList dims, bool keepdim) {
  size_t nd = dims.size;
  if (self.ndim == 0 && nd == 1 && dims[0] == 0) nd = 0;
  std::vector<char> reduced(static_cast<size_t>(self.ndim), 0);
  for (size_t i = 0; i < nd; ++i) {
    if (dims[i] < 0 || dims[i] >= self.ndim || (i > 0 && dims[i] <= dims[i - 1])) {
      invalid("argument 'dim' must hold sorted, unique dims in [0, " + std::to_string(self.ndim) + "), got " +
              std::to_string(dims[i]) + " at position " + std::to_string(i));
    }
    reduced[static_cast<size_t>(dims[i])] = 1;
  }
  const int32_t expected = keepdim ? self.ndim : self.ndim - static_cast<int32_t>(nd);
  bool ok = out.ndim == expected;
  for (int32_t d = 0, o = 0; ok && d < self.ndim; ++d) {
    const bool r = reduced[static_cast<size_t>(d)] != 0;
    if (r && !keepdim) continue;
    ok = out.shape[o++] == (r ? 1 : self.shape[d]);
  }
  if (!ok) {
    invalid("out has shape " + sdk::shape_text(out) + ", which is not the reduced shape of " + sdk::shape_text(self));
  }
  return reduced;
}

/// cpu's make_layout (reduce_layout.hpp). Reduced dims with negative strides
/// stay as they are when !flip_reduced (max.dim's indices and scans depend on
/// their order); kept dims may always be flipped, their outputs follow.
Problem make_problem(const DLTensor& self, const DLTensor& out, const std::vector<char>& reduced, bool keepdim,
                     bool flip_reduced) {
  struct Raw {
    int64_t size, in, out;
    bool reduced;
  };
  Problem P{};
  P.n_out = 1;
  P.n_red = 1;
  std::vector<Raw> all;
  for (int32_t d = 0, o = 0; d < self.ndim; ++d) {
    const bool r = reduced[static_cast<size_t>(d)] != 0;
    int64_t out_stride = 0;
    if (!r) out_stride = out.strides[keepdim ? d : o];
    if (!r || keepdim) ++o;
    const int64_t size = self.shape[d];
    if (size == 1) continue;
    Raw x{size, self.strides[d], out_stride, r};
    if (x.in < 0 && size > 0 && (flip_reduced || !r)) {
      P.in_offset += (size - 1) * x.in;
      P.out_offset += (size - 1) * x.out;
      x.in = -x.in;
      x.out = -x.out;
    }
    all.push_back(x);
  }
  std::stable_sort(all.begin(), all.end(), [](const Raw& a, const Raw& b) { return std::llabs(a.in) < std::llabs(b.in); });
  std::vector<Raw> merged;
  for (const Raw& x : all) {
    if (!merged.empty()) {
      Raw& inner = merged.back();
      if (inner.reduced == x.reduced && x.in == inner.in * inner.size && x.out == inner.out * inner.size) {
        inner.size *= x.size;
        continue;
      }
    }
    merged.push_back(x);
  }
  for (const Raw& x : merged) {
    Dims& D = x.reduced ? P.red : P.kept;
    if (D.n == kMaxDims) {  // docs/cuda.md: refused as unimplemented, not as a bad argument
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, std::string("more than ") + std::to_string(kMaxDims) +
                                                    (x.reduced ? " reduced" : " kept") +
                                                    " dims that cannot be merged (input shape " +
                                                    sdk::shape_text(self) + ")");
    }
    D.size[D.n] = x.size;
    D.in[D.n] = x.in;
    D.out[D.n] = x.out;
    ++D.n;
    (x.reduced ? P.n_red : P.n_out) *= x.size;
  }
  P.inner = P.kept.n == 0 || (!merged.empty() && merged[0].reduced);
  return P;
}

/// Offsets (elements) of output `o` (flat over the kept dims, innermost first).
__device__ __forceinline__ void kept_offsets(const Problem& P, int64_t o, int64_t& io, int64_t& oo) {
  io = 0;
  oo = 0;
  for (int d = 0; d < P.kept.n; ++d) {
    const int64_t q = o / P.kept.size[d];
    const int64_t i = o - q * P.kept.size[d];
    io += i * P.kept.in[d];
    oo += i * P.kept.out[d];
    o = q;
  }
}

/// Input offset of reduced element `r` (flat over reduced dims first..n-1).
__device__ __forceinline__ int64_t red_offset(const Problem& P, int64_t r, int first = 0) {
  int64_t off = 0;
  for (int d = first; d < P.red.n; ++d) {
    const int64_t q = r / P.red.size[d];
    off += (r - q * P.red.size[d]) * P.red.in[d];
    r = q;
  }
  return off;
}

// ---- elements and accumulators -------------------------------------------------------

template <typename V>
__device__ __forceinline__ bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return v != v;
  } else {
    return false;
  }
}

/// How cpu compares and folds an element: float for the half types, 0/1 for bool.
template <typename T>
using value_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;

template <typename T>
__device__ __forceinline__ value_t<T> value_of(storage_t<T> x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x != 0 ? 1 : 0;
  } else {
    return ::tessera::cuda::load(x);
  }
}

/// Accumulator of sum and prod (cpu's acc_t): double for double, float for the
/// other floating types, uint64 (wrapping) for integers and bool.
template <typename T>
using fold_acc_t =
    std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<kIsFloating<T>, float, uint64_t>>;
/// Accumulator of the scans (cpu's scan_acc_t): float for the half types, double
/// for float and double, uint64 otherwise.
template <typename T>
using scan_acc_t = std::conditional_t<kIsHalf<T>, float, std::conditional_t<kIsFloating<T>, double, uint64_t>>;

template <typename T, typename A>
__device__ __forceinline__ A to_acc(storage_t<T> x) {
  if constexpr (std::is_same_v<A, uint64_t>) {
    if constexpr (std::is_same_v<T, bool>) {
      return x != 0 ? 1u : 0u;
    } else {
      return static_cast<uint64_t>(static_cast<int64_t>(x));  // sign-extend, then wrap
    }
  } else {
    return static_cast<A>(value_of<T>(x));
  }
}

/// A result as an element of Out, converted as cpu converts (integers wrap,
/// doubles round to the half types in one step).
template <typename Out, typename V>
__device__ __forceinline__ storage_t<Out> to_out(V v) {
  if constexpr (std::is_same_v<Out, bool>) {
    return v != V(0) ? 1 : 0;
  } else if constexpr (std::is_same_v<V, uint64_t>) {
    return static_cast<Out>(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<Out, __half>) {
    if constexpr (std::is_same_v<V, double>) {
      return __double2half(v);
    } else {
      return __float2half_rn(static_cast<float>(v));
    }
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    if constexpr (std::is_same_v<V, double>) {
      return __double2bfloat16(v);
    } else {
      return __float2bfloat16_rn(static_cast<float>(v));
    }
  } else {
    return static_cast<Out>(v);
  }
}

template <typename C, bool IsMax>
__device__ __forceinline__ C extreme_init() {
  if constexpr (std::is_floating_point_v<C>) {
    return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
}

/// Whether b replaces a as the running max (min): larger (smaller), or NaN,
/// which then stays (a NaN accumulator compares false with everything).
template <bool IsMax, typename C>
__device__ __forceinline__ bool replaces(C b, C a) {
  return (IsMax ? b > a : b < a) || is_nan(b);
}

// ---- the ops -------------------------------------------------------------------
// An op: Acc init(); Ctx context(o) (per-output state, e.g. a mean); Acc elem(x,
// ctx, r) (element r of the reduced dims); Acc combine(a, b) (associative, a's
// elements before b's); finish(acc, o, out_offset) writes output o.

struct NoCtx {};

template <typename T, typename Out, bool IsSum>
struct FoldOp {  // sum, prod
  using S = storage_t<T>;
  using Acc = fold_acc_t<T>;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  storage_t<Out>* out;
  __device__ Acc init() const { return Acc(IsSum ? 0 : 1); }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const { return to_acc<T, Acc>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return IsSum ? a + b : a * b; }
  __device__ void finish(Acc a, int64_t, int64_t oo) const { out[oo] = to_out<Out>(a); }
};

template <typename T, bool IsMax>
struct ExtremeOp {  // amax, amin
  using S = storage_t<T>;
  using Acc = value_t<T>;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  S* out;
  __device__ Acc init() const { return extreme_init<Acc, IsMax>(); }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const { return value_of<T>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return replaces<IsMax>(b, a) ? b : a; }
  __device__ void finish(Acc a, int64_t, int64_t oo) const { out[oo] = to_out<T>(a); }
};

template <typename C>
struct ArgAcc {
  C v;
  int64_t i;  // INT64_MAX: no element yet
};

template <typename T, bool IsMax>
struct ArgOp {  // max.dim, min.dim: the first extreme, the first NaN if any
  using S = storage_t<T>;
  using C = value_t<T>;
  using Acc = ArgAcc<C>;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  S* values;
  int64_t* indices;
  __device__ Acc init() const { return Acc{extreme_init<C, IsMax>(), std::numeric_limits<int64_t>::max()}; }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t r) const { return Acc{value_of<T>(x), r}; }
  __device__ Acc combine(Acc a, Acc b) const {
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    if (na != nb) return na ? a : b;
    if (!na) {
      if (IsMax ? b.v > a.v : b.v < a.v) return b;
      if (IsMax ? a.v > b.v : a.v < b.v) return a;
    }
    return b.i < a.i ? b : a;  // equal (or both NaN): the first index
  }
  __device__ void finish(Acc a, int64_t, int64_t oo) const {
    values[oo] = to_out<T>(a.v);
    indices[oo] = a.i;
  }
};

template <typename T, bool IsAny>
struct AnyAllOp {
  using S = storage_t<T>;
  using Acc = uint8_t;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  uint8_t* out;  // bool or uint8: 0/1
  __device__ Acc init() const { return IsAny ? 0 : 1; }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const { return value_of<T>(x) != value_t<T>(0) ? 1 : 0; }  // NaN: true
  __device__ Acc combine(Acc a, Acc b) const { return IsAny ? (a | b) : (a & b); }
  __device__ void finish(Acc a, int64_t, int64_t oo) const { out[oo] = a; }
};

/// Sums in double; finish stores sum * scale into a per-output array (var's mean).
template <typename T>
struct MeanOp {
  using S = storage_t<T>;
  using Acc = double;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  double* mean;
  double count;
  __device__ Acc init() const { return 0.0; }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const { return static_cast<double>(value_of<T>(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void finish(Acc a, int64_t o, int64_t) const { mean[o] = a / count; }
};

/// var / std's second pass: squared deviations from the mean, in double.
template <typename T, bool Sqrt>
struct VarOp {
  using S = storage_t<T>;
  using Acc = double;
  using Ctx = double;
  static constexpr bool kVector = true;
  S* out;
  const double* mean;
  double count, correction;
  __device__ Acc init() const { return 0.0; }
  __device__ Ctx context(int64_t o) const { return mean[o]; }
  __device__ Acc elem(S x, Ctx m, int64_t) const {
    const double d = static_cast<double>(value_of<T>(x)) - m;
    return d * d;
  }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void finish(Acc a, int64_t, int64_t oo) const {
    double v = a / fmax(0.0, count - correction);
    if (count == 0) v = std::numeric_limits<double>::quiet_NaN();
    out[oo] = to_out<T>(Sqrt ? sqrt(v) : v);
  }
};

enum class NormKind { Inf, NegInf, Zero, One, Two, General };

template <typename T>
struct NormOp {  // in double, as cpu; the kind is uniform, so its branches cost little
  using S = storage_t<T>;
  using Acc = double;
  using Ctx = NoCtx;
  static constexpr bool kVector = false;  // pow/exp-heavy ops stay scalar (code size)
  S* out;
  NormKind kind;
  double p;
  __device__ Acc init() const { return kind == NormKind::NegInf ? std::numeric_limits<double>::infinity() : 0.0; }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const {
    const double a = fabs(static_cast<double>(value_of<T>(x)));
    switch (kind) {
      case NormKind::Zero: return a != 0 ? 1.0 : 0.0;  // NaN counts
      case NormKind::Two: return a * a;
      case NormKind::General: return pow(a, p);
      default: return a;
    }
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (kind == NormKind::Inf) return replaces<true>(b, a) ? b : a;
    if (kind == NormKind::NegInf) return replaces<false>(b, a) ? b : a;
    return a + b;
  }
  __device__ void finish(Acc a, int64_t, int64_t oo) const {
    if (kind == NormKind::Two) a = sqrt(a);
    if (kind == NormKind::General) a = pow(a, 1.0 / p);
    out[oo] = to_out<T>(a);
  }
};

/// logsumexp's first pass: the NaN-propagating max, in double, into an array.
template <typename T>
struct MaxF64Op {
  using S = storage_t<T>;
  using Acc = double;
  using Ctx = NoCtx;
  static constexpr bool kVector = true;
  double* max;
  __device__ Acc init() const { return -std::numeric_limits<double>::infinity(); }
  __device__ Ctx context(int64_t) const { return {}; }
  __device__ Acc elem(S x, Ctx, int64_t) const { return static_cast<double>(value_of<T>(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return replaces<true>(b, a) ? b : a; }
  __device__ void finish(Acc a, int64_t o, int64_t) const { max[o] = a; }
};

/// logsumexp's second pass: m + log(sum exp(x - m)); a max that is NaN or
/// infinite (all -inf, or empty) is the answer itself.
template <typename T>
struct LseOp {
  using S = storage_t<T>;
  using Acc = double;
  using Ctx = double;
  static constexpr bool kVector = false;
  S* out;
  const double* max;
  __device__ Acc init() const { return 0.0; }
  __device__ Ctx context(int64_t o) const { return max[o]; }
  __device__ Acc elem(S x, Ctx m, int64_t) const {
    return isfinite(m) ? exp(static_cast<double>(value_of<T>(x)) - m) : 0.0;
  }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void finish(Acc a, int64_t o, int64_t oo) const {
    const double m = max[o];
    out[oo] = to_out<T>(isfinite(m) ? m + log(a) : m);
  }
};

// ---- warp and block combination (fixed order) -------------------------------------

template <typename A>
__device__ __forceinline__ A shfl_down(const A& v, int delta) {
  constexpr int kWords = static_cast<int>((sizeof(A) + 3) / 4);
  unsigned w[kWords] = {};
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}

/// Lane 0 gets the combination of the warp's values, lower lanes first.
template <typename Op, typename A>
__device__ __forceinline__ A warp_reduce(A v, const Op& op) {
#pragma unroll
  for (int d = kWarp / 2; d > 0; d /= 2) v = op.combine(v, shfl_down(v, d));
  return v;
}

/// Thread 0 gets the combination of the block's values (blockDim.x == kThreads;
/// every thread calls it). `part` holds kThreads / kWarp accumulators.
template <typename Op, typename A>
__device__ __forceinline__ A block_reduce(A v, const Op& op, A* part) {
  v = warp_reduce(v, op);
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  __syncthreads();  // part may still be read for the previous task
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / kWarp ? part[lane] : op.init();
    v = warp_reduce(v, op);
  }
  return v;
}

// ---- the engine's kernels ---------------------------------------------------------

/// One thread per output, elements in flat order.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_per_thread(const __grid_constant__ Problem P, const typename Op::S* in, Op op) {
  using Acc = typename Op::Acc;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < P.n_out; o += step) {
    int64_t io, oo;
    kept_offsets(P, o, io, oo);
    const typename Op::S* base = in + io;
    const auto ctx = op.context(o);
    Acc acc = op.init();
    if (P.red.n <= 1) {
      const int64_t s = P.red.n == 1 ? P.red.in[0] : 0;
      for (int64_t r = 0; r < P.n_red; ++r) acc = op.combine(acc, op.elem(base[r * s], ctx, r));
    } else {
      for (int64_t r = 0; r < P.n_red; ++r) acc = op.combine(acc, op.elem(base[red_offset(P, r)], ctx, r));
    }
    op.finish(acc, o, oo);
  }
}

/// Folds elements [b, e) of a contiguous run p (element r at p[r]) into acc,
/// lane `lane` of a group of G threads: 128-bit loads from the first 16-byte
/// boundary on, scalar loads for the head and tail.
template <int G, typename Op>
__device__ __forceinline__ void fold_contiguous(const typename Op::S* p, int64_t b, int64_t e, int lane, const Op& op,
                                                const typename Op::Ctx& ctx, typename Op::Acc& acc) {
  using S = typename Op::S;
  constexpr int kN = 16 / sizeof(S);
  constexpr int kUnroll = 4;  // loads in flight per thread
  struct alignas(16) Pack {
    S v[kN];
  };
  const S* q = p + b;
  const int64_t len = e - b;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(q);
  int64_t head = len;  // a misaligned element type: scalar loads only
  if (addr % sizeof(S) == 0) head = std::min<int64_t>(len, static_cast<int64_t>((16 - addr % 16) % 16 / sizeof(S)));
  for (int64_t i = lane; i < head; i += G) acc = op.combine(acc, op.elem(q[i], ctx, b + i));
  const int64_t nvec = (len - head) / kN;
  const int4* v = reinterpret_cast<const int4*>(q + head);
  for (int64_t j0 = lane; j0 < nvec; j0 += static_cast<int64_t>(G) * kUnroll) {
    Pack buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * G;
      if (j < nvec) {
        const int4 raw = __ldg(v + j);
        memcpy(&buf[u], &raw, sizeof(raw));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * G;
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < kN; ++k) acc = op.combine(acc, op.elem(buf[u].v[k], ctx, b + head + j * kN + k));
      }
    }
  }
  for (int64_t i = head + nvec * kN + lane; i < len; i += G) acc = op.combine(acc, op.elem(q[i], ctx, b + i));
}

/// The innermost dim reduced: a group of G threads (a warp, or the block) per
/// task = (output, chunk of its reduced elements). With partial, task's result
/// goes to partial[task]; else the output is written.
template <typename Op, int G>
__global__ void __launch_bounds__(kThreads)
    reduce_inner(const __grid_constant__ Problem P, const typename Op::S* in, Op op, int64_t chunks,
                 int64_t chunk_len, typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  using S = typename Op::S;
  constexpr int kGroups = kThreads / G;
  __shared__ Acc part[kThreads / kWarp];
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int64_t tasks = P.n_out * chunks;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kGroups;
  // The loop condition is uniform over a group, so a whole block runs block_reduce.
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * kGroups + threadIdx.x / G; task < tasks; task += step) {
    const int64_t o = task / chunks, c = task - o * chunks;
    const int64_t b = c * chunk_len, e = std::min(P.n_red, b + chunk_len);
    int64_t io, oo;
    kept_offsets(P, o, io, oo);
    const S* base = in + io;
    const auto ctx = op.context(o);
    Acc acc = op.init();
    bool vectorized = false;
    if constexpr (Op::kVector) {
      if (P.red.n == 1 && P.red.in[0] == 1) {
        fold_contiguous<G>(base, b, e, lane, op, ctx, acc);
        vectorized = true;
      }
    }
    if (!vectorized && P.red.n == 1) {
      const int64_t s = P.red.in[0];
      for (int64_t r = b + lane; r < e; r += G) acc = op.combine(acc, op.elem(base[r * s], ctx, r));
    } else if (!vectorized) {
      for (int64_t r = b + lane; r < e; r += G) acc = op.combine(acc, op.elem(base[red_offset(P, r)], ctx, r));
    }
    if constexpr (G == kWarp) {
      acc = warp_reduce(acc, op);
    } else {
      acc = block_reduce(acc, op, part);
    }
    if (lane == 0) {
      if (partial != nullptr) {
        partial[task] = acc;
      } else {
        op.finish(acc, o, oo);
      }
    }
  }
}

/// The innermost dim kept: threadIdx.x along the outputs, threadIdx.y over the
/// rows of chunk blockIdx.y (`rows` rows each); partial[o * gridDim.y + chunk]
/// when the rows are split over blocks.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_outer(const __grid_constant__ Problem P, const typename Op::S* in, Op op, int64_t rows,
                 typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  using S = typename Op::S;
  __shared__ Acc tile[kOuterY][kOuterX];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t chunk = blockIdx.y, chunks = gridDim.y;
  const int64_t r0 = chunk * rows, r1 = std::min(P.n_red, r0 + rows);
  const int64_t x_blocks = ceil_div(P.n_out, kOuterX);
  for (int64_t bx = blockIdx.x; bx < x_blocks; bx += gridDim.x) {  // uniform over the block
    const int64_t o = bx * kOuterX + tx;
    Acc acc = op.init();
    int64_t io = 0, oo = 0;
    if (o < P.n_out) {
      kept_offsets(P, o, io, oo);
      const S* base = in + io;
      const auto ctx = op.context(o);
      if (P.red.n == 1) {
        const int64_t s = P.red.in[0];
        for (int64_t r = r0 + ty; r < r1; r += kOuterY) acc = op.combine(acc, op.elem(base[r * s], ctx, r));
      } else {
        for (int64_t r = r0 + ty; r < r1; r += kOuterY) acc = op.combine(acc, op.elem(base[red_offset(P, r)], ctx, r));
      }
    }
    tile[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && o < P.n_out) {
      for (int y = 1; y < kOuterY; ++y) acc = op.combine(acc, tile[y][tx]);
      if (partial != nullptr) {
        partial[o * chunks + chunk] = acc;
      } else {
        op.finish(acc, o, oo);
      }
    }
    __syncthreads();  // tile is rewritten by the next round
  }
}

/// A warp per output combines its chunks' partials (partial[o * chunks + c]).
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_finish(const __grid_constant__ Problem P, Op op, const typename Op::Acc* partial, int64_t chunks) {
  using Acc = typename Op::Acc;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t step = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; o < P.n_out; o += step) {
    Acc acc = op.init();
    for (int64_t c = lane; c < chunks; c += kWarp) acc = op.combine(acc, partial[o * chunks + c]);
    acc = warp_reduce(acc, op);
    if (lane == 0) {
      int64_t io, oo;
      kept_offsets(P, o, io, oo);
      op.finish(acc, o, oo);
    }
  }
}

// ---- floating sum and prod in cpu's order (at most kExactMax elements) -------------

using cpu_order::Cascade;
static_assert((int64_t{1} << cpu_order::kCascadeLevels) > kExactMax, "cascade too shallow");

/// cpu's pairwise_sum (its lane_sum) of n elements at p, stride s.
template <typename T, typename A>
__device__ A pairwise_sum(const storage_t<T>* p, int64_t n, int64_t s) {
  return cpu_order::lane_sum<A>([p, s](int64_t i) { return to_acc<T, A>(p[i * s]); }, n);
}

/// Floating sum, a thread per output, in cpu's order (cpu_reduction_order.cuh):
/// the inner layout (runs of the innermost reduced dim lane-summed, runs
/// cascaded) or the outer one (cpu_order::outer_sum over the reduced rows).
template <typename T, typename Out>
__global__ void __launch_bounds__(kThreads)
    sum_exact(const __grid_constant__ Problem P, const storage_t<T>* in, storage_t<Out>* out) {
  using A = fold_acc_t<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < P.n_out; o += step) {
    int64_t io, oo;
    kept_offsets(P, o, io, oo);
    const storage_t<T>* base = in + io;
    A total;
    if (P.red.n == 0) {  // only size-1 dims reduced: the element itself
      total = to_acc<T, A>(base[0]);
    } else if (P.inner && P.red.n == 1) {
      total = pairwise_sum<T, A>(base, P.n_red, P.red.in[0]);
    } else if (P.inner) {
      Cascade<A> runs{};
      const int64_t len = P.red.size[0], n_runs = P.n_red / len;
      for (int64_t run = 0; run < n_runs; ++run) {
        runs.push(pairwise_sum<T, A>(base + red_offset(P, run, 1), len, P.red.in[0]));
      }
      total = runs.total();
    } else {
      total = cpu_order::outer_sum<A>([base, &P](int64_t r) { return to_acc<T, A>(base[red_offset(P, r)]); }, P.n_red);
    }
    out[oo] = to_out<Out>(total);
  }
}

/// Floating prod, a thread per output, in cpu's order (fold_run, as
/// cpu_order::lane_prod): contiguous runs of at least kLanes elements use
/// kLanes interleaved products combined as a tree; the rest multiplies in order.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    prod_exact(const __grid_constant__ Problem P, const storage_t<T>* in, storage_t<T>* out) {
  using A = fold_acc_t<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < P.n_out; o += step) {
    int64_t io, oo;
    kept_offsets(P, o, io, oo);
    const storage_t<T>* base = in + io;
    A acc = A(1);
    if (!P.inner || P.red.n == 0) {  // cpu's outer tiles: rows in order
      for (int64_t r = 0; r < P.n_red; ++r) acc *= to_acc<T, A>(base[red_offset(P, r)]);
    } else {
      const int64_t len = P.red.size[0], s = P.red.in[0], n_runs = P.n_red / len;
      for (int64_t run = 0; run < n_runs; ++run) {
        const storage_t<T>* p = base + red_offset(P, run, 1);
        cpu_order::lane_prod<A>([p, s](int64_t i) { return to_acc<T, A>(p[i * s]); }, len, s == 1, acc);
      }
    }
    out[oo] = to_out<T>(acc);
  }
}

// ---- the engine ------------------------------------------------------------------

/// What every launch of a call needs.
struct Env {
  const TsrKernelCall& call;
  cudaStream_t stream;
  int64_t resident;  // blocks of kThreads that fill the device once
};

Env make_env(const TsrKernelCall& call) {
  int sms = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, call.device_index),
             "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)");
  return Env{call, stream_of(call), int64_t{std::max(sms, 1)} * (2048 / kThreads)};
}

template <typename Acc>
Acc* partials(const Env& env, int64_t count) {
  return static_cast<Acc*>(workspace(env.call, static_cast<size_t>(count) * sizeof(Acc)));
}

/// Runs op over the problem (in already offset by P.in_offset): picks the kernel
/// and the split from the shape, never from timing, so results repeat.
template <typename Op>
void reduce(const Env& env, const Problem& P, const typename Op::S* in, const Op& op) {
  using Acc = typename Op::Acc;
  if (P.n_out == 0) return;
  if (P.n_red <= kSmallRed) {  // also empty reductions (init) and only size-1 dims
    reduce_per_thread<Op><<<blocks_for(P.n_out), kThreads, 0, env.stream>>>(P, in, op);
    check_launch("reduce_per_thread");
    return;
  }
  int64_t chunks = 1;
  Acc* partial = nullptr;
  if (P.inner) {
    if (P.n_red <= kWarpRed || P.n_out >= env.resident * (kThreads / kWarp)) {  // a warp per output
      reduce_inner<Op, kWarp><<<blocks_for(P.n_out * kWarp), kThreads, 0, env.stream>>>(P, in, op, 1, P.n_red,
                                                                                         nullptr);
      check_launch("reduce_inner");
      return;
    }
    // Blocks per output: enough chunks to fill the device, each at least
    // kMinChunk elements and a multiple of 64 (keeps 128-bit alignment).
    chunks = std::max<int64_t>(1, std::min(ceil_div(env.resident, P.n_out), P.n_red / kMinChunk));
    const int64_t chunk_len = ceil_div(ceil_div(P.n_red, chunks), 64) * 64;
    chunks = ceil_div(P.n_red, chunk_len);
    if (chunks > 1) partial = partials<Acc>(env, P.n_out * chunks);
    reduce_inner<Op, kThreads><<<blocks_for(P.n_out * chunks * kThreads), kThreads, 0, env.stream>>>(
        P, in, op, chunks, chunk_len, partial);
    check_launch("reduce_inner");
  } else {
    const int64_t x_blocks = ceil_div(P.n_out, kOuterX);
    if (x_blocks < env.resident) {
      chunks = std::max<int64_t>(1, std::min(ceil_div(env.resident, x_blocks), P.n_red / kMinRows));
    }
    const int64_t rows = ceil_div(P.n_red, chunks);
    chunks = ceil_div(P.n_red, rows);
    if (chunks > 1) partial = partials<Acc>(env, P.n_out * chunks);
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(x_blocks, int64_t{1} << 20)), static_cast<unsigned>(chunks));
    reduce_outer<Op><<<grid, dim3(kOuterX, kOuterY), 0, env.stream>>>(P, in, op, rows, partial);
    check_launch("reduce_outer");
  }
  if (partial != nullptr) {
    reduce_finish<Op><<<blocks_for(P.n_out * kWarp), kThreads, 0, env.stream>>>(P, op, partial, chunks);
    check_launch("reduce_finish");
  }
}

template <typename T>
const storage_t<T>* input_of(const DLTensor& self, const Problem& P) {
  return data_as<const storage_t<T>>(self) + P.in_offset;
}
template <typename T>
storage_t<T>* output_of(const DLTensor& out, const Problem& P) {
  return data_as<storage_t<T>>(out) + P.out_offset;
}

/// Parsed arguments of a reduction over a dim list: (self, ..., dim at
/// dims_index, ..., keepdim at keepdim_index), output 0 of dtype out_dtype.
struct Setup {
  const DLTensor* self;
  DLTensor* out;
  Problem P;
};

Setup setup(const TsrKernelCall& call, size_t dims_index, size_t keepdim_index, TsrDType out_dtype) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const sdk::IntList dims = sdk::int_list_arg(call, dims_index, "dim");
  const bool keepdim = sdk::bool_arg(call, keepdim_index, "keepdim");
  DLTensor& out = sdk::output(call, 0, out_dtype);
  return Setup{&self, &out, make_problem(self, out, reduced_dims(self, out, dims, keepdim), keepdim, true)};
}

/// sum / prod's output dtype: self's, or int64 for bool/integer inputs.
TsrDType fold_out_dtype(const TsrKernelCall& call) {
  const TsrDType out_dtype = sdk::dtype_of(sdk::output(call, 0), "out");
  const bool integral = (kFloatMask & TSR_DTYPE_BIT(call.dtype)) == 0;
  if (out_dtype != call.dtype && !(integral && out_dtype == TSR_DTYPE_INT64)) {
    invalid(std::string("output dtype ") + sdk::dtype_name(out_dtype) + " is not " + sdk::dtype_name(call.dtype) +
            (integral ? " or int64" : ""));
  }
  return out_dtype;
}

// ---- kernel bodies ---------------------------------------------------------------

// sum / prod: (self, dim, keepdim, dtype); the dtype argument is already out's dtype.
template <bool IsSum>
void fold_kernel(const TsrKernelCall& call) {
  const TsrDType out_dtype = fold_out_dtype(call);
  const Setup s = setup(call, 1, 2, out_dtype);
  const Problem& P = s.P;
  if (P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto run = [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const storage_t<T>* in = input_of<T>(*s.self, P);
      storage_t<Out>* out = output_of<Out>(*s.out, P);
      if constexpr (kIsFloating<T>) {
        if (P.n_red > 0 && P.n_red <= kExactMax) {
          if constexpr (IsSum) {
            sum_exact<T, Out><<<blocks_for(P.n_out), kThreads, 0, env.stream>>>(P, in, out);
            check_launch("sum_exact");
          } else {
            prod_exact<T><<<blocks_for(P.n_out), kThreads, 0, env.stream>>>(P, in, out);
            check_launch("prod_exact");
          }
          return;
        }
      }
      reduce(env, P, in, FoldOp<T, Out, IsSum>{out});
    };
    if (out_dtype == call.dtype) {
      run(sdk::TypeTag<T>{});
    } else if constexpr (!kIsFloating<T> && !std::is_same_v<T, int64_t>) {
      run(sdk::TypeTag<int64_t>{});
    }
  });
}

// amax / amin: (self, dim, keepdim).
template <bool IsMax>
void extreme_kernel(const TsrKernelCall& call) {
  const Setup s = setup(call, 1, 2, call.dtype);
  if (s.P.n_red == 0) invalid("reduction over a zero-size dim has no identity (input shape " + sdk::shape_text(*s.self) + ")");
  if (s.P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce(env, s.P, input_of<T>(*s.self, s.P), ExtremeOp<T, IsMax>{output_of<T>(*s.out, s.P)});
  });
}

// any / all: (self, dim, keepdim); out is bool, uint8 for a uint8 input.
template <bool IsAny>
void any_kernel(const TsrKernelCall& call) {
  const TsrDType out_dtype = call.dtype == TSR_DTYPE_UINT8 ? TSR_DTYPE_UINT8 : TSR_DTYPE_BOOL;
  const Setup s = setup(call, 1, 2, out_dtype);
  if (s.P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce(env, s.P, input_of<T>(*s.self, s.P), AnyAllOp<T, IsAny>{output_of<uint8_t>(*s.out, s.P)});
  });
}

// max.dim / min.dim: (self, [dim] or [], keepdim) -> values (self's dtype), indices (int64).
template <bool IsMax>
void max_dim_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const sdk::IntList dims = sdk::int_list_arg(call, 1, "dim");
  if (dims.size > 1) invalid("argument 'dim' must hold at most one dim, got " + std::to_string(dims.size));
  const bool keepdim = sdk::bool_arg(call, 2, "keepdim");
  DLTensor& values = sdk::output(call, 0, call.dtype);
  DLTensor& indices = sdk::output(call, 1, TSR_DTYPE_INT64);
  const std::vector<char> reduced = reduced_dims(self, values, dims, keepdim);
  sdk::check_same_shape(values, "values", indices, "indices");
  for (int32_t d = 0; d < values.ndim; ++d) {
    if (values.shape[d] > 1 && values.strides[d] != indices.strides[d]) invalid("values and indices have different strides");
  }
  const Problem P = make_problem(self, values, reduced, keepdim, false);  // indices count in logical order
  if (P.n_red == 0) invalid("reduction over a zero-size dim has no identity (input shape " + sdk::shape_text(self) + ")");
  if (P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce(env, P, input_of<T>(self, P), ArgOp<T, IsMax>{output_of<T>(values, P), output_of<int64_t>(indices, P)});
  });
}

// var / std: (self, dim, correction, keepdim), floating: mean, then squared deviations, in double.
template <bool Sqrt>
void var_kernel(const TsrKernelCall& call) {
  const double correction = sdk::float_arg(call, 2, "correction");
  const Setup s = setup(call, 1, 3, call.dtype);
  const Problem& P = s.P;
  if (P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      double* mean = partials<double>(env, P.n_out);
      const double n = static_cast<double>(P.n_red);
      reduce(env, P, input_of<T>(*s.self, P), MeanOp<T>{mean, n});
      reduce(env, P, input_of<T>(*s.self, P), VarOp<T, Sqrt>{output_of<T>(*s.out, P), mean, n, correction});
    } else {
      invalid("var/std need a floating dtype");
    }
  });
}

// norm: (self, p, dim, keepdim), floating, in double.
void norm_kernel(const TsrKernelCall& call) {
  const double p = sdk::float_arg(call, 1, "p");
  const Setup s = setup(call, 2, 3, call.dtype);
  const Problem& P = s.P;
  if (P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      const NormKind kind = std::isinf(p) ? (p > 0 ? NormKind::Inf : NormKind::NegInf)
                            : p == 0 ? NormKind::Zero
                            : p == 1 ? NormKind::One
                            : p == 2 ? NormKind::Two
                                     : NormKind::General;
      reduce(env, P, input_of<T>(*s.self, P), NormOp<T>{output_of<T>(*s.out, P), kind, p});
    } else {
      invalid("norm needs a floating dtype");
    }
  });
}

// logsumexp: (self, dim, keepdim), floating: the max, then the sum of exp(x - max), in double.
void logsumexp_kernel(const TsrKernelCall& call) {
  const Setup s = setup(call, 1, 2, call.dtype);
  const Problem& P = s.P;
  if (P.n_out == 0) return;
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      double* max = partials<double>(env, P.n_out);
      reduce(env, P, input_of<T>(*s.self, P), MaxF64Op<T>{max});
      reduce(env, P, input_of<T>(*s.self, P), LseOp<T>{output_of<T>(*s.out, P), max});
    } else {
      invalid("logsumexp needs a floating dtype");
    }
  });
}

// ---- scans ---------------------------------------------------------------------

/// cumsum / cumprod in cpu's accumulator (scan_acc_t); bool sums and multiplies
/// 0/1 in uint64 and stores != 0, i.e. logical or / and.
template <typename T, bool IsSum>
struct ScanOp {
  using S = storage_t<T>;
  using A = scan_acc_t<T>;
  static __device__ A identity() { return A(IsSum ? 0 : 1); }
  static __device__ A join(A a, A b) { return IsSum ? a + b : a * b; }
  static __device__ A step(A a, S x) { return join(a, to_acc<T, A>(x)); }
};

/// Lines are the problem's outputs (the kept dims); each line of n elements
/// (strides si, so) is cut into `segs` segments of seg_len; task = line * segs
/// + segment. Without carry the segment starts from the identity.
struct ScanShape {
  int64_t n, si, so, segs, seg_len;
};

/// Writes the inclusive scan of each task's segment, starting from carry[task].
template <typename T, bool IsSum>
__global__ void __launch_bounds__(kThreads)
    scan_segments(const __grid_constant__ Problem P, ScanShape sh, const storage_t<T>* in, storage_t<T>* out,
                  const scan_acc_t<T>* carry) {
  using Op = ScanOp<T, IsSum>;
  const int64_t tasks = P.n_out * sh.segs;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; task < tasks; task += step) {
    const int64_t line = task / sh.segs, seg = task - line * sh.segs;
    int64_t io, oo;
    kept_offsets(P, line, io, oo);
    const int64_t i0 = seg * sh.seg_len, i1 = std::min(sh.n, i0 + sh.seg_len);
    typename Op::A acc = carry != nullptr ? carry[task] : Op::identity();
    for (int64_t i = i0; i < i1; ++i) {
      acc = Op::step(acc, in[io + i * sh.si]);
      out[oo + i * sh.so] = to_out<T>(acc);
    }
  }
}

/// Each task's segment total, into total[task].
template <typename T, bool IsSum>
__global__ void __launch_bounds__(kThreads)
    scan_totals(const __grid_constant__ Problem P, ScanShape sh, const storage_t<T>* in, scan_acc_t<T>* total) {
  using Op = ScanOp<T, IsSum>;
  const int64_t tasks = P.n_out * sh.segs;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; task < tasks; task += step) {
    const int64_t line = task / sh.segs, seg = task - line * sh.segs;
    int64_t io, oo;
    kept_offsets(P, line, io, oo);
    const int64_t i0 = seg * sh.seg_len, i1 = std::min(sh.n, i0 + sh.seg_len);
    typename Op::A acc = Op::identity();
    for (int64_t i = i0; i < i1; ++i) acc = Op::step(acc, in[io + i * sh.si]);
    total[task] = acc;
  }
}

/// Per line, turns segment totals into carries (exclusive scan, in order).
template <typename T, bool IsSum>
__global__ void __launch_bounds__(kThreads) scan_carries(int64_t lines, int64_t segs, scan_acc_t<T>* total) {
  using Op = ScanOp<T, IsSum>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += step) {
    typename Op::A run = Op::identity();
    for (int64_t seg = 0; seg < segs; ++seg) {
      const typename Op::A t = total[line * segs + seg];
      total[line * segs + seg] = run;
      run = Op::join(run, t);
    }
  }
}

// cumsum / cumprod: (self, dim, dtype); self and out have call.dtype and one shape.
template <bool IsSum>
void scan_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const int64_t d = sdk::int_arg(call, 1, "dim");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  if (!(self.ndim == 0 ? d == 0 : (d >= 0 && d < self.ndim))) {
    invalid("argument 'dim' " + std::to_string(d) + " is out of range for " + std::to_string(self.ndim) + " dims");
  }
  if (sdk::numel(out) == 0) return;
  std::vector<char> reduced(static_cast<size_t>(self.ndim), 0);
  if (self.ndim > 0) reduced[static_cast<size_t>(d)] = 1;
  const Problem P = make_problem(self, out, reduced, true, false);  // the lines: every dim but d
  ScanShape sh{1, 0, 0, 1, 1};
  if (self.ndim > 0) {
    sh.n = self.shape[d];
    sh.si = self.strides[d];
    sh.so = out.strides[d];
  }
  DeviceScope scope(call.device_index);
  const Env env = make_env(call);
  // Few long lines: segments, so that enough threads run; otherwise cpu's exact order.
  const int64_t threads = env.resident * kThreads;
  if (sh.n > kScanSeqMax && P.n_out < threads / 2) {
    sh.segs = std::min({ceil_div(threads, P.n_out), ceil_div(sh.n, kMinSegment), kMaxSegments});
  }
  sh.seg_len = ceil_div(sh.n, sh.segs);
  sh.segs = ceil_div(sh.n, sh.seg_len);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = scan_acc_t<T>;
    const storage_t<T>* in = input_of<T>(self, P);
    storage_t<T>* o = output_of<T>(out, P);
    const int64_t tasks = P.n_out * sh.segs;
    A* carry = nullptr;
    if (sh.segs > 1) {
      carry = partials<A>(env, tasks);
      scan_totals<T, IsSum><<<blocks_for(tasks), kThreads, 0, env.stream>>>(P, sh, in, carry);
      check_launch("scan_totals");
      scan_carries<T, IsSum><<<blocks_for(P.n_out), kThreads, 0, env.stream>>>(P.n_out, sh.segs, carry);
      check_launch("scan_carries");
    }
    scan_segments<T, IsSum><<<blocks_for(tasks), kThreads, 0, env.stream>>>(P, sh, in, o, carry);
    check_launch("scan_segments");
  });
}

}  // namespace

void register_reduction(const sdk::Host& host) {
  struct Entry {
    const char* op;
    uint64_t mask;
    TsrKernelFn fn;
  };
  static constexpr Entry kTable[] = {
      {"sum", kAllMask, &sdk::kernel_entry<kCuda, fold_kernel<true>>},
      {"prod", kAllMask, &sdk::kernel_entry<kCuda, fold_kernel<false>>},
      {"amax", kAllMask, &sdk::kernel_entry<kCuda, extreme_kernel<true>>},
      {"amin", kAllMask, &sdk::kernel_entry<kCuda, extreme_kernel<false>>},
      {"max.dim", kAllMask, &sdk::kernel_entry<kCuda, max_dim_kernel<true>>},
      {"min.dim", kAllMask, &sdk::kernel_entry<kCuda, max_dim_kernel<false>>},
      {"any", kAllMask, &sdk::kernel_entry<kCuda, any_kernel<true>>},
      {"all", kAllMask, &sdk::kernel_entry<kCuda, any_kernel<false>>},
      {"var", kFloatMask, &sdk::kernel_entry<kCuda, var_kernel<false>>},
      {"std", kFloatMask, &sdk::kernel_entry<kCuda, var_kernel<true>>},
      {"norm", kFloatMask, &sdk::kernel_entry<kCuda, norm_kernel>},
      {"logsumexp", kFloatMask, &sdk::kernel_entry<kCuda, logsumexp_kernel>},
      {"cumsum", kAllMask, &sdk::kernel_entry<kCuda, scan_kernel<true>>},
      {"cumprod", kAllMask, &sdk::kernel_entry<kCuda, scan_kernel<false>>},
  };
  for (const Entry& e : kTable) host.register_kernel(e.op, "cuda", e.mask, e.fn);
}

}  // namespace tessera::cuda
