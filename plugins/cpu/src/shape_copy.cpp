// The shape family's copies and factories: copy_ (any dtype pair, any strides),
// _cat, fill_ and arange.
#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"
#include "transpose_block.hpp"
#include "transpose_copy.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

// Below this many bytes a single memcpy beats waking threads. At 4 MiB, each
// 4 MiB input of a cat stayed on one thread: cat dim=0 of two 1024^2 float32
// went from 1.64x to 0.92x PyTorch's time at 2 threads with 1 MiB.
constexpr int64_t kParallelCopyBytes = int64_t{1} << 20;

// A transposing copy works in bands of kBand dst rows; within a band, on
// kBand x kBand squares: 4-byte elements through transpose_block.hpp's
// register blocks, others (and the edges) element by element in kEdgeTile
// squares, small enough that the rows they touch stay in L1 even when they all
// map to one set (rows a multiple of 4 KiB apart).
constexpr int64_t kBand = 16;
constexpr int64_t kEdgeTile = 8;
static_assert(kTransposeBlock == 0 || kBand % kTransposeBlock == 0, "a band is whole register blocks");

// dst[i1][i0] = src[i0][i1] for i1 in [i1_begin, i1_end), i0 in [i0_begin, n0), element by element.
template <typename U>
void transpose_elements(char* d, const char* s, int64_t d1, int64_t s0, int64_t i1_begin, int64_t i1_end,
                        int64_t i0_begin, int64_t n0) {
  constexpr int64_t kSize = static_cast<int64_t>(sizeof(U));
  for (int64_t t0 = i0_begin; t0 < n0; t0 += kEdgeTile) {
    const int64_t t0_end = std::min(n0, t0 + kEdgeTile);
    for (int64_t t1 = i1_begin; t1 < i1_end; t1 += kEdgeTile) {
      const int64_t t1_end = std::min(i1_end, t1 + kEdgeTile);
      for (int64_t i1 = t1; i1 < t1_end; ++i1) {
        U* out = reinterpret_cast<U*>(d + i1 * d1);
        const char* in = s + i1 * kSize;
        for (int64_t i0 = t0; i0 < t0_end; ++i0) std::memcpy(out + i0, in + i0 * s0, sizeof(U));
      }
    }
  }
}

// Elements of kSize bytes from src row start s to the next 64-byte line, where
// every row starts alike (row stride s0 a multiple of 64); else 0.
template <int64_t kSize>
int64_t lead_to_line(const char* s, int64_t s0) {
  constexpr int64_t kLine = 64;
  const int64_t off = static_cast<int64_t>(reinterpret_cast<uintptr_t>(s) % kLine);
  if (s0 % kLine != 0 || off % kSize != 0) return 0;
  return (kLine - off) % kLine / kSize;
}

