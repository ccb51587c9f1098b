// Derivative formulas of the reductions and scans (core/src/ops/reduction.cpp).
// The rules read the forward call's own arguments (dims may be negative, None
// or [] for "all", an int for int[1]). Masks (ties, zeros) are computed on
// detached tensors and enter as constant factors, so every formula is built
// from differentiable dispatched ops and works again under create_graph.
#include <algorithm>
#include <cmath>

#include "formulas.h"

namespace tessera::autograd {

Tensor reduction_grad_to_input(const Tensor& g, const BackwardContext& c, int dim_arg, int keepdim_arg);

namespace {
using C = BackwardContext;

int64_t wrap(int64_t d, int64_t n) {
  const int64_t m = n == 0 ? 1 : n;  // a 0-d tensor accepts dim 0 and -1
  return ((d % m) + m) % m;
}

// The input dims a reduction ran over (sorted); None or [] mean all.
DimVector reduced_dims(const C& c, int64_t n, int dim_arg) {
  DimVector out;
  if (c.is_none(dim_arg) || c.int_list(dim_arg).empty()) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (n == 0) return out;
  std::vector<bool> r(size_t(n), false);
  for (int64_t d : c.int_list(dim_arg)) r[size_t(wrap(d, n))] = true;
  for (int64_t i = 0; i < n; ++i)
    if (r[size_t(i)]) out.push_back(i);
  return out;
}

// An output of a reduction over `dims` (none = all) reshaped to keepdim form,
// so that it broadcasts against the input.
Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef input_sizes, const C& c, int dim_arg, int keepdim_arg) {
  if (c.bool_arg(keepdim_arg)) return g;
  const int64_t n = static_cast<int64_t>(input_sizes.size());
  const DimVector dims = reduced_dims(c, n, dim_arg);
  std::vector<bool> reduced(size_t(n), false);
  for (int64_t d : dims) reduced[size_t(d)] = true;
  DimVector shape;
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) shape.push_back(reduced[size_t(i)] ? 1 : g.size(k++));
  return g.reshape(shape);
}

// Number of elements each output of the reduction combined.
int64_t reduced_count(const C& c, int dim_arg) {
  const IntArrayRef sizes = c.input_sizes(0);
  int64_t count = 1;
  for (int64_t d : reduced_dims(c, static_cast<int64_t>(sizes.size()), dim_arg)) count *= sizes[size_t(d)];
  return count;
}

// A bool mask as a constant factor of the gradient's dtype.
Tensor as_factor(const Tensor& mask, ScalarType t) { return mask.to(t); }

// The saved input in the dtype the reduction computed in (dtype= may widen it).
Tensor saved_as(const C& c, int arg, ScalarType t) {
  const Tensor x = c.saved(arg);
  return x.scalar_type() == t ? x : x.to(t);
}

// amax/amin, norm(inf): the gradient is split evenly among the elements equal
// to the result (PyTorch's convention for ties); a NaN result came from the
// NaN elements, which share it (as PyTorch's max()).
Tensor tie_split(const Tensor& g_k, const Tensor& x, const Tensor& r_k, IntArrayRef dims) {
  const Tensor xd = x.detach(), rd = r_k.detach();
  const Tensor hit = as_factor(xd.eq(rd).logical_or(xd.isnan().logical_and(rd.isnan())), g_k.scalar_type());
  return g_k * hit / hit.sum(dims, true);
}

// sum_{j >= i} v_j along dim.
Tensor reverse_cumsum(const Tensor& v, int64_t dim) {
  const int64_t d[1] = {dim};
  return v.flip(IntArrayRef(d, 1)).cumsum(dim).flip(IntArrayRef(d, 1));
}

variable_list sum_grad(C& c) { return {reduction_grad_to_input(c.grad(), c, 1, 2)}; }

