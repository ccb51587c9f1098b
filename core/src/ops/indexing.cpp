// Indexing ops. Kernel-backed (structured): index_select, gather, scatter_,
// scatter_.value, scatter_add_, index_add_, take, masked_fill (+ masked_fill_),
// masked_select and nonzero (data-dependent shapes, sized through
// allocate_output), _scatter (the functional scatter / scatter_add into a new
// tensor). Composites: scatter and scatter_add (one _scatter call where the
// device has it, else clone and the in-place op), scatter.value and index_add
// (clone, then the in-place op), masked_fill with a 0-d tensor value,
// embedding and one_hot.
//
// index_select and index_add_ reuse the gather / scatter_add kernels: the rule
// views their 1-D index as a tensor of the result's (source's) shape with
// stride 0 outside `dim`, which costs no copy.
#include <tessera/error.h>
#include <tessera/tensor.h>

#include <algorithm>

#include "../checked_math.h"
#include "../device_registry.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {

using V = IValue;



int64_t dims_of(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t size_or_1(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

void check_index_dtype(const StructuredCall& c, const Tensor& index, bool allow_int32) {
  const ScalarType t = index.scalar_type();
  TSR_CHECK(t == kLong || (allow_int32 && t == kInt), TypeError, c.op().name(), ": expected index dtype ",
            allow_int32 ? "int64 or int32" : "int64", ", got ", dtype_name(t));
}

void check_same_dtype(const StructuredCall& c, const Tensor& self, const Tensor& other, const char* name) {
  TSR_CHECK(self.scalar_type() == other.scalar_type(), TypeError, c.op().name(), ": expected ", name,
            " to have self's dtype ", dtype_name(self.scalar_type()), ", got ", dtype_name(other.scalar_type()));
}

// --- gather, index_select, take ---

void gather_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(2);
  c.device = common_device(c, {0, 2});
  check_index_dtype(c, index, false);
  TSR_CHECK(dims_of(self) == dims_of(index), ValueError, c.op().name(),
            ": index must have as many dims as self, got shapes ", self.sizes(), " and ", index.sizes());
  const int64_t dim = wrap_dim(c.op(), c.arg(1).i, self.dim());
  for (int64_t d = 0; d < index.dim(); ++d) {
    TSR_CHECK(d == dim || index.size(d) <= size_or_1(self, d), ValueError, c.op().name(), ": index shape ",
              index.sizes(), " exceeds self shape ", self.sizes(), " in dim ", d);
  }
  c.add_output(index.sizes(), self.scalar_type());
  c.set_tensor(0, self);
  c.set_int(1, dim);
  c.set_tensor(2, index);
  c.dispatch_dtype = self.scalar_type();
}

DimVector line_shape(int64_t ndim, int64_t dim, int64_t n) {
  DimVector v(static_cast<size_t>(ndim), 1);
  v[static_cast<size_t>(dim)] = n;
  return v;
}

void index_select_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(2);
  c.device = common_device(c, {0, 2});
  check_index_dtype(c, index, true);
  TSR_CHECK(index.dim() <= 1, ValueError, c.op().name(), ": index must be 0-d or 1-D, got shape ", index.sizes());
  const int64_t dim = wrap_dim(c.op(), c.arg(1).i, self.dim());
  const int64_t n = index.numel();
  // No index fits a dim of size 0; caught here since an empty result calls no kernel.
  TSR_CHECK(n == 0 || size_or_1(self, dim) > 0, IndexError, c.op().name(), ": index is out of bounds for dimension ",
            dim, " with size 0");
  if (self.dim() == 0) {
    TSR_CHECK(n == 1, ValueError, c.op().name(), ": a 0-d self takes exactly one index, got ", n);
    c.add_output({}, self.scalar_type());
    c.set_tensor(2, index.reshape({}));
  } else {
    DimVector out(self.sizes().begin(), self.sizes().end());
    out[static_cast<size_t>(dim)] = n;
    c.add_output(out, self.scalar_type());
    c.set_tensor(2, index.reshape(line_shape(self.dim(), dim, n)).expand(out));
  }
  c.set_tensor(0, self);
  c.set_int(1, dim);
  c.dispatch_dtype = self.scalar_type();
}

