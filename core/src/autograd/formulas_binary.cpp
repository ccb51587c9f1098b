// Derivative formulas of the binary pointwise ops (core/src/ops/binary.cpp).
// Gradients may keep the broadcast shape: the engine sums them down.
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;
Tensor none() { return Tensor(); }
}  // namespace

void define_binary_derivatives() {
  for (const char* op : {"add", "add_"})
    define_derivative(op, {{0, 1}, {}, {}, [](C& c) -> variable_list {
                        const Scalar alpha = c.scalar_arg(2);
                        return {c.grad(), c.needs_grad(1) ? c.grad() * alpha : none()};
                      }});
  for (const char* op : {"sub", "sub_"})
    define_derivative(op, {{0, 1}, {}, {}, [](C& c) -> variable_list {
                        const Scalar alpha = c.scalar_arg(2);
                        return {c.grad(), c.needs_grad(1) ? c.grad() * (-alpha.to_double()) : none()};
                      }});
  for (const char* op : {"mul", "mul_"})
    define_derivative(op, {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                        return {c.needs_grad(0) ? c.grad() * c.saved(1) : none(),
                                c.needs_grad(1) ? c.grad() * c.saved(0) : none()};
                      }});
  for (const char* op : {"div", "div_"})
    define_derivative(op, {{0, 1}, {0, 1}, {}, [](C& c) -> variable_list {
                        if (!c.is_none(2)) return {none(), none()};  // rounding: piecewise constant
                        const Tensor b = c.saved(1);
                        return {c.needs_grad(0) ? c.grad() / b : none(),
                                c.needs_grad(1) ? -c.grad() * c.saved(0) / (b * b) : none()};
                      }});
}

}  // namespace tessera::autograd
