// Derivative formulas of the shape ops (core/src/ops/shape.cpp). Each gradient
// is the inverse rearrangement of the incoming one, in dispatched ops only.
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

int64_t wrap(int64_t dim, int64_t n) { return dim < 0 ? dim + n : dim; }

// cat's legacy rule: a 1-D tensor of size 0 takes no part (and no gradient).
bool skipped_in_cat(IntArrayRef s) { return s.size() == 1 && s[0] == 0; }

variable_list cat_backward(C& c) {
  const Tensor g = c.grad();
  const int n = c.list_size(0);
  variable_list out(static_cast<size_t>(n));
  const int64_t dim = wrap(c.int_arg(1), g.dim());
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const IntArrayRef s = c.input_sizes(0, i);
    if (skipped_in_cat(s)) continue;
    const int64_t len = s[static_cast<size_t>(dim)];
    if (c.needs_grad(i)) out[static_cast<size_t>(i)] = g.narrow(dim, offset, len);
    offset += len;
  }
  return out;
}

variable_list stack_backward(C& c) {
  const Tensor g = c.grad();
  const int n = c.list_size(0);
  variable_list out(static_cast<size_t>(n));
  const int64_t dim = wrap(c.int_arg(1), g.dim());
  for (int i = 0; i < n; ++i)
    if (c.needs_grad(i)) out[static_cast<size_t>(i)] = g.select(dim, i);
  return out;
}

// repeat (and tile): the output is [r0*s0, r1*s1, ...]; seen as (r0, s0, r1,
// s1, ...) the gradient sums over the r axes, leaving the (left-padded) input.
Tensor repeat_backward(const Tensor& g, IntArrayRef in, IntArrayRef repeats) {
  const size_t nr = repeats.size(), nd = in.size();
  DimVector split, sum_dims;
  for (size_t i = 0; i < nr; ++i) {
    split.push_back(repeats[i]);
    split.push_back(i + nd >= nr ? in[i + nd - nr] : 1);
    sum_dims.push_back(static_cast<int64_t>(2 * i));
  }
  if (nr == 0) return g.reshape(in);
  return g.reshape(split).sum(IntArrayRef(sum_dims.data(), sum_dims.size())).reshape(in);
}

DimVector tile_reps(IntArrayRef dims, size_t ndim) {
  DimVector reps(dims.begin(), dims.end());
  while (reps.size() < ndim) reps.insert(reps.begin(), 1);
  return reps;
}
}  // namespace

void define_shape_derivatives() {
  define_derivative("cat", {{0}, {}, {}, cat_backward});
  define_derivative("_cat", {{0}, {}, {}, cat_backward});
  define_derivative("stack", {{0}, {}, {}, stack_backward});
  define_derivative("flip", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad().flip(c.int_list(1))}; }});
  define_derivative("roll", {{0}, {}, {}, [](C& c) -> variable_list {
                      const IntArrayRef shifts = c.int_list(1);
                      DimVector back;
                      for (int64_t s : shifts) back.push_back(-s);
                      return {c.grad().roll(IntArrayRef(back.data(), back.size()), c.int_list(2))};
                    }});
  define_derivative("repeat", {{0}, {}, {}, [](C& c) -> variable_list {
                      return {repeat_backward(c.grad(), c.input_sizes(0), c.int_list(1))};
                    }});
  define_derivative("tile", {{0}, {}, {}, [](C& c) -> variable_list {
                      const IntArrayRef in = c.input_sizes(0);
                      const DimVector reps = tile_reps(c.int_list(1), in.size());
                      return {repeat_backward(c.grad(), in, IntArrayRef(reps.data(), reps.size()))};
                    }});
  // Constant pad: the padding is constant and the crop takes no part, so the
  // gradient is the opposite pad (cropping what was padded, zero-filling what
  // was cropped).
  define_derivative("pad", {{0}, {}, {}, [](C& c) -> variable_list {
                      DimVector back;
                      for (int64_t p : c.int_list(1)) back.push_back(-p);
                      return {c.grad().pad(IntArrayRef(back.data(), back.size()))};
                    }});
  for (const char* op : {"tril", "tril_"})
    define_derivative(op, {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad().tril(c.int_arg(1))}; }});
  for (const char* op : {"triu", "triu_"})
    define_derivative(op, {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad().triu(c.int_arg(1))}; }});
}

}  // namespace tessera::autograd
