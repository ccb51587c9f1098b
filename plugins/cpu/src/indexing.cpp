// Indexing kernels: gather (also serves index_select), scatter_ / scatter_add_
// (also index_add_), _scatter (the functional forms), take, masked_fill,
// masked_select; and the registration of the family's kernels (nonzero's are
// in indexing_nonzero.cpp).
//
// Index checks of in-place ops run in a first pass, before anything is
// written, so a bad index leaves the target untouched; ops that write only a
// new output (gather, _scatter) check each run as they read it. Either way a
// bad index reports TSR_ERROR_OUT_OF_RANGE (the core's IndexError) with the
// index value and the size.
//
// The dim-based ops walk "lines" along `dim`: every other coordinate is fixed
// per line and lines are split across threads. A line writes only elements that
// share its other coordinates, so scatter_add_ with duplicated indices never
// races, and each element's sum is accumulated in index order whatever the
// thread count (deterministic results).
#include "isa.hpp"
#include "common.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

constexpr int32_t kMaxDims = 64;


[[noreturn]] TSR_CPU_COLD void index_out_of_range(int64_t value, int64_t dim, int64_t size) {
  fail(TSR_ERROR_OUT_OF_RANGE, "index " + std::to_string(value) + " is out of bounds for dimension " +
                                   std::to_string(dim) + " with size " + std::to_string(size));
}

// Calls f(TypeTag<int32_t or int64_t>) for the index tensor's dtype.
template <typename F>
void dispatch_index(const DLTensor& index, F&& f) {
  const TsrDType d = dtype_of(index, "index");
  if (d == TSR_DTYPE_INT64) {
    f(sdk::TypeTag<int64_t>{});
  } else if (d == TSR_DTYPE_INT32) {
    f(sdk::TypeTag<int32_t>{});
  } else {
    invalid(std::string("index must be int64 or int32, got ") + sdk::dtype_name(d));
  }
}

// The len index values at p (byte stride s) within [lo, size).
template <typename I>
inline void check_run(const char* p, int64_t s, int64_t len, int64_t lo, int64_t size, int64_t dim) {
  if (s == static_cast<int64_t>(sizeof(I))) {
    // Dense run: its minimum and maximum (reductions without an exit
    // vectorize), then the first bad value is looked up for the message.
    const I* v = reinterpret_cast<const I*>(p);
    int64_t mn = lo, mx = lo;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t x = static_cast<int64_t>(v[k]);
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
    }
    if (__builtin_expect(mn >= lo && mx < size, 1)) return;
  }
  for (int64_t k = 0; k < len; ++k) {
    const int64_t v = *reinterpret_cast<const I*>(p + k * s);
    if (__builtin_expect(v < lo || v >= size, 0)) index_out_of_range(v, dim, size);
  }
}

// Every index value within [-size, size) (allow_negative) or [0, size). Dims
// with stride 0 (an index expanded by the core) are visited once.
template <typename I>
void check_indices(const DLTensor& index, int64_t size, int64_t dim, bool allow_negative) {
  if (index.ndim > kMaxDims) invalid("tensors of more than 64 dims are not supported");
  int64_t shape[kMaxDims], strides[kMaxDims];
  int32_t nd = 0;
  for (int32_t d = 0; d < index.ndim; ++d) {
    if (index.shape[d] == 0) return;
    if (index.shape[d] == 1 || index.strides[d] == 0) continue;
    shape[nd] = index.shape[d];
    strides[nd] = index.strides[d];
    ++nd;
  }
  sdk::IterOperand op = sdk::IterOperand::of(index);
  op.strides = strides;
  const sdk::StridedIter<1> it(nd, shape, {op});
  const int64_t lo = allow_negative ? -size : 0;
  parallel_for(it.numel(), kGrain, [&](int64_t begin, int64_t end) {
    it.for_range(begin, end, [&](char** p, const int64_t* s, int64_t len) { check_run<I>(p[0], s[0], len, lo, size, dim); });
  });
}

