// Shape ops: cat, stack, split, chunk, flip, roll, repeat, tile, pad (composites
// of views, fill_ and copy_, so they run on every device, meta included) and
// tril/triu (structured, with a plugin kernel: one pass instead of a mask).
#include <tessera/error.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "../checked_math.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {

using V = IValue;


const Tensor& self_arg(const Operator& op, const Frame& f) {
  const IValue& v = f.args[0];
  TSR_CHECK(v.tag == IValue::Tag::Tensor && v.tensor->defined(), ValueError, op.name(),
            ": expected a defined tensor as input");
  return *v.tensor;
}

ArrayRef<Tensor> list_arg(const Operator& op, const Frame& f) {
  const IValue& v = f.args[0];
  TSR_CHECK(v.tag == IValue::Tag::TensorList, TypeError, op.name(), ": expected a sequence of tensors");
  ArrayRef<Tensor> list(v.tensors.data, v.tensors.size);
  TSR_CHECK(!list.empty(), ValueError, op.name(), ": expected a non-empty list of tensors");
  for (size_t i = 0; i < list.size(); ++i)
    TSR_CHECK(list[i].defined(), ValueError, op.name(), ": tensor ", i, " of the list is undefined");
  return list;
}

// A view of `base` with any strides (negative allowed): internal use only.
Tensor raw_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(base.storage(), base.scalar_type(), sizes, strides,
                                                                offset)));
}

// ---- cat / stack ----

// PyTorch's legacy rule: a 1-D tensor of size 0 is skipped by cat's shape checks.
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// The shape of the concatenation of `list` along `dim` (wrapped, of ref's
// dims), checked: the same number of dims and equal sizes outside dim for
// every tensor (legacy empty ones skipped where `skip_legacy`), a total that
// stays in int64. Errors name `op`.
DimVector cat_shape(const Operator& op, ArrayRef<Tensor> list, const Tensor& ref, int64_t dim, bool skip_legacy) {
  const int64_t nd = ref.dim();
  DimVector shape(ref.sizes().begin(), ref.sizes().end());
  int64_t total = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    if (skip_legacy && skipped_in_cat(t)) continue;
    TSR_CHECK(t.dim() == nd, ValueError, op.name(), ": tensors must have the same number of dimensions: got ", nd,
              " (shape ", ref.sizes(), ") and ", t.dim(), " (shape ", t.sizes(), ", tensor ", i, ")");
    for (int64_t d = 0; d < nd; ++d) {
      TSR_CHECK(d == dim || t.size(d) == shape[d], ValueError, op.name(),
                ": sizes of tensors must match except in dimension ", dim, ": expected size ", shape[d],
                " but got size ", t.size(d), " for tensor ", i, " (shapes ", ref.sizes(), " and ", t.sizes(), ")");
    }
    TSR_CHECK(!checked::add(total, t.size(dim), total), ValueError, op.name(), ": the sizes in dimension ", dim,
              " add up beyond int64 (tensor ", i, " has shape ", t.sizes(), ")");
  }
  shape[dim] = total;
  return shape;
}

extern constinit OpHandle op__cat;

// cat as one _cat call, writing each output row once instead of one strided
// copy per input: where the device has the kernel for the dtype and every
// input already has it (a mixed list converts in copy_). Legacy empty tensors
// are left out; the checks are done (cat_impl's).
bool cat_fused(ArrayRef<Tensor> list, int64_t dim, ScalarType dtype, Device device, Tensor& out) {
  if (list.size() < 2 || !runs_on(op__cat(), device, dtype)) return false;
  std::vector<Tensor> parts;
  parts.reserve(list.size());
  for (const Tensor& t : list) {
    if (t.scalar_type() != dtype) return false;
    if (!skipped_in_cat(t)) parts.push_back(t);
  }
  out = call(op__cat(), {V::of(ArrayRef<Tensor>(parts.data(), parts.size())), V::of(dim)});
  return true;
}

