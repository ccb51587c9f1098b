// Derivative formulas of the shape family's views, copies, fills and factories (core/src/ops/shape_views.cpp, shape_copy.cpp).
// The gradient of a view that drops part of its input is the incoming gradient
// padded back with zeros (pad with zero value), so double backward is a crop.
#include "formulas.h"

#include <algorithm>
#include <cstdlib>

namespace tessera::autograd {
namespace {
using C = BackwardContext;
Tensor reshape_to_input(C& c, int arg = 0) { return c.grad().reshape(c.input_sizes(arg)); }

int64_t wrap(int64_t dim, int64_t n) { return dim < 0 ? dim + n : dim; }

// g padded with `lo` zeros before and `hi` after along `dim` (negative: cropped).
Tensor pad_dim(const Tensor& g, int64_t dim, int64_t lo, int64_t hi) {
  const int64_t nd = g.dim();
  DimVector p(static_cast<size_t>(2 * (nd - dim)), 0);
  p[p.size() - 2] = lo;
  p[p.size() - 1] = hi;
  return g.pad(IntArrayRef(p.data(), p.size()));
}

TensorOptions like(const Tensor& g) { return TensorOptions(g.scalar_type()).device(g.device()); }

// slice's gradient: each gradient slot is followed by step-1 zeros (a padded
// new dim folded into `dim`), then the whole is shifted to `start`.
Tensor slice_backward(C& c) {
  const Tensor g = c.grad();
  const IntArrayRef in = c.input_sizes(0);
  const int64_t dim = wrap(c.int_arg(1), static_cast<int64_t>(in.size()));
  const int64_t size = in[static_cast<size_t>(dim)];
  auto bound = [&](int arg, int64_t dflt) {
    if (c.is_none(arg)) return dflt;
    const int64_t x = c.int_arg(arg);
    return std::clamp<int64_t>(x < 0 ? x + size : x, 0, size);
  };
  const int64_t start = bound(2, 0);
  const int64_t step = c.int_arg(4);
  const int64_t len = g.size(dim);
  Tensor spread = g;
  if (step > 1) {
    DimVector folded(g.sizes().begin(), g.sizes().end());
    folded[static_cast<size_t>(dim)] = len * step;
    spread = pad_dim(g.unsqueeze(dim + 1), dim + 1, 0, step - 1).reshape(folded);
  }
  return pad_dim(spread, dim, start, size - start - spread.size(dim));
}

// Whether a (sizes, strides) geometry may address one element twice
// (conservative: dims sorted by stride must each step over all smaller ones).
bool may_overlap(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 1) dims.emplace_back(std::abs(strides[i]), sizes[i]);
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // largest offset addressed by the smaller dims
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

// Lowest and highest storage index a geometry addresses (numel > 0).
std::pair<int64_t, int64_t> span(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < sizes.size(); ++i) (strides[i] < 0 ? lo : hi) += (sizes[i] - 1) * strides[i];
  return {lo, hi};
}

// The storage index of each element of a geometry, minus `base` (int64, any
// strides, negative included).
Tensor positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset, int64_t base, Device device) {
  const TensorOptions opts = TensorOptions(kLong).device(device);
  Tensor pos = full(sizes, offset - base, opts);
  for (size_t d = 0; d < sizes.size(); ++d) {
    DimVector line(sizes.size(), 1);
    line[d] = sizes[d];
    pos = pos + arange(sizes[d], opts).mul(strides[d]).view(line);
  }
  return pos;
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// as_strided reads storage positions; its gradient is accumulated per storage
// position over the span both geometries cover, then read back with the
// input's geometry (divided by how often the input addresses a position, so
// that an overlapping input such as an expanded one is not counted twice).
Tensor as_strided_backward(C& c) {
  const Tensor g = c.grad();
  const IntArrayRef isz = c.input_sizes(0), ist = c.input_strides(0);
  const IntArrayRef osz = c.int_list(1), ost = c.int_list(2);
  const int64_t ioff = c.input_storage_offset(0);
  const int64_t ooff = c.is_none(3) ? ioff : c.int_arg(3);
  if (numel_of(isz) == 0 || numel_of(osz) == 0) return zeros(isz, like(g));
  const auto [ilo, ihi] = span(isz, ist, ioff);
  const auto [olo, ohi] = span(osz, ost, ooff);
  const int64_t lo = std::min(ilo, olo), len = std::max(ihi, ohi) - lo + 1;
  const Tensor out_pos = positions(osz, ost, ooff, lo, g.device()).reshape({-1});
  Tensor flat = zeros({len}, like(g)).index_add_(0, out_pos, g.reshape({-1}));
  const Tensor in_pos = positions(isz, ist, ioff, lo, g.device());
  if (may_overlap(isz, ist)) {
    const Tensor count = zeros({len}, like(g)).index_add_(0, in_pos.reshape({-1}), ones({numel_of(isz)}, like(g)));
    flat = flat / count.clamp_min(1);
  }
  return flat.take(in_pos);
}
}  // namespace

void define_view_derivatives() {
  not_differentiable({"arange", "empty"});
  define_derivative("clone", {{0}, {}, {}, [](C& c) -> variable_list { return {c.grad()}; }});
  // contiguous returns self itself when already contiguous: recording a node
  // would rewrite self's own history, so its inner clone records instead.
  define_decomposed("contiguous");
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
  define_derivative("narrow", {{0}, {}, {}, [](C& c) -> variable_list {
                      const IntArrayRef in = c.input_sizes(0);
                      const int64_t dim = wrap(c.int_arg(1), static_cast<int64_t>(in.size()));
                      const int64_t size = in[static_cast<size_t>(dim)];
                      const int64_t start = wrap(c.int_arg(2), size), length = c.int_arg(3);
                      return {pad_dim(c.grad(), dim, start, size - start - length)};
                    }});
  define_derivative("slice", {{0}, {}, {}, [](C& c) -> variable_list { return {slice_backward(c)}; }});
  define_derivative("select", {{0}, {}, {}, [](C& c) -> variable_list {
                      const IntArrayRef in = c.input_sizes(0);
                      const int64_t dim = wrap(c.int_arg(1), static_cast<int64_t>(in.size()));
                      const int64_t size = in[static_cast<size_t>(dim)];
                      const int64_t index = wrap(c.int_arg(2), size);
                      return {pad_dim(c.grad().unsqueeze(dim), dim, index, size - index - 1)};
                    }});
  define_derivative("as_strided", {{0}, {}, {}, [](C& c) -> variable_list { return {as_strided_backward(c)}; }});
}

}  // namespace tessera::autograd