// True when some dim of size > 1 has stride 0: an index the core expanded
// (index_select's), whose few values a separate check reads once.
bool has_expanded_dim(const DLTensor& t) {
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1 && t.strides[d] == 0) return true;
  return false;
}

struct LineOperand {
  char* data;
  const int64_t* strides;  // elements
  int64_t elem;
  int32_t ndim;  // 0 for a 0-d tensor (gather/scatter allow 0-d against 1-D)
};

// Runs f(ptrs, byte_strides_along_dim, len) once per line along `dim` of
// `shape`, lines split across threads. Operands are addressed with their own
// strides at the line's coordinates.
template <size_t N, typename F>
void for_each_line(int32_t ndim, const int64_t* shape, int32_t dim, const std::array<LineOperand, N>& ops,
                   const F& f) {
  if (ndim > kMaxDims) invalid("tensors of more than 64 dims are not supported");
  int64_t outer = 1;
  for (int32_t d = 0; d < ndim; ++d)
    if (d != dim) outer *= shape[d];
  const int64_t len = ndim == 0 ? 1 : shape[dim];
  if (outer == 0 || len == 0) return;
  int64_t along[N];
  for (size_t k = 0; k < N; ++k) along[k] = ops[k].ndim == 0 ? 0 : ops[k].strides[dim] * ops[k].elem;
  const int64_t grain = std::max<int64_t>(1, kGrain / len);
  parallel_for(outer, grain, [&](int64_t begin, int64_t end) {
    int64_t coord[kMaxDims] = {};
    char* p[N];
    int64_t rest = begin;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (d == dim) continue;
      coord[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (size_t k = 0; k < N; ++k) {
      p[k] = ops[k].data;
      for (int32_t d = 0; d < ndim; ++d)
        if (d != dim) p[k] += coord[d] * ops[k].strides[d] * ops[k].elem;
    }
    for (int64_t o = begin; o < end; ++o) {
      f(static_cast<char* const*>(p), static_cast<const int64_t*>(along), len);
      for (int32_t d = ndim - 1; d >= 0; --d) {  // odometer over the other dims
        if (d == dim) continue;
        for (size_t k = 0; k < N; ++k) p[k] += ops[k].strides[d] * ops[k].elem;
        if (++coord[d] < shape[d]) break;
        for (size_t k = 0; k < N; ++k) p[k] -= shape[d] * ops[k].strides[d] * ops[k].elem;
        coord[d] = 0;
      }
    }
  });
}

// As for_each_line, but runs f(line_ptrs, byte_strides_along_dim, k) per element,
// with lines grouped in tiles of consecutive outer positions and k the outer loop
// within a tile: along dim 0 the elements a tile visits for one k are neighbours
// in memory (rows), instead of one column at a time. A tile belongs to one
// thread and visits each line in increasing k, so writes through an index stay
// race-free and in index order.
template <size_t N, typename F>
void for_each_element_tiled(int32_t ndim, const int64_t* shape, int32_t dim, const std::array<LineOperand, N>& ops,
                            const F& f) {
  if (ndim > kMaxDims) invalid("tensors of more than 64 dims are not supported");
  constexpr int64_t kTile = 64;
  int64_t outer = 1;
  for (int32_t d = 0; d < ndim; ++d)
    if (d != dim) outer *= shape[d];
  const int64_t len = ndim == 0 ? 1 : shape[dim];
  if (outer == 0 || len == 0) return;
  int64_t along[N];
  for (size_t k = 0; k < N; ++k) along[k] = ops[k].ndim == 0 ? 0 : ops[k].strides[dim] * ops[k].elem;
  const int64_t tiles = (outer + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, kGrain / (len * kTile));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    int64_t coord[kMaxDims] = {};
    int64_t rest = t0 * kTile;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (d == dim) continue;
      coord[d] = rest % shape[d];
      rest /= shape[d];
    }
    char* p[N];
    for (size_t k = 0; k < N; ++k) {
      p[k] = ops[k].data;
      for (int32_t d = 0; d < ndim; ++d)
        if (d != dim) p[k] += coord[d] * ops[k].strides[d] * ops[k].elem;
    }
    char* base[kTile][N];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t count = std::min(kTile, outer - t * kTile);
      for (int64_t o = 0; o < count; ++o) {
        for (size_t k = 0; k < N; ++k) base[o][k] = p[k];
        for (int32_t d = ndim - 1; d >= 0; --d) {  // odometer over the other dims
          if (d == dim) continue;
          for (size_t k = 0; k < N; ++k) p[k] += ops[k].strides[d] * ops[k].elem;
          if (++coord[d] < shape[d]) break;
          for (size_t k = 0; k < N; ++k) p[k] -= shape[d] * ops[k].strides[d] * ops[k].elem;
          coord[d] = 0;
        }
      }
      for (int64_t i = 0; i < len; ++i)
        for (int64_t o = 0; o < count; ++o) f(static_cast<char* const*>(base[o]), static_cast<const int64_t*>(along), i);
    }
  });
}

