// tessera/sdk/iterate.hpp — strided elementwise iteration for plugin kernels
// (a small "TensorIterator"). Header-only, C++17, no dependencies beyond the ABI.
//
// Given N operands that share one shape (each with its own strides, data pointer
// and element size), StridedIter<N>:
//   1. drops size-1 dimensions;
//   2. optionally (IterOrder::kAny, the default) flips dimensions in which the
//      first operand (the output, by convention) has a negative stride, and sorts
//      dimensions so the one with the smallest strides is innermost;
//   3. merges adjacent dimensions whose strides are compatible for *every*
//      operand (outer stride == inner stride * inner size);
//   4. calls an inner-loop functor once per innermost row:
//          loop(char** ptrs, const int64_t* byte_strides, int64_t count)
//      ptrs[k] points at the first element of the row for operand k, and
//      byte_strides[k] is operand k's stride of the innermost dimension in
//      bytes. A fully contiguous N-d problem becomes a single call with
//      byte_strides[k] == element size, so the loop body can be a plain
//      vectorizable loop. basic_loop() builds such a functor from a scalar
//      function, with contiguous, broadcast-scalar and strided variants.
//
// Requirements:
//  - All operands have `shape` (broadcast inputs carry stride 0).
//  - With IterOrder::kAny, elements are visited in an unspecified order and
//    each exactly once. That is right for elementwise maps whose outputs do not
//    partially overlap their inputs (an output identical to an input, as in
//    in-place ops, is fine). Use IterOrder::kRowMajor to keep the logical
//    row-major order (only size-1 removal and merging are done then).
//  - Strides are in elements and may be 0 or negative; pointers must be aligned
//    for their element type.
//  - At most kMaxDims dimensions of size > 1. A tensor with more would have
//    more than 2^63 elements, so the limit never bites; it is checked anyway.
//  - Every operand's byte extent (the distance between its lowest and highest
//    element, checked.hpp's byte_extent) fits int64; an operand whose strides
//    overflow it is refused with an sdk::Error, so every offset the iterator
//    computes fits int64.
//
// Threading: a StridedIter is immutable after construction; for_range() may be
// called concurrently from several threads on disjoint ranges. This header does
// not start threads: split [0, numel()) into ranges and hand them to your
// thread pool (the CPU plugin uses OpenMP above a grain size).
//
// Cost: construction is O(ndim^2) on small fixed arrays, with no heap
// allocation, so it is cheap enough for one-element tensors.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/checked.hpp>
#include <tessera/sdk/plugin.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera::sdk {

/// One operand of an elementwise loop: a strided view over the shared shape.
struct IterOperand {
  /// Address of the first element (logical index 0 in every dimension).
  char* data = nullptr;
  /// Strides in elements, one per dimension of the shared shape; nullptr means
  /// contiguous row-major.
  const int64_t* strides = nullptr;
  /// Bytes per element.
  int64_t elem_size = 0;

  /// The operand describing a DLTensor (byte_offset is added to data).
  static IterOperand of(const DLTensor& t) {
    IterOperand op;
    op.data = static_cast<char*>(t.data) + t.byte_offset;
    op.strides = t.strides;
    op.elem_size = (static_cast<int64_t>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
    return op;
  }
};

/// Whether StridedIter may reorder and flip dimensions.
enum class IterOrder {
  kAny,       ///< reorder and flip dimensions for locality (elementwise maps)
  kRowMajor,  ///< keep the logical row-major order
};

template <size_t N>
class StridedIter {
  static_assert(N >= 1, "StridedIter needs at least one operand");

 public:
  /// Dimensions of size > 1 that can be represented; see the header comment.
  static constexpr int kMaxDims = 64;

