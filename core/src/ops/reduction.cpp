// Reductions and scans: sum, prod, amax/amin, max/min (values and indices),
// any/all, var/std, norm, logsumexp, cumsum/cumprod (plugin kernels) and mean,
// max/min without dim, argmax/argmin (composites of those).
#include <tessera/error.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "../structured.h"
#include "ops.h"
#include "out_target.h"

namespace tessera::ops {
namespace {

using V = IValue;

// The name users know: "max" for the overload "max.dim".
std::string_view base_name(const Operator& op) {
  std::string_view n = op.name();
  return n.substr(0, n.find('.'));
}

// The dims a reduction runs over: None or [] means all of them (as torch.sum).
struct ReducedDims {
  bool reduce[64] = {};
  DimVector dims;       // sorted, unique, non-negative
  DimVector out_shape;  // size-1 dims kept when keepdim
  int64_t count = 1;    // reduced elements per output
};

ReducedDims reduced_dims(const Operator& op, IntArrayRef sizes, const IValue& dim_arg, bool keepdim) {
  ReducedDims r;
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  TSR_CHECK(ndim <= 64, ValueError, base_name(op), ": tensors of more than 64 dims are not supported");
  // int[1] takes one int too (boxed callers may pass a plain number).
  TSR_CHECK(dim_arg.is_none() || dim_arg.tag == IValue::Tag::IntList || dim_arg.tag == IValue::Tag::Int, TypeError,
            base_name(op), ": dim must be an int or a list of ints");
  const IntArrayRef dims = dim_arg.tag == IValue::Tag::Int ? IntArrayRef(&dim_arg.i, 1)
                           : dim_arg.is_none()            ? IntArrayRef()
                                                          : dim_arg.int_list();
  if (dims.empty()) {
    std::fill(r.reduce, r.reduce + ndim, true);
  } else {
    for (int64_t d : dims) {
      const int64_t w = wrap_dim(op, d, ndim);
      if (ndim == 0) continue;
      TSR_CHECK(!r.reduce[w], ValueError, base_name(op), ": dim ", w, " appears more than once in dim=",
                dims);
      r.reduce[w] = true;
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (r.reduce[d]) {
      r.dims.push_back(d);
      r.count *= sizes[d];  // fits: a product of a tensor's sizes (core/src/checked_math.h)
      if (keepdim) r.out_shape.push_back(1);
    } else {
      r.out_shape.push_back(sizes[d]);
    }
  }
  return r;
}

// Reductions without an identity refuse a zero-size reduced dim (PyTorch's IndexError).
void check_nonempty(const Operator& op, const Tensor& self, const ReducedDims& r) {
  for (int64_t d : r.dims) {
    TSR_CHECK(self.size(d) != 0, IndexError, base_name(op), "(): expected reduction dim ", d,
              " to have non-zero size; input shape ", self.sizes(), " (the reduction has no identity)");
  }
}

void check_floating(const Operator& op, const Tensor& self) {
  TSR_CHECK(is_floating_type(self.scalar_type()), TypeError, base_name(op),
            "(): expected a floating point input, got ", dtype_name(self.scalar_type()));
}

TsrValue bool_value(bool b) {
  TsrValue v{};
  v.tag = TSR_VALUE_BOOL;
  v.as.b = b ? 1 : 0;
  return v;
}
TsrValue float_value(double d) {
  TsrValue v{};
  v.tag = TSR_VALUE_FLOAT;
  v.as.f = d;
  return v;
}
TsrValue int_value(int64_t i) {
  TsrValue v{};
  v.tag = TSR_VALUE_INT;
  v.as.i = i;
  return v;
}
TsrValue dtype_value(ScalarType t) {
  TsrValue v{};
  v.tag = TSR_VALUE_DTYPE;
  v.as.dtype = static_cast<TsrDType>(t);
  return v;
}

// sum and prod: (self, dim, keepdim, dtype); integers and bool give int64.
template <bool IsSum>
void sum_prod_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const bool keepdim = c.arg(2).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(1), keepdim);
  ScalarType in_dtype = self.scalar_type();
  ScalarType out_dtype;
  if (!c.arg(3).is_none()) {
    out_dtype = in_dtype = c.arg(3).dtype;
  } else {
    out_dtype = is_floating_type(in_dtype) ? in_dtype : kLong;
  }
  c.add_output(r.out_shape, out_dtype);
  c.set_tensor(0, self.scalar_type() == in_dtype ? self : self.to(in_dtype));
  c.set_int_list(1, r.dims);
  c.set_value(2, bool_value(keepdim));
  if (c.arg(3).is_none()) {
    c.set_none(3);
  } else {
    c.set_value(3, dtype_value(out_dtype));
  }
  if (IsSum && self.numel() == 0) c.set_zero_fill_outputs();  // the sum of nothing is 0
  c.dispatch_dtype = in_dtype;
}

// amax, amin: (self, dim, keepdim) -> self's dtype.
void amax_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const bool keepdim = c.arg(2).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(1), keepdim);
  check_nonempty(c.op(), self, r);
  c.add_output(r.out_shape, self.scalar_type());
  c.set_tensor_borrowed(0, self);
  c.set_int_list(1, r.dims);
  c.set_value(2, bool_value(keepdim));
  c.dispatch_dtype = self.scalar_type();
}

