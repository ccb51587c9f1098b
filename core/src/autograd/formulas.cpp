#include "formulas.h"

#include "rules.h"

#include <string>

namespace tessera::autograd {

void not_differentiable(std::initializer_list<const char*> ops) {
  for (const char* op : ops) define_not_differentiable(op);
}

void with_inplace(const char* fn, const Derivative& d) {
  define_derivative(fn, d);
  define_derivative(std::string(fn) + "_", d);
}

void define_all_derivatives() {
  define_view_derivatives();
  define_unary_derivatives();
  define_binary_derivatives();
  define_ternary_derivatives();
  define_reduction_derivatives();
  define_linalg_derivatives();
  define_shape_derivatives();
  define_indexing_derivatives();
  define_random_derivatives();
  define_nn_derivatives();
}

}  // namespace tessera::autograd
