// Derivative formulas of the view ops, copies, fills and factories (core/src/ops/views.cpp, copy.cpp).
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;
Tensor reshape_to_input(C& c, int arg = 0) { return c.grad().reshape(c.input_sizes(arg)); }
}  // namespace

void define_view_derivatives() {
  not_differentiable({"arange", "empty"});
  define_derivative("clone", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad()}; }});
  define_derivative("contiguous", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad()}; }});
  // copy_(self, src): self is overwritten, so only src gets a gradient (cast
  // and moved back to src's dtype and device by the engine).
  define_derivative("copy_", {{0, 1}, {}, {}, [](C& c) -> variable_list { return {Tensor(), c.grad()}; }});
  define_derivative("fill_", {{0}, {}, {}, [](C&) -> variable_list { return {Tensor()}; }});
  define_derivative("view", {{0}, {}, {}, [](C& c) -> variable_list { return {reshape_to_input(c)}; }});
  define_derivative("reshape", {{0}, {}, {}, [](C& c) -> variable_list { return {reshape_to_input(c)}; }});
  define_derivative("squeeze", {{0}, {}, {}, [](C& c) -> variable_list { return {reshape_to_input(c)}; }});
  define_derivative("squeeze.dim", {{0}, {}, {}, [](C& c) -> variable_list { return {reshape_to_input(c)}; }});
  define_derivative("unsqueeze", {{0}, {}, {}, [](C& c) -> variable_list { return {reshape_to_input(c)}; }});
  define_derivative("transpose", {{0}, {}, {}, [](C& c) -> variable_list {
                      return {c.grad().transpose(c.int_arg(1), c.int_arg(2))};
                    }});
  define_derivative("permute", {{0}, {}, {}, [](C& c) -> variable_list {
                      IntArrayRef dims = c.int_list(1);
                      const int64_t n = static_cast<int64_t>(dims.size());
                      DimVector inv(dims.size());
                      for (int64_t i = 0; i < n; ++i) inv[static_cast<size_t>((dims[i] % n + n) % n)] = i;
                      return {c.grad().permute(IntArrayRef(inv.data(), inv.size()))};
                    }});
  // The engine sums a broadcast gradient down to the input's shape.
  define_derivative("expand", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad()}; }});
}

}  // namespace tessera::autograd
