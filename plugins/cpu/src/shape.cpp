// tril and triu: the shape ops that need a kernel (the others are core
// composites of views and copy_). One pass over the output: each element is
// the input's or zero, by its (row, col) against the diagonal.
#include "isa.hpp"
#include "common.hpp"
#include "kernels.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

// Copies or zeroes each row of each matrix. `out` may be `self` itself (tril_):
// every element is read before it is written at the same place, so that is safe.
template <bool Lower, typename S>
void tri(const DLTensor& self, DLTensor& out, int64_t diagonal) {
  const int nd = self.ndim;
  const int64_t rows = self.shape[nd - 2], cols = self.shape[nd - 1];
  const int64_t in_sr = self.strides[nd - 2], in_sc = self.strides[nd - 1];
  const int64_t out_sr = out.strides[nd - 2], out_sc = out.strides[nd - 1];
  diagonal = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);  // no overflow in i + diagonal
  int64_t batch = 1;
  for (int d = 0; d < nd - 2; ++d) batch *= self.shape[d];
  const S* in = reinterpret_cast<const S*>(data_ptr(self));
  S* o = reinterpret_cast<S*>(data_ptr(out));
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cols));
  parallel_for(batch * rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t b = r / rows, i = r % rows;
      // Batch offsets from the flat batch index (any batch strides).
      int64_t in_off = i * in_sr, out_off = i * out_sr;
      for (int d = nd - 3; d >= 0; --d) {
        const int64_t idx = b % self.shape[d];
        b /= self.shape[d];
        in_off += idx * self.strides[d];
        out_off += idx * out.strides[d];
      }
      const S* src = in + in_off;
      S* dst = o + out_off;
      // Lower keeps cols j <= i + diagonal; upper keeps j >= i + diagonal.
      const int64_t edge = std::clamp<int64_t>(Lower ? i + diagonal + 1 : i + diagonal, 0, cols);
      const int64_t keep_begin = Lower ? 0 : edge, keep_end = Lower ? edge : cols;
      const int64_t zero_begin = Lower ? edge : 0, zero_end = Lower ? cols : edge;
      if (in_sc == 1 && out_sc == 1) {
        if (dst != src && keep_end > keep_begin)
          std::memmove(dst + keep_begin, src + keep_begin, static_cast<size_t>(keep_end - keep_begin) * sizeof(S));
        for (int64_t j = zero_begin; j < zero_end; ++j) dst[j] = S{};
      } else {
        for (int64_t j = keep_begin; j < keep_end; ++j) dst[j * out_sc] = src[j * in_sc];
        for (int64_t j = zero_begin; j < zero_end; ++j) dst[j * out_sc] = S{};
      }
    }
  });
}

template <bool Lower>
void tri_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const TsrValue& k = arg(call, 1, "diagonal");
  if (k.tag != TSR_VALUE_INT) invalid("argument 'diagonal' must be an int, got " + tag_text(k.tag));
  DLTensor& out = output(call, 0, call.dtype);
  if (self.ndim < 2 || !same_shape(self, out))
    invalid("expected self and out of one shape with at least 2 dims, got " + shape_text(self) + " and " +
            shape_text(out));
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    tri<Lower, storage_t<T>>(self, out, k.as.i);
  });
}

}  // namespace

void register_shape_kernels(const sdk::Host& host) {
  register_shape_copy_kernels(host);
  static constexpr KernelRegistration kTable[] = {
      {"tril", kAllMask, &kernel_entry<&tri_kernel<true>>},
      {"triu", kAllMask, &kernel_entry<&tri_kernel<false>>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