Tensor cat_impl(const Operator& op, ArrayRef<Tensor> list, int64_t dim_arg) {
  const Device device = list[0].device();
  ScalarType dtype = list[0].scalar_type();
  const Tensor* ref = nullptr;  // the first tensor that takes part in the shape checks
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    TSR_CHECK(t.device() == device, ValueError, op.name(), ": expected all tensors on one device, got ", device,
              " (tensor 0) and ", t.device(), " (tensor ", i, ")");
    TSR_CHECK(t.dim() > 0, ValueError, op.name(), ": zero-dimensional tensor (at position ", i,
              ") cannot be concatenated");
    if (i > 0) dtype = promote_types(dtype, t.scalar_type());
    if (ref == nullptr && !skipped_in_cat(t)) ref = &t;
  }
  if (ref == nullptr) {  // only legacy empty tensors: an empty result
    wrap_dim(op, dim_arg, 1);
    return empty_on({0}, dtype, device);
  }
  const int64_t dim = wrap_dim(op, dim_arg, ref->dim());
  const DimVector shape = cat_shape(op, list, *ref, dim, true);
  (void)checked::check_shape(op.name(), shape, dtype);
  if (Tensor fused; cat_fused(list, dim, dtype, device, fused)) return fused;
  Tensor out = empty_on(shape, dtype, device);
  int64_t offset = 0;
  for (const Tensor& t : list) {
    if (skipped_in_cat(t) || t.size(dim) == 0) continue;
    out.narrow(dim, offset, t.size(dim)).copy_(t);
    offset += t.size(dim);
  }
  return out;
}

// _cat(tensors, dim): the kernel op behind cat. Stricter than cat: no legacy
// empty tensors, one dtype, one device; the kernel gets dim in [0, ndim).
void cat_meta(StructuredCall& c) {
  const Operator& op = c.op();
  const ArrayRef<Tensor> list = list_arg(op, c.frame());
  const Tensor& first = list[0];
  TSR_CHECK(first.dim() > 0, ValueError, op.name(), ": zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t dim = wrap_dim(op, c.arg(1).i, first.dim());
  for (size_t i = 1; i < list.size(); ++i) {
    const Tensor& t = list[i];
    TSR_CHECK(t.device() == first.device(), ValueError, op.name(), ": expected all tensors on one device, got ",
              first.device(), " (tensor 0) and ", t.device(), " (tensor ", i, ")");
    TSR_CHECK(t.scalar_type() == first.scalar_type(), TypeError, op.name(), ": expected all tensors of one dtype, got ",
              dtype_name(first.scalar_type()), " (tensor 0) and ", dtype_name(t.scalar_type()), " (tensor ", i, ")");
  }
  const DimVector shape = cat_shape(op, list, first, dim, false);
  c.device = first.device();
  c.add_output(shape, first.scalar_type());
  c.set_tensor_list_borrowed(0, list);
  c.set_int(1, dim);
  c.dispatch_dtype = first.scalar_type();
}

void cat_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  f.outputs[0] = cat_impl(op, list_arg(op, f), f.args[1].i);
}

void stack_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const ArrayRef<Tensor> list = list_arg(op, f);
  const int64_t dim = wrap_dim(op, f.args[1].i, list[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    TSR_CHECK(list[i].sizes().equals(list[0].sizes()), ValueError, op.name(),
              ": expects each tensor to be equal size, but got ", list[0].sizes(), " at entry 0 and ",
              list[i].sizes(), " at entry ", i);
    parts.push_back(list[i].unsqueeze(dim));
  }
  f.outputs[0] = cat_impl(op, parts, dim);
}

// ---- flip / roll ----

void flip_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_arg(op, f);
  const IntArrayRef dims = f.args[1].int_list();
  const int64_t nd = self.dim();
  DimVector strides(self.strides().begin(), self.strides().end());
  int64_t offset = self.storage_offset();
  bool seen[64] = {};
  for (int64_t d0 : dims) {
    const int64_t d = wrap_dim(op, d0, nd);
    TSR_CHECK(!seen[d], ValueError, op.name(), ": dim ", d, " appears multiple times in the list of dims ", dims);
    seen[d] = true;
    if (nd == 0 || self.size(d) <= 1) continue;
    offset += (self.size(d) - 1) * strides[d];
    strides[d] = -strides[d];
  }
  // The reversed view never escapes: the result is a fresh contiguous copy.
  const Tensor reversed = self.numel() == 0 ? self : raw_view(self, self.sizes(), strides, offset);
  f.outputs[0] = reversed.clone();
}