variable_list prod_grad(C& c) {
  const Tensor r = c.result();
  const Tensor x = saved_as(c, 0, r.scalar_type());
  const IntArrayRef sizes = c.input_sizes(0);
  const DimVector dims = reduced_dims(c, static_cast<int64_t>(sizes.size()), 1);
  const Tensor g_k = unsqueeze_reduced(c.grad(), sizes, c, 1, 2);
  const Tensor r_k = unsqueeze_reduced(r, sizes, c, 1, 2);
  // Exact with zeros, without dividing by one: g * prod / x where x != 0 (0 in
  // a group holding a zero); an element that is the only zero of its group
  // gets g * the product of the others. Zeros are replaced by a constant 1
  // (x * 0 + 1), so the double backward is exact too with one zero per group.
  const Tensor zero = as_factor(x.detach().eq(0), x.scalar_type());
  const Tensor nonzero = 1.0 - zero;
  const Tensor x_safe = x * nonzero + zero;
  const Tensor only_zero = zero * as_factor(zero.sum(dims, true).eq(1), x.scalar_type());
  return {g_k * r_k / x_safe * nonzero + g_k * x_safe.prod(dims, true) * only_zero};
}

variable_list amax_grad(C& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const Tensor g_k = unsqueeze_reduced(c.grad(), sizes, c, 1, 2);
  const Tensor r_k = unsqueeze_reduced(c.result(), sizes, c, 1, 2);
  return {tie_split(g_k, c.saved(0), r_k, reduced_dims(c, static_cast<int64_t>(sizes.size()), 1))};
}

// max.dim/min.dim: the gradient goes to the returned index only.
variable_list max_dim_grad(C& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t n = static_cast<int64_t>(sizes.size());
  Tensor g = c.grad(0);
  if (n == 0) return {g};
  const int64_t d = wrap(c.int_arg(1), n);
  Tensor idx = c.result(1);
  if (!c.bool_arg(2)) {
    g = g.unsqueeze(d);
    idx = idx.unsqueeze(d);
  }
  DimVector shape(size_t(n), 1);
  shape[size_t(d)] = sizes[size_t(d)];
  const Tensor pos = arange(Scalar(sizes[size_t(d)]), TensorOptions(kLong).device(idx.device())).reshape(shape);
  return {g * as_factor(pos.eq(idx), g.scalar_type())};
}

variable_list var_std_grad(C& c, bool is_std) {
  const IntArrayRef sizes = c.input_sizes(0);
  const Tensor x = c.saved(0);
  const DimVector dims = reduced_dims(c, static_cast<int64_t>(sizes.size()), 1);
  const double correction = c.is_none(2) ? 1.0 : c.double_arg(2);
  const double denom = std::max(0.0, static_cast<double>(reduced_count(c, 1)) - correction);  // as the forward
  Tensor g_k = unsqueeze_reduced(c.grad(), sizes, c, 1, 3);
  if (is_std) {
    // d std = d var / (2 std); a zero std gives a zero gradient (PyTorch's choice).
    const Tensor r_k = unsqueeze_reduced(c.result(), sizes, c, 1, 3);
    const Tensor zero = as_factor(r_k.detach().eq(0), r_k.scalar_type());
    g_k = g_k * (1.0 - zero) / (r_k + zero) * 0.5;
  }
  return {g_k * (x - x.mean(dims, true)) * (2.0 / denom)};
}

// norm: p = 2 (default), 1, 0, +-inf and any other p. A zero norm gives a zero
// gradient (PyTorch's subgradient); so does a zero element for p < 1.
variable_list norm_grad(C& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const Tensor x = c.saved(0);
  const double p = c.is_none(1) ? 2.0 : c.double_arg(1);
  const DimVector dims = reduced_dims(c, static_cast<int64_t>(sizes.size()), 2);
  const Tensor g_k = unsqueeze_reduced(c.grad(), sizes, c, 2, 3);
  const ScalarType t = x.scalar_type();
  if (p == 0) return {zeros_like(x)};  // the count of non-zeros is piecewise constant
  if (p == 1) return {g_k * x.detach().sign()};
  const Tensor r_k = unsqueeze_reduced(c.result(), sizes, c, 2, 3);
  if (std::isinf(p)) return {x.detach().sign() * tie_split(g_k, x.abs(), r_k, dims)};
  const Tensor r_zero = as_factor(r_k.detach().eq(0), t);
  const Tensor scale = g_k * (1.0 - r_zero) / (r_k + r_zero);  // g / norm, 0 where the norm is 0
  if (p == 2) return {x * scale};
  // d/dx_i = sign(x_i) |x_i|^(p-1) / norm^(p-1)
  const Tensor x_zero = as_factor(x.detach().eq(0), t);
  const Tensor a = x.abs() + x_zero;  // |x| with zeros lifted to 1, masked below
  const Tensor r_safe = r_k + r_zero;
  return {x.detach().sign() * (1.0 - x_zero) * a.pow(p - 1) * (g_k * (1.0 - r_zero) / r_safe.pow(p - 1))};
}