// A copy whose two innermost (simplified) dims are swapped between dst and src
// (t().contiguous(), permute(...).contiguous()): dst dense along dim 0, src
// dense along dim 1. Element by element, every read of src would touch a new
// cache line; square by square, both sides use whole lines. Outer dims, if
// any, are walked by their index.
template <typename U>
bool copy_transposed(const sdk::StridedIter<2>& it) {
  constexpr int64_t kSize = static_cast<int64_t>(sizeof(U));
  if (it.ndim() < 2 || it.byte_stride(0, 0) != kSize || it.byte_stride(1, 1) != kSize) return false;
  const int64_t n0 = it.size(0), n1 = it.size(1);
  if (n0 < kBand || n1 < kBand) return false;
  const int64_t d1 = it.byte_stride(1, 0), s0 = it.byte_stride(0, 1);
  int64_t outer = 1;
  for (int32_t d = 2; d < it.ndim(); ++d) outer *= it.size(d);
  // Work items of kChunk bands; within one, the squares go src-row block by
  // block: 16 src rows read along kChunk * 16 columns (16 long streams), each
  // filling whole dst lines. Band by band, a few-row src (NCHW -> NHWC: 32
  // rows 16 KiB apart) was read one line per row per band, 4x a plain copy.
  constexpr int64_t kChunk = 16;
  const int64_t bands = (n1 + kBand - 1) / kBand, chunks = (bands + kChunk - 1) / kChunk;
  parallel_for(outer * chunks, std::max<int64_t>(1, kGrain / (kChunk * kBand * n0)), [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t rest = item / chunks;
      char* d = it.data(0);
      const char* s = it.data(1);
      for (int32_t dim = 2; dim < it.ndim(); ++dim) {
        const int64_t i = rest % it.size(dim);
        rest /= it.size(dim);
        d += i * it.byte_stride(dim, 0);
        s += i * it.byte_stride(dim, 1);
      }
      // Bands start where src's rows reach a cache line (rows a multiple of a
      // line apart: all alike), so that each 16-float square row is one line,
      // not the ends of two; the columns before that go element by element.
      // Rows 16 KiB apart share an L1 set, and a line's second half was gone
      // before the next square read it: NCHW -> NHWC of a NumPy array (16 bytes
      // off a line) took 2x the time of an aligned one.
      const int64_t lead = lead_to_line<kSize>(s, s0);
      const int64_t band_begin = (item % chunks) * kChunk, band_end = std::min(bands, band_begin + kChunk);
      // Whole bands' full squares (the last band may be partial: its elements below).
      const int64_t full_bands_end = std::min(band_end, (n1 - std::min(n1, lead)) / kBand);
      int64_t i0_done = 0;
      if constexpr (kSize == 4 && kTransposeBlock > 0) {
        for (; i0_done + kBand <= n0; i0_done += kBand) {
          for (int64_t band = band_begin; band < full_bands_end; ++band) {
            const int64_t i1_begin = lead + band * kBand;
            for (int64_t b0 = i0_done; b0 < i0_done + kBand; b0 += kTransposeBlock) {
              for (int64_t b1 = i1_begin; b1 < i1_begin + kBand; b1 += kTransposeBlock) {
                transpose_block4(s + b0 * s0 + b1 * kSize, s0, d + b1 * d1 + b0 * kSize, d1);
              }
            }
          }
        }
      }
      if (band_begin == 0 && lead > 0) transpose_elements<U>(d, s, d1, s0, 0, std::min(n1, lead), 0, n0);
      for (int64_t band = band_begin; band < band_end; ++band) {
        const int64_t i1_begin = lead + band * kBand, i1_end = std::min(n1, i1_begin + kBand);
        if (i1_begin >= n1) break;
        transpose_elements<U>(d, s, d1, s0, i1_begin, i1_end, band < full_bands_end ? i0_done : 0, n0);
      }
    }
  });
  return true;
}

// n bytes from s to d (no overlap) in 32-byte vectors, then a memcpy of the
// tail. For cat's pieces of rows this beat glibc's memcpy: 2x1024^2 float32
// along dim 1 at 1 thread, 275 -> 230 us in one process; in a C harness 4-5%
// with 64-byte aligned sources and ~10% with sources 16 bytes off a line (glibc's
// AVX-512 copy aligns its stores, so each 64-byte load then spans two lines).
// A whole contiguous tensor (clone) gained nothing measurable: it keeps memcpy.
inline void copy_piece(char* __restrict d, const char* __restrict s, int64_t n) {
  typedef char V __attribute__((vector_size(32), aligned(1), may_alias));
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const V a = *reinterpret_cast<const V*>(s + i), b = *reinterpret_cast<const V*>(s + i + 32);
    const V c = *reinterpret_cast<const V*>(s + i + 64), e = *reinterpret_cast<const V*>(s + i + 96);
    *reinterpret_cast<V*>(d + i) = a;
    *reinterpret_cast<V*>(d + i + 32) = b;
    *reinterpret_cast<V*>(d + i + 64) = c;
    *reinterpret_cast<V*>(d + i + 96) = e;
  }
  if (i < n) std::memcpy(d + i, s + i, static_cast<size_t>(n - i));
}