// Whether ref's stride along dim is its smallest: then walking lines along dim
// reads ref in memory order.
bool along_dim_is_innermost(int32_t ndim, const int64_t* shape, int32_t dim, const LineOperand& ref) {
  for (int32_t d = 0; d < ndim && ref.ndim == ndim; ++d) {
    if (d != dim && shape[d] > 1 && std::abs(ref.strides[d]) < std::abs(ref.strides[dim])) return false;
  }
  return true;
}

// Walks lines in memory order: plain lines when `dim` is the operand's
// innermost dimension (each line is then contiguous), tiles otherwise.
template <size_t N, typename F>
void for_each_element(int32_t ndim, const int64_t* shape, int32_t dim, const std::array<LineOperand, N>& ops,
                      const LineOperand& ref, const F& f) {
  if (along_dim_is_innermost(ndim, shape, dim, ref)) {
    for_each_line<N>(ndim, shape, dim, ops, [&f](char* const* p, const int64_t* s, int64_t len) {
      for (int64_t k = 0; k < len; ++k) f(p, s, k);
    });
  } else {
    for_each_element_tiled<N>(ndim, shape, dim, ops, f);
  }
}

LineOperand line_operand(const DLTensor& t) {
  return LineOperand{data_ptr(t), t.strides, (static_cast<int64_t>(t.dtype.bits) + 7) / 8, t.ndim};
}

int32_t dim_arg(const TsrKernelCall& call, size_t i, const DLTensor& self) {
  const int64_t dim = int_arg(call, i, "dim");
  const int64_t nd = std::max<int32_t>(self.ndim, 1);
  if (dim < 0 || dim >= nd) invalid("dim " + std::to_string(dim) + " out of range (the core wraps dims)");
  return static_cast<int32_t>(dim);
}

void check_same_ndim(const DLTensor& a, const char* an, const DLTensor& b, const char* bn) {
  if (std::max<int32_t>(a.ndim, 1) != std::max<int32_t>(b.ndim, 1))
    invalid(std::string("'") + an + "' and '" + bn + "' must have the same number of dims");
}

// index_select of whole rows (embedding's lookup): [M, D] rows of a 2-D self
// picked by a 1-D index (expanded along D), dense along D; indices checked. One
// loop over the rows, each prefetched a few rows ahead: the rows lie scattered
// over the table, and the copies otherwise waited on each row's cache misses
// in turn. Out of line: inlined into gather_kernel, it slowed gather's other
// paths by 15-50% (1024^2 gather and index_select along dim 1, Zen 4).
template <typename I, typename S>
__attribute__((noinline)) void gather_rows(const DLTensor& self, const DLTensor& index, DLTensor& out) {
  const int64_t M = out.shape[0], D = out.shape[1];
  const I* idx = reinterpret_cast<const I*>(data_ptr(index));
  const S* src = reinterpret_cast<const S*>(data_ptr(self));
  S* dst = reinterpret_cast<S*>(data_ptr(out));
  const int64_t is = index.strides[0], ss = self.strides[0], os = out.strides[0];
  const size_t row_bytes = static_cast<size_t>(D) * sizeof(S);
  constexpr int64_t kAhead = 8;
  parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, D)), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      if (m + kAhead < m1) {
        const char* ahead = reinterpret_cast<const char*>(src + static_cast<int64_t>(idx[(m + kAhead) * is]) * ss);
        for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(ahead + b);
      }
      std::memcpy(dst + m * os, src + static_cast<int64_t>(idx[m * is]) * ss, row_bytes);
    }
  });
}