// max.dim, min.dim: (self, dim, keepdim) -> (values, indices int64). The kernel
// gets dim as a one-element list (empty for a 0-d tensor).
void max_dim_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const bool keepdim = c.arg(2).b;
  const int64_t d = wrap_dim(c.op(), c.arg(1).i, self.dim());
  const int64_t one[1] = {d};
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), V::of(IntArrayRef(one, 1)), keepdim);
  check_nonempty(c.op(), self, r);
  c.add_output(r.out_shape, self.scalar_type());
  c.add_output(r.out_shape, kLong);
  c.set_tensor_borrowed(0, self);
  c.set_int_list(1, r.dims);
  c.set_value(2, bool_value(keepdim));
  c.dispatch_dtype = self.scalar_type();
}

// any, all: (self, dim, keepdim) -> bool (uint8 for uint8 input, as PyTorch).
void any_all_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const bool keepdim = c.arg(2).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(1), keepdim);
  c.add_output(r.out_shape, self.scalar_type() == kByte ? kByte : kBool);
  c.set_tensor_borrowed(0, self);
  c.set_int_list(1, r.dims);
  c.set_value(2, bool_value(keepdim));
  c.dispatch_dtype = self.scalar_type();
}

// var, std: (self, dim, correction, keepdim) -> self's dtype (floating only).
void var_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  check_floating(c.op(), self);
  const bool keepdim = c.arg(3).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(1), keepdim);
  const double correction = c.arg(2).is_none() ? 1.0 : c.arg(2).to_scalar().to_double();
  TSR_CHECK(std::isfinite(correction), ValueError, base_name(c.op()), "(): correction must be finite, got ", correction);
  c.add_output(r.out_shape, self.scalar_type());
  c.set_tensor_borrowed(0, self);
  c.set_int_list(1, r.dims);
  c.set_value(2, float_value(correction));
  c.set_value(3, bool_value(keepdim));
  c.dispatch_dtype = self.scalar_type();
}

// norm: (self, p, dim, keepdim) -> self's dtype (floating only).
void norm_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  check_floating(c.op(), self);
  const bool keepdim = c.arg(3).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(2), keepdim);
  const double p = c.arg(1).is_none() ? 2.0 : c.arg(1).to_scalar().to_double();
  TSR_CHECK(!std::isnan(p), ValueError, "norm(): p must not be NaN");
  if (p < 0 || std::isinf(p)) {
    TSR_CHECK(r.count != 0, IndexError, "norm(): cannot compute the ", p, "-norm of an empty reduction (input shape ",
              self.sizes(), "): it has no identity");
  }
  c.add_output(r.out_shape, self.scalar_type());
  c.set_tensor_borrowed(0, self);
  c.set_value(1, float_value(p));
  c.set_int_list(2, r.dims);
  c.set_value(3, bool_value(keepdim));
  c.dispatch_dtype = self.scalar_type();
}

// logsumexp: (self, dim, keepdim); integers and bool are computed in float32.
void logsumexp_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const bool keepdim = c.arg(2).b;
  const ReducedDims r = reduced_dims(c.op(), self.sizes(), c.arg(1), keepdim);
  const ScalarType t = is_floating_type(self.scalar_type()) ? self.scalar_type() : kDefaultFloat;
  c.add_output(r.out_shape, t);
  c.set_tensor(0, self.scalar_type() == t ? self : self.to(t));
  c.set_int_list(1, r.dims);
  c.set_value(2, bool_value(keepdim));
  c.dispatch_dtype = t;
}

// cumsum, cumprod: (self, dim, dtype); integers and bool give int64 unless dtype= says otherwise.
void scan_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const int64_t d = wrap_dim(c.op(), c.arg(1).i, self.dim());
  ScalarType t = self.scalar_type();
  if (!c.arg(2).is_none()) {
    t = c.arg(2).dtype;
  } else if (!is_floating_type(t)) {
    t = kLong;
  }
  c.add_output(self.sizes(), t);
  c.set_tensor(0, self.scalar_type() == t ? self : self.to(t));
  c.set_value(1, int_value(d));
  if (c.arg(2).is_none()) {
    c.set_none(2);
  } else {
    c.set_value(2, dtype_value(t));
  }
  c.dispatch_dtype = t;
}