void take_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  check_index_dtype(c, index, false);
  c.add_output(index.sizes(), self.scalar_type());
  c.set_tensor(0, self.contiguous());
  c.set_tensor(1, index);
  c.dispatch_dtype = self.scalar_type();
}

// --- scatter_, scatter_.value, scatter_add_, index_add_ ---

// scatter's checks of index against self: as many dims, index within self
// outside `dim`. Returns dim, wrapped.
int64_t checked_scatter_dim(const StructuredCall& c, const Tensor& self, const Tensor& index) {
  check_index_dtype(c, index, false);
  TSR_CHECK(dims_of(self) == dims_of(index), ValueError, c.op().name(),
            ": index must have as many dims as self, got shapes ", self.sizes(), " and ", index.sizes());
  const int64_t dim = wrap_dim(c.op(), c.arg(1).i, self.dim());
  for (int64_t d = 0; d < index.dim(); ++d) {
    TSR_CHECK(d == dim || index.size(d) <= size_or_1(self, d), ValueError, c.op().name(), ": index shape ",
              index.sizes(), " exceeds self shape ", self.sizes(), " in dim ", d);
  }
  return dim;
}

// scatter's src, checked against self and index, as the kernel reads it: the
// leading corner of index's shape.
Tensor checked_scatter_src(const StructuredCall& c, const Tensor& self, const Tensor& index, Tensor src) {
  check_same_dtype(c, self, src, "src");
  TSR_CHECK(dims_of(src) == dims_of(index), ValueError, c.op().name(),
            ": src must have as many dims as index, got shapes ", src.sizes(), " and ", index.sizes());
  for (int64_t d = 0; d < index.dim(); ++d) {
    TSR_CHECK(index.size(d) <= size_or_1(src, d), ValueError, c.op().name(), ": index shape ", index.sizes(),
              " exceeds src shape ", src.sizes(), " in dim ", d);
    if (src.dim() > 0 && src.size(d) != index.size(d)) src = src.narrow(d, 0, index.size(d));
  }
  if (src.dim() != index.dim()) src = src.reshape(index.sizes());
  return src;
}

template <bool ValueForm>
void scatter_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(2);
  check_writable(c.op(), self);
  c.device = ValueForm ? common_device(c, {0, 2}) : common_device(c, {0, 2, 3});
  const int64_t dim = checked_scatter_dim(c, self, index);
  c.add_aliased_output(self);
  c.set_tensor(0, self);
  c.set_int(1, dim);
  // The kernel reads index and src while writing self at other positions: any
  // shared memory (even src being exactly self) is read from a snapshot.
  c.set_tensor(2, snapshot_if_overlapping(index, self));
  if constexpr (ValueForm) {
    c.set_scalar(3, c.arg(3).to_scalar(), self.scalar_type());
  } else {
    c.set_tensor(3, checked_scatter_src(c, self, index, snapshot_if_overlapping(c.tensor_arg(3), self)));
  }
  c.dispatch_dtype = self.scalar_type();
}

// _scatter(self, dim, index, src, add): scatter_ (add: scatter_add_) into a
// new tensor with self's values, self untouched; the kernel behind the
// functional scatter and scatter_add. Nothing it writes is read, so no
// snapshots.
void scatter_copy_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(2);
  c.device = common_device(c, {0, 2, 3});
  const int64_t dim = checked_scatter_dim(c, self, index);
  c.add_output(self.sizes(), self.scalar_type());
  c.set_tensor(0, self);
  c.set_int(1, dim);
  c.set_tensor(2, index);
  c.set_tensor(3, checked_scatter_src(c, self, index, c.tensor_arg(3)));
  c.set_bool(4, c.arg(4).b);
  c.dispatch_dtype = self.scalar_type();
}

