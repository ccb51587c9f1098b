// Ternary pointwise ops: where, lerp, addcmul, addcdiv, _clamp (structured: one
// kernel over three broadcast operands) and clamp, clamp_min, clamp_max
// (composites of maximum and minimum, so NaN propagates exactly as there; clamp
// with both bounds runs as one _clamp pass where the device has its kernel),
// with their in-place forms.
#include <tessera/error.h>
#include <tessera/tensor.h>

#include "../meta_helpers.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {


DimVector broadcast3(const Operator& op, IntArrayRef a, IntArrayRef b, IntArrayRef c) {
  const DimVector ab = broadcast_shapes(op, a, b);
  return broadcast_shapes(op, ab, c);
}

// where(condition, self, other): out = condition ? self : other.
void where_meta(StructuredCall& c) {
  const Tensor& cond = c.tensor_arg(0);
  const Tensor& a = c.tensor_arg(1);
  const Tensor& b = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  TSR_CHECK(cond.scalar_type() == kBool, TypeError, c.op().name(), ": condition must be a bool tensor, got ",
            dtype_name(cond.scalar_type()));
  const ScalarType compute = result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
  const DimVector shape = broadcast3(c.op(), cond.sizes(), a.sizes(), b.sizes());
  c.add_output(shape, compute);
  c.set_tensor(0, cast_and_expand(cond, kBool, shape));
  c.set_tensor(1, cast_and_expand(a, compute, shape));
  c.set_tensor(2, cast_and_expand(b, compute, shape));
  c.dispatch_dtype = compute;
}

// self.where_(condition, other): self = condition ? self : other (self's shape and dtype).
void where_inplace_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& cond = c.tensor_arg(1);
  const Tensor& b = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  TSR_CHECK(cond.scalar_type() == kBool, TypeError, c.op().name(), ": condition must be a bool tensor, got ",
            dtype_name(cond.scalar_type()));
  const ScalarType compute = result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
  const DimVector shape = broadcast3(c.op(), cond.sizes(), a.sizes(), b.sizes());
  add_inplace_output(c, a, shape, compute);
  c.set_tensor(0, cast_and_expand(unaliased(cond, a), kBool, shape));
  c.set_tensor(1, cast_and_expand(a, compute, shape));
  c.set_tensor(2, cast_and_expand(unaliased(b, a), compute, shape));
  c.dispatch_dtype = compute;
}

// lerp(self, end, weight): self + weight * (end - self). As in PyTorch, end
// and a tensor weight must have self's (floating) dtype; a number weight is
// converted to it.
template <bool InPlace>
void lerp_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& end = c.tensor_arg(1);
  const Tensor& w = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  const ScalarType t = a.scalar_type();
  TSR_CHECK(is_floating_type(t), TypeError, c.op().name(), ": needs a floating-point self, got ", dtype_name(t));
  TSR_CHECK(end.scalar_type() == t, TypeError, c.op().name(), ": expected end of dtype ", dtype_name(t), " (self's), got ",
            dtype_name(end.scalar_type()));
  TSR_CHECK(w.unsafeGetTensorImpl()->is_wrapped_number() || w.scalar_type() == t, TypeError, c.op().name(),
            ": expected weight of dtype ", dtype_name(t), " (self's), got ", dtype_name(w.scalar_type()));
  const DimVector shape = broadcast3(c.op(), a.sizes(), end.sizes(), w.sizes());
  if constexpr (InPlace) {
    add_inplace_output(c, a, shape, t);
  } else {
    c.add_output(shape, t);
  }
  c.set_tensor(0, cast_and_expand(a, t, shape));
  c.set_tensor(1, cast_and_expand(InPlace ? unaliased(end, a) : end, t, shape));
  c.set_tensor(2, cast_and_expand(InPlace ? unaliased(w, a) : w, t, shape));
  c.dispatch_dtype = t;
}