// Same-dtype copy: moves raw element bytes (bit exact: NaN payloads, -0.0).
template <typename U>
void copy_raw(DLTensor& dst, const DLTensor& src) {
  const sdk::StridedIter<2> it(dst.ndim, dst.shape, {sdk::IterOperand::of(dst), sdk::IterOperand::of(src)});
  const int64_t n = it.numel();
  if (copy_transposed<U>(it)) return;
  if (it.is_contiguous()) {
    char* d = it.data(0);
    const char* s = it.data(1);
    if (d == s) return;  // copying a tensor onto itself
    const int64_t bytes = n * static_cast<int64_t>(sizeof(U));
    parallel_for(bytes, kParallelCopyBytes, [&](int64_t begin, int64_t end) {
      std::memcpy(d + begin, s + begin, static_cast<size_t>(end - begin));
    });
    return;
  }
  const auto loop = sdk::basic_loop<U, U>([](U x) { return x; });
  if (n <= kGrain) {
    it.for_each(loop);
  } else {
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) { it.for_range(begin, end, loop); });
  }
}

// A conversion to or from float16/bfloat16: through float32 blocks
// (convert.hpp), with the values convert<To, From> gives.
template <typename To, typename From>
void copy_half(DLTensor& dst, const DLTensor& src) {
  using SF = storage_t<From>;
  using ST = storage_t<To>;
  // The double/int64 -> half staging (round to odd) costs more per element.
  const int64_t grain = (kIsHalfLike<From> || sizeof(From) <= 4) ? kGrain : kGrainExpensive;
  const auto loop = half_block_loop<To, From>([](compute_t<SF> x) -> compute_t<ST> {
    if constexpr (kIsHalfLike<To> && kIsHalfLike<From>) {
      return x;  // float16 <-> bfloat16: one rounding from the exact float
    } else if constexpr (kIsHalfLike<To>) {
      if constexpr (std::is_same_v<From, bool>) {
        return half_staging(x != 0);
      } else {
        return half_staging(x);
      }
    } else {
      return convert_storage<To, float>(x);  // half -> float is exact: same as from the half
    }
  });
  // float32 <-> half on dense runs: converted in place, without the staging.
  const auto direct = [loop](char** ptrs, const int64_t* strides, int64_t n) {
    if constexpr ((kIsHalfLike<From> && std::is_same_v<To, float>) ||
                  (std::is_same_v<From, float> && kIsHalfLike<To>)) {
      if (strides[0] == static_cast<int64_t>(sizeof(To)) && strides[1] == static_cast<int64_t>(sizeof(From))) {
        if constexpr (kIsHalfLike<From>) {
          widen_block(reinterpret_cast<const From*>(ptrs[1]), reinterpret_cast<float*>(ptrs[0]), n);
        } else {
          narrow_block(reinterpret_cast<const float*>(ptrs[1]), reinterpret_cast<To*>(ptrs[0]), n);
        }
        return;
      }
    }
    loop(ptrs, strides, n);
  };
  run_elementwise<2>(dst.ndim, dst.shape, {sdk::IterOperand::of(dst), sdk::IterOperand::of(src)}, grain, direct);
}

void copy_kernel(const TsrKernelCall& call) {
  DLTensor& dst = output(call, 0);
  const DLTensor& src = tensor_arg(call, 1, "src", call.dtype);
  check_same_shape(src, "src", dst, "self");
  const TsrDType dst_dtype = dtype_of(dst, "self");
  if (dst_dtype == call.dtype) {
    switch ((dst.dtype.bits * dst.dtype.lanes + 7) / 8) {
      case 1: copy_raw<uint8_t>(dst, src); return;
      case 2: copy_raw<uint16_t>(dst, src); return;
      case 4: copy_raw<uint32_t>(dst, src); return;
      case 8: copy_raw<uint64_t>(dst, src); return;
      default: invalid("unexpected element size");
    }
  }
  // Two dispatches, once per call; the 90 typed conversion loops are
  // instantiated here.
  sdk::dispatch_dtype(call.dtype, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    sdk::dispatch_dtype(dst_dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      if constexpr (std::is_same_v<To, From>) {
      } else if constexpr (kIsHalfLike<To> || kIsHalfLike<From>) {
        copy_half<To, From>(dst, src);
      } else {
        unary_map<To, From>(dst, src, kGrain,
                            [](storage_t<From> x) -> storage_t<To> { return convert_storage<To, From>(x); });
      }
    });
  });
}

