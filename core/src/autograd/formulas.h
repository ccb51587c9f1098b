// Internal: the built-in ops' derivative formulas, one file per op family
// (formulas_<family>.cpp), mirroring core/src/ops/<family>.cpp.
#pragma once

#include <tessera/autograd.h>
#include <tessera/autograd/derivative.h>
#include <tessera/tensor.h>

namespace tessera::autograd {

void define_view_derivatives();       // views, copy_, fill_, clone, factories
void define_unary_derivatives();
void define_binary_derivatives();
void define_ternary_derivatives();
void define_reduction_derivatives();
void define_linalg_derivatives();
void define_shape_derivatives();
void define_indexing_derivatives();
void define_random_derivatives();
void define_nn_derivatives();

/// Marks each op named not differentiable.
void not_differentiable(std::initializer_list<const char*> ops);

}  // namespace tessera::autograd