variable_list logsumexp_grad(C& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const Tensor r = c.result();
  const Tensor x = saved_as(c, 0, r.scalar_type());
  const Tensor g_k = unsqueeze_reduced(c.grad(), sizes, c, 1, 2);
  const Tensor r_k = unsqueeze_reduced(r, sizes, c, 1, 2);
  return {g_k * (x - r_k).exp()};
}

variable_list cumsum_grad(C& c) {
  const int64_t n = static_cast<int64_t>(c.input_sizes(0).size());
  if (n == 0) return {c.grad()};
  return {reverse_cumsum(c.grad(), wrap(c.int_arg(1), n))};
}

// cumprod, exact with zeros: before the first zero of a line the gradient is
// revcumsum(g * y) / x (no zero divides there); at the first zero it is
// revcumsum(g * y') with y' the cumprod with that zero replaced by 1; after
// it, 0 (every product through it includes the zero).
variable_list cumprod_grad(C& c) {
  const int64_t n = static_cast<int64_t>(c.input_sizes(0).size());
  if (n == 0) return {c.grad()};
  const int64_t d = wrap(c.int_arg(1), n);
  const Tensor y = c.result();
  const ScalarType t = y.scalar_type();
  const Tensor x = saved_as(c, 0, t);
  const Tensor g = c.grad();
  const Tensor is_zero = x.detach().eq(0);
  const Tensor zeros_so_far = is_zero.cumsum(d);
  const Tensor before = as_factor(zeros_so_far.eq(0), t);
  const Tensor first = as_factor(is_zero.logical_and(zeros_so_far.eq(1)), t);
  const Tensor zero = as_factor(is_zero, t);
  const Tensor left = reverse_cumsum(g * y, d) / (x + zero) * before;
  // x * 0 + 1 at the first zero: a constant, so the double backward stays exact.
  const Tensor at_first = reverse_cumsum(g * (x * (1.0 - first) + first).cumprod(d), d) * first;
  return {left + at_first};
}
}  // namespace

Tensor reduction_grad_to_input(const Tensor& g, const C& c, int dim_arg, int keepdim_arg) {
  return unsqueeze_reduced(g, c.input_sizes(0), c, dim_arg, keepdim_arg).expand(c.input_sizes(0));
}

void define_reduction_derivatives() {
  define_derivative("sum", {{0}, {}, {}, &sum_grad});
  define_derivative("prod", {{0}, {0}, {0}, &prod_grad});
  define_derivative("amax", {{0}, {0}, {0}, &amax_grad});
  define_derivative("amin", {{0}, {0}, {0}, &amax_grad});
  define_derivative("max.dim", {{0}, {}, {1}, &max_dim_grad});
  define_derivative("min.dim", {{0}, {}, {1}, &max_dim_grad});
  define_derivative("var", {{0}, {0}, {}, [](C& c) { return var_std_grad(c, false); }});
  define_derivative("std", {{0}, {0}, {0}, [](C& c) { return var_std_grad(c, true); }});
  define_derivative("norm", {{0}, {0}, {0}, &norm_grad});
  define_derivative("logsumexp", {{0}, {0}, {0}, &logsumexp_grad});
  define_derivative("cumsum", {{0}, {}, {}, &cumsum_grad});
  define_derivative("cumprod", {{0}, {0}, {0}, &cumprod_grad});
  // Composites of the ops above: autograd records what their kernels call
  // (mean = sum / count; max()/min() = amax/amin over all dims, so ties split evenly).
  define_decomposed("mean");
  define_decomposed("max");
  define_decomposed("min");
  not_differentiable({"argmax", "argmin", "any", "all"});
}

}  // namespace tessera::autograd