// _cat(tensors, dim): out = the tensors one after another along dim (one dtype,
// sizes equal elsewhere). With out and every input dense, each of the `outer`
// output rows (the dims before dim) is written once, front to back: a piece of
// each input in turn. Writing the rows' slices input by input instead (one
// strided copy each) was ~25% slower: the write stream jumps every slice.
template <typename U>
void cat_dense(const sdk::TensorList& list, DLTensor& out, int64_t outer) {
  const int64_t out_row = sdk::numel(out) / outer;  // elements of one output row
  char* o = static_cast<char*>(data_ptr(out));
  if (outer == 1) {  // one slab per input (cat along dim 0): each a parallel memcpy
    int64_t at = 0;
    for (size_t k = 0; k < list.size; ++k) {
      const int64_t bytes = sdk::numel(list[k]) * static_cast<int64_t>(sizeof(U));
      if (bytes == 0) continue;  // its data pointer may be null
      const char* s = static_cast<const char*>(data_ptr(list[k]));
      char* d = o + at;
      parallel_for(bytes, kParallelCopyBytes, [&](int64_t begin, int64_t end) { copy_piece(d + begin, s + begin, end - begin); });
      at += bytes;
    }
    return;
  }
  const int64_t row_bytes = out_row * static_cast<int64_t>(sizeof(U));
  parallel_for(outer, std::max<int64_t>(1, kParallelCopyBytes / std::max<int64_t>(1, row_bytes)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   char* d = o + r * row_bytes;
                   for (size_t k = 0; k < list.size; ++k) {
                     const int64_t bytes = sdk::numel(list[k]) / outer * static_cast<int64_t>(sizeof(U));
                     if (bytes == 0) continue;  // its data pointer may be null
                     copy_piece(d, static_cast<const char*>(data_ptr(list[k])) + r * bytes, bytes);
                     d += bytes;
                   }
                 }
               });
}

// Any layout: each input into its slice of out, as copy_ copies.
template <typename U>
void cat_strided(const sdk::TensorList& list, DLTensor& out, int dim) {
  int64_t at = 0;
  for (size_t k = 0; k < list.size; ++k) {
    const DLTensor& in = list[k];
    DLTensor slice = out;
    slice.shape = in.shape;
    slice.data = static_cast<char*>(data_ptr(out)) + at * out.strides[dim] * static_cast<int64_t>(sizeof(U));
    slice.byte_offset = 0;
    if (sdk::numel(in) != 0) copy_raw<U>(slice, in);
    at += in.shape[dim];
  }
}

void cat_kernel(const TsrKernelCall& call) {
  const sdk::TensorList list = sdk::tensor_list_arg(call, 0, "tensors");
  const int64_t dim = int_arg(call, 1, "dim");
  DLTensor& out = output(call, 0, call.dtype);
  if (list.size == 0) invalid("expected a non-empty list of tensors");
  if (dim < 0 || dim >= out.ndim) invalid("dim " + std::to_string(dim) + " is out of range for out of shape " + shape_text(out));
  int64_t total = 0;
  bool overflow = false;  // sizes a caller made up can pass int64
  bool dense = sdk::is_contiguous(out);
  for (size_t k = 0; k < list.size; ++k) {
    const DLTensor& in = list[k];
    check_dtype(in, call.dtype, "tensors");
    bool fits = in.ndim == out.ndim;
    for (int d = 0; fits && d < out.ndim; ++d) fits = d == dim || in.shape[d] == out.shape[d];
    if (!fits)
      invalid("tensor " + std::to_string(k) + " of shape " + shape_text(in) + " does not fit out of shape " +
              shape_text(out) + " along dim " + std::to_string(dim));
    overflow = overflow || __builtin_add_overflow(total, in.shape[dim], &total);
    dense = dense && sdk::is_contiguous(in);
  }
  if (overflow || total != out.shape[dim])
    invalid("the tensors' sizes along dim " + std::to_string(dim) + " add up to " + std::to_string(total) +
            ", out has " + std::to_string(out.shape[dim]));
  if (sdk::numel(out) == 0) return;
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= out.shape[d];
  const auto run = [&](auto unit) {
    using U = decltype(unit);
    if (dense) {
      cat_dense<U>(list, out, outer);
    } else {
      cat_strided<U>(list, out, static_cast<int>(dim));
    }
  };
  switch ((out.dtype.bits * out.dtype.lanes + 7) / 8) {
    case 1: run(uint8_t{}); return;
    case 2: run(uint16_t{}); return;
    case 4: run(uint32_t{}); return;
    case 8: run(uint64_t{}); return;
    default: invalid("unexpected element size");
  }
}

