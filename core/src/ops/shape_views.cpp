// The shape family's views: metadata only, for every device. Each makes a new
// TensorImpl over the same storage; none touches data. reshape/contiguous/clone
// copy when they must. Also their C++ API (the Tensor methods).
#include <tessera/error.h>

#include <algorithm>
#include <optional>

#include "../checked_math.h"
#include "../output_placement.h"
#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(base.storage(), base.scalar_type(), sizes, strides, offset));
  TensorImpl* b = base.unsafeGetTensorImpl();
  impl->set_view_base(b->view_base() ? boost::intrusive_ptr<TensorImpl>(b->view_base()) : base.impl());
  return Tensor(std::move(impl));
}

const Tensor& self_of(const Operator& op, const Frame& f) {
  const IValue& v = f.args[0];
  TSR_CHECK(v.tag == IValue::Tag::Tensor && v.tensor->defined(), ValueError, op.name(),
            ": expected a defined tensor as self");
  return *v.tensor;
}

// Resolves one -1 in `shape` so that it holds numel elements.
DimVector infer_size(const Operator& op, IntArrayRef shape, int64_t numel, IntArrayRef from) {
  DimVector out(shape.begin(), shape.end());
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TSR_CHECK(infer < 0, ValueError, op.name(), ": only one dimension can be -1, got shape ", shape);
      infer = static_cast<int>(i);
    } else {
      TSR_CHECK(out[i] >= 0, ValueError, op.name(), ": invalid size ", out[i], " in shape ", shape);
      TSR_CHECK(!checked::mul(known, out[i], known), ValueError, op.name(), ": shape ", shape,
                " is invalid for a tensor of shape ", from, " (", numel, " elements): its sizes multiply beyond int64");
    }
  }
  if (infer >= 0) {
    TSR_CHECK(known != 0 && numel % known == 0, ValueError, op.name(), ": shape ", shape,
              " is invalid for a tensor of shape ", from, " (", numel, " elements)");
    out[infer] = numel / known;
  } else {
    TSR_CHECK(known == numel, ValueError, op.name(), ": shape ", shape, " is invalid for a tensor of shape ", from,
              " (", numel, " elements)");
  }
  // A 0 among the sizes hides the others from `known`: [0, 2**40, 2**40] has 0
  // elements but no int64 strides.
  (void)checked::check_numel(op.name(), out);
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without copying, if possible
// (groups of old dims that are contiguous among themselves may be re-split).
// Sizes' products fit int64 (the tensor's and new_sizes' spans were checked);
// the strides are products with a stride, checked: an overflow means no view.
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  DimVector out(new_sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) {
    DimVector c = contiguous_strides(new_sizes);
    return c;
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    int64_t chunk_stride = 0;
    if (d == 0 || (sizes[d - 1] != 1 &&
                   (checked::mul(tensor_numel, chunk_base_stride, chunk_stride) || strides[d - 1] != chunk_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        if (checked::mul(view_numel, chunk_base_stride, out[view_d])) return std::nullopt;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) {
    // Trailing size-1 dims of the view.
    while (view_d >= 0) {
      if (new_sizes[view_d] != 1) return std::nullopt;
      out[view_d] = 1;
      --view_d;
    }
  }
  return out;
}

void view_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const DimVector shape = infer_size(op, f.args[1].int_list(), self.numel(), self.sizes());
  auto strides = view_strides(self.sizes(), self.strides(), shape);
  TSR_CHECK(strides.has_value(), ValueError, "view: shape ", IntArrayRef(shape),
            " is not compatible with the tensor's size ", self.sizes(), " and stride ", self.strides(),
            " (at least one dimension spans two contiguous subspaces); use reshape instead");
  f.outputs[0] = make_view(self, shape, *strides, self.storage_offset());
}

void reshape_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const DimVector shape = infer_size(op, f.args[1].int_list(), self.numel(), self.sizes());
  if (auto strides = view_strides(self.sizes(), self.strides(), shape)) {
    f.outputs[0] = make_view(self, shape, *strides, self.storage_offset());
  } else {
    f.outputs[0] = self.clone().view(shape);
  }
}

void transpose_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const int64_t a = wrap_dim(op, f.args[1].i, self.dim()), b = wrap_dim(op, f.args[2].i, self.dim());
  DimVector sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  if (self.dim() > 0) {
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

void permute_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const IntArrayRef dims = f.args[1].int_list();
  TSR_CHECK(int64_t(dims.size()) == self.dim(), ValueError, "permute: number of dims ", dims.size(),
            " does not match the tensor's ", self.dim(), " dims (dims=", dims, ")");
  DimVector sizes(dims.size()), strides(dims.size());
  bool seen[64] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(op, dims[i], self.dim());
    TSR_CHECK(!seen[d], ValueError, "permute: dim ", d, " repeats in dims=", dims);
    seen[d] = true;
    sizes[i] = self.size(d);
    strides[i] = self.stride(d);
  }
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

