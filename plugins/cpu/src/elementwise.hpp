// Running a typed elementwise loop over kernel operands: build the strided
// iterator once, then run the inner loop on the calling thread or split across
// OpenMP threads above a grain.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "parallel.hpp"

#include <array>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

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