  /// `shape` has `ndim` entries (>= 0 each) and is shared by all operands.
  /// Throws sdk::Error (TSR_ERROR_INVALID_ARGUMENT) for a negative size, an
  /// element count overflowing int64, or an operand whose byte extent
  /// overflows int64 (see the header comment).
  StridedIter(int32_t ndim, const int64_t* shape, const std::array<IterOperand, N>& operands,
              IterOrder order = IterOrder::kAny) {
    for (size_t k = 0; k < N; ++k) {
      data_[k] = operands[k].data;
      elem_size_[k] = operands[k].elem_size;
    }
    numel_ = count(ndim, shape);
    ndim_ = 0;
    if (numel_ == 0) return;
    if (all_dense(ndim, shape, operands)) {  // the common case: one flat row, no sorting or merging
      check_dense_bytes(numel_, operands);
      ndim_ = 1;
      shape_[0] = numel_;
      for (size_t k = 0; k < N; ++k) stride_[0][k] = elem_size_[k];
      return;
    }
    for (size_t k = 0; k < N; ++k) {
      int64_t extent = 0;
      if (checked::byte_extent(ndim, shape, operands[k].strides, elem_size_[k], &extent)) {
        throw Error(TSR_ERROR_INVALID_ARGUMENT, "operand " + std::to_string(k) + " of shape " +
                                                    dims_text(ndim, shape) + " and strides " +
                                                    dims_text(operands[k].strides ? ndim : 0, operands[k].strides) +
                                                    " spans more bytes than int64 can count");
      }
    }

    // Innermost-first working arrays: index 0 is the fastest-moving dimension.
    // Walking the logical dims from last to first yields that order directly.
    std::array<int64_t, N> contiguous_stride;  // for operands given without strides
    contiguous_stride.fill(1);
    for (int32_t d = ndim - 1; d >= 0; --d) {
      const int64_t size = shape[d];
      if (size != 1) {
        if (ndim_ == kMaxDims) {
          throw Error(TSR_ERROR_INVALID_ARGUMENT, "more than 64 dimensions of size > 1");
        }
        shape_[ndim_] = size;
        for (size_t k = 0; k < N; ++k) {
          const int64_t s = operands[k].strides ? operands[k].strides[d] : contiguous_stride[k];
          stride_[ndim_][k] = s * elem_size_[k];
        }
        ++ndim_;
      }
      // Products of sizes of a shape whose count fits int64 (the outermost is never used).
      if (d > 0 && size > 1) {
        for (size_t k = 0; k < N; ++k) contiguous_stride[k] *= size;
      }
    }

    if (order == IterOrder::kAny) {
      flip_negative_strides();
      sort_dims();
    }
    coalesce();

    if (ndim_ == 0) {  // a single element: present it as one contiguous row
      ndim_ = 1;
      shape_[0] = 1;
      for (size_t k = 0; k < N; ++k) stride_[0][k] = elem_size_[k];
    }
  }

  /// If every operand is dense row-major over `shape` (strides of size-1 dims
  /// ignored), stores the element count in *numel and returns true. Cheaper
  /// than constructing an iterator; lets callers run one flat loop directly.
  /// Throws sdk::Error for a negative size, an element count overflowing
  /// int64, or dense operands whose byte size overflows it.
  static bool dense(int32_t ndim, const int64_t* shape, const std::array<IterOperand, N>& operands, int64_t* numel) {
    const int64_t n = count(ndim, shape);
    if (!all_dense(ndim, shape, operands)) return false;
    check_dense_bytes(n, operands);
    *numel = n;
    return true;
  }

  /// Total number of elements of the shared shape.
  int64_t numel() const { return numel_; }
  /// Number of dimensions after simplification (1 or more when numel() > 0).
  int32_t ndim() const { return ndim_; }
  /// Size of simplified dimension d; d == 0 is the innermost.
  int64_t size(int32_t d) const { return shape_[d]; }
  /// Byte stride of operand k in simplified dimension d (d == 0 innermost).
  int64_t byte_stride(int32_t d, size_t k) const { return stride_[d][k]; }
  /// Address of operand k's first visited element (after any flips).
  char* data(size_t k) const { return data_[k]; }

  /// True if the whole problem is one row in which every operand is dense.
  bool is_contiguous() const {
    if (ndim_ != 1) return false;
    for (size_t k = 0; k < N; ++k) {
      if (stride_[0][k] != elem_size_[k]) return false;
    }
    return true;
  }