// ---- composites ----

// mean = sum / count. float16/bfloat16 sum in float32 (no overflow of the
// intermediate sum), then round once.
void mean_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, "mean(): undefined tensor argument");
  const bool keepdim = f.args[2].b;
  const bool has_dtype = !f.args[3].is_none();
  const ScalarType out = has_dtype ? f.args[3].dtype : self.scalar_type();
  TSR_CHECK(is_floating_type(out), TypeError, "mean(): could not infer output dtype. ",
            has_dtype ? "dtype= must be a floating point dtype" : "Input dtype must be floating point",
            ", got ", dtype_name(out), " (pass dtype= to take the mean of an integer tensor)");
  const ReducedDims r = reduced_dims(op, self.sizes(), f.args[1], keepdim);
  const ScalarType acc = (out == kHalf || out == kBFloat16) ? kFloat : out;
  const std::optional<ScalarType> sum_dtype =
      acc == self.scalar_type() ? std::nullopt : std::optional<ScalarType>(acc);
  const Tensor s = sum(self, IntArrayRef(r.dims), keepdim, sum_dtype);
  Tensor m = s.div(Scalar(static_cast<double>(r.count)));
  f.outputs[0] = m.scalar_type() == out ? m : m.to(out);
}

// max(), min(): the value over every element; amax/amin over all dims.
template <bool IsMax>
void max_all_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, op.name(), "(): undefined tensor argument");
  TSR_CHECK(self.numel() != 0, IndexError, op.name(),
            "(): expected reduction dim to be specified for input.numel() == 0 (input shape ", self.sizes(),
            "); specify the reduction dim with the 'dim' argument");
  f.outputs[0] = IsMax ? amax(self, IntArrayRef{}, false) : amin(self, IntArrayRef{}, false);
}

// argmax, argmin: the indices of max.dim/min.dim; dim None flattens first.
template <bool IsMax>
void arg_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& self = *f.args[0].tensor;
  TSR_CHECK(self.defined(), ValueError, op.name(), "(): undefined tensor argument");
  const bool keepdim = f.args[2].b;
  if (f.args[1].is_none()) {
    TSR_CHECK(self.numel() != 0, IndexError, op.name(),
              "(): expected reduction dim to be specified for input.numel() == 0 (input shape ", self.sizes(), ")");
    Tensor idx = std::get<1>(IsMax ? max(self.reshape({-1}), 0, false) : min(self.reshape({-1}), 0, false));
    if (keepdim) {
      DimVector ones(static_cast<size_t>(self.dim()), 1);
      idx = idx.reshape(ones);
    }
    f.outputs[0] = idx;
    return;
  }
  const int64_t d = wrap_dim(op, f.args[1].i, self.dim());
  TSR_CHECK(self.dim() == 0 || self.size(d) != 0, IndexError, op.name(), "(): expected reduction dim ", d,
            " to have non-zero size; input shape ", self.sizes());
  f.outputs[0] = std::get<1>(IsMax ? max(self, d, keepdim) : min(self, d, keepdim));
}

constexpr char kFamily[] = "reduction";

