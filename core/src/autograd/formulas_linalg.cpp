// Derivative formulas of the linear algebra ops (core/src/ops/linalg.cpp).
// matmul, dot and outer are composites whose kernels call only dispatched ops
// (views, mm, bmm, mul), so autograd records those: every broadcast and 1-D
// case of matmul is differentiated by the ops it actually ran.
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// out = beta * self + alpha * mat1 @ mat2 (self broadcast; the engine sums its gradient down).
Tensor maybe_mul(const Tensor& t, double s) { return s == 1.0 ? t : t * s; }
// mat1^T @ g in the layout of mat2: when mat2 is a transposed contiguous matrix
// (a Linear weight's .t()), compute (g^T @ mat1)^T, so that the gradient reaching
// the weight is contiguous (an optimizer then updates it in one linear pass).
Tensor mat2_grad(const Tensor& mat1, const Tensor& mat2, const Tensor& g) {
  if (mat2.dim() == 2 && mat2.stride(0) == 1 && mat2.stride(1) == mat2.size(0) && mat2.size(0) > 1 &&
      mat2.size(1) > 1)
    return g.t().mm(mat1).t();
  return mat1.t().mm(g);
}
variable_list addmm_grad(C& c) {
  const Tensor g = c.grad();
  const double beta = c.scalar_arg(3).to_double();
  const double alpha = c.scalar_arg(4).to_double();
  return {c.needs_grad(0) ? maybe_mul(g, beta) : none(),
          c.needs_grad(1) ? maybe_mul(g.mm(c.saved(2).t()), alpha) : none(),
          c.needs_grad(2) ? maybe_mul(mat2_grad(c.saved(1), c.saved(2), g), alpha) : none()};
}
}  // namespace

void define_linalg_derivatives() {
  define_derivative("mm", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                      const Tensor g = c.grad();
                      return {c.needs_grad(0) ? g.mm(c.saved(1).t()) : none(),
                              c.needs_grad(1) ? mat2_grad(c.saved(0), c.saved(1), g) : none()};
                    }});
  define_derivative("bmm", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                      const Tensor g = c.grad();
                      return {c.needs_grad(0) ? g.bmm(c.saved(1).transpose(1, 2)) : none(),
                              c.needs_grad(1) ? c.saved(0).transpose(1, 2).bmm(g) : none()};
                    }});
  for (const char* op : {"addmm", "addmm_"}) define_derivative(op, {{0, 1, 2}, {1, 2}, {}, &addmm_grad});
  define_decomposed("matmul");
  define_decomposed("dot");
  define_decomposed("outer");
}

}  // namespace tessera::autograd
