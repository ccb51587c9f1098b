// Derivative formulas of the nn ops (core/src/ops/nn.cpp).
#include "formulas.h"

namespace tessera::autograd {

void define_nn_derivatives() {}

}  // namespace tessera::autograd
