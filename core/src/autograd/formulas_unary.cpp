// Derivative formulas of the unary pointwise ops (core/src/ops/unary.cpp).
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;
}  // namespace

void define_unary_derivatives() {
  for (const char* op : {"neg", "neg_"})
    define_derivative(op, {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad().neg()}; }});
  for (const char* op : {"exp", "exp_"})
    define_derivative(op, {{0}, {}, {0}, [](C& c) -> variable_list { return {c.grad() * c.result()}; }});
  for (const char* op : {"relu", "relu_"})
    define_derivative(op, {{0}, {}, {0}, [](C& c) -> variable_list {
                        return {c.grad() * c.result().gt(0).to(c.grad().scalar_type())};
                      }});
}

}  // namespace tessera::autograd
