// Running a typed elementwise loop over kernel operands: build the strided
// iterator once, then run the inner loop on the calling thread or split across
// OpenMP threads above a grain.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

// Copies rows [0, rows) x elements [0, cols) of a crossed operand (element
// stride `cs` along a row, row stride `rs`, bytes) into buf (rows x kTileCols
// elements, dense), one source line at a time: column c's rows are adjacent in
// the source.
template <size_t E>
inline void gather_crossed(const char* src, int64_t cs, int64_t rs, int64_t rows, int64_t cols, int64_t tile_cols,
                           char* buf) {
  struct Elem {
    char b[E];
  };
  Elem* out = reinterpret_cast<Elem*>(buf);
  for (int64_t c = 0; c < cols; ++c) {
    const char* p = src + c * cs;
    for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[r * tile_cols + c], p + r * rs, E);
  }
}

/// Two dims where some input runs along the other dim than the output (a +
/// b.t(), exp of a transposed view): row by row, that input's every element
/// was a new cache line, its lines 4 KiB apart on one L1 set (a 1024^2 float32
/// transposed add took 5 ms, 1.08x PyTorch's time). Tiles of kTileRows outer
/// rows by kTileCols elements: each crossed input's tile is first copied into
/// a dense buffer reading its source lines whole (gather_crossed), then
/// `loop` runs over the tile's rows with that input dense (its vector path).
/// Each element is computed once by `loop`, so results do not change. False
/// (nothing run) for other problems.
template <size_t N, typename Loop>
bool run_tiled(const sdk::StridedIter<N>& it, const std::array<sdk::IterOperand, N>& ops, int64_t grain,
               const Loop& loop) {
  constexpr int64_t kTileRows = 16, kTileCols = 64, kMinElements = 16384, kMaxElem = 16;
  if (it.ndim() != 2 || it.numel() < kMinElements) return false;
  const auto mag = [](int64_t s) { return s < 0 ? -s : s; };
  bool crossed[N] = {};
  bool any = false;
  for (size_t k = 1; k < N; ++k) {
    const int64_t inner = mag(it.byte_stride(0, k)), outer = mag(it.byte_stride(1, k));
    const int64_t e = ops[k].elem_size;
    crossed[k] = inner >= 64 && outer != 0 && outer < inner && e > 0 && e <= kMaxElem && (e & (e - 1)) == 0;
    any = any || crossed[k];
  }
  if (!any) return false;
  const int64_t cols = it.size(0), rows = it.size(1);
  const auto blocks = [&](int64_t b0, int64_t b1) {
    std::vector<char> buffers(N * kTileRows * kTileCols * kMaxElem);
    char* ptrs[N];
    int64_t strides[N];
    for (size_t k = 0; k < N; ++k) strides[k] = crossed[k] ? ops[k].elem_size : it.byte_stride(0, k);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kTileRows, nr = std::min(kTileRows, rows - r0);
      for (int64_t c = 0; c < cols; c += kTileCols) {
        const int64_t count = std::min(kTileCols, cols - c);
        for (size_t k = 0; k < N; ++k) {
          if (!crossed[k]) continue;
          const char* src = it.data(k) + c * it.byte_stride(0, k) + r0 * it.byte_stride(1, k);
          char* buf = buffers.data() + k * kTileRows * kTileCols * kMaxElem;
          const int64_t cs = it.byte_stride(0, k), rs = it.byte_stride(1, k);
          switch (ops[k].elem_size) {
            case 1: gather_crossed<1>(src, cs, rs, nr, count, kTileCols, buf); break;
            case 2: gather_crossed<2>(src, cs, rs, nr, count, kTileCols, buf); break;
            case 4: gather_crossed<4>(src, cs, rs, nr, count, kTileCols, buf); break;
            case 8: gather_crossed<8>(src, cs, rs, nr, count, kTileCols, buf); break;
            default: gather_crossed<16>(src, cs, rs, nr, count, kTileCols, buf); break;
          }
        }
        for (int64_t r = 0; r < nr; ++r) {
          for (size_t k = 0; k < N; ++k) {
            ptrs[k] = crossed[k] ? buffers.data() + k * kTileRows * kTileCols * kMaxElem + r * kTileCols * ops[k].elem_size
                                 : it.data(k) + c * it.byte_stride(0, k) + (r0 + r) * it.byte_stride(1, k);
          }
          loop(ptrs, static_cast<const int64_t*>(strides), count);
        }
      }
    }
  };
  const int64_t n_blocks = (rows + kTileRows - 1) / kTileRows;
  parallel_for(n_blocks, std::max<int64_t>(1, grain / (kTileRows * cols)), blocks);
  return true;
}

/// Runs `loop` (a basic_loop-style functor) over the N operands, which all have
/// the shape of ops[0]'s DLTensor (ops[0] is the output).
template <size_t N, typename Loop>
void run_elementwise(int32_t ndim, const int64_t* shape, const std::array<sdk::IterOperand, N>& ops,
                     int64_t grain, const Loop& loop) {
  // Dense operands (the usual case, and every one-element op): one flat loop,
  // without building the iterator.
  int64_t n_dense = 0;
  if (sdk::StridedIter<N>::dense(ndim, shape, ops, &n_dense)) {
    if (n_dense == 0) return;
    int64_t strides[N];
    for (size_t k = 0; k < N; ++k) strides[k] = ops[k].elem_size;
    const auto flat = [&](int64_t begin, int64_t end) {
      char* ptrs[N];
      for (size_t k = 0; k < N; ++k) ptrs[k] = ops[k].data + begin * strides[k];
      loop(ptrs, static_cast<const int64_t*>(strides), end - begin);
    };
    if (n_dense <= grain) {
      flat(0, n_dense);
    } else {
      parallel_for(n_dense, grain, flat);
    }
    return;
  }
  const sdk::StridedIter<N> it(ndim, shape, ops);
  if (run_tiled(it, ops, grain, loop)) return;
  const int64_t n = it.numel();
  if (n <= grain) {
    it.for_each(loop);
    return;
  }
  parallel_for(n, grain, [&](int64_t begin, int64_t end) { it.for_range(begin, end, loop); });
}

/// out = f(a) elementwise; f maps storage_t<In> to storage_t<Out>.
template <typename Out, typename In, typename F>
void unary_map(DLTensor& out, const DLTensor& in, int64_t grain, F f) {
  run_elementwise<2>(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(in)}, grain,
                     sdk::basic_loop<storage_t<Out>, storage_t<In>>(f));
}

/// out = f(a, b) elementwise; f maps storage_t<T> x storage_t<T> to storage_t<T>.
template <typename T, typename F>
void binary_map(DLTensor& out, const DLTensor& a, const DLTensor& b, int64_t grain, F f) {
  using S = storage_t<T>;
  run_elementwise<3>(out.ndim, out.shape,
                     {sdk::IterOperand::of(out), sdk::IterOperand::of(a), sdk::IterOperand::of(b)}, grain,
                     sdk::basic_loop<S, S, S>(f));
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
