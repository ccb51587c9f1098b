// Derivative formulas of the binary pointwise ops (core/src/ops/binary.cpp).
// Gradients may keep the broadcast shape: the engine sums them down. Number
// operands arrive as wrapped-number tensors that never require grad, so
// pow(x, 3) and pow(2, x) use the tensor-tensor formulas.
#include "formulas.h"

#include <string>

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// maximum/minimum: the gradient goes to the selected operand, split in half
// on ties (as PyTorch). `other_wins` marks where the other operand is selected.
Tensor select_grad(const Tensor& g, const Tensor& tie, const Tensor& other_wins) {
  return where(tie, g * 0.5, where(other_wins, 0, g));
}
}  // namespace

void define_binary_derivatives() {
  with_inplace("add", {{0, 1}, {}, {}, [](C& c) -> variable_list {
                 const Scalar alpha = c.scalar_arg(2);
                 return {c.grad(), c.needs_grad(1) ? c.grad() * alpha : none()};
               }});
  with_inplace("sub", {{0, 1}, {}, {}, [](C& c) -> variable_list {
                 const Scalar alpha = c.scalar_arg(2);
                 return {c.grad(), c.needs_grad(1) ? c.grad() * (-alpha.to_double()) : none()};
               }});
  with_inplace("mul", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 return {c.needs_grad(0) ? c.grad() * c.saved(1) : none(),
                         c.needs_grad(1) ? c.grad() * c.saved(0) : none()};
               }});
  with_inplace("div", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 if (!c.is_none(2)) {  // rounding: piecewise constant, zero gradient (as PyTorch)
                   const Tensor z = zeros_like(c.grad());
                   return {c.needs_grad(0) ? z : none(), c.needs_grad(1) ? z : none()};
                 }
                 const Tensor b = c.saved(1);
                 return {c.needs_grad(0) ? c.grad() / b : none(),
                         c.needs_grad(1) ? -c.grad() * c.saved(0) / (b * b) : none()};
               }});
  // remainder(a, b) = a - floor(a / b) b; fmod(a, b) = a - trunc(a / b) b.
  with_inplace("remainder", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 return {c.grad(), c.needs_grad(1) ? -c.grad() * c.saved(0).div(c.saved(1), "floor") : none()};
               }});
  with_inplace("fmod", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 return {c.grad(), c.needs_grad(1) ? -c.grad() * c.saved(0).div(c.saved(1), "trunc") : none()};
               }});
  // pow(a, b): d/da = b a^(b-1), zero where b == 0 (so pow(0, 0) has no NaN);
  // d/db = a^b log(a), zero where a == 0 and b >= 0 (the limit); NaN for a < 0
  // as the real log (PyTorch's conventions).
  with_inplace("pow", {{0, 1}, {0, 1}, {0}, [](C& c) -> variable_list {
                 const Tensor g = c.grad();
                 const Tensor a = c.saved(0);
                 const Tensor b = c.saved(1);
                 Tensor ga, gb;
                 if (c.needs_grad(0)) ga = where(b.eq(0), 0, g * b * a.pow(b - 1));
                 if (c.needs_grad(1)) {
                   // An integer base (pow(2, x)) is converted first: log of an integer tensor would be float32.
                   const Tensor base = a.scalar_type() == g.scalar_type() ? a : a.to(g.scalar_type());
                   const Tensor limit = base.eq(0).logical_and(b.ge(0));
                   // log(1) in the masked places keeps -inf (and NaN in double backward) out.
                   gb = where(limit, 0, g * c.result() * where(limit, 1, base).log());
                 }
                 return {ga, gb};
               }});
  with_inplace("atan2", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 const Tensor a = c.saved(0);
                 const Tensor b = c.saved(1);
                 const Tensor g = c.grad() / (a.square() + b.square());
                 return {c.needs_grad(0) ? g * b : none(), c.needs_grad(1) ? g * a.neg() : none()};
               }});
  with_inplace("maximum", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 const Tensor a = c.saved(0);
                 const Tensor b = c.saved(1);
                 const Tensor tie = a.eq(b);
                 return {c.needs_grad(0) ? select_grad(c.grad(), tie, a.lt(b)) : none(),
                         c.needs_grad(1) ? select_grad(c.grad(), tie, a.gt(b)) : none()};
               }});
  with_inplace("minimum", {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                 const Tensor a = c.saved(0);
                 const Tensor b = c.saved(1);
                 const Tensor tie = a.eq(b);
                 return {c.needs_grad(0) ? select_grad(c.grad(), tie, a.gt(b)) : none(),
                         c.needs_grad(1) ? select_grad(c.grad(), tie, a.lt(b)) : none()};
               }});

  // Bool or integer results.
  for (const char* fn : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                         "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}) {
    define_not_differentiable(fn);
    define_not_differentiable(std::string(fn) + "_");
  }
}

}  // namespace tessera::autograd
