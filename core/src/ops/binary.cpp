// Binary pointwise ops: arithmetic (add, sub, mul, div, remainder, fmod, pow,
// atan2, maximum, minimum), comparisons, logical and bitwise ops, shifts, and
// their in-place forms. The meta rule promotes (PyTorch result_type),
// broadcasts, casts the inputs to the compute dtype, and hands the kernel
// same-shape operands. Comparisons and logical ops compute in the promoted
// dtype and write bool.
#include <tessera/error.h>
#include <tessera/tensor.h>

#include "../operator_slots.h"
#include "../pointwise_lane.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {

enum class Binary {
  Add, Sub, Mul, Div, Remainder, Fmod, Pow, Atan2, Maximum, Minimum,
  Eq, Ne, Lt, Le, Gt, Ge,
  LogicalAnd, LogicalOr, LogicalXor,
  BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift
};

constexpr bool writes_bool(Binary k) { return k >= Binary::Eq && k <= Binary::LogicalXor; }
constexpr bool is_bitwise(Binary k) { return k >= Binary::BitwiseAnd && k <= Binary::BitwiseXor; }
constexpr bool is_shift(Binary k) { return k == Binary::LeftShift || k == Binary::RightShift; }
// Ops refused for bool (PyTorch has no kernel for them).
constexpr bool refuses_bool(Binary k) {
  return k == Binary::Sub || k == Binary::Remainder || k == Binary::Fmod || k == Binary::Pow || is_shift(k);
}

// The dtype the kernel computes in, given the promoted dtype, or Undefined when
// the op does not take that dtype (the general path reports it).
template <Binary K>
ScalarType compute_dtype(ScalarType common) {
  if constexpr (K == Binary::Div || K == Binary::Atan2) {
    // (div only without a rounding mode; the caller handles that)
    return is_floating_type(common) ? common : kDefaultFloat;
  }
  if (common == kBool && refuses_bool(K)) return ScalarType::Undefined;
  if ((is_bitwise(K) || is_shift(K)) && is_floating_type(common)) return ScalarType::Undefined;
  return common;
}

template <Binary K, bool InPlace>
void binary_meta(StructuredCall& c);

// The dtypes the op computes in unchanged (no promotion needed): its pointwise
// lane takes same-dtype, same-shape calls in these.
template <Binary K>
const PointwiseLane* binary_lane() {
  static const PointwiseLane lane = [] {
    PointwiseLane l;
    l.num_tensors = 2;
    l.trailing = K == Binary::Add || K == Binary::Sub ? PointwiseLane::Trailing::Alpha
                 : K == Binary::Div                   ? PointwiseLane::Trailing::NoneOnly
                                                      : PointwiseLane::Trailing::Nothing;
    for (int d = 0; d < kNumScalarTypes; ++d) {
      const auto t = static_cast<ScalarType>(d);
      if (compute_dtype<K>(t) == t) l.dtypes |= uint16_t(1u << d);
    }
    l.bool_result = writes_bool(K);
    return l;
  }();
  return &lane;
}

[[noreturn, gnu::cold]] void refuse_dtype(StructuredCall& c, Binary k, ScalarType common) {
  const char* what = "";
  if (common == kBool) {
    what = k == Binary::Sub ? "; use logical_xor or bitwise_not instead" : "";
    throw TypeError(detail::str(c.op().name(), ": not supported for bool tensors", what,
                                "; call: ", describe_call(c.op(), c.frame())));
  }
  throw TypeError(detail::str(c.op().name(), ": needs integer or bool tensors",
                              is_shift(k) ? " (integer only)" : "", ", got the promoted dtype ", dtype_name(common),
                              "; call: ", describe_call(c.op(), c.frame())));
}

