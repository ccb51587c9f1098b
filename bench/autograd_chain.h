// The op chain the autograd benchmarks record: a repeating mul, add, mul+exp,
// sub pattern over small tensors, so the engine's own cost dominates.
#pragma once

#include <tessera/tessera.h>

#include <cstdint>

namespace tessera::bench {

/// Applies `ops` ops to x (a, b: tensors broadcastable with x) and returns the
/// result; with x.requires_grad() it records a chain of about `ops` nodes.
inline Tensor run_chain(const Tensor& x, const Tensor& a, const Tensor& b, int64_t ops) {
  Tensor y = x;
  for (int64_t i = 0; i < ops; ++i) {
    switch (i % 4) {
      case 0: y = y * a; break;
      case 1: y = y + b; break;
      case 2: y = (y * a).exp(); break;  // two ops: keeps values bounded
      default: y = y - b; break;
    }
  }
  return y;
}

}  // namespace tessera::bench