  /// Runs loop(ptrs, byte_strides, count) over the elements [begin, end) of the
  /// simplified iteration order (0 <= begin <= end <= numel()).
  // index[] below is written for every dim before it is read; GCC cannot see
  // that through the loop bounds, and zero-filling it costs ~40 ns per call.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  template <typename Loop>
  void for_range(int64_t begin, int64_t end, Loop&& loop) const {
    if (begin >= end) return;
    char* ptrs[N];
    int64_t inner_strides[N];
    for (size_t k = 0; k < N; ++k) inner_strides[k] = stride_[0][k];

    if (ndim_ == 1) {  // the common case after coalescing: one call
      for (size_t k = 0; k < N; ++k) ptrs[k] = data_[k] + begin * stride_[0][k];
      loop(ptrs, static_cast<const int64_t*>(inner_strides), end - begin);
      return;
    }

    // Odometer over the outer dims; row[] holds each operand's row start.
    const int32_t nd = ndim_;
    int64_t index[kMaxDims];
    char* row[N];
    for (size_t k = 0; k < N; ++k) row[k] = data_[k];
    int64_t rest = begin;
    for (int32_t d = 0; d < nd; ++d) {
      index[d] = rest % shape_[d];
      rest /= shape_[d];
      if (d > 0) {
        for (size_t k = 0; k < N; ++k) row[k] += index[d] * stride_[d][k];
      }
    }
    int64_t remaining = end - begin;
    int64_t col = index[0];
    while (remaining > 0) {
      const int64_t count = shape_[0] - col < remaining ? shape_[0] - col : remaining;
      for (size_t k = 0; k < N; ++k) ptrs[k] = row[k] + col * stride_[0][k];
      loop(ptrs, static_cast<const int64_t*>(inner_strides), count);
      remaining -= count;
      col = 0;
      if (remaining == 0) break;
      for (int32_t d = 1; d < nd; ++d) {  // carry into the next row
        if (++index[d] < shape_[d]) {
          for (size_t k = 0; k < N; ++k) row[k] += stride_[d][k];
          break;
        }
        // Back to index 0: (size - 1) * stride lies within the extent, so fits.
        for (size_t k = 0; k < N; ++k) row[k] -= (shape_[d] - 1) * stride_[d][k];
        index[d] = 0;
      }
    }
  }

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  /// Runs the loop over every element, on the calling thread.
  template <typename Loop>
  void for_each(Loop&& loop) const {
    for_range(0, numel_, std::forward<Loop>(loop));
  }

 private:
  // The element count of shape (exact: 0 when a size is 0); sdk::Error for a
  // negative size or a count beyond int64.
  static int64_t count(int32_t ndim, const int64_t* shape) {
    int64_t n = 0;
    if (checked::numel(ndim, shape, &n)) {
      for (int32_t d = 0; d < ndim; ++d) {
        if (shape[d] < 0) {
          throw Error(TSR_ERROR_INVALID_ARGUMENT,
                      "negative size " + std::to_string(shape[d]) + " in dimension " + std::to_string(d));
        }
      }
      throw Error(TSR_ERROR_INVALID_ARGUMENT, "element count of shape " + dims_text(ndim, shape) + " overflows int64");
    }
    return n;
  }

  // A dense operand spans numel * elem_size bytes: that must fit int64.
  static void check_dense_bytes(int64_t numel, const std::array<IterOperand, N>& operands) {
    for (size_t k = 0; k < N; ++k) {
      int64_t bytes = 0;
      if (checked::mul(numel, operands[k].elem_size, &bytes)) {
        throw Error(TSR_ERROR_INVALID_ARGUMENT, "operand " + std::to_string(k) + " of " + std::to_string(numel) +
                                                    " elements spans more bytes than int64 can count");
      }
    }
  }

  static std::string dims_text(int32_t ndim, const int64_t* v) {
    std::string s = "[";
    for (int32_t d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(v[d]);
    return s + "]";
  }

  // True if every operand is dense row-major (strides of size-1 dims ignored).
  static bool all_dense(int32_t ndim, const int64_t* shape, const std::array<IterOperand, N>& operands) {
    for (size_t k = 0; k < N; ++k) {
      const int64_t* strides = operands[k].strides;
      if (strides == nullptr) continue;
      int64_t expected = 1;
      for (int32_t d = ndim - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[d] != expected) return false;
        // Only an empty shape's sizes can multiply past int64: it is not dense then.
        if (checked::mul(expected, shape[d], &expected)) return false;
      }
    }
    return true;
  }

