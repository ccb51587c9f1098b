// Derivative formulas of the indexing ops (core/src/ops/indexing.cpp). Reading
// ops (gather, index_select, take, masked_select, embedding) send the gradient
// back with the matching accumulating write (scatter_add, index_add), and
// those with the matching read, so double backward stays within this family.
#include "formulas.h"

#include <algorithm>

namespace tessera::autograd {
namespace {
using C = BackwardContext;

TensorOptions like(const Tensor& g) { return TensorOptions(g.scalar_type()).device(g.device()); }

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// A gradient of index's shape, made to src's shape: src may be larger than
// index (only its leading corner is read, the rest gets zeros) or differ only
// by being 0-d versus one element.
Tensor fit_to(const Tensor& g, IntArrayRef src) {
  if (g.sizes().equals(src)) return g;
  if (static_cast<size_t>(g.dim()) != src.size()) return g.reshape(src);
  DimVector p;
  for (int64_t d = g.dim() - 1; d >= 0; --d) {
    p.push_back(0);
    p.push_back(src[static_cast<size_t>(d)] - g.size(d));
  }
  return g.pad(IntArrayRef(p.data(), p.size()));
}

DimVector broadcast(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Gradient for scatter_/scatter_add_'s src: the gradient at the written positions.
Tensor src_grad(C& c) { return fit_to(c.grad().gather(c.int_arg(1), c.saved(2)), c.input_sizes(3)); }

// masked_fill.Tensor's value: the sum of the gradient where the mask is set.
Tensor value_grad(C& c) { return c.grad().masked_fill(c.saved(1).logical_not(), 0.0).sum(); }

Tensor take_backward(C& c) {
  const Tensor g = c.grad();
  const IntArrayRef in = c.input_sizes(0);
  const int64_t n = numel_of(in);
  Tensor index = c.saved(1).reshape({-1});
  index = (index + n).where(index.lt(0), index);  // take counts negative indices from the end
  return zeros({n}, like(g)).index_add_(0, index, g.reshape({-1})).view(in);
}

// masked_select reads the broadcast self in row-major order at the mask's set
// positions: the gradient goes back to those flat positions (the engine then
// sums a broadcast self's gradient down).
Tensor masked_select_backward(C& c) {
  const Tensor g = c.grad();
  const Tensor mask = c.saved(1);
  const DimVector shape = broadcast(c.input_sizes(0), mask.sizes());
  const IntArrayRef s(shape.data(), shape.size());
  const int64_t n = numel_of(s);
  const Tensor pos = arange(n, TensorOptions(kLong).device(g.device())).view(s).masked_select(mask);
  return zeros({n}, like(g)).index_add_(0, pos, g).view(s);
}

Tensor embedding_backward(C& c) {
  Tensor g = c.grad();
  const Tensor indices = c.saved(1);
  const IntArrayRef w = c.input_sizes(0);
  if (!c.is_none(2)) {  // the padding row gets no gradient
    int64_t p = c.int_arg(2);
    if (p < 0) p += w[0];
    g = g.masked_fill(indices.eq(p).unsqueeze(-1), 0.0);
  }
  return zeros(w, like(g)).index_add_(0, indices.reshape({-1}), g.reshape({-1, w[1]}));
}
}  // namespace

void define_indexing_derivatives() {
  not_differentiable({"nonzero", "one_hot"});
  define_derivative("index_select", {{0}, {2}, {}, [](C& c) -> variable_list {
                      const Tensor g = c.grad();
                      return {zeros(c.input_sizes(0), like(g)).index_add_(c.int_arg(1), c.saved(2), g)};
                    }});
  define_derivative("gather", {{0}, {2}, {}, [](C& c) -> variable_list {
                      const Tensor g = c.grad();
                      return {zeros(c.input_sizes(0), like(g)).scatter_add_(c.int_arg(1), c.saved(2), g)};
                    }});
  define_derivative("take", {{0}, {1}, {}, [](C& c) -> variable_list { return {take_backward(c)}; }});
  // scatter: the overwritten positions of self get no gradient; src gets the
  // gradient where it was written (with duplicated indices the winner is
  // unspecified, so src's gradient is too, as in PyTorch).
  for (const char* op : {"scatter", "scatter_"})
    define_derivative(op, {{0, 3}, {2}, {}, [](C& c) -> variable_list {
                        return {c.needs_grad(0) ? c.grad().scatter(c.int_arg(1), c.saved(2), 0.0) : none(),
                                c.needs_grad(1) ? src_grad(c) : none()};
                      }});
  for (const char* op : {"scatter.value", "scatter_.value"})
    define_derivative(op, {{0}, {2}, {}, [](C& c) -> variable_list {
                        return {c.grad().scatter(c.int_arg(1), c.saved(2), 0.0)};
                      }});
  for (const char* op : {"scatter_add", "scatter_add_"})
    define_derivative(op, {{0, 3}, {2}, {}, [](C& c) -> variable_list {
                        return {c.grad(), c.needs_grad(1) ? src_grad(c) : none()};
                      }});
  // _scatter(self, dim, index, src, add): scatter's or scatter_add's.
  define_derivative("_scatter", {{0, 3}, {2}, {}, [](C& c) -> variable_list {
                      const Tensor self_grad = c.bool_arg(4) ? c.grad() : c.grad().scatter(c.int_arg(1), c.saved(2), 0.0);
                      return {c.needs_grad(0) ? self_grad : none(), c.needs_grad(1) ? src_grad(c) : none()};
                    }});
  for (const char* op : {"index_add", "index_add_"})
    define_derivative(op, {{0, 3}, {2}, {}, [](C& c) -> variable_list {
                        if (!c.needs_grad(1)) return {c.grad(), none()};
                        const Scalar alpha = c.scalar_arg(4);
                        Tensor gs = c.grad().index_select(c.int_arg(1), c.saved(2));
                        if (alpha.to_double() != 1.0) gs = gs * alpha;
                        return {c.grad(), fit_to(gs, c.input_sizes(3))};
                      }});
  for (const char* op : {"masked_fill", "masked_fill_"})
    define_derivative(op, {{0}, {1}, {}, [](C& c) -> variable_list { return {c.grad().masked_fill(c.saved(1), 0.0)}; }});
  for (const char* op : {"masked_fill.Tensor", "masked_fill_.Tensor"})
    define_derivative(op, {{0, 2}, {1}, {}, [](C& c) -> variable_list {
                        return {c.needs_grad(0) ? c.grad().masked_fill(c.saved(1), 0.0) : none(),
                                c.needs_grad(1) ? value_grad(c) : none()};
                      }});
  define_derivative("masked_select", {{0}, {1}, {}, [](C& c) -> variable_list { return {masked_select_backward(c)}; }});
  define_derivative("embedding", {{0}, {1}, {}, [](C& c) -> variable_list { return {embedding_backward(c)}; }});
}

}  // namespace tessera::autograd