void index_add_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& index = c.tensor_arg(2);
  const Tensor& source = c.tensor_arg(3);
  check_writable(c.op(), self);
  c.device = common_device(c, {0, 2, 3});
  check_index_dtype(c, index, true);
  check_same_dtype(c, self, source, "source");
  TSR_CHECK(index.dim() <= 1, ValueError, c.op().name(), ": index must be 0-d or 1-D, got shape ", index.sizes());
  const int64_t dim = wrap_dim(c.op(), c.arg(1).i, self.dim());
  const int64_t n = index.numel();
  TSR_CHECK(dims_of(source) == dims_of(self), ValueError, c.op().name(),
            ": source must have as many dims as self, got shapes ", source.sizes(), " and ", self.sizes());
  TSR_CHECK(size_or_1(source, dim) == n, ValueError, c.op().name(), ": source has size ", size_or_1(source, dim),
            " in dim ", dim, " but index has ", n, " elements");
  for (int64_t d = 0; d < self.dim(); ++d) {
    TSR_CHECK(d == dim || source.size(d) == self.size(d), ValueError, c.op().name(), ": source shape ",
              source.sizes(), " does not match self shape ", self.sizes(), " outside dim ", dim);
  }
  const Scalar alpha = c.arg(4).to_scalar();
  TSR_CHECK(!(alpha.is_floating_point() && !is_floating_type(self.scalar_type())), TypeError, c.op().name(),
            ": for integer or bool tensors alpha must not be a floating-point number (got ", alpha, ")");
  // As scatter_: index and source are read while self is written elsewhere.
  Tensor src = snapshot_if_overlapping(source, self);
  const bool unit = alpha.is_bool() ? alpha.to_bool() : alpha.to_double() == 1.0;
  if (!unit) src = src.mul(alpha).to(self.scalar_type());
  c.add_aliased_output(self);
  c.set_tensor(0, self);
  c.set_int(1, dim);
  const Tensor idx = snapshot_if_overlapping(index, self);
  if (self.dim() == 0) {
    c.set_tensor(2, idx.reshape({}));
    c.set_tensor(3, src.reshape({}));
  } else {
    c.set_tensor(2, idx.reshape(line_shape(self.dim(), dim, n)).expand(source.sizes()));
    c.set_tensor(3, src);
  }
  c.dispatch_dtype = self.scalar_type();
}

// --- masked_fill, masked_select ---

void check_mask(const StructuredCall& c, const Tensor& mask) {
  TSR_CHECK(mask.scalar_type() == kBool, TypeError, c.op().name(), ": expected a bool mask, got ",
            dtype_name(mask.scalar_type()));
}

template <bool InPlace>
void masked_fill_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& mask = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  check_mask(c, mask);
  const DimVector shape = broadcast_shapes(c.op(), self.sizes(), mask.sizes());
  if constexpr (InPlace) {
    check_writable(c.op(), self);
    TSR_CHECK(self.sizes().equals(shape), ValueError, c.op().name(), ": mask of shape ", mask.sizes(),
              " cannot be broadcast to self's shape ", self.sizes());
    c.add_aliased_output(self);
    c.set_tensor(0, self);
    c.set_tensor(1, cast_and_expand(unaliased(mask, self), kBool, shape));
  } else {
    c.add_output(shape, self.scalar_type());
    c.set_tensor(0, cast_and_expand(self, self.scalar_type(), shape));
    c.set_tensor(1, cast_and_expand(mask, kBool, shape));
  }
  check_value_fits(c.op(), c.arg(2).to_scalar(), self.scalar_type());
  c.set_scalar(2, c.arg(2).to_scalar(), self.scalar_type());
  c.dispatch_dtype = self.scalar_type();
}

void masked_select_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& mask = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  check_mask(c, mask);
  const DimVector shape = broadcast_shapes(c.op(), self.sizes(), mask.sizes());
  c.add_data_dependent_output(self.scalar_type());
  c.set_tensor(0, cast_and_expand(self, self.scalar_type(), shape));
  c.set_tensor(1, cast_and_expand(mask, kBool, shape));
  c.dispatch_dtype = self.scalar_type();
}

// --- composites ---

template <const OpHandle& InPlaceOp>
void clone_then(const Operator&, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, InPlaceOp().name(), ": undefined tensor argument");
  Tensor out = self.clone();
  IValue args[5];
  args[0] = V::of(out);
  for (int i = 1; i < f.num_args; ++i) args[i] = f.args[i];
  Tensor result;
  Frame frame{args, f.num_args, &result, 1};
  Dispatcher::instance().call(InPlaceOp(), frame);
  f.outputs[0] = std::move(out);
}