  // Iterating a dimension backwards visits the same elements; doing so where
  // the output's stride is negative makes the output walk forward in memory.
  void flip_negative_strides() {
    for (int32_t d = 0; d < ndim_; ++d) {
      if (stride_[d][0] >= 0) continue;
      for (size_t k = 0; k < N; ++k) {
        data_[k] += (shape_[d] - 1) * stride_[d][k];
        stride_[d][k] = -stride_[d][k];
      }
    }
  }

  // True if dim a should be inside (faster than) dim b: decided by the first
  // operand for which both strides are non-zero and differ in magnitude. A zero
  // stride (broadcast) says nothing about memory order.
  bool inner_before(int32_t a, int32_t b) const {
    for (size_t k = 0; k < N; ++k) {
      int64_t sa = stride_[a][k], sb = stride_[b][k];
      if (sa == 0 || sb == 0) continue;
      sa = sa < 0 ? -sa : sa;
      sb = sb < 0 ? -sb : sb;
      if (sa != sb) return sa < sb;
    }
    return false;
  }

  // Stable insertion sort, innermost first. ndim is tiny; a dim only moves
  // inward past dims it strictly beats, so ties keep the logical order.
  void sort_dims() {
    for (int32_t i = 1; i < ndim_; ++i) {
      for (int32_t j = i; j > 0 && inner_before(j, j - 1); --j) {
        std::swap(shape_[j], shape_[j - 1]);
        std::swap(stride_[j], stride_[j - 1]);
      }
    }
  }

  // Merges dim d+1 (outer) into dim d (inner) when, for every operand, stepping
  // the outer dim equals stepping the inner one size times.
  void coalesce() {
    if (ndim_ <= 1) return;
    int32_t out = 0;  // last kept dim
    for (int32_t d = 1; d < ndim_; ++d) {
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) {
        int64_t span = 0;  // may exceed the extent by one stride: checked
        if (checked::mul(stride_[out][k], shape_[out], &span) || stride_[d][k] != span) {
          mergeable = false;
          break;
        }
      }
      if (mergeable) {
        shape_[out] *= shape_[d];
      } else {
        ++out;
        shape_[out] = shape_[d];
        stride_[out] = stride_[d];
      }
    }
    ndim_ = out + 1;
  }

  int64_t numel_ = 0;
  int32_t ndim_ = 0;
  char* data_[N];
  int64_t elem_size_[N];
  int64_t shape_[kMaxDims];                    // innermost first
  std::array<int64_t, N> stride_[kMaxDims];    // bytes, innermost first
};

// ---------------------------------------------------------------------------
// Typed inner loops
// ---------------------------------------------------------------------------