// gather(self, dim, index) -> out: out[..i..] = self[..index[..i..]..] along dim.
// index_select arrives here with its 1-D index expanded to out's shape.
void gather_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = tensor_arg(call, 2, "index");
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(index, "index", out, "out");
  check_same_ndim(self, "self", index, "index");
  const int64_t size = self.ndim == 0 ? 1 : self.shape[dim];
  // gather writes only out, so the elementwise path checks each run of
  // indices just before reading through it (from cache: a separate first pass
  // over a 1024^2 int64 index was a sixth of gather's time); an error may
  // leave out partly written. Expanded indices are checked once, up front.
  const bool elementwise = !(out.ndim == 0 || self.ndim == 0 || out.ndim > kMaxDims);
  const bool check_runs = elementwise && !has_expanded_dim(index);
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    if (!check_runs) check_indices<I>(index, size, dim, false);
    sdk::dispatch_dtype(call.dtype, [&](auto tag) {
      using S = storage_t<typename decltype(tag)::type>;
      if (!elementwise) {
        for_each_line<3>(out.ndim, out.shape, dim, {line_operand(out), line_operand(index), line_operand(self)},
                         [](char* const* p, const int64_t* s, int64_t len) {
                           for (int64_t k = 0; k < len; ++k) {
                             const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
                             *reinterpret_cast<S*>(p[0] + k * s[0]) = *reinterpret_cast<const S*>(p[2] + i * s[2]);
                           }
                         });
        return;
      }
      if (dim == 0 && out.ndim == 2 && self.ndim == 2 && index.strides[1] == 0 &&
          (out.shape[1] == 1 || (out.strides[1] == 1 && self.strides[1] == 1))) {
        gather_rows<I, S>(self, index, out);
        return;
      }
      // Reads are independent: walk out, index and self (with stride 0 along dim,
      // the index supplying that coordinate) in the iterator's memory-friendly
      // order, so index_select along dim 0 copies rows instead of columns.
      int64_t self_strides[kMaxDims];
      for (int32_t d = 0; d < out.ndim; ++d) self_strides[d] = d == dim ? 0 : self.strides[d];
      sdk::IterOperand self_op = sdk::IterOperand::of(self);
      self_op.strides = self_strides;
      const int64_t along = self.strides[dim] * static_cast<int64_t>(sizeof(S));
      run_elementwise<3>(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(index), self_op}, kGrain,
                         [along, check_runs, size, dim](char** p, const int64_t* s, int64_t n) {
                           constexpr int64_t kS = static_cast<int64_t>(sizeof(S));
                           if (check_runs) check_run<I>(p[1], s[1], n, 0, size, dim);
                           if (s[1] == 0 && s[0] == kS && s[2] == kS) {  // one index for a dense run: a row copy
                             const int64_t i = *reinterpret_cast<const I*>(p[1]);
                             std::memcpy(p[0], p[2] + i * along, static_cast<size_t>(n * kS));
                             return;
                           }
                           if (s[0] == kS && s[1] == static_cast<int64_t>(sizeof(I)) && s[2] == 0) {
                             // Along dim, dense out and index: a plain indexed load per element.
                             S* o = reinterpret_cast<S*>(p[0]);
                             const I* idx = reinterpret_cast<const I*>(p[1]);
                             const char* row = p[2];
                             const auto at = [&](int64_t k) {
                               return *reinterpret_cast<const S*>(row + static_cast<int64_t>(idx[k]) * along);
                             };
                             // Four loads in flight per iteration: the one-element loop ran at
                             // 0.6x or 1.0x PyTorch's time (1024^2 index_select along dim 1)
                             // depending on where the build placed it.
                             int64_t k = 0;
                             for (; k + 4 <= n; k += 4) {
                               const S a = at(k), b = at(k + 1), c = at(k + 2), d = at(k + 3);
                               o[k] = a;
                               o[k + 1] = b;
                               o[k + 2] = c;
                               o[k + 3] = d;
                             }
                             for (; k < n; ++k) o[k] = at(k);
                             return;
                           }
                           for (int64_t k = 0; k < n; ++k) {
                             const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
                             *reinterpret_cast<S*>(p[0] + k * s[0]) =
                                 *reinterpret_cast<const S*>(p[2] + k * s[2] + i * along);
                           }
                         });
    });
  });
}

