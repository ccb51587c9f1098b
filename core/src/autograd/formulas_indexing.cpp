// Derivative formulas of the indexing ops (core/src/ops/indexing.cpp).
#include "formulas.h"

namespace tessera::autograd {

void define_indexing_derivatives() {}

}  // namespace tessera::autograd
