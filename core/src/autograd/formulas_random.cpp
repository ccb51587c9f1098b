// Derivative formulas of the random ops (core/src/ops/random.cpp).
#include "formulas.h"

namespace tessera::autograd {

void define_random_derivatives() {}

}  // namespace tessera::autograd
