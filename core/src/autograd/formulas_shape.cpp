// Derivative formulas of the shape ops (core/src/ops/shape.cpp).
#include "formulas.h"

namespace tessera::autograd {

void define_shape_derivatives() {}

}  // namespace tessera::autograd