extern constinit OpHandle op__scatter;

// Errors of an internal kernel op the composite `op` calls, reported under
// op's name (the same error type).
template <typename F>
Tensor named_as(const Operator& op, const Operator& inner, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    std::string message = e.what();
    if (message.rfind(inner.name(), 0) == 0) message.replace(0, inner.name().size(), op.name());
    throw_error(e.code(), message);
  }
}

// The functional scatter / scatter_add: one _scatter call where self's device
// has the kernel for the dtype (the result written once, no clone pass before
// it), else clone + the in-place op.
template <bool Add, const OpHandle& InPlaceOp>
void scatter_functional(const Operator& op, DispatchKeySet keys, Frame& f, void* context) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, op.name(), ": undefined tensor argument");
  if (!runs_on(op__scatter(), self.device(), self.scalar_type())) return clone_then<InPlaceOp>(op, keys, f, context);
  f.outputs[0] = named_as(op, op__scatter(), [&] {
    return call(op__scatter(), {f.args[0], f.args[1], f.args[2], f.args[3], V::of(Add)});
  });
}

bool holds_data(const Tensor& t) { return !device_entry(t.device()).no_storage(); }

// A 0-d tensor value as a number (meta tensors hold none: any number gives the shape).
// Defined with the other handles below; the masked_fill.Tensor kernels call them.
extern constinit OpHandle op_masked_fill;
extern constinit OpHandle op_masked_fill_;

Scalar value_of(const Operator& op, const Tensor& value) {
  TSR_CHECK(value.defined(), ValueError, op.name(), ": undefined value tensor");
  TSR_CHECK(value.dim() == 0, ValueError, op.name(), ": only a 0-d value tensor is supported, got shape ",
            value.sizes());
  return holds_data(value) ? value.item() : Scalar(int64_t{0});
}

void masked_fill_tensor_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Scalar v = value_of(op, *f.args[2].tensor);
  f.outputs[0] = call(op_masked_fill(), {f.args[0], f.args[1], V::of(v)});
}

void masked_fill_tensor_inplace_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Scalar v = value_of(op, *f.args[2].tensor);
  call(op_masked_fill_(), {f.args[0], f.args[1], V::of(v)});
  f.outputs[0] = *f.args[0].tensor;
}

// Errors of the ops a composite calls are reported under the composite's name.
template <typename F>
Tensor renamed_errors(const Operator& op, F&& f) {
  try {
    return f();
  } catch (const IndexError& e) {
    throw IndexError(op.name() + ": " + e.what());
  }
}

void embedding_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& weight = *f.args[0].tensor;
  const Tensor& indices = *f.args[1].tensor;
  TSR_CHECK(weight.defined() && indices.defined(), ValueError, op.name(), ": undefined tensor argument");
  TSR_CHECK(weight.dim() == 2, ValueError, op.name(), ": weight must be 2-D, got shape ", weight.sizes());
  TSR_CHECK(indices.scalar_type() == kLong || indices.scalar_type() == kInt, TypeError, op.name(),
            ": expected indices of dtype int64 or int32, got ", dtype_name(indices.scalar_type()));
  if (!f.args[2].is_none()) {
    const int64_t p = f.args[2].i, rows = weight.size(0);
    TSR_CHECK(p >= -rows && p < rows, ValueError, op.name(), ": padding_idx ", p,
              " must be within num_embeddings (", rows, ")");
  }
  DimVector shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(weight.size(1));
  (void)checked::check_shape(op.name(), shape, weight.scalar_type());
  f.outputs[0] = renamed_errors(op, [&] { return weight.index_select(0, indices.reshape({-1})).view(shape); });
}

