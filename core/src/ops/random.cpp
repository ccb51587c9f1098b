// Random ops, driven by the counter-based Philox generator.
#include "ops.h"

namespace tessera::ops {

void declare_random_ops() {}

}  // namespace tessera::ops