// Rolls along one dim: the last `s` entries move to the front.
Tensor roll_one(const Tensor& t, int64_t shift, int64_t dim) {
  const int64_t n = t.size(dim);
  if (n == 0) return t;
  int64_t s = shift % n;  // in (-n, n); adding n before the % could overflow
  if (s < 0) s += n;
  if (s == 0) return t;
  Tensor out = empty_on(t.sizes(), t.scalar_type(), t.device());
  out.narrow(dim, 0, s).copy_(t.narrow(dim, n - s, s));
  out.narrow(dim, s, n - s).copy_(t.narrow(dim, 0, n - s));
  return out;
}

void roll_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_arg(op, f);
  const IntArrayRef shifts = f.args[1].int_list();
  const IntArrayRef dims = f.args[2].int_list();
  if (dims.empty()) {  // roll the flattened tensor, then restore the shape
    TSR_CHECK(shifts.size() == 1, ValueError, op.name(), ": without dims, shifts must hold one value, got ", shifts);
    const Tensor flat = self.reshape({self.numel()});
    const Tensor r = roll_one(flat, shifts[0], 0);
    f.outputs[0] = (r.is_same(flat) ? flat.clone() : r).view(self.sizes());
    return;
  }
  TSR_CHECK(shifts.size() == dims.size(), ValueError, op.name(), ": shifts and dims must align, got shifts ", shifts,
            " and dims ", dims);
  Tensor r = self;
  for (size_t i = 0; i < dims.size(); ++i) r = roll_one(r, shifts[i], wrap_dim(op, dims[i], self.dim()));
  f.outputs[0] = r.is_same(self) ? self.clone() : r;
}

// ---- repeat / tile ----

Tensor repeat_impl(const Operator& op, const Tensor& self, IntArrayRef repeats) {
  const int64_t nd = self.dim();
  const int64_t nr = static_cast<int64_t>(repeats.size());
  TSR_CHECK(nr >= nd, ValueError, op.name(), ": number of repeat dims ", nr,
            " can not be smaller than the number of dimensions of the tensor (", nd, ", shape ", self.sizes(), ")");
  DimVector padded(nr, 1), out_shape(nr), inter, inter_in;
  for (int64_t i = 0; i < nd; ++i) padded[nr - nd + i] = self.size(i);
  for (int64_t i = 0; i < nr; ++i) {
    TSR_CHECK(repeats[i] >= 0, ValueError, op.name(), ": repeats must be non-negative, got ", repeats);
    TSR_CHECK(!checked::mul(padded[i], repeats[i], out_shape[i]), ValueError, op.name(), ": repeats ",
              repeats, " make a result too large for a tensor of shape ", self.sizes());
    // Each dim i becomes (repeats[i], size[i]): the source is broadcast along the first.
    inter.push_back(repeats[i]);
    inter.push_back(padded[i]);
    inter_in.push_back(1);
    inter_in.push_back(padded[i]);
  }
  (void)checked::check_shape(op.name(), out_shape, self.scalar_type());  // the same elements as inter
  Tensor out = empty_on(inter, self.scalar_type(), self.device());
  if (out.numel() != 0) out.copy_(self.reshape(inter_in).expand(inter));
  return out.view(out_shape);
}

void repeat_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  f.outputs[0] = repeat_impl(op, self_arg(op, f), f.args[1].int_list());
}

void tile_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_arg(op, f);
  const IntArrayRef dims = f.args[1].int_list();
  DimVector reps(dims.begin(), dims.end());
  while (static_cast<int64_t>(reps.size()) < self.dim()) reps.insert(reps.begin(), 1);
  f.outputs[0] = repeat_impl(op, self, reps);
}

// ---- pad ----