template <typename T>
storage_t<T> scalar_as(const TsrValue& v) {
  check_scalar(v, "value");
  const double d = v.tag == TSR_VALUE_FLOAT ? v.as.f : v.tag == TSR_VALUE_INT ? static_cast<double>(v.as.i) : v.as.b;
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint8_t>(d != 0);
  } else if constexpr (kIsHalfLike<T>) {
    return T(static_cast<float>(d));
  } else if constexpr (kIsInteger<T>) {
    return v.tag == TSR_VALUE_INT ? static_cast<T>(static_cast<uint64_t>(v.as.i)) : static_cast<T>(d);
  } else {
    return static_cast<T>(d);
  }
}

// 2-D, dim 0, the index constant along dim 1 (index_add_'s expanded 1-D
// index), self with dense rows and src with dense or constant (stride 0)
// rows: scatter whole rows.
bool rows_along_dim0(const DLTensor& self, const DLTensor& index, const DLTensor& src, int32_t dim) {
  return dim == 0 && self.ndim == 2 && index.ndim == 2 && src.ndim == 2 && index.strides[1] == 0 &&
         (src.strides[1] == 1 || src.strides[1] == 0 || src.shape[1] == 1) &&
         (self.strides[1] == 1 || self.shape[1] == 1) && self.shape[1] == index.shape[1];
}

// scatter_'s (Add: scatter_add_'s) update of one element: the new value.
template <bool Add, typename T>
inline storage_t<T> scatter_combine(storage_t<T> old, storage_t<T> v) {
  using S = storage_t<T>;
  if constexpr (!Add) {
    (void)old;
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    return static_cast<S>(old | v);
  } else if constexpr (kIsInteger<T>) {
    return wrap_add(old, v);
  } else {
    return S(compute_t<T>(old) + compute_t<T>(v));
  }
}

// The updates of one line along dim with dense index and src runs:
// row[idx[k] * along] (+)= v[k] in index order, the index loads of four updates
// issued ahead of their (in-order) read-modify-writes.
template <bool Add, typename T, typename I>
inline void scatter_dense_run(char* row, int64_t along, const I* idx, const storage_t<T>* v, int64_t len) {
  using S = storage_t<T>;
  const auto update = [&](int64_t i, S x) {
    S* dst = reinterpret_cast<S*>(row + i * along);
    *dst = scatter_combine<Add, T>(*dst, x);
  };
  int64_t k = 0;
  for (; k + 4 <= len; k += 4) {
    const int64_t i0 = idx[k], i1 = idx[k + 1], i2 = idx[k + 2], i3 = idx[k + 3];
    update(i0, v[k]);
    update(i1, v[k + 1]);
    update(i2, v[k + 2]);
    update(i3, v[k + 3]);
  }
  for (; k < len; ++k) update(idx[k], v[k]);
}

