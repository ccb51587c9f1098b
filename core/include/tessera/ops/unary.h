// tessera/ops/unary.h — unary pointwise ops (neg, abs, exp, log, sin, tanh, sigmoid, gelu, isnan, ...): free functions.
// Included by tessera/tensor.h; the method forms are in unary_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