void pad_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = self_arg(op, f);
  const IntArrayRef pad = f.args[1].int_list();
  const std::string_view mode = f.args[2].tag == IValue::Tag::String ? f.args[2].string() : "constant";
  if (mode != "constant") {
    TSR_CHECK(mode != "reflect" && mode != "replicate" && mode != "circular", NotImplementedError, op.name(),
              ": mode '", mode, "' is not supported; only mode='constant' is implemented");
    throw ValueError(detail::str(op.name(), ": unknown padding mode '", mode,
                                 "'; expected 'constant' (or the unsupported 'reflect', 'replicate', 'circular')"));
  }
  const int64_t nd = self.dim();
  TSR_CHECK(pad.size() % 2 == 0, ValueError, op.name(), ": padding length must be divisible by 2, got pad=", pad);
  TSR_CHECK(static_cast<int64_t>(pad.size()) <= 2 * nd, ValueError, op.name(), ": padding length ", pad.size(),
            " is too large for a tensor of ", nd, " dimension(s) (shape ", self.sizes(), ")");
  DimVector out_shape(self.sizes().begin(), self.sizes().end());
  const int64_t npairs = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t p = 0; p < npairs; ++p) {
    const int64_t d = nd - 1 - p;
    int64_t grown = 0;
    TSR_CHECK(!checked::add(self.size(d), pad[2 * p], grown) && !checked::add(grown, pad[2 * p + 1], out_shape[d]),
              ValueError, op.name(), ": padding ", pad, " is too large for shape ", self.sizes(),
              " (a size beyond int64)");
    TSR_CHECK(out_shape[d] >= 0, ValueError, op.name(), ": the input size ", self.size(d), ", plus padding ",
              pad[2 * p], " and ", pad[2 * p + 1], " gives a negative output size ", out_shape[d], " in dimension ", d);
  }
  const Scalar value = f.args[3].is_none() ? Scalar(int64_t{0}) : f.args[3].to_scalar();
  (void)checked::check_shape(op.name(), out_shape, self.scalar_type());
  Tensor out = empty_on(out_shape, self.scalar_type(), self.device());
  if (out.numel() == 0) {
    f.outputs[0] = out;
    return;
  }
  out.fill_(value);
  // The part of the input that survives cropping, and where it lands.
  Tensor src = self, dst = out;
  for (int64_t p = 0; p < npairs; ++p) {
    const int64_t d = nd - 1 - p;
    const int64_t lo = pad[2 * p], hi = pad[2 * p + 1];
    // Cropping beyond the size leaves nothing; the int128 keeps -lo and the
    // differences exact for any pad (lo may be INT64_MIN).
    const __int128 keep = __int128(self.size(d)) - std::max<__int128>(0, -__int128(lo)) -
                          std::max<__int128>(0, -__int128(hi));
    if (keep <= 0) {
      f.outputs[0] = out;
      return;
    }
    const int64_t in_start = std::max<int64_t>(0, -lo), len = static_cast<int64_t>(keep);
    src = src.narrow(d, in_start, len);
    dst = dst.narrow(d, std::max<int64_t>(0, lo), len);
  }
  if (src.numel() != 0) dst.copy_(src);
  f.outputs[0] = out;
}

// ---- tril / triu (structured) ----

template <bool InPlace>
void tri_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  TSR_CHECK(self.dim() >= 2, ValueError, c.op().name(), ": input tensor must have at least 2 dimensions, got shape ",
            self.sizes());
  c.device = self.device();
  if constexpr (InPlace) {
    if (self.numel() != 0) check_writable(c.op(), self);  // nothing is written otherwise
    c.add_aliased_output(self);
  } else {
    c.add_output(self.sizes(), self.scalar_type());
  }
  c.set_tensor(0, self);
  TsrValue k{};
  k.tag = TSR_VALUE_INT;
  k.as.i = c.arg(1).i;
  c.set_value(1, k);
  c.dispatch_dtype = self.scalar_type();
}

constexpr char kFamily[] = "shape";

constinit OpHandle op_cat{composite(kFamily, "cat(Tensor[] tensors, int dim=0) -> Tensor", 0, &cat_kernel)};
constinit OpHandle op__cat{structured(kFamily, "_cat(Tensor[] tensors, int dim) -> Tensor", 0, &cat_meta)};
constinit OpHandle op_stack{composite(kFamily, "stack(Tensor[] tensors, int dim=0) -> Tensor", 0, &stack_kernel)};
constinit OpHandle op_flip{composite(kFamily, "flip(Tensor self, int[] dims) -> Tensor", 0, &flip_kernel)};
constinit OpHandle op_roll{composite(kFamily,
    "roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", 0, &roll_kernel)};