// addcmul / addcdiv(self, tensor1, tensor2, *, value=1): self + value * t1 (* or /) t2,
// in the dtype promoted over the three tensors.
template <bool Div, bool InPlace>
void addc_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& t1 = c.tensor_arg(1);
  const Tensor& t2 = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  if constexpr (Div) {
    TSR_CHECK(is_floating_type(t1.scalar_type()) || is_floating_type(t2.scalar_type()), TypeError, c.op().name(),
              ": integer division is not supported (tensor1 is ", dtype_name(t1.scalar_type()), ", tensor2 is ",
              dtype_name(t2.scalar_type()), "); convert one of them to a floating dtype");
  }
  const ScalarType compute =
      result_type({a.unsafeGetTensorImpl(), t1.unsafeGetTensorImpl(), t2.unsafeGetTensorImpl()});
  TSR_CHECK(compute != kBool, TypeError, c.op().name(), ": not supported for bool tensors");
  const Scalar value = c.arg(3).to_scalar();
  TSR_CHECK(!(value.is_floating_point() && !is_floating_type(compute)), TypeError, c.op().name(),
            ": for integer inputs value must not be a floating-point number (got ", value, ")");
  const DimVector shape = broadcast3(c.op(), a.sizes(), t1.sizes(), t2.sizes());
  if constexpr (InPlace) {
    add_inplace_output(c, a, shape, compute);
  } else {
    c.add_output(shape, compute);
  }
  c.set_tensor(0, cast_and_expand(a, compute, shape));
  c.set_tensor(1, cast_and_expand(InPlace ? unaliased(t1, a) : t1, compute, shape));
  c.set_tensor(2, cast_and_expand(InPlace ? unaliased(t2, a) : t2, compute, shape));
  c.set_scalar(3, value, compute);
  c.dispatch_dtype = compute;
}

// _clamp(self, min, max) = minimum(maximum(self, min), max) in one pass, in the
// dtype promoted over the three tensors; NaN in any operand gives NaN.
template <bool InPlace>
void clamp_both_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& lo = c.tensor_arg(1);
  const Tensor& hi = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  const ScalarType compute =
      result_type({a.unsafeGetTensorImpl(), lo.unsafeGetTensorImpl(), hi.unsafeGetTensorImpl()});
  const DimVector shape = broadcast3(c.op(), a.sizes(), lo.sizes(), hi.sizes());
  if constexpr (InPlace) {
    add_inplace_output(c, a, shape, compute);
  } else {
    c.add_output(shape, compute);
  }
  c.set_tensor(0, cast_and_expand(a, compute, shape));
  c.set_tensor(1, cast_and_expand(InPlace ? unaliased(lo, a) : lo, compute, shape));
  c.set_tensor(2, cast_and_expand(InPlace ? unaliased(hi, a) : hi, compute, shape));
  c.dispatch_dtype = compute;
}

const Tensor* opt_tensor(const IValue& v) {
  if (v.is_none()) return nullptr;
  return (v.tag == IValue::Tag::Tensor && v.tensor->defined()) ? v.tensor : nullptr;
}

extern constinit OpHandle op__clamp;

// Whether clamp(self, lo, hi) may run as one _clamp pass: the composite's
// dtype (promoted pairwise, self with lo, then with hi) is self's, which is
// also _clamp's (promoted over all three), and the device can run it.
bool fuses(const Tensor& self, const Tensor& lo, const Tensor& hi) {
  const ScalarType t = self.scalar_type();
  if (self.dim() == 0 || result_type({self.unsafeGetTensorImpl(), lo.unsafeGetTensorImpl()}) != t ||
      result_type({self.unsafeGetTensorImpl(), hi.unsafeGetTensorImpl()}) != t)
    return false;
  return runs_on(op__clamp(), self.device(), t);
}

// clamp(self, min=None, max=None) = minimum(maximum(self, min), max).
Tensor clamp_value(const Operator& op, const Tensor& self, const Tensor* lo, const Tensor* hi) {
  TSR_CHECK(self.defined(), ValueError, op.name(), ": self is an undefined tensor");
  TSR_CHECK(lo != nullptr || hi != nullptr, ValueError, op.name(), ": at least one of 'min' or 'max' must not be None");
  // Checked here so that errors name clamp rather than maximum/minimum.
  for (const Tensor* bound : {lo, hi}) {
    if (bound == nullptr) continue;
    TSR_CHECK(bound->device() == self.device(), ValueError, op.name(), ": expected all tensors on one device, got self on ",
              self.device(), " and a bound on ", bound->device());
    (void)broadcast_shapes(op, self.sizes(), bound->sizes());
  }
  if (lo != nullptr && hi != nullptr) {
    (void)broadcast_shapes(op, lo->sizes(), hi->sizes());
    if (fuses(self, *lo, *hi)) return call(op__clamp(), {IValue::of(self), IValue::of(*lo), IValue::of(*hi)});
  }
  Tensor r = self;
  if (lo != nullptr) r = tessera::maximum(r, *lo);
  if (hi != nullptr) r = tessera::minimum(r, *hi);
  return r;
}

