// The float32 add/sub/mul loop for the common case — every operand one dense
// array — unrolled, which keeps more loads in flight than the generic
// one-vector-per-iteration loop on memory-bound sizes.
#pragma once

#include "common.hpp"
#include "parallel.hpp"

#include <cstdint>

namespace tessera::cpu {

enum class DenseOp { Add, Sub, Mul };

/// out = self op other for three dense float32 arrays of out's shape (the
/// caller checked: check_binary_shapes); out may be self or other, as each
/// element is read before it is written. Same results as the generic loop (one
/// IEEE operation per element).
template <DenseOp K>
void dense_f32(DLTensor& out, const DLTensor& self, const DLTensor& other, int64_t grain) {
  const int64_t n = sdk::numel(out);
  float* o = reinterpret_cast<float*>(data_ptr(out));
  const float* x = reinterpret_cast<const float*>(data_ptr(self));
  const float* y = reinterpret_cast<const float*>(data_ptr(other));
  const auto chunk = [o, x, y](int64_t begin, int64_t end) {
#pragma GCC unroll 4
    for (int64_t i = begin; i < end; ++i) {
      if constexpr (K == DenseOp::Add) o[i] = x[i] + y[i];
      if constexpr (K == DenseOp::Sub) o[i] = x[i] - y[i];
      if constexpr (K == DenseOp::Mul) o[i] = x[i] * y[i];
    }
  };
  if (n <= grain) {
    chunk(0, n);
  } else {
    parallel_for(n, grain, chunk);
  }
}

}  // namespace tessera::cpu
