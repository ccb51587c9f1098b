// Ternary pointwise ops: where, clamp, lerp, addcmul, addcdiv.
#include "ops.h"

namespace tessera::ops {

void declare_ternary_ops() {}

}  // namespace tessera::ops