void fill_kernel(const TsrKernelCall& call) {
  DLTensor& self = output(call, 0, call.dtype);
  const TsrValue& value = arg(call, 1, "value");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    const S v = static_cast<S>(scalar_to<T>(value, "value"));
    run_elementwise<1>(self.ndim, self.shape, {sdk::IterOperand::of(self)}, kGrain,
                       sdk::basic_loop<S>([v]() { return v; }));
  });
}

void arange_kernel(const TsrKernelCall& call) {
  DLTensor& out = output(call, 0, call.dtype);
  if (out.ndim != 1) invalid("out must be 1-D, got shape " + shape_text(out));
  const TsrValue& start = arg(call, 0, "start");
  const TsrValue& step = arg(call, 2, "step");
  check_scalar(start, "start");
  check_scalar(step, "step");
  const int64_t n = out.shape[0];
  const int64_t stride = out.strides[0];
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    S* o = reinterpret_cast<S*>(data_ptr(out));
    if constexpr (std::is_same_v<T, bool>) {
      invalid("arange is not defined for bool");
    } else if constexpr (kIsInteger<T>) {
      // int64 arithmetic that wraps instead of overflowing (no UB).
      const uint64_t first = static_cast<uint64_t>(scalar_to<int64_t>(start, "start"));
      const uint64_t delta = static_cast<uint64_t>(scalar_to<int64_t>(step, "step"));
      parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        if (stride == 1) {  // a loop of its own, which vectorizes (int64 1M at 1 thread: 600 -> 107 us)
          for (int64_t i = begin; i < end; ++i) o[i] = convert<T>(static_cast<int64_t>(first + static_cast<uint64_t>(i) * delta));
          return;
        }
        for (int64_t i = begin; i < end; ++i) {
          o[i * stride] = convert<T>(static_cast<int64_t>(first + static_cast<uint64_t>(i) * delta));
        }
      });
    } else {
      const double first = scalar_to<double>(start, "start");
      const double delta = scalar_to<double>(step, "step");
      parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        if (stride == 1) {
          for (int64_t i = begin; i < end; ++i) o[i] = convert<T>(first + static_cast<double>(i) * delta);
          return;
        }
        for (int64_t i = begin; i < end; ++i) o[i * stride] = convert<T>(first + static_cast<double>(i) * delta);
      });
    }
  });
}

}  // namespace

// bool is left out of arange: it has no bool meaning, and the core then reports
// a missing kernel.
bool transpose_blocks_f32(const float* src, float* dst, int64_t n, int64_t rows, int64_t cols) {
  // dst viewed with src's shape [n, rows, cols]: its strides [rows cols, 1, rows].
  int64_t shape[3] = {n, rows, cols};
  int64_t dst_strides[3] = {rows * cols, 1, rows}, src_strides[3] = {rows * cols, cols, 1};
  sdk::IterOperand d, s;
  d.data = reinterpret_cast<char*>(dst);
  d.strides = dst_strides;
  d.elem_size = 4;
  s.data = reinterpret_cast<char*>(const_cast<float*>(src));
  s.strides = src_strides;
  s.elem_size = 4;
  return copy_transposed<uint32_t>(sdk::StridedIter<2>(3, shape, {d, s}));
}

void register_shape_copy_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"copy_", kAllMask, &kernel_entry<&copy_kernel>},
      {"_cat", kAllMask, &kernel_entry<&cat_kernel>},
      {"fill_", kAllMask, &kernel_entry<&fill_kernel>},
      {"arange", kIntMask | kFloatMask, &kernel_entry<&arange_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