constinit OpHandle op_repeat{composite(kFamily, "repeat(Tensor self, int[] repeats) -> Tensor", 0, &repeat_kernel)};
constinit OpHandle op_tile{composite(kFamily, "tile(Tensor self, int[] dims) -> Tensor", 0, &tile_kernel)};
constinit OpHandle op_pad{composite(kFamily,
    "pad(Tensor self, int[] pad, str mode=\"constant\", float? value=None) -> Tensor", 0, &pad_kernel)};
constinit OpHandle op_tril{structured(kFamily, "tril(Tensor self, int diagonal=0) -> Tensor", 0, &tri_meta<false>)};
constinit OpHandle op_tril_{inplace_variant(kFamily, op_tril,
    "tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)", &tri_meta<true>)};
constinit OpHandle op_triu{structured(kFamily, "triu(Tensor self, int diagonal=0) -> Tensor", 0, &tri_meta<false>)};
constinit OpHandle op_triu_{inplace_variant(kFamily, op_triu,
    "triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)", &tri_meta<true>)};

}  // namespace

void declare_shape_ops() {
  declare_shape_view_ops();
  declare_shape_copy_ops();
  declare_now({&op_cat, &op__cat, &op_stack, &op_flip, &op_roll, &op_repeat, &op_tile, &op_pad, &op_tril, &op_tril_, &op_triu,
               &op_triu_});
}

}  // namespace tessera::ops