void one_hot_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, op.name(), ": undefined tensor argument");
  TSR_CHECK(self.scalar_type() == kLong, TypeError, op.name(), ": expected an int64 tensor of class indices, got ",
            dtype_name(self.scalar_type()));
  int64_t classes = f.args[1].i;
  // As PyTorch: at least one class, or -1 for max + 1 (0 classes would make
  // every index out of range, and an empty result hid that).
  TSR_CHECK(classes >= 1 || classes == -1, ValueError, op.name(),
            ": num_classes must be positive, or -1 to use the largest class + 1; got ", classes, " (input shape ",
            self.sizes(), ")");
  if (classes == -1) {
    TSR_CHECK(holds_data(self), NotImplementedError, op.name(),
              ": num_classes=-1 needs the data (max + 1), which a ", self.device().str(),
              " tensor does not hold; pass num_classes");
    TSR_CHECK(self.numel() > 0, ValueError, op.name(), ": cannot infer num_classes from an empty tensor");
    const std::vector<int64_t> v = self.to_vector<int64_t>();
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    TSR_CHECK(*lo >= 0, ValueError, op.name(), ": class values must be non-negative, got ", *lo);
    TSR_CHECK(!checked::add(*hi, 1, classes), ValueError, op.name(), ": the largest class ", *hi,
              " plus one is beyond int64");
  }
  DimVector shape(self.sizes().begin(), self.sizes().end());
  shape.push_back(classes);
  (void)checked::check_shape(op.name(), shape, kLong);
  Tensor out = zeros(shape, TensorOptions(kLong).device(self.device()));
  f.outputs[0] = renamed_errors(op, [&] { return out.scatter_(-1, self.unsqueeze(-1), int64_t{1}); });
}


constexpr char kFamily[] = "indexing";

#define TSR_STRUCTURED(fn, schema, flags, meta) constinit OpHandle op_##fn{structured(kFamily, schema, flags, meta)};
#define TSR_COMPOSITE(fn, schema, flags, kernel) constinit OpHandle op_##fn{composite(kFamily, schema, flags, kernel)};

TSR_STRUCTURED(index_select, "index_select(Tensor self, int dim, Tensor index) -> Tensor", 0, &index_select_meta)
TSR_STRUCTURED(gather, "gather(Tensor self, int dim, Tensor index) -> Tensor", 0, &gather_meta)
TSR_STRUCTURED(take, "take(Tensor self, Tensor index) -> Tensor", 0, &take_meta)
TSR_STRUCTURED(scatter_, "scatter_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", kInPlace,
               &scatter_meta<false>)
TSR_STRUCTURED(scatter_value_, "scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)",
               kInPlace, &scatter_meta<true>)
TSR_STRUCTURED(scatter_add_, "scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
               kInPlace, &scatter_meta<false>)
TSR_STRUCTURED(index_add_,
               "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)",
               kInPlace, &index_add_meta)
TSR_STRUCTURED(masked_fill, "masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor", 0,
               &masked_fill_meta<false>)
TSR_STRUCTURED(masked_select, "masked_select(Tensor self, Tensor mask) -> Tensor", kDataDependent,
               &masked_select_meta)
constinit OpHandle op_masked_fill_{inplace_variant(kFamily, op_masked_fill,
    "masked_fill_(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", &masked_fill_meta<true>)};
TSR_STRUCTURED(_scatter, "_scatter(Tensor self, int dim, Tensor index, Tensor src, bool add) -> Tensor", 0,
               &scatter_copy_meta)
TSR_COMPOSITE(scatter, "scatter(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", 0,
              (&scatter_functional<false, op_scatter_>))
TSR_COMPOSITE(scatter_value, "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", 0,
              &clone_then<op_scatter_value_>)
TSR_COMPOSITE(scatter_add, "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", 0,
              (&scatter_functional<true, op_scatter_add_>))
TSR_COMPOSITE(index_add, "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
              0, &clone_then<op_index_add_>)
TSR_COMPOSITE(masked_fill_tensor, "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", 0,
              &masked_fill_tensor_kernel)
TSR_COMPOSITE(masked_fill_tensor_, "masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
              kInPlace, &masked_fill_tensor_inplace_kernel)
TSR_COMPOSITE(embedding, "embedding(Tensor weight, Tensor indices, int? padding_idx=None) -> Tensor", 0,
              &embedding_kernel)
TSR_COMPOSITE(one_hot, "one_hot(Tensor self, int num_classes=-1) -> Tensor", 0, &one_hot_kernel)
#undef TSR_STRUCTURED
#undef TSR_COMPOSITE

