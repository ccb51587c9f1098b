// Derivative formulas of the reductions and scans (core/src/ops/reduction.cpp).
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// grad of a reduction over `dims` (none = all) without keepdim, reshaped so
// that it broadcasts against the input.
Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef input_sizes, const C& c, int dim_arg, int keepdim_arg) {
  const int64_t n = static_cast<int64_t>(input_sizes.size());
  if (c.is_none(dim_arg) || c.bool_arg(keepdim_arg) || n == 0) {
    if (c.is_none(dim_arg) || n == 0) return g.reshape(DimVector(size_t(n), 1));
    return g;
  }
  IntArrayRef dims = c.int_list(dim_arg);
  if (dims.empty()) return g.reshape(DimVector(size_t(n), 1));  // [] means all dims
  std::vector<bool> reduced(size_t(n), false);
  for (int64_t d : dims) reduced[static_cast<size_t>((d % n + n) % n)] = true;
  DimVector shape;
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) shape.push_back(reduced[size_t(i)] ? 1 : g.size(k++));
  return g.reshape(shape);
}
}  // namespace

Tensor reduction_grad_to_input(const Tensor& g, const C& c, int dim_arg, int keepdim_arg) {
  return unsqueeze_reduced(g, c.input_sizes(0), c, dim_arg, keepdim_arg).expand(c.input_sizes(0));
}

void define_reduction_derivatives() {
  define_derivative("sum", {{0}, {}, {}, [](C& c) -> variable_list {
                      return {reduction_grad_to_input(c.grad(), c, 1, 2)};
                    }});
}

}  // namespace tessera::autograd