namespace tessera {

using ops::call;
using V = IValue;

namespace {
int64_t split_dim(const char* op, int64_t dim, int64_t ndim) {
  TSR_CHECK(dim >= -ndim && dim < ndim, IndexError, op, ": dimension ", dim, " is out of range for a tensor of ", ndim,
            " dimension(s)");
  return dim < 0 ? dim + ndim : dim;
}
}  // namespace

// An empty list has no device to dispatch on: refused before dispatch.
Tensor cat(ArrayRef<Tensor> tensors, int64_t dim) {
  TSR_CHECK(!tensors.empty(), ValueError, "cat: expected a non-empty list of tensors");
  return call(ops::op_cat(), {V::of(tensors), V::of(dim)});
}
Tensor& cat_out(Tensor& out, ArrayRef<Tensor> tensors, int64_t dim) {
  // The one _cat call inside writes into out where it fits.
  return ops::out_form("_cat", out, [&] { return cat(tensors, dim); }, "cat");
}
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim) {
  TSR_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  return call(ops::op_stack(), {V::of(tensors), V::of(dim)});
}
Tensor& stack_out(Tensor& out, ArrayRef<Tensor> tensors, int64_t dim) {
  return ops::out_form("_cat", out, [&] { return stack(tensors, dim); }, "stack");
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  TSR_CHECK(self.dim() > 0, ValueError, "split: expects at least a 1-dimensional tensor");
  TSR_CHECK(split_size >= 0, ValueError, "split: split_size must be non-negative, got ", split_size);
  const int64_t d = split_dim("split", dim, self.dim());
  const int64_t n = self.size(d);
  TSR_CHECK(split_size > 0 || n == 0, ValueError, "split: split_size can only be 0 if dimension size is 0, got ",
            "split_size 0 for dimension ", d, " of size ", n);
  std::vector<Tensor> parts;
  if (n == 0) {
    parts.push_back(self.narrow(d, 0, 0));
    return parts;
  }
  // start + split_size may pass INT64_MAX: the loop stops on what is left instead.
  for (int64_t start = 0; start < n;) {
    const int64_t len = std::min(split_size, n - start);
    parts.push_back(self.narrow(d, start, len));
    start += len;
  }
  return parts;
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  TSR_CHECK(self.dim() > 0, ValueError, "split_with_sizes: expects at least a 1-dimensional tensor");
  const int64_t d = split_dim("split_with_sizes", dim, self.dim());
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TSR_CHECK(s >= 0, ValueError, "split_with_sizes: split sizes must be non-negative, got ", split_sizes);
    TSR_CHECK(!checked::add(total, s, total), ValueError, "split_with_sizes: split sizes ", split_sizes,
              " add up beyond int64 (the input's size at dimension ", d, " is ", self.size(d), ")");
  }
  TSR_CHECK(total == self.size(d), ValueError, "split_with_sizes: expects split_sizes to sum exactly to ", self.size(d),
            " (the input's size at dimension ", d, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    parts.push_back(self.narrow(d, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(self, split_sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  TSR_CHECK(self.dim() > 0, ValueError, "chunk: expects at least a 1-dimensional tensor");
  TSR_CHECK(chunks > 0, ValueError, "chunk: expects `chunks` to be greater than 0, got ", chunks);
  const int64_t d = split_dim("chunk", dim, self.dim());
  const int64_t n = self.size(d);
  if (n == 0) {  // `chunks` empty parts, as PyTorch: their list is sized by the caller's number
    // The list's memory is probed with malloc first: a failed `new` cannot be
    // caught under AddressSanitizer (it aborts), a null from malloc can.
    const size_t bytes = static_cast<size_t>(chunks) * sizeof(Tensor);  // wraps past 2**61 chunks: checked next
    void* probe = bytes / sizeof(Tensor) == static_cast<size_t>(chunks) ? std::malloc(bytes) : nullptr;
    if (probe == nullptr)
      throw OutOfMemoryError(detail::str("chunk: cannot hold ", chunks, " empty chunks of dimension ", d,
                                         " of a tensor of shape ", self.sizes(), " (", bytes, " bytes of tensors)"));
    std::free(probe);
    std::vector<Tensor> parts;
    parts.reserve(static_cast<size_t>(chunks));
    for (int64_t i = 0; i < chunks; ++i) parts.push_back(self.narrow(d, 0, 0));
    return parts;
  }
  return split(self, n / chunks + (n % chunks != 0), d);  // ceil without overflow
}

Tensor flip(const Tensor& self, IntArrayRef dims) { return call(ops::op_flip(), {V::of(self), V::of(dims)}); }
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  return call(ops::op_roll(), {V::of(self), V::of(shifts), V::of(dims)});
}
Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  return call(ops::op_repeat(), {V::of(self), V::of(repeats)});
}
Tensor tile(const Tensor& self, IntArrayRef dims) { return call(ops::op_tile(), {V::of(self), V::of(dims)}); }
Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  return call(ops::op_pad(), {V::of(self), V::of(pad), V::of(mode), value ? V::of(*value) : V::none()});
}
Tensor tril(const Tensor& self, int64_t diagonal) { return call(ops::op_tril(), {V::of(self), V::of(diagonal)}); }
Tensor triu(const Tensor& self, int64_t diagonal) { return call(ops::op_triu(), {V::of(self), V::of(diagonal)}); }
Tensor& tril_out(Tensor& out, const Tensor& self, int64_t diagonal) {
  return ops::out_form("tril", out, [&] { return tril(self, diagonal); });
}
Tensor& triu_out(Tensor& out, const Tensor& self, int64_t diagonal) {
  return ops::out_form("triu", out, [&] { return triu(self, diagonal); });
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return tessera::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split(IntArrayRef split_sizes, int64_t dim) const {
  return tessera::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t dim) const {
  return tessera::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return tessera::chunk(*this, chunks, dim); }
Tensor Tensor::flip(IntArrayRef dims) const { return tessera::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return tessera::roll(*this, shifts, dims); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return tessera::repeat(*this, repeats); }
Tensor Tensor::tile(IntArrayRef dims) const { return tessera::tile(*this, dims); }
Tensor Tensor::pad(IntArrayRef pad, std::string_view mode, std::optional<double> value) const {
  return tessera::pad(*this, pad, mode, value);
}
Tensor Tensor::tril(int64_t diagonal) const { return tessera::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tessera::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) {
  Tensor r = call(ops::op_tril_(), {V::of(*this), V::of(diagonal)});
  (void)r;
  return *this;
}
Tensor& Tensor::triu_(int64_t diagonal) {
  Tensor r = call(ops::op_triu_(), {V::of(*this), V::of(diagonal)});
  (void)r;
  return *this;
}

}  // namespace tessera