// scatter_ / scatter_add_ (and index_add_): self[..index[..i..]..] (+)= src[..i..],
// src a tensor of index's shape or a scalar value; outputs[0] is self.
template <bool Add>
void scatter_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = tensor_arg(call, 2, "index");
  const TsrValue& src_v = arg(call, 3, "src");
  DLTensor& out = output(call, 0, call.dtype);
  if (out.data != self.data) invalid("the output must be self (an in-place op)");
  check_same_ndim(self, "self", index, "index");
  const int64_t size = self.ndim == 0 ? 1 : self.shape[dim];
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    check_indices<I>(index, size, dim, false);
    sdk::dispatch_dtype(call.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using S = storage_t<T>;
      const auto combine = [](S old, S v) -> S { return scatter_combine<Add, T>(old, v); };
      if (src_v.tag == TSR_VALUE_TENSOR) {
        const DLTensor& src = tensor_arg(call, 3, "src", call.dtype);
        check_same_shape(src, "src", index, "index");
        if (rows_along_dim0(self, index, src, dim)) {
          // index_add_ / scatter_ of whole rows (index constant along dim 1,
          // src and self rows dense): self[index[r], :] (+)= src[r, :], row by
          // row in index order, threads splitting the columns, so every element
          // sees its updates in the same order as the general path.
          const int64_t rows = index.shape[0], cols = index.shape[1];
          const char* sp = data_ptr(src);
          char* dp = data_ptr(self);
          const char* ip = data_ptr(index);
          parallel_for(cols, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rows)), [&](int64_t c0, int64_t c1) {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t i = *reinterpret_cast<const I*>(ip + r * index.strides[0] * static_cast<int64_t>(sizeof(I)));
              S* d = reinterpret_cast<S*>(dp) + i * self.strides[0];
              const S* v = reinterpret_cast<const S*>(sp) + r * src.strides[0];
              if (src.strides[1] == 0 && src.shape[1] > 1) {  // a row of one value (an expanded gradient)
                const S x = v[0];
                for (int64_t c = c0; c < c1; ++c) d[c] = combine(d[c], x);
              } else {
                for (int64_t c = c0; c < c1; ++c) d[c] = combine(d[c], v[c]);
              }
            }
          });
          return;
        }
        const auto one = [&](char* const* p, const int64_t* s, int64_t k) {
          const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
          S* dst = reinterpret_cast<S*>(p[0] + i * s[0]);
          *dst = combine(*dst, *reinterpret_cast<const S*>(p[2] + k * s[2]));
        };
        const std::array<LineOperand, 3> ops = {line_operand(self), line_operand(index), line_operand(src)};
        if (along_dim_is_innermost(index.ndim, index.shape, dim, line_operand(src))) {
          for_each_line<3>(index.ndim, index.shape, dim, ops, [&](char* const* p, const int64_t* s, int64_t len) {
            if (s[1] != static_cast<int64_t>(sizeof(I)) || s[2] != static_cast<int64_t>(sizeof(S))) {
              for (int64_t k = 0; k < len; ++k) one(p, s, k);
              return;
            }
            // Dense index and src along dim: typed pointers.
            scatter_dense_run<Add, T>(p[0], s[0], reinterpret_cast<const I*>(p[1]), reinterpret_cast<const S*>(p[2]),
                                      len);
          });
        } else {
          for_each_element_tiled<3>(index.ndim, index.shape, dim, ops, one);
        }
      } else {
        const S value = scalar_as<T>(src_v);
        for_each_element<2>(index.ndim, index.shape, dim, {line_operand(self), line_operand(index)},
                                  line_operand(self),
                                  [&](char* const* p, const int64_t* s, int64_t k) {
                                    const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
                                    S* dst = reinterpret_cast<S*>(p[0] + i * s[0]);
                                    *dst = combine(*dst, value);
                                  });
      }
    });
  });
}