// In-place composites: compute, then write into self (which keeps its dtype).
void store_inplace(const Operator& op, Tensor& self, const Tensor& result) {
  check_writable(op, self);
  TSR_CHECK(self.sizes().equals(result.sizes()), ValueError, op.name(), ": output with shape ", self.sizes(),
            " does not match the broadcast shape ", result.sizes());
  TSR_CHECK(can_cast(result.scalar_type(), self.scalar_type()), TypeError, op.name(), ": result type ",
            dtype_name(result.scalar_type()), " cannot be cast to the desired output type ",
            dtype_name(self.scalar_type()));
  if (result.unsafeGetTensorImpl() != self.unsafeGetTensorImpl()) self.copy_(result);
}

void clamp_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  f.outputs[0] = clamp_value(op, *f.args[0].tensor, opt_tensor(f.args[1]), opt_tensor(f.args[2]));
}
extern constinit OpHandle op__clamp_;

void clamp_inplace_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  Tensor self = *f.args[0].tensor;
  const Tensor* lo = opt_tensor(f.args[1]);
  const Tensor* hi = opt_tensor(f.args[2]);
  // One pass straight into self when the bounds broadcast to self's shape.
  if (self.defined() && lo != nullptr && hi != nullptr && fuses(self, *lo, *hi) &&
      self.sizes().equals(broadcast3(op, self.sizes(), lo->sizes(), hi->sizes()))) {
    const IValue args[3] = {IValue::of(self), IValue::of(*lo), IValue::of(*hi)};
    f.outputs[0] = call(op__clamp_(), args);
    return;
  }
  store_inplace(op, self, clamp_value(op, self, opt_tensor(f.args[1]), opt_tensor(f.args[2])));
  f.outputs[0] = self;
}
template <bool Min>
void clamp_bound_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor* bound = opt_tensor(f.args[1]);
  TSR_CHECK(bound != nullptr, ValueError, op.name(), ": the bound must be a defined tensor or a number");
  f.outputs[0] = Min ? clamp_value(op, *f.args[0].tensor, bound, nullptr)
                     : clamp_value(op, *f.args[0].tensor, nullptr, bound);
}
template <bool Min>
void clamp_bound_inplace_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor* bound = opt_tensor(f.args[1]);
  TSR_CHECK(bound != nullptr, ValueError, op.name(), ": the bound must be a defined tensor or a number");
  Tensor self = *f.args[0].tensor;
  store_inplace(op, self, Min ? clamp_value(op, self, bound, nullptr) : clamp_value(op, self, nullptr, bound));
  f.outputs[0] = self;
}

constexpr char kFamily[] = "ternary";

constinit OpHandle op_where{structured(kFamily,
    "where(Tensor condition, Tensor self, Tensor other) -> Tensor", kPointwise, &where_meta)};
constinit OpHandle op_where_{inplace_variant(kFamily, op_where,
    "where_(Tensor(a!) self, Tensor condition, Tensor other) -> Tensor(a!)", &where_inplace_meta)};
constinit OpHandle op_lerp{structured(kFamily,
    "lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", kPointwise, &lerp_meta<false>)};
constinit OpHandle op_lerp_{inplace_variant(kFamily, op_lerp,
    "lerp_(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)", &lerp_meta<true>)};
