// Derivative formulas of the ternary ops (core/src/ops/ternary.cpp). clamp,
// clamp_min and clamp_max have formulas of their own rather than recording the
// maximum/minimum they are made of: at a bound, clamp passes the whole
// gradient to self (PyTorch's convention), where maximum would split it.
#include "formulas.h"

#include <string>

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// The saved optional tensor argument `arg`, or undefined for None.
Tensor saved_opt(const C& c, int arg) { return c.is_none(arg) ? Tensor() : c.saved(arg); }

// clamp(self, min, max) = min(max(self, lo), hi): self gets the gradient where
// lo <= self <= hi; a bound gets it where it is the result (when lo > hi the
// result is hi everywhere).
variable_list clamp_grad(C& c) {
  const Tensor g = c.grad();
  const Tensor x = c.saved(0);
  const Tensor lo = saved_opt(c, 1);
  const Tensor hi = saved_opt(c, 2);
  Tensor gx, glo, ghi;
  if (c.needs_grad(0)) {
    Tensor in;
    if (lo.defined()) in = x.ge(lo);
    if (hi.defined()) in = in.defined() ? in.logical_and(x.le(hi)) : x.le(hi);
    gx = in.defined() ? where(in, g, 0) : g;
  }
  if (c.needs_grad(1) && lo.defined()) {
    Tensor sel = x.lt(lo);
    if (hi.defined()) sel = sel.logical_and(lo.lt(hi));
    glo = where(sel, g, 0);
  }
  if (c.needs_grad(2) && hi.defined()) {
    Tensor sel = x.gt(hi);
    if (lo.defined()) sel = sel.logical_or(hi.lt(lo));
    ghi = where(sel, g, 0);
  }
  return {gx, glo, ghi};
}
}  // namespace

void define_ternary_derivatives() {
  define_derivative("where", {{1, 2}, {0}, {}, [](C& c) -> variable_list {
                      const Tensor cond = c.saved(0);
                      return {c.needs_grad(0) ? where(cond, c.grad(), 0) : none(),
                              c.needs_grad(1) ? where(cond, 0, c.grad()) : none()};
                    }});
  // where_(self, condition, other): self keeps its values where condition holds.
  define_derivative("where_", {{0, 2}, {1}, {}, [](C& c) -> variable_list {
                      const Tensor cond = c.saved(1);
                      return {c.needs_grad(0) ? where(cond, c.grad(), 0) : none(),
                              c.needs_grad(1) ? where(cond, 0, c.grad()) : none()};
                    }});
  // lerp = self + w (end - self).
  with_inplace("lerp", {{0, 1, 2}, {0, 1, 2}, {}, [](C& c) -> variable_list {
                 const Tensor g = c.grad();
                 const Tensor w = c.saved(2);
                 return {c.needs_grad(0) ? g * (1.0 - w) : none(), c.needs_grad(1) ? g * w : none(),
                         c.needs_grad(2) ? g * (c.saved(1) - c.saved(0)) : none()};
               }});
  with_inplace("addcmul", {{0, 1, 2}, {1, 2}, {}, [](C& c) -> variable_list {
                 const Tensor g = c.grad();
                 const Scalar v = c.scalar_arg(3);
                 return {g, c.needs_grad(1) ? g * c.saved(2) * v : none(),
                         c.needs_grad(2) ? g * c.saved(1) * v : none()};
               }});
  with_inplace("addcdiv", {{0, 1, 2}, {1, 2}, {}, [](C& c) -> variable_list {
                 const Tensor g = c.grad();
                 const Scalar v = c.scalar_arg(3);
                 const Tensor t2 = c.saved(2);
                 return {g, c.needs_grad(1) ? g * v / t2 : none(),
                         c.needs_grad(2) ? -g * v * c.saved(1) / (t2 * t2) : none()};
               }});
  with_inplace("clamp", {{0, 1, 2}, {0, 1, 2}, {}, &clamp_grad});
  with_inplace("_clamp", {{0, 1, 2}, {0, 1, 2}, {}, &clamp_grad});
  // clamp_min(self, min): self where self >= min, min where self < min.
  with_inplace("clamp_min", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 const Tensor x = c.saved(0);
                 const Tensor lo = c.saved(1);
                 return {c.needs_grad(0) ? where(x.ge(lo), c.grad(), 0) : none(),
                         c.needs_grad(1) ? where(x.lt(lo), c.grad(), 0) : none()};
               }});
  with_inplace("clamp_max", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 const Tensor x = c.saved(0);
                 const Tensor hi = c.saved(1);
                 return {c.needs_grad(0) ? where(x.le(hi), c.grad(), 0) : none(),
                         c.needs_grad(1) ? where(x.gt(hi), c.grad(), 0) : none()};
               }});
}

}  // namespace tessera::autograd