// _scatter(self, dim, index, src, add): out = self with src scattered in
// (add: accumulated), self untouched. out is new, so an error may leave it
// partly written: the indices are checked by line, as the line reads them,
// instead of in a first pass. Where index covers every line of self and the
// lines run along self's innermost dim, each line of self is copied and then
// updated while it is in cache (no separate clone pass); otherwise out is
// copied whole, then updated.
void scatter_copy_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const int32_t dim = dim_arg(call, 1, self);
  const DLTensor& index = tensor_arg(call, 2, "index");
  const DLTensor& src = tensor_arg(call, 3, "src", call.dtype);
  const bool add = bool_arg(call, 4, "add");
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(self, "self", out, "out");
  if (out.data == self.data && sdk::numel(out) > 0) invalid("_scatter writes a new tensor: out must not be self");
  check_same_ndim(self, "self", index, "index");
  check_same_shape(src, "src", index, "index");
  const int64_t size = self.ndim == 0 ? 1 : self.shape[dim];
  bool by_line = self.ndim > 0 && sdk::numel(index) > 0 &&
                 along_dim_is_innermost(self.ndim, self.shape, dim, line_operand(self));
  for (int32_t d = 0; d < self.ndim && by_line; ++d) by_line = d == dim || index.shape[d] == self.shape[d];
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    sdk::dispatch_dtype(call.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using S = storage_t<T>;
      if (!by_line) {
        run_elementwise<2>(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(self)}, kGrain,
                           sdk::basic_loop<S, S>([](S x) -> S { return x; }));
        check_indices<I>(index, size, dim, false);
        for_each_element<3>(index.ndim, index.shape, dim, {line_operand(out), line_operand(index), line_operand(src)},
                            line_operand(out), [add](char* const* p, const int64_t* s, int64_t k) {
                              const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
                              S* dst = reinterpret_cast<S*>(p[0] + i * s[0]);
                              const S v = *reinterpret_cast<const S*>(p[2] + k * s[2]);
                              *dst = add ? scatter_combine<true, T>(*dst, v) : v;
                            });
        return;
      }
      const int64_t copy_len = self.shape[dim];
      for_each_line<4>(index.ndim, index.shape, dim,
                       {line_operand(out), line_operand(index), line_operand(src), line_operand(self)},
                       [&](char* const* p, const int64_t* s, int64_t len) {
                         constexpr int64_t kS = static_cast<int64_t>(sizeof(S));
                         if (s[0] == kS && s[3] == kS) {
                           std::memcpy(p[0], p[3], static_cast<size_t>(copy_len * kS));
                         } else {
                           for (int64_t k = 0; k < copy_len; ++k)
                             *reinterpret_cast<S*>(p[0] + k * s[0]) = *reinterpret_cast<const S*>(p[3] + k * s[3]);
                         }
                         check_run<I>(p[1], s[1], len, 0, size, dim);
                         if (s[1] == static_cast<int64_t>(sizeof(I)) && s[2] == kS) {
                           const I* idx = reinterpret_cast<const I*>(p[1]);
                           const S* v = reinterpret_cast<const S*>(p[2]);
                           if (add) {
                             scatter_dense_run<true, T>(p[0], s[0], idx, v, len);
                           } else {
                             scatter_dense_run<false, T>(p[0], s[0], idx, v, len);
                           }
                           return;
                         }
                         for (int64_t k = 0; k < len; ++k) {
                           const int64_t i = *reinterpret_cast<const I*>(p[1] + k * s[1]);
                           S* dst = reinterpret_cast<S*>(p[0] + i * s[0]);
                           const S v = *reinterpret_cast<const S*>(p[2] + k * s[2]);
                           *dst = add ? scatter_combine<true, T>(*dst, v) : v;
                         }
                       });
    });
  });
}

// take(self, index): out[i] = flat(self)[index[i]] (negative indices count from
// the end). self arrives contiguous, out has index's shape.
void take_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& index = tensor_arg(call, 1, "index");
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(index, "index", out, "out");
  int64_t n = 0;
  if (!sdk::StridedIter<1>::dense(self.ndim, self.shape, {sdk::IterOperand::of(self)}, &n))
    invalid("self must be contiguous");
  dispatch_index(index, [&](auto itag) {
    using I = typename decltype(itag)::type;
    check_indices<I>(index, n, 0, true);
    sdk::dispatch_dtype(call.dtype, [&](auto tag) {
      using S = storage_t<typename decltype(tag)::type>;
      const S* src = reinterpret_cast<const S*>(data_ptr(self));
      run_elementwise<2>(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(index)}, kGrain,
                         sdk::basic_loop<S, I>([src, n](I i) -> S { return src[i < 0 ? i + n : i]; }));
    });
  });
}