constinit OpHandle op_addcmul{structured(kFamily,
    "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    kPointwise, &addc_meta<false, false>)};
constinit OpHandle op_addcmul_{inplace_variant(kFamily, op_addcmul,
    "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)",
    &addc_meta<false, true>)};
constinit OpHandle op_addcdiv{structured(kFamily,
    "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    kPointwise, &addc_meta<true, false>)};
constinit OpHandle op_addcdiv_{inplace_variant(kFamily, op_addcdiv,
    "addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)",
    &addc_meta<true, true>)};
constinit OpHandle op__clamp{structured(kFamily,
    "_clamp(Tensor self, Tensor min, Tensor max) -> Tensor", kPointwise, &clamp_both_meta<false>)};
constinit OpHandle op__clamp_{inplace_variant(kFamily, op__clamp,
    "_clamp_(Tensor(a!) self, Tensor min, Tensor max) -> Tensor(a!)", &clamp_both_meta<true>)};
constinit OpHandle op_clamp{composite(kFamily,
    "clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", 0, &clamp_kernel)};
constinit OpHandle op_clamp_{composite(kFamily,
    "clamp_(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)", kInPlace, &clamp_inplace_kernel)};
constinit OpHandle op_clamp_min{composite(kFamily,
    "clamp_min(Tensor self, Tensor min) -> Tensor", 0, &clamp_bound_kernel<true>)};
constinit OpHandle op_clamp_min_{composite(kFamily,
    "clamp_min_(Tensor(a!) self, Tensor min) -> Tensor(a!)", kInPlace, &clamp_bound_inplace_kernel<true>)};
constinit OpHandle op_clamp_max{composite(kFamily,
    "clamp_max(Tensor self, Tensor max) -> Tensor", 0, &clamp_bound_kernel<false>)};
constinit OpHandle op_clamp_max_{composite(kFamily,
    "clamp_max_(Tensor(a!) self, Tensor max) -> Tensor(a!)", kInPlace, &clamp_bound_inplace_kernel<false>)};

}  // namespace

void declare_ternary_ops() {
  declare_now({&op_where, &op_where_, &op_lerp, &op_lerp_, &op_addcmul, &op_addcmul_, &op_addcdiv, &op_addcdiv_,
               &op__clamp, &op__clamp_, &op_clamp, &op_clamp_, &op_clamp_min, &op_clamp_min_, &op_clamp_max, &op_clamp_max_});
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {
namespace {
using V = IValue;
using ops::call;
using ops::num;
IValue opt(const std::optional<Tensor>& t) { return t ? V::of(*t) : V::none(); }
}  // namespace

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  return call(ops::op_where(), {V::of(condition), V::of(self), V::of(other)});
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other) {
  return where(condition, self, num(other, condition));
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other) {
  return where(condition, num(self, condition), other);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other) {
  return where(condition, num(self, condition), num(other, condition));
}
#define TSR_WHERE_OUT(Self, Other)                                                                  \
  Tensor& where_out(Tensor& out, const Tensor& condition, const Self& self, const Other& other) {    \
    return ops::out_form("where", out, [&] { return where(condition, self, other); });                            \
  }
TSR_WHERE_OUT(Tensor, Tensor)
TSR_WHERE_OUT(Tensor, Scalar)
TSR_WHERE_OUT(Scalar, Tensor)
TSR_WHERE_OUT(Scalar, Scalar)
#undef TSR_WHERE_OUT
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const { return tessera::where(condition, *this, other); }
Tensor Tensor::where(const Tensor& condition, const Scalar& other) const { return tessera::where(condition, *this, other); }
Tensor& Tensor::where_(const Tensor& condition, const Tensor& other) {
  const IValue args[3] = {V::of(*this), V::of(condition), V::of(other)};
  return ops::call_inplace(*this, ops::op_where_(), args);
}
Tensor& Tensor::where_(const Tensor& condition, const Scalar& other) {
  const Tensor w = num(other, *this);
  return where_(condition, w);
}

Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return call(ops::op_clamp(), {V::of(self), opt(min), opt(max)});
}
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp(self, min ? std::optional<Tensor>(num(*min, self)) : std::nullopt,
               max ? std::optional<Tensor>(num(*max, self)) : std::nullopt);
}
Tensor clamp_min(const Tensor& self, const Tensor& min) { return call(ops::op_clamp_min(), {V::of(self), V::of(min)}); }
Tensor clamp_min(const Tensor& self, const Scalar& min) { return clamp_min(self, num(min, self)); }
Tensor clamp_max(const Tensor& self, const Tensor& max) { return call(ops::op_clamp_max(), {V::of(self), V::of(max)}); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return clamp_max(self, num(max, self)); }
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return ops::out_form("_clamp", out, [&] { return clamp(self, min, max); }, "clamp");
}
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return ops::out_form("_clamp", out, [&] { return clamp(self, min, max); }, "clamp");
}
Tensor& clamp_min_out(Tensor& out, const Tensor& self, const Tensor& min) {
  return ops::out_form("maximum", out, [&] { return clamp_min(self, min); }, "clamp_min");
}
Tensor& clamp_min_out(Tensor& out, const Tensor& self, const Scalar& min) {
  return ops::out_form("maximum", out, [&] { return clamp_min(self, min); }, "clamp_min");
}
Tensor& clamp_max_out(Tensor& out, const Tensor& self, const Tensor& max) {
  return ops::out_form("minimum", out, [&] { return clamp_max(self, max); }, "clamp_max");
}
Tensor& clamp_max_out(Tensor& out, const Tensor& self, const Scalar& max) {
  return ops::out_form("minimum", out, [&] { return clamp_max(self, max); }, "clamp_max");
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return tessera::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return tessera::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  const IValue args[3] = {V::of(*this), opt(min), opt(max)};
  return ops::call_inplace(*this, ops::op_clamp_(), args);
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_(min ? std::optional<Tensor>(num(*min, *this)) : std::nullopt,
                max ? std::optional<Tensor>(num(*max, *this)) : std::nullopt);
}
Tensor Tensor::clamp_min(const Tensor& min) const { return tessera::clamp_min(*this, min); }
Tensor Tensor::clamp_min(const Scalar& min) const { return tessera::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Tensor& max) const { return tessera::clamp_max(*this, max); }
Tensor Tensor::clamp_max(const Scalar& max) const { return tessera::clamp_max(*this, max); }
Tensor& Tensor::clamp_min_(const Tensor& min) {
  const IValue args[2] = {V::of(*this), V::of(min)};
  return ops::call_inplace(*this, ops::op_clamp_min_(), args);
}
Tensor& Tensor::clamp_min_(const Scalar& min) {
  const Tensor w = num(min, *this);
  return clamp_min_(w);
}
Tensor& Tensor::clamp_max_(const Tensor& max) {
  const IValue args[2] = {V::of(*this), V::of(max)};
  return ops::call_inplace(*this, ops::op_clamp_max_(), args);
}
Tensor& Tensor::clamp_max_(const Scalar& max) {
  const Tensor w = num(max, *this);
  return clamp_max_(w);
}

Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return call(ops::op_lerp(), {V::of(self), V::of(end), V::of(weight)});
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) { return lerp(self, end, num(weight, self)); }
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, const Tensor& weight) {
  return ops::out_form("lerp", out, [&] { return lerp(self, end, weight); });
}
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, const Scalar& weight) {
  return ops::out_form("lerp", out, [&] { return lerp(self, end, weight); });
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return tessera::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const { return tessera::lerp(*this, end, weight); }
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) {
  const IValue args[3] = {V::of(*this), V::of(end), V::of(weight)};
  return ops::call_inplace(*this, ops::op_lerp_(), args);
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) {
  const Tensor w = num(weight, *this);
  return lerp_(end, w);
}

#define TSR_ADDC_API(fn)                                                                                    \
  Tensor fn(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {       \
    return call(ops::op_##fn(), {V::of(self), V::of(tensor1), V::of(tensor2), V::of(value)});              \
  }                                                                                                         \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,           \
                   const Scalar& value) {                                                                   \
    return ops::out_form(#fn, out, [&] { return fn(self, tensor1, tensor2, value); });                                    \
  }                                                                                                         \
  Tensor Tensor::fn(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) const {              \
    return tessera::fn(*this, tensor1, tensor2, value);                                                     \
  }                                                                                                         \
  Tensor& Tensor::fn##_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {                \
    const IValue args[4] = {V::of(*this), V::of(tensor1), V::of(tensor2), V::of(value)};                   \
    return ops::call_inplace(*this, ops::op_##fn##_(), args);                                                    \
  }
TSR_ADDC_API(addcmul)
TSR_ADDC_API(addcdiv)
#undef TSR_ADDC_API

}  // namespace tessera