template <Binary K, bool InPlace>
void binary_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& b = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  const ScalarType common = result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
  ScalarType compute = common;
  if constexpr (K == Binary::Sub) {
    TSR_CHECK(common != kBool, TypeError, c.op().name(),
              ": subtracting bool tensors is not supported; use logical_xor or bitwise_not instead; call: ",
              describe_call(c.op(), c.frame()));
  }
  if constexpr (K != Binary::Add && K != Binary::Sub && K != Binary::Mul && K != Binary::Div) {
    compute = compute_dtype<K>(common);
    if (compute == ScalarType::Undefined) [[unlikely]] refuse_dtype(c, K, common);
  }
  if constexpr (K == Binary::Add || K == Binary::Sub) {
    const Scalar alpha = c.arg(2).to_scalar();
    TSR_CHECK(!(alpha.is_floating_point() && !is_floating_type(compute)), TypeError, c.op().name(),
              ": for integer or bool inputs alpha must not be a floating-point number (got ", alpha, ")");
    c.set_scalar(2, alpha, compute);
  }
  if constexpr (K == Binary::Div) {
    const IValue& mode = c.arg(2);
    if (mode.is_none()) {
      if (!is_floating_type(compute)) compute = kDefaultFloat;  // true division
      c.set_none(2);
    } else {
      TSR_CHECK(mode.tag == IValue::Tag::String && (mode.string() == "trunc" || mode.string() == "floor"), ValueError,
                c.op().name(), ": rounding_mode must be None, 'trunc' or 'floor', got '",
                mode.tag == IValue::Tag::String ? mode.string() : std::string_view("?"), "'");
      TSR_CHECK(compute != kBool, TypeError, c.op().name(), ": rounding division is not supported for bool tensors");
      TsrValue v{};
      v.tag = TSR_VALUE_STRING;
      v.as.string = mode.string() == "trunc" ? "trunc" : "floor";  // static storage for the kernel
      c.set_value(2, v);
    }
  }
  const ScalarType out_dtype = writes_bool(K) ? kBool : compute;
  const DimVector shape = broadcast_shapes(c.op(), a.sizes(), b.sizes());
  if constexpr (InPlace) {
    add_inplace_output(c, a, shape, out_dtype);
  } else {
    c.add_output(shape, out_dtype);
  }
  c.set_tensor(0, cast_and_expand(a, compute, shape));
  c.set_tensor(1, cast_and_expand(InPlace ? unaliased(b, a) : b, compute, shape));
  c.dispatch_dtype = compute;
}

constexpr char kFamily[] = "binary";

#define TSR_BINARY_OP(fn, K, schema, inplace_schema)                                                        \
  constinit OpHandle op_##fn{structured(kFamily, schema, kPointwise, &binary_meta<K, false>, &binary_lane<K>)}; \
  constinit OpHandle op_##fn##_{inplace_variant(kFamily, op_##fn, inplace_schema, &binary_meta<K, true>)};