// The storage offset of self's element `index` along `dim` (the others at 0).
// An empty result keeps self's offset when the exact one would leave int64
// (index == size of a huge dim): it addresses nothing.
int64_t view_offset(const Operator& op, const Tensor& self, int64_t dim, int64_t index, bool empty_result) {
  int64_t moved = 0, offset = 0;
  if (!checked::mul(index, self.stride(dim), moved) && !checked::add(self.storage_offset(), moved, offset) &&
      offset >= 0) [[likely]]
    return offset;
  TSR_CHECK(empty_result, ValueError, op.name(), ": index ", index, " of dimension ", dim,
            " moves the storage offset beyond int64 (shape ", self.sizes(), ", strides ", self.strides(),
            ", offset ", self.storage_offset(), ")");
  return self.storage_offset();
}

void slice_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  TSR_CHECK(self.dim() > 0, IndexError, "slice: cannot slice a 0-d tensor");
  const int64_t dim = wrap_dim(op, f.args[1].i, self.dim());
  const int64_t size = self.size(dim);
  const int64_t step = f.args[4].i;
  TSR_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  // Python slice semantics: negative bounds count from the end; out-of-range bounds clamp.
  auto clamp = [&](const IValue& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t x = v.i;
    if (x < 0) x += size;
    return std::clamp<int64_t>(x, 0, size);
  };
  const int64_t start = clamp(f.args[2], 0);
  const int64_t end = std::max(clamp(f.args[3], size), start);
  DimVector sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  // len(range(start, end, step)) without overflow: step may be anything up to INT64_MAX.
  const int64_t len = end == start ? 0 : (end - start - 1) / step + 1;
  sizes[dim] = len;
  // stride * step as PyTorch. With 2 or more elements (len - 1) * step < size,
  // so it fits the tensor's extent; a dim of 0 or 1 elements never steps and
  // keeps its stride when the product would overflow (a huge step).
  int64_t stepped = 0;
  if (!checked::mul(strides[dim], step, stepped)) [[likely]] {
    strides[dim] = stepped;
  } else {
    TSR_CHECK(len <= 1, ValueError, "slice: step ", step, " times the stride ", self.stride(dim), " of dimension ",
              dim, " overflows int64 (shape ", self.sizes(), ", strides ", self.strides(), ")");
  }
  f.outputs[0] = make_view(self, sizes, strides, view_offset(op, self, dim, start, len == 0));
}

void narrow_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  TSR_CHECK(self.dim() > 0, IndexError, "narrow: cannot narrow a 0-d tensor");
  const int64_t dim = wrap_dim(op, f.args[1].i, self.dim());
  const int64_t size = self.size(dim);
  int64_t start = f.args[2].i;
  const int64_t length = f.args[3].i;
  TSR_CHECK(start >= -size && start <= size, IndexError, "narrow: start ", start, " is out of range for dimension ",
            dim, " of size ", size);
  if (start < 0) start += size;
  TSR_CHECK(length >= 0 && length <= size - start, IndexError, "narrow: start (", start, ") + length (", length,
            ") exceeds dimension ", dim, " of size ", size);
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes[dim] = length;
  f.outputs[0] = make_view(self, sizes, self.strides(), view_offset(op, self, dim, start, length == 0));
}

void select_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  TSR_CHECK(self.dim() > 0, IndexError, "select: cannot select from a 0-d tensor");
  const int64_t dim = wrap_dim(op, f.args[1].i, self.dim());
  const int64_t size = self.size(dim);
  int64_t index = f.args[2].i;
  TSR_CHECK(index >= -size && index < size, IndexError, "select: index ", index, " is out of range for dimension ",
            dim, " of size ", size);
  if (index < 0) index += size;
  DimVector sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  f.outputs[0] = make_view(self, sizes, strides, view_offset(op, self, dim, index, false));
}

void squeeze_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) == 1) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