// masked_fill(self, mask, value): out = mask ? value : self; self and mask
// arrive expanded to out's shape (outputs[0] may be self: masked_fill_).
void masked_fill_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mask = tensor_arg(call, 1, "mask", TSR_DTYPE_BOOL);
  const TsrValue& value = arg(call, 2, "value");
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(self, "self", out, "out");
  check_same_shape(mask, "mask", out, "out");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    const S v = scalar_as<T>(value);
    run_elementwise<3>(out.ndim, out.shape,
                       {sdk::IterOperand::of(out), sdk::IterOperand::of(self), sdk::IterOperand::of(mask)}, kGrain,
                       sdk::basic_loop<S, S, uint8_t>([v](S x, uint8_t m) -> S { return m ? v : x; }));
  });
}

// masked_select(self, mask): the elements of self where mask is true, in
// row-major order, as a 1-D tensor sized through allocate_output. self and mask
// arrive expanded to one shape.
void masked_select_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mask = tensor_arg(call, 1, "mask", TSR_DTYPE_BOOL);
  check_same_shape(self, "self", mask, "mask");
  if (call.outputs == nullptr || call.num_outputs < 1) invalid("masked_select needs one (unallocated) output");
  if (call.struct_size < offsetof(TsrKernelCall, allocate_output) + sizeof(call.allocate_output) ||
      call.allocate_output == nullptr) {
    invalid("masked_select needs TsrKernelCall.allocate_output (its output size depends on the data)");
  }
  constexpr int64_t kChunk = 65536;
  const sdk::StridedIter<2> it(self.ndim, self.shape, {sdk::IterOperand::of(mask), sdk::IterOperand::of(self)},
                               sdk::IterOrder::kRowMajor);
  const int64_t n = it.numel();
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> offset(static_cast<size_t>(chunks + 1), 0);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t count = 0;
      it.for_range(c * kChunk, std::min(n, (c + 1) * kChunk), [&](char** p, const int64_t* s, int64_t len) {
        for (int64_t i = 0; i < len; ++i) count += *reinterpret_cast<const uint8_t*>(p[0] + i * s[0]) != 0;
      });
      offset[static_cast<size_t>(c + 1)] = count;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) offset[static_cast<size_t>(c + 1)] += offset[static_cast<size_t>(c)];
  const int64_t total = offset[static_cast<size_t>(chunks)];
  DLTensor* out = nullptr;
  sdk::throw_if_error(call.allocate_output(call.handle, 0, call.dtype, 1, &total, &out));
  if (out == nullptr) fail(TSR_ERROR_INTERNAL, "allocate_output succeeded but returned no tensor");
  if (total == 0) return;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using S = storage_t<typename decltype(tag)::type>;
    S* dst = reinterpret_cast<S*>(data_ptr(*out));
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        S* o = dst + offset[static_cast<size_t>(c)];
        it.for_range(c * kChunk, std::min(n, (c + 1) * kChunk), [&](char** p, const int64_t* s, int64_t len) {
          for (int64_t i = 0; i < len; ++i) {
            if (*reinterpret_cast<const uint8_t*>(p[0] + i * s[0]) != 0) *o++ = *reinterpret_cast<const S*>(p[1] + i * s[1]);
          }
        });
      }
    });
  });
}

}  // namespace

void register_indexing_kernels(const sdk::Host& host) {
  register_indexing_nonzero_kernels(host);
  static constexpr KernelRegistration kTable[] = {
      {"gather", kAllMask, &kernel_entry<&gather_kernel>},
      {"index_select", kAllMask, &kernel_entry<&gather_kernel>},
      {"scatter_", kAllMask, &kernel_entry<&scatter_kernel<false>>},
      {"scatter_.value", kAllMask, &kernel_entry<&scatter_kernel<false>>},
      {"scatter_add_", kAllMask, &kernel_entry<&scatter_kernel<true>>},
      {"index_add_", kAllMask, &kernel_entry<&scatter_kernel<true>>},
      {"_scatter", kAllMask, &kernel_entry<&scatter_copy_kernel>},
      {"take", kAllMask, &kernel_entry<&take_kernel>},
      {"masked_fill", kAllMask, &kernel_entry<&masked_fill_kernel>},
      {"masked_select", kAllMask, &kernel_entry<&masked_select_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