void nonzero_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  c.add_data_dependent_output(kLong);
  c.set_tensor(0, self);
  c.dispatch_dtype = self.scalar_type();
}

constinit OpHandle op_nonzero{structured(kFamily, "nonzero(Tensor self) -> Tensor", kDataDependent, &nonzero_meta)};

}  // namespace

void declare_indexing_ops() {
  declare_now({&op_nonzero, &op_index_select, &op_gather, &op_take, &op_scatter_, &op_scatter_value_, &op_scatter_add_,
               &op__scatter,
               &op_index_add_, &op_masked_fill, &op_masked_fill_, &op_masked_select, &op_scatter, &op_scatter_value,
               &op_scatter_add, &op_index_add, &op_masked_fill_tensor, &op_masked_fill_tensor_, &op_embedding,
               &op_one_hot});
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {

using V = IValue;
using ops::call;

Tensor nonzero(const Tensor& self) { return call(ops::op_nonzero(), {V::of(self)}); }
Tensor Tensor::nonzero() const { return tessera::nonzero(*this); }

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return call(ops::op_index_select(), {V::of(self), V::of(dim), V::of(index)});
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  return call(ops::op_gather(), {V::of(self), V::of(dim), V::of(index)});
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return call(ops::op_scatter(), {V::of(self), V::of(dim), V::of(index), V::of(src)});
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return call(ops::op_scatter_value(), {V::of(self), V::of(dim), V::of(index), V::of(value)});
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return call(ops::op_scatter_add(), {V::of(self), V::of(dim), V::of(index), V::of(src)});
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return call(ops::op_index_add(), {V::of(self), V::of(dim), V::of(index), V::of(source), V::of(alpha)});
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return call(ops::op_masked_fill(), {V::of(self), V::of(mask), V::of(value)});
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return call(ops::op_masked_fill_tensor(), {V::of(self), V::of(mask), V::of(value)});
}
Tensor& masked_fill_out(Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value) {
  return ops::out_form("masked_fill", out, [&] { return masked_fill(self, mask, value); });
}
Tensor& masked_fill_out(Tensor& out, const Tensor& self, const Tensor& mask, const Tensor& value) {
  return ops::out_form("masked_fill", out, [&] { return masked_fill(self, mask, value); });
}
Tensor masked_select(const Tensor& self, const Tensor& mask) {
  return call(ops::op_masked_select(), {V::of(self), V::of(mask)});
}
Tensor take(const Tensor& self, const Tensor& index) { return call(ops::op_take(), {V::of(self), V::of(index)}); }
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  return call(ops::op_embedding(), {V::of(weight), V::of(indices), padding_idx ? V::of(*padding_idx) : V::none()});
}
Tensor one_hot(const Tensor& self, int64_t num_classes) {
  return call(ops::op_one_hot(), {V::of(self), V::of(num_classes)});
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tessera::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tessera::gather(*this, dim, index); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tessera::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return tessera::scatter(*this, dim, index, value);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::call_inplace(*this, ops::op_scatter_(), {V::of(*this), V::of(dim), V::of(index), V::of(src)});
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) {
  return ops::call_inplace(*this, ops::op_scatter_value_(), {V::of(*this), V::of(dim), V::of(index), V::of(value)});
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tessera::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::call_inplace(*this, ops::op_scatter_add_(), {V::of(*this), V::of(dim), V::of(index), V::of(src)});
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return tessera::index_add(*this, dim, index, source, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return ops::call_inplace(*this, ops::op_index_add_(),
                           {V::of(*this), V::of(dim), V::of(index), V::of(source), V::of(alpha)});
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return tessera::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return tessera::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return ops::call_inplace(*this, ops::op_masked_fill_(), {V::of(*this), V::of(mask), V::of(value)});
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  return ops::call_inplace(*this, ops::op_masked_fill_tensor_(), {V::of(*this), V::of(mask), V::of(value)});
}
Tensor Tensor::masked_select(const Tensor& mask) const { return tessera::masked_select(*this, mask); }
Tensor Tensor::take(const Tensor& index) const { return tessera::take(*this, index); }

}  // namespace tessera
