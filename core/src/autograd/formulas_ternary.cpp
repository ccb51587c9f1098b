// Derivative formulas of the ternary ops (core/src/ops/ternary.cpp).
#include "formulas.h"

namespace tessera::autograd {

void define_ternary_derivatives() {}

}  // namespace tessera::autograd