namespace detail {

// How one input is read inside the inner loop. Each variant makes the loop
// body a simple indexed access the compiler can vectorize.
template <typename T>
struct DenseArg {  // unit stride
  const T* p;
  explicit DenseArg(const char* ptr, int64_t) : p(reinterpret_cast<const T*>(ptr)) {}
  T operator[](int64_t i) const { return p[i]; }
};
template <typename T>
struct ScalarArg {  // stride 0: read once, before the loop (so no aliasing doubts)
  T v;
  explicit ScalarArg(const char* ptr, int64_t) : v(*reinterpret_cast<const T*>(ptr)) {}
  T operator[](int64_t) const { return v; }
};
template <typename T>
struct StridedArg {  // any stride, in bytes
  const char* p;
  int64_t s;
  explicit StridedArg(const char* ptr, int64_t stride) : p(ptr), s(stride) {}
  T operator[](int64_t i) const { return *reinterpret_cast<const T*>(p + i * s); }
};

// out[i] = f(in_0[i], ..., in_{n-1}[i]) with a dense output; `Args` picks the
// access pattern of each input.
// f is copied into the loop's frame: values it captured (masked_fill's fill
// value, clamp's bounds) then cannot alias the output, so the compiler keeps
// them in registers and vectorizes; read through the caller's closure, every
// store to out made it reload them, element by element.
template <typename Out, typename... Args, typename F, size_t... I>
inline void dense_out_loop(const F& caller_f, char** ptrs, const int64_t* strides, int64_t n,
                           std::index_sequence<I...>) {
  const F f = caller_f;
  Out* out = reinterpret_cast<Out*>(ptrs[0]);
  const std::tuple<Args...> in{Args(ptrs[I + 1], strides[I + 1])...};
  for (int64_t i = 0; i < n; ++i) out[i] = f(std::get<I>(in)[i]...);
}

template <typename Out, typename... In, typename F, size_t... I>
inline void strided_loop(const F& caller_f, char** ptrs, const int64_t* strides, int64_t n,
                         std::index_sequence<I...>) {
  const F f = caller_f;  // as dense_out_loop
  char* out = ptrs[0];
  const int64_t out_stride = strides[0];
  const std::tuple<StridedArg<In>...> in{StridedArg<In>(ptrs[I + 1], strides[I + 1])...};
  for (int64_t i = 0; i < n; ++i) *reinterpret_cast<Out*>(out + i * out_stride) = f(std::get<I>(in)[i]...);
}

// Variant for a dense output where input j is a broadcast scalar exactly when
// bit j of Mask is set and dense otherwise.
template <unsigned Mask, typename Out, typename... In, typename F, size_t... I>
inline void masked_loop(const F& f, char** ptrs, const int64_t* strides, int64_t n,
                        std::index_sequence<I...> seq) {
  dense_out_loop<Out,
                 std::conditional_t<((Mask >> I) & 1u) != 0, ScalarArg<In>, DenseArg<In>>...>(
      f, ptrs, strides, n, seq);
}

template <unsigned Mask, typename Out, typename... In, typename F, size_t... I>
inline bool try_masked(unsigned mask, const F& f, char** ptrs, const int64_t* strides, int64_t n,
                       std::index_sequence<I...> seq) {
  if (mask != Mask) return false;
  masked_loop<Mask, Out, In...>(f, ptrs, strides, n, seq);
  return true;
}

template <typename Out, typename... In, typename F, unsigned... M, size_t... I>
inline bool dispatch_masks(unsigned mask, const F& f, char** ptrs, const int64_t* strides, int64_t n,
                           std::integer_sequence<unsigned, M...>, std::index_sequence<I...> seq) {
  return (try_masked<M, Out, In...>(mask, f, ptrs, strides, n, seq) || ...);
}

}  // namespace detail

/// The inner-loop functor for out = f(in...): Out and In... are the element
/// types of operand 0 (the output) and operands 1.. (the inputs), f maps input
/// values to an output value. Chooses per call between
///   - every operand dense (the vectorizable fast path),
///   - dense output with some inputs broadcast (stride 0; up to 3 inputs), and
///   - arbitrary byte strides.
/// f must be cheap to copy and free of side effects on the operands.
template <typename Out, typename... In, typename F>
auto basic_loop(F f) {
  return [f](char** ptrs, const int64_t* strides, int64_t n) {
    constexpr size_t kIn = sizeof...(In);
    using Seq = std::make_index_sequence<kIn>;
    constexpr int64_t kSizes[kIn + 1] = {static_cast<int64_t>(sizeof(Out)), static_cast<int64_t>(sizeof(In))...};
    if (strides[0] == kSizes[0]) {
      unsigned scalar_mask = 0;
      bool dense = true;
      for (size_t k = 0; k < kIn; ++k) {
        if (strides[k + 1] == 0) {
          scalar_mask |= 1u << k;
        } else if (strides[k + 1] != kSizes[k + 1]) {
          dense = false;
        }
      }
      if (dense) {
        if (scalar_mask == 0) {
          detail::masked_loop<0u, Out, In...>(f, ptrs, strides, n, Seq{});
          return;
        }
        if constexpr (kIn <= 3) {
          using Masks = std::make_integer_sequence<unsigned, (1u << kIn)>;
          if (detail::dispatch_masks<Out, In...>(scalar_mask, f, ptrs, strides, n, Masks{}, Seq{})) return;
        }
      }
    }
    detail::strided_loop<Out, In...>(f, ptrs, strides, n, Seq{});
  };
}

}  // namespace tessera::sdk
