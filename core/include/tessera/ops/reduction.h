// tessera/ops/reduction.h — reductions and scans (mean, prod, max, min, argmax, var, std, norm, logsumexp, any, all, cumsum, ...): free functions.
// Included by tessera/tensor.h; the method forms are in reduction_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
