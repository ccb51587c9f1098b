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
/// Defines `fn` and its in-place variant `fn_` with the same rule (the engine
/// saves a copy of self for in-place ops whose formula reads it).
void with_inplace(const char* fn, const Derivative& d);
/// "No gradient" for a slot.
inline Tensor none() { return Tensor(); }

}  // namespace tessera::autograd