void squeeze_dim_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const int64_t dim = wrap_dim(op, f.args[1].i, self.dim());
  DimVector sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  if (self.dim() > 0 && sizes[dim] == 1) {
    sizes.erase(sizes.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

void unsqueeze_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const int64_t dim = wrap_dim(op, f.args[1].i, self.dim() + 1);
  DimVector sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  // Any stride serves a size-1 dim; PyTorch's choice when it fits int64.
  int64_t stride = 1;
  if (dim < self.dim() && checked::mul(sizes[dim], strides[dim], stride)) stride = 1;
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

void expand_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const IntArrayRef want = f.args[1].int_list();
  TSR_CHECK(int64_t(want.size()) >= self.dim(), ValueError, "expand: the number of sizes (", want.size(),
            ") must be at least the tensor's number of dims (", self.dim(), "); shape ", self.sizes(), " to ", want);
  const int64_t lead = static_cast<int64_t>(want.size()) - self.dim();
  DimVector sizes(want.size()), strides(want.size());
  for (int64_t i = int64_t(want.size()) - 1; i >= 0; --i) {
    const int64_t j = i - lead;
    if (j < 0) {
      TSR_CHECK(want[i] >= 0, ValueError, "expand: size -1 is not allowed for a new leading dimension; shape ",
                self.sizes(), " to ", want);
      sizes[i] = want[i];
      strides[i] = 0;
      continue;
    }
    const int64_t have = self.size(j);
    const int64_t target = want[i] == -1 ? have : want[i];
    if (have == target) {
      sizes[i] = have;
      strides[i] = self.stride(j);
    } else {
      TSR_CHECK(have == 1 && target >= 0, ValueError, "expand: the size ", have, " of dimension ", j,
                " must match the expanded size ", want[i], " (only size-1 dims expand); shape ", self.sizes(), " to ",
                want);
      sizes[i] = target;
      strides[i] = 0;
    }
  }
  (void)checked::check_shape("expand", sizes, self.scalar_type());
  f.outputs[0] = make_view(self, sizes, strides, self.storage_offset());
}

void as_strided_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  const IntArrayRef sizes = f.args[1].int_list(), strides = f.args[2].int_list();
  const int64_t offset = f.args[3].is_none() ? self.storage_offset() : f.args[3].i;
  TSR_CHECK(sizes.size() == strides.size(), ValueError, "as_strided: sizes ", sizes, " and strides ", strides,
            " differ in length");
  TSR_CHECK(offset >= 0, ValueError, "as_strided: negative storage offset ", offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    TSR_CHECK(sizes[i] >= 0, ValueError, "as_strided: negative size in ", sizes);
    TSR_CHECK(strides[i] >= 0, ValueError, "as_strided: negative stride in ", strides);
  }
  const int64_t numel = checked::check_shape("as_strided", sizes, self.scalar_type());
  // Exact: every element the view reaches, offset + [lo, hi], lies in the
  // storage, and (size - 1) * stride and the sums are computed without overflow.
  const int64_t capacity = static_cast<int64_t>(self.storage()->nbytes() / self.element_size());
  int64_t lo = 0, hi = 0;
  if (numel > 0) {
    const bool overflow = checked::extent(sizes, strides, lo, hi) || checked::add(offset, lo, lo) ||
                          checked::add(offset, hi, hi);
    TSR_CHECK(!overflow, ValueError, "as_strided: sizes ", sizes, ", strides ", strides, " and offset ", offset,
              " reach beyond int64 (the storage holds ", capacity, " elements of ", dtype_name(self.scalar_type()),
              ")");
    TSR_CHECK(lo >= 0 && hi < capacity, ValueError, "as_strided: sizes ", sizes, ", strides ", strides,
              " and offset ", offset, " reach element ", hi, ", beyond the storage's ", capacity, " elements");
  } else {
    int64_t bytes = 0;
    TSR_CHECK(!checked::mul(offset, static_cast<int64_t>(self.element_size()), bytes), ValueError,
              "as_strided: storage offset ", offset, " of ", dtype_name(self.scalar_type()),
              " is beyond int64 in bytes");
  }
  f.outputs[0] = make_view(self, sizes, strides, offset);
}

void contiguous_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  f.outputs[0] = self.is_contiguous() ? self : self.clone();
}

void clone_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_of(op, f);
  placement::Hint hint;  // the copy streams self into out
  hint.add(self.unsafeGetTensorImpl()->data());
  Tensor out = empty_on(self.sizes(), self.scalar_type(), self.device(), &hint);
  out.copy_(self);
  f.outputs[0] = std::move(out);
}

constexpr char kFamily[] = "shape";