constinit OpHandle op_sum{structured(kFamily,
    "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    0, &sum_prod_meta<true>)};

#define TSR_REDUCTION_OP(fn, schema, meta) constinit OpHandle op_##fn{structured(kFamily, schema, 0, meta)};
#define TSR_COMPOSITE_OP(fn, schema, kernel) constinit OpHandle op_##fn{composite(kFamily, schema, 0, kernel)};

TSR_REDUCTION_OP(prod, "prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                 &sum_prod_meta<false>)
TSR_REDUCTION_OP(amax, "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", &amax_meta)
TSR_REDUCTION_OP(amin, "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", &amax_meta)
TSR_REDUCTION_OP(max_dim, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
                 &max_dim_meta)
TSR_REDUCTION_OP(min_dim, "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
                 &max_dim_meta)
TSR_REDUCTION_OP(any, "any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", &any_all_meta)
TSR_REDUCTION_OP(all, "all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", &any_all_meta)
TSR_REDUCTION_OP(var, "var(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
                 &var_meta)
TSR_REDUCTION_OP(std, "std(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
                 &var_meta)
TSR_REDUCTION_OP(norm, "norm(Tensor self, Scalar? p=2, int[1]? dim=None, bool keepdim=False) -> Tensor", &norm_meta)
TSR_REDUCTION_OP(logsumexp, "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", &logsumexp_meta)
TSR_REDUCTION_OP(cumsum, "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", &scan_meta)
TSR_REDUCTION_OP(cumprod, "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", &scan_meta)
TSR_COMPOSITE_OP(mean, "mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                 &mean_kernel)
TSR_COMPOSITE_OP(max, "max(Tensor self) -> Tensor", &max_all_kernel<true>)
TSR_COMPOSITE_OP(min, "min(Tensor self) -> Tensor", &max_all_kernel<false>)
TSR_COMPOSITE_OP(argmax, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", &arg_kernel<true>)
TSR_COMPOSITE_OP(argmin, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", &arg_kernel<false>)
#undef TSR_REDUCTION_OP
#undef TSR_COMPOSITE_OP

}  // namespace

void declare_reduction_ops() {
  declare_now({&op_sum, &op_prod, &op_amax, &op_amin, &op_max_dim, &op_min_dim, &op_any, &op_all, &op_var, &op_std,
               &op_norm, &op_logsumexp, &op_cumsum, &op_cumprod, &op_mean, &op_max, &op_min, &op_argmax, &op_argmin});
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {
namespace {

using V = IValue;
using ops::call;

V opt_dtype(const std::optional<ScalarType>& d) { return d ? V::of(*d) : V::none(); }

// Calls a two-output op (values, indices).
std::tuple<Tensor, Tensor> call2(const Operator& op, const Tensor& self, int64_t dim, bool keepdim) {
  const V args[] = {V::of(self), V::of(dim), V::of(keepdim)};
  Tensor out[2];
  Frame frame{args, 3, out, 2};
  Dispatcher::instance().call(op, frame);
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace

Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return call(ops::op_mean(), {V::of(self), V::none(), V::of(false), opt_dtype(dtype)});
}
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return call(ops::op_mean(), {V::of(self), V::of(dim), V::of(keepdim), opt_dtype(dtype)});
}
Tensor& mean_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return ops::out_form("mean", out, [&] { return mean(self, dim, keepdim, dtype); });
}
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return call(ops::op_prod(), {V::of(self), V::none(), V::of(false), opt_dtype(dtype)});
}
Tensor prod(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return call(ops::op_prod(), {V::of(self), V::of(dim), V::of(keepdim), opt_dtype(dtype)});
}
Tensor& prod_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return ops::out_form("prod", out, [&] { return prod(self, dim, keepdim, dtype); });
}
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return call(ops::op_sum(), {V::of(self), V::none(), V::of(false), opt_dtype(dtype)});
}
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return call(ops::op_sum(), {V::of(self), V::of(dim), V::of(keepdim), opt_dtype(dtype)});
}
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return tessera::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tessera::sum(*this, dim, keepdim, dtype);
}
Tensor& sum_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return ops::out_form("sum", out, [&] { return sum(self, dim, keepdim, dtype); });
}
Tensor max(const Tensor& self) { return call(ops::op_max(), {V::of(self)}); }
Tensor min(const Tensor& self) { return call(ops::op_min(), {V::of(self)}); }
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return call2(ops::op_max_dim(), self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return call2(ops::op_min_dim(), self, dim, keepdim);
}
std::tuple<Tensor&, Tensor&> max_out(Tensor& values, Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  auto [v, i] = max(self, dim, keepdim);
  ops::assign_out("max", v, values);
  ops::assign_out("max", i, indices);
  return {values, indices};
}
std::tuple<Tensor&, Tensor&> min_out(Tensor& values, Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  auto [v, i] = min(self, dim, keepdim);
  ops::assign_out("min", v, values);
  ops::assign_out("min", i, indices);
  return {values, indices};
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return call(ops::op_argmax(), {V::of(self), dim ? V::of(*dim) : V::none(), V::of(keepdim)});
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return call(ops::op_argmin(), {V::of(self), dim ? V::of(*dim) : V::none(), V::of(keepdim)});
}
Tensor& argmax_out(Tensor& out, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return ops::out_form("argmax", out, [&] { return argmax(self, dim, keepdim); });
}
Tensor& argmin_out(Tensor& out, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return ops::out_form("argmin", out, [&] { return argmin(self, dim, keepdim); });
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call(ops::op_amax(), {V::of(self), V::of(dim), V::of(keepdim)});
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call(ops::op_amin(), {V::of(self), V::of(dim), V::of(keepdim)});
}
Tensor& amax_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim) {
  return ops::out_form("amax", out, [&] { return amax(self, dim, keepdim); });
}
Tensor& amin_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim) {
  return ops::out_form("amin", out, [&] { return amin(self, dim, keepdim); });
}
Tensor any(const Tensor& self) { return call(ops::op_any(), {V::of(self), V::none(), V::of(false)}); }
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call(ops::op_any(), {V::of(self), V::of(dim), V::of(keepdim)});
}
Tensor all(const Tensor& self) { return call(ops::op_all(), {V::of(self), V::none(), V::of(false)}); }
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call(ops::op_all(), {V::of(self), V::of(dim), V::of(keepdim)});
}
Tensor& any_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim) {
  return ops::out_form("any", out, [&] { return any(self, dim, keepdim); });
}
Tensor& all_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim) {
  return ops::out_form("all", out, [&] { return all(self, dim, keepdim); });
}
Tensor var(const Tensor& self) { return call(ops::op_var(), {V::of(self), V::none(), V::none(), V::of(false)}); }
Tensor var(const Tensor& self, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return call(ops::op_var(), {V::of(self), V::of(dim), V::of(correction), V::of(keepdim)});
}
Tensor std(const Tensor& self) { return call(ops::op_std(), {V::of(self), V::none(), V::none(), V::of(false)}); }
Tensor std(const Tensor& self, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return call(ops::op_std(), {V::of(self), V::of(dim), V::of(correction), V::of(keepdim)});
}
Tensor& var_out(Tensor& out, const Tensor& self, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return ops::out_form("var", out, [&] { return var(self, dim, correction, keepdim); });
}
Tensor& std_out(Tensor& out, const Tensor& self, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return ops::out_form("std", out, [&] { return std(self, dim, correction, keepdim); });
}
Tensor norm(const Tensor& self, const Scalar& p) {
  return call(ops::op_norm(), {V::of(self), V::of(p), V::none(), V::of(false)});
}
Tensor norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  return call(ops::op_norm(), {V::of(self), V::of(p), V::of(dim), V::of(keepdim)});
}
Tensor& norm_out(Tensor& out, const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  return ops::out_form("norm", out, [&] { return norm(self, p, dim, keepdim); });
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call(ops::op_logsumexp(), {V::of(self), V::of(dim), V::of(keepdim)});
}
Tensor& logsumexp_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim) {
  return ops::out_form("logsumexp", out, [&] { return logsumexp(self, dim, keepdim); });
}
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return call(ops::op_cumsum(), {V::of(self), V::of(dim), opt_dtype(dtype)});
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return call(ops::op_cumprod(), {V::of(self), V::of(dim), opt_dtype(dtype)});
}
Tensor& cumsum_out(Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return ops::out_form("cumsum", out, [&] { return cumsum(self, dim, dtype); });
}
Tensor& cumprod_out(Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return ops::out_form("cumprod", out, [&] { return cumprod(self, dim, dtype); });
}

