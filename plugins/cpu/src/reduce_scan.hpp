// Scans: cumsum and cumprod along one dim (docs/ops/reduction.md). The core
// casts the input to the output dtype first, so both have one dtype. Floating
// scans accumulate in double (float16/bfloat16 in float), so each output is
// the running value rounded once; integers wrap in uint64; bool is logical
// or / and.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "parallel.hpp"
#include "reduce_layout.hpp"

#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace reduce_detail {

template <typename T>
using scan_acc_t = std::conditional_t<kIsHalfLike<T>, float, std::conditional_t<kIsFloating<T>, double, uint64_t>>;

template <typename T, bool IsSum>
void scan_typed(const DLTensor& self, DLTensor& out, int64_t d) {
  using S = storage_t<T>;
  using A = scan_acc_t<T>;
  Layout L;  // the other dims: one independent line each
  for (int32_t k = 0; k < self.ndim; ++k) {
    if (k == d || self.shape[k] == 1) continue;
    L.kept[L.nk++] = Dim{self.shape[k], self.strides[k], out.strides[k], false};
    L.n_out *= self.shape[k];
  }
  const int64_t n = self.ndim == 0 ? 1 : self.shape[d];
  const int64_t si = self.ndim == 0 ? 1 : self.strides[d];
  const int64_t so = self.ndim == 0 ? 1 : out.strides[d];
  const S* in = reinterpret_cast<const S*>(data_ptr(self));
  S* o = reinterpret_cast<S*>(data_ptr(out));
  const auto load = [](S x) -> A {
    if constexpr (std::is_same_v<A, uint64_t>) {
      if constexpr (std::is_same_v<T, bool>) {
        return x != 0 ? 1u : 0u;
      } else {
        return static_cast<uint64_t>(static_cast<int64_t>(x));
      }
    } else {
      return static_cast<A>(static_cast<compute_t<T>>(x));
    }
  };
  const auto store = [](A a) -> S {
    if constexpr (std::is_same_v<A, uint64_t>) {
      return static_cast<S>(convert<T>(static_cast<int64_t>(a)));
    } else {
      return static_cast<S>(convert<T>(a));
    }
  };
  if (si != 1 && L.nk == 1 && L.kept[0].in == 1 && L.kept[0].out == 1) {
    // Along a strided dim, with the other dim dense in both (dim 0 of a
    // row-major matrix): chunks of kCols columns go down the rows together,
    // each row's chunk accumulated in vector lanes. Walking one column at a
    // time touched a new cache line per element (cumsum over dim 0 of 1024^2
    // float32: 6 ms). Each column's running value sees the same operations
    // in the same order: the same bits.
    constexpr int64_t kCols = 64;
    const int64_t cols = L.kept[0].size;
    const auto chunk = [&](int64_t j0, auto width) {
      constexpr int64_t W = decltype(width)::value;
      A acc[W];
      for (int64_t j = 0; j < W; ++j) acc[j] = IsSum ? A(0) : A(1);
      for (int64_t i = 0; i < n; ++i) {
        const S* p = in + i * si + j0;
        S* q = o + i * so + j0;
        for (int64_t j = 0; j < W; ++j) {
          if constexpr (IsSum) {
            acc[j] += load(p[j]);
          } else {
            acc[j] *= load(p[j]);
          }
          q[j] = store(acc[j]);
        }
      }
    };
    for_column_chunks<kCols>(cols, n, chunk);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, n));
  parallel_for(L.n_out, grain, [&](int64_t b, int64_t e) {
    int64_t line = b;
    // Dense lines kLines at a time, interleaved: one line's running value is a
    // chain of dependent adds (cumsum along dim 1 of 1024^2 float32 ran at the
    // add's latency, as fast as PyTorch's); kLines chains overlap. Each line
    // sees its own operations in its own order: the same bits.
    constexpr int kLines = 8;
    if (si == 1 && so == 1) {
      for (; e - line >= kLines; line += kLines) {
        const S* p[kLines];
        S* q[kLines];
        A acc[kLines];
        for (int r = 0; r < kLines; ++r) {
          int64_t io, oo;
          offsets_of(line + r, L.kept, L.nk, io, oo);
          p[r] = in + io;
          q[r] = o + oo;
          acc[r] = IsSum ? A(0) : A(1);
        }
        for (int64_t i = 0; i < n; ++i) {
          for (int r = 0; r < kLines; ++r) {
            if constexpr (IsSum) {
              acc[r] += load(p[r][i]);
            } else {
              acc[r] *= load(p[r][i]);
            }
            q[r][i] = store(acc[r]);
          }
        }
      }
    }
    for (; line < e; ++line) {
      int64_t io, oo;
      offsets_of(line, L.kept, L.nk, io, oo);
      const S* p = in + io;
      S* q = o + oo;
      A acc = IsSum ? A(0) : A(1);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (IsSum) {
          acc += load(p[i * si]);
        } else {
          acc *= load(p[i * si]);
        }
        q[i * so] = store(acc);
      }
    }
  });
}

}  // namespace reduce_detail

// cumsum / cumprod: (self, dim, dtype); self and out have call.dtype and one shape.
template <bool IsSum>
void scan_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const TsrValue& dim = arg(call, 1, "dim");
  if (dim.tag != TSR_VALUE_INT) invalid("argument 'dim' must be an int, got " + tag_text(dim.tag));
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(self, "self", out, "out");
  const int64_t d = dim.as.i;
  if (!(self.ndim == 0 ? d == 0 : (d >= 0 && d < self.ndim))) {
    invalid("argument 'dim' " + std::to_string(d) + " is out of range for " + std::to_string(self.ndim) + " dims");
  }
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_detail::scan_typed<T, IsSum>(self, out, d);
  });
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