#define TSR_VIEW_OP(fn, schema, kernel, flags) constinit OpHandle op_##fn{composite(kFamily, schema, flags, &kernel)};
TSR_VIEW_OP(view, "view(Tensor(a) self, int[] size) -> Tensor(a)", view_kernel, kView)
TSR_VIEW_OP(reshape, "reshape(Tensor(a) self, int[] shape) -> Tensor(a)", reshape_kernel, 0)
TSR_VIEW_OP(transpose, "transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose_kernel, kView)
TSR_VIEW_OP(permute, "permute(Tensor(a) self, int[] dims) -> Tensor(a)", permute_kernel, kView)
TSR_VIEW_OP(narrow, "narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", narrow_kernel, kView)
TSR_VIEW_OP(slice, "slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)",
            slice_kernel, kView)
TSR_VIEW_OP(select, "select(Tensor(a) self, int dim, int index) -> Tensor(a)", select_kernel, kView)
TSR_VIEW_OP(squeeze, "squeeze(Tensor(a) self) -> Tensor(a)", squeeze_kernel, kView)
TSR_VIEW_OP(squeeze_dim, "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", squeeze_dim_kernel, kView)
TSR_VIEW_OP(unsqueeze, "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", unsqueeze_kernel, kView)
TSR_VIEW_OP(expand, "expand(Tensor(a) self, int[] size) -> Tensor(a)", expand_kernel, kView)
TSR_VIEW_OP(as_strided, "as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)",
            as_strided_kernel, kView)
TSR_VIEW_OP(contiguous, "contiguous(Tensor(a) self) -> Tensor(a)", contiguous_kernel, 0)
TSR_VIEW_OP(clone, "clone(Tensor self) -> Tensor", clone_kernel, 0)
#undef TSR_VIEW_OP

}  // namespace

void declare_shape_view_ops() {
  declare_now({&op_view, &op_reshape, &op_transpose, &op_permute, &op_narrow, &op_slice, &op_select, &op_squeeze,
               &op_squeeze_dim, &op_unsqueeze, &op_expand, &op_as_strided, &op_contiguous, &op_clone});
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {

using ops::call;
using V = IValue;

Tensor Tensor::view(IntArrayRef size) const { return call(ops::op_view(), {V::of(*this), V::of(size)}); }
Tensor Tensor::reshape(IntArrayRef shape) const { return call(ops::op_reshape(), {V::of(*this), V::of(shape)}); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return call(ops::op_transpose(), {V::of(*this), V::of(d0), V::of(d1)});
}
Tensor Tensor::t() const {
  TSR_CHECK(dim() <= 2, ValueError, "t: expects a tensor with <= 2 dimensions, got ", dim(), " (shape ", sizes(),
            "); use transpose or permute");
  return dim() < 2 ? transpose(0, 0) : transpose(0, 1);
}
Tensor Tensor::permute(IntArrayRef dims) const { return call(ops::op_permute(), {V::of(*this), V::of(dims)}); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return call(ops::op_narrow(), {V::of(*this), V::of(dim), V::of(start), V::of(length)});
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return call(ops::op_slice(), {V::of(*this), V::of(dim), start ? V::of(*start) : V::none(),
                                end ? V::of(*end) : V::none(), V::of(step)});
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return call(ops::op_select(), {V::of(*this), V::of(dim), V::of(index)});
}
Tensor Tensor::squeeze() const { return call(ops::op_squeeze(), {V::of(*this)}); }
Tensor Tensor::squeeze(int64_t dim) const { return call(ops::op_squeeze_dim(), {V::of(*this), V::of(dim)}); }
Tensor Tensor::unsqueeze(int64_t dim) const { return call(ops::op_unsqueeze(), {V::of(*this), V::of(dim)}); }
Tensor Tensor::expand(IntArrayRef size) const { return call(ops::op_expand(), {V::of(*this), V::of(size)}); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) const {
  return call(ops::op_as_strided(), {V::of(*this), V::of(size), V::of(stride), offset ? V::of(*offset) : V::none()});
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const int64_t n = dim();
  if (n == 0) return reshape({1});
  auto wrap = [&](int64_t d) {
    TSR_CHECK(d >= -n && d < n, IndexError, "flatten: dimension ", d, " is out of range for a tensor of ", n,
              " dimension(s)");
    return d < 0 ? d + n : d;
  };
  const int64_t s = wrap(start_dim), e = wrap(end_dim);
  TSR_CHECK(s <= e, ValueError, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  DimVector shape;
  int64_t merged = 1;
  for (int64_t d = 0; d < n; ++d) {
    if (d < s || d > e) {
      shape.push_back(size(d));
    } else {
      merged *= size(d);  // fits: a product of this tensor's sizes (checked_math.h)
      if (d == e) shape.push_back(merged);
    }
  }
  return reshape(shape);
}
Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;  // the common case costs no dispatch
  return call(ops::op_contiguous(), {V::of(*this)});
}
Tensor Tensor::clone() const { return call(ops::op_clone(), {V::of(*this)}); }

}  // namespace tessera
