// Derivative formulas of the random ops (core/src/ops/random.cpp).
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// dropout's mask depends only on (seed, offset, shape): element i uses counter
// offset + i. So dropout of the gradient with the same stream applies the same
// mask and scale, and is itself differentiable (double backward).
variable_list dropout_backward(C& c) {
  const Tensor g = c.grad();
  IValue args[5] = {IValue::of(g), IValue::of(c.double_arg(1)), IValue::of(c.bool_arg(2)), IValue::of(c.int_arg(3)),
                    IValue::of(c.int_arg(4))};
  Tensor out;
  Frame frame{args, 5, &out, 1};
  Dispatcher::instance().call(Dispatcher::instance().get("dropout"), frame);
  return {out};
}
}  // namespace

void define_random_derivatives() {
  not_differentiable({"randperm"});
  // In-place samplers overwrite self: as in PyTorch, no gradient flows through
  // the old value (nor into bernoulli's p); the result keeps self's history.
  for (const char* op : {"uniform_", "normal_", "random_", "bernoulli_.float"})
    define_derivative(op, {{0}, {}, {}, [](C&) -> variable_list { return {Tensor()}; }});
  define_derivative("bernoulli_.Tensor", {{0, 1}, {}, {}, [](C&) -> variable_list { return {Tensor(), Tensor()}; }});
  define_derivative("dropout", {{0}, {}, {}, &dropout_backward});
}

}  // namespace tessera::autograd
