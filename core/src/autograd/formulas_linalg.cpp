// Derivative formulas of the linear algebra ops (core/src/ops/linalg.cpp).
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;
}  // namespace

void define_linalg_derivatives() {
  define_derivative("mm", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                      const Tensor g = c.grad();
                      return {c.needs_grad(0) ? g.mm(c.saved(1).t()) : Tensor(),
                              c.needs_grad(1) ? c.saved(0).t().mm(g) : Tensor()};
                    }});
}

}  // namespace tessera::autograd