TSR_BINARY_OP(add, Binary::Add, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
              "add_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
TSR_BINARY_OP(sub, Binary::Sub, "sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
              "sub_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
TSR_BINARY_OP(mul, Binary::Mul, "mul(Tensor self, Tensor other) -> Tensor",
              "mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
TSR_BINARY_OP(div, Binary::Div, "div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor",
              "div_(Tensor(a!) self, Tensor other, *, str? rounding_mode=None) -> Tensor(a!)")
#define TSR_SIMPLE_BINARY_OP(fn, K, other) \
  TSR_BINARY_OP(fn, K, #fn "(Tensor self, Tensor " other ") -> Tensor", #fn "_(Tensor(a!) self, Tensor " other ") -> Tensor(a!)")
TSR_SIMPLE_BINARY_OP(remainder, Binary::Remainder, "other")
TSR_SIMPLE_BINARY_OP(fmod, Binary::Fmod, "other")
TSR_SIMPLE_BINARY_OP(pow, Binary::Pow, "exponent")
TSR_SIMPLE_BINARY_OP(atan2, Binary::Atan2, "other")
TSR_SIMPLE_BINARY_OP(maximum, Binary::Maximum, "other")
TSR_SIMPLE_BINARY_OP(minimum, Binary::Minimum, "other")
TSR_SIMPLE_BINARY_OP(eq, Binary::Eq, "other")
TSR_SIMPLE_BINARY_OP(ne, Binary::Ne, "other")
TSR_SIMPLE_BINARY_OP(lt, Binary::Lt, "other")
TSR_SIMPLE_BINARY_OP(le, Binary::Le, "other")
TSR_SIMPLE_BINARY_OP(gt, Binary::Gt, "other")
TSR_SIMPLE_BINARY_OP(ge, Binary::Ge, "other")
TSR_SIMPLE_BINARY_OP(logical_and, Binary::LogicalAnd, "other")
TSR_SIMPLE_BINARY_OP(logical_or, Binary::LogicalOr, "other")
TSR_SIMPLE_BINARY_OP(logical_xor, Binary::LogicalXor, "other")
TSR_SIMPLE_BINARY_OP(bitwise_and, Binary::BitwiseAnd, "other")
TSR_SIMPLE_BINARY_OP(bitwise_or, Binary::BitwiseOr, "other")
TSR_SIMPLE_BINARY_OP(bitwise_xor, Binary::BitwiseXor, "other")
TSR_SIMPLE_BINARY_OP(bitwise_left_shift, Binary::LeftShift, "other")
TSR_SIMPLE_BINARY_OP(bitwise_right_shift, Binary::RightShift, "other")
#undef TSR_SIMPLE_BINARY_OP
#undef TSR_BINARY_OP

#define TSR_BINARY_OP_LIST(X) \
  X(remainder) X(fmod) X(pow) X(atan2) X(maximum) X(minimum) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) \
  X(logical_and) X(logical_or) X(logical_xor) X(bitwise_and) X(bitwise_or) X(bitwise_xor)       \
  X(bitwise_left_shift) X(bitwise_right_shift)

}  // namespace

void declare_binary_ops() {
#define X(fn) &op_##fn, &op_##fn##_,
  declare_now({&op_add, &op_add_, &op_sub, &op_sub_, &op_mul, &op_mul_, &op_div, &op_div_, TSR_BINARY_OP_LIST(X)});
#undef X
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {
namespace {
using V = IValue;
using ops::call;

using ops::num;
}  // namespace

// Pointwise ops try the lane with their typed arguments (no boxing);
// call_pointwise boxes them only for the dispatcher.
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return call_pointwise(ops::op_add(), self, other, alpha);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return call_pointwise(ops::op_sub(), self, other, alpha);
}
Tensor mul(const Tensor& self, const Tensor& other) { return call_pointwise(ops::op_mul(), self, other); }
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode) {
  return call(ops::op_div(), {V::of(self), V::of(other), rounding_mode ? V::of(*rounding_mode) : V::none()});
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) { return add(self, num(other, self), alpha); }
Tensor add(const Scalar& self, const Tensor& other, const Scalar& alpha) { return add(num(self, other), other, alpha); }
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) { return sub(self, num(other, self), alpha); }
Tensor sub(const Scalar& self, const Tensor& other, const Scalar& alpha) { return sub(num(self, other), other, alpha); }
Tensor mul(const Tensor& self, const Scalar& other) { return mul(self, num(other, self)); }
Tensor mul(const Scalar& self, const Tensor& other) { return mul(num(self, other), other); }
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode) {
  return div(self, num(other, self), rounding_mode);
}
Tensor div(const Scalar& self, const Tensor& other, std::optional<std::string_view> rounding_mode) {
  return div(num(self, other), other, rounding_mode);
}
#define TSR_ALPHA_OUT(fn)                                                                       \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) { \
    return ops::out_form(#fn, out, [&] { return fn(self, other, alpha); });                                   \
  }                                                                                             \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Scalar& other, const Scalar& alpha) { \
    return ops::out_form(#fn, out, [&] { return fn(self, other, alpha); });                                   \
  }                                                                                             \
  Tensor& fn##_out(Tensor& out, const Scalar& self, const Tensor& other, const Scalar& alpha) { \
    return ops::out_form(#fn, out, [&] { return fn(self, other, alpha); });                                   \
  }
TSR_ALPHA_OUT(add)
TSR_ALPHA_OUT(sub)
#undef TSR_ALPHA_OUT
Tensor& mul_out(Tensor& out, const Tensor& self, const Tensor& other) { return ops::out_form("mul", out, [&] { return mul(self, other); }); }
Tensor& mul_out(Tensor& out, const Tensor& self, const Scalar& other) { return ops::out_form("mul", out, [&] { return mul(self, other); }); }
Tensor& mul_out(Tensor& out, const Scalar& self, const Tensor& other) { return ops::out_form("mul", out, [&] { return mul(self, other); }); }
#define TSR_DIV_OUT(Self, Other)                                                                          \
  Tensor& div_out(Tensor& out, const Self& self, const Other& other, std::optional<std::string_view> mode) { \
    return ops::out_form("div", out, [&] { return div(self, other, mode); });                                           \
  }
TSR_DIV_OUT(Tensor, Tensor)
TSR_DIV_OUT(Tensor, Scalar)
TSR_DIV_OUT(Scalar, Tensor)
#undef TSR_DIV_OUT
Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const { return tessera::add(*this, other, alpha); }
Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const { return tessera::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const { return tessera::sub(*this, other, alpha); }
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const { return tessera::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return tessera::mul(*this, other); }
Tensor Tensor::mul(const Scalar& other) const { return tessera::mul(*this, other); }
Tensor Tensor::div(const Tensor& other, std::optional<std::string_view> rounding_mode) const {
  return tessera::div(*this, other, rounding_mode);
}
Tensor Tensor::div(const Scalar& other, std::optional<std::string_view> rounding_mode) const {
  return tessera::div(*this, other, rounding_mode);
}
Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) {
  return ops::call_inplace(*this, ops::op_add_(), {V::of(*this), V::of(other), V::of(alpha)});
}
Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) {
  const Tensor w = num(other, *this);
  return add_(w, alpha);
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) {
  return ops::call_inplace(*this, ops::op_sub_(), {V::of(*this), V::of(other), V::of(alpha)});
}
Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha) {
  const Tensor w = num(other, *this);
  return sub_(w, alpha);
}
Tensor& Tensor::mul_(const Tensor& other) {
  return ops::call_inplace(*this, ops::op_mul_(), {V::of(*this), V::of(other)});
}
Tensor& Tensor::mul_(const Scalar& other) {
  const Tensor w = num(other, *this);
  return mul_(w);
}
Tensor& Tensor::div_(const Tensor& other, std::optional<std::string_view> rounding_mode) {
  return ops::call_inplace(*this, ops::op_div_(),
                           {V::of(*this), V::of(other), rounding_mode ? V::of(*rounding_mode) : V::none()});
}
Tensor& Tensor::div_(const Scalar& other, std::optional<std::string_view> rounding_mode) {
  const Tensor w = num(other, *this);
  return div_(w, rounding_mode);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }

