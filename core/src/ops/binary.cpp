// Binary pointwise ops: add, sub, mul, div and their in-place forms. The meta
// rule promotes (PyTorch result_type), broadcasts, casts the inputs to the
// compute dtype, and hands the kernel same-shape operands.
#include <tessera/error.h>

#include "../structured.h"
#include "ops.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {

enum class Binary { Add, Sub, Mul, Div };

template <Binary K, bool InPlace>
void binary_meta(StructuredCall& c);

// The common case — same dtype, same shape, same device, no numbers, no special
// dtype rule — skips promotion and broadcasting entirely. Returns false to take
// the general path.
template <Binary K, bool InPlace>
bool binary_fast_path(StructuredCall& c, const Tensor& a, const Tensor& b) {
  const TensorImpl* ia = a.unsafeGetTensorImpl();
  const TensorImpl* ib = b.unsafeGetTensorImpl();
  const ScalarType t = ia->dtype();
  if (ib->dtype() != t || ia->device() != ib->device() || ia->is_wrapped_number() || ib->is_wrapped_number() ||
      !ia->sizes().equals(ib->sizes()))
    return false;
  if (t == kBool || (K == Binary::Div && !is_floating_type(t))) return false;
  if constexpr (InPlace) return false;
  c.device = ia->device();
  if constexpr (K == Binary::Add || K == Binary::Sub) {
    const IValue& alpha = c.arg(2);
    if (alpha.tag == IValue::Tag::Int) {
      c.set_scalar(2, Scalar(alpha.i), t);
    } else {
      if (!is_floating_type(t)) return false;  // let the general path report it
      c.set_scalar(2, alpha.to_scalar(), t);
    }
  }
  if constexpr (K == Binary::Div) {
    if (!c.arg(2).is_none()) return false;
    c.set_none(2);
  }
  c.add_output_borrowed_shape(ia->sizes(), t);
  c.set_tensor_borrowed(0, a);
  c.set_tensor_borrowed(1, b);
  c.dispatch_dtype = t;
  return true;
}

template <Binary K, bool InPlace>
void binary_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& b = c.tensor_arg(1);
  if (binary_fast_path<K, InPlace>(c, a, b)) return;
  c.device = common_device(c, {0, 1});
  const ScalarType common = result_type({a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()});
  ScalarType compute = common;
  if constexpr (K == Binary::Sub) {
    TSR_CHECK(common != kBool, TypeError, c.op().name(),
              ": subtracting bool tensors is not supported; use logical_xor or bitwise_not instead; call: ",
              describe_call(c.op(), c.frame()));
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
      TsrValue v{};
      v.tag = TSR_VALUE_STRING;
      v.as.string = mode.string() == "trunc" ? "trunc" : "floor";  // static storage for the kernel
      c.set_value(2, v);
    }
  }
  const DimVector shape = broadcast_shapes(c.op(), a.sizes(), b.sizes());
  if constexpr (InPlace) {
    add_inplace_output(c, a, shape, compute);
  } else {
    c.add_output(shape, compute);
  }
  c.set_tensor(0, cast_and_expand(a, compute, shape));
  c.set_tensor(1, cast_and_expand(InPlace ? unaliased(b, a) : b, compute, shape));
  c.dispatch_dtype = compute;
}

Dispatcher& D() { return Dispatcher::instance(); }

}  // namespace

#define TSR_BINARY_OP(fn, K, schema, inplace_schema)                                                  \
  const Operator& op_##fn() {                                                                         \
    static const Operator& op = D().declare_structured(schema, kPointwise, &binary_meta<K, false>);   \
    return op;                                                                                        \
  }                                                                                                   \
  const Operator& op_##fn##_() {                                                                      \
    static const Operator& op = D().declare_inplace_variant(op_##fn(), inplace_schema, &binary_meta<K, true>); \
    return op;                                                                                        \
  }
TSR_BINARY_OP(add, Binary::Add, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
              "add_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
TSR_BINARY_OP(sub, Binary::Sub, "sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
              "sub_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
TSR_BINARY_OP(mul, Binary::Mul, "mul(Tensor self, Tensor other) -> Tensor",
              "mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
TSR_BINARY_OP(div, Binary::Div, "div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor",
              "div_(Tensor(a!) self, Tensor other, *, str? rounding_mode=None) -> Tensor(a!)")
#undef TSR_BINARY_OP


void declare_binary_ops() {
  for (auto f : {&op_add, &op_add_, &op_sub, &op_sub_, &op_mul, &op_mul_, &op_div, &op_div_}) f();
}

}  // namespace tessera::ops
