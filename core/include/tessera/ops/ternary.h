// tessera/ops/ternary.h — ternary pointwise ops (where, clamp, lerp, addcmul, addcdiv): free functions.
// Included by tessera/tensor.h; the method forms are in ternary_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