// ---- methods ----
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return tessera::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tessera::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return tessera::prod(*this, dtype); }
Tensor Tensor::prod(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tessera::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return tessera::max(*this); }
Tensor Tensor::min() const { return tessera::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return tessera::max(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return tessera::min(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return tessera::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return tessera::argmin(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return tessera::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return tessera::amin(*this, dim, keepdim); }
Tensor Tensor::any() const { return tessera::any(*this); }
Tensor Tensor::any(IntArrayRef dim, bool keepdim) const { return tessera::any(*this, dim, keepdim); }
Tensor Tensor::all() const { return tessera::all(*this); }
Tensor Tensor::all(IntArrayRef dim, bool keepdim) const { return tessera::all(*this, dim, keepdim); }
Tensor Tensor::var() const { return tessera::var(*this); }
Tensor Tensor::var(IntArrayRef dim, const Scalar& correction, bool keepdim) const {
  return tessera::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std() const { return tessera::std(*this); }
Tensor Tensor::std(IntArrayRef dim, const Scalar& correction, bool keepdim) const {
  return tessera::std(*this, dim, correction, keepdim);
}
Tensor Tensor::norm(const Scalar& p) const { return tessera::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  return tessera::norm(*this, p, dim, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return tessera::logsumexp(*this, dim, keepdim); }
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const {
  return tessera::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return tessera::cumprod(*this, dim, dtype);
}
Tensor& Tensor::cumsum_(int64_t dim, std::optional<ScalarType> dtype) {
  return copy_(tessera::cumsum(*this, dim, dtype ? dtype : std::optional<ScalarType>(scalar_type())));
}
Tensor& Tensor::cumprod_(int64_t dim, std::optional<ScalarType> dtype) {
  return copy_(tessera::cumprod(*this, dim, dtype ? dtype : std::optional<ScalarType>(scalar_type())));
}

}  // namespace tessera