#define TSR_BINARY_API(fn)                                                                                      \
  Tensor fn(const Tensor& self, const Tensor& other) { return call_pointwise(ops::op_##fn(), self, other); }   \
  Tensor fn(const Tensor& self, const Scalar& other) { return fn(self, num(other, self)); }                    \
  Tensor fn(const Scalar& self, const Tensor& other) { return fn(num(self, other), other); }                   \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Tensor& other) {                                      \
    return ops::out_form(#fn, out, [&] { return fn(self, other); });                                                          \
  }                                                                                                             \
  Tensor& fn##_out(Tensor& out, const Tensor& self, const Scalar& other) {                                      \
    return ops::out_form(#fn, out, [&] { return fn(self, other); });                                                          \
  }                                                                                                             \
  Tensor& fn##_out(Tensor& out, const Scalar& self, const Tensor& other) {                                      \
    return ops::out_form(#fn, out, [&] { return fn(self, other); });                                                          \
  }                                                                                                             \
  Tensor Tensor::fn(const Tensor& other) const { return tessera::fn(*this, other); }                          \
  Tensor Tensor::fn(const Scalar& other) const { return tessera::fn(*this, other); }                          \
  Tensor& Tensor::fn##_(const Tensor& other) {                                                                 \
    return ops::call_inplace(*this, ops::op_##fn##_(), {V::of(*this), V::of(other)});                          \
  }                                                                                                             \
  Tensor& Tensor::fn##_(const Scalar& other) {                                                                 \
    const Tensor w = num(other, *this);                                                                         \
    return fn##_(w);                                                                                            \
  }
TSR_BINARY_OP_LIST(TSR_BINARY_API)
#undef TSR_BINARY_API

Tensor floor_divide(const Tensor& self, const Tensor& other) { return div(self, other, "floor"); }
Tensor floor_divide(const Tensor& self, const Scalar& other) { return div(self, other, "floor"); }
Tensor floor_divide(const Scalar& self, const Tensor& other) { return div(self, other, "floor"); }

}  // namespace tessera
