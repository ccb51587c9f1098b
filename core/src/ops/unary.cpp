// Unary pointwise ops: neg, exp, relu and their in-place forms.
#include <tessera/error.h>

#include "../structured.h"
#include "ops.h"
#include "pointwise_util.h"

namespace tessera::ops {
namespace {

enum class Unary { Neg, Exp, Relu };

template <Unary K, bool InPlace>
void unary_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  c.device = a.device();
  ScalarType compute = a.scalar_type();
  if constexpr (K == Unary::Neg) {
    TSR_CHECK(compute != kBool, TypeError, c.op().name(),
              ": negation of a bool tensor is not supported; use logical_not instead");
  }
  if constexpr (K == Unary::Relu) {
    TSR_CHECK(compute != kBool, TypeError, c.op().name(), ": not supported for bool tensors");
  }
  if constexpr (K == Unary::Exp) {
    if (!is_floating_type(compute)) compute = kDefaultFloat;
  }
  if constexpr (InPlace) {
    add_inplace_output(c, a, a.sizes(), compute);
  } else {
    c.add_output(a.sizes(), compute);
  }
  c.set_tensor(0, cast_and_expand(a, compute, a.sizes()));
  c.dispatch_dtype = compute;
}

Dispatcher& D() { return Dispatcher::instance(); }

}  // namespace

#define TSR_UNARY_OP(fn, K)                                                                                    \
  const Operator& op_##fn() {                                                                                  \
    static const Operator& op = D().declare_structured(#fn "(Tensor self) -> Tensor", kPointwise, &unary_meta<K, false>); \
    return op;                                                                                                 \
  }                                                                                                            \
  const Operator& op_##fn##_() {                                                                               \
    static const Operator& op =                                                                                \
        D().declare_inplace_variant(op_##fn(), #fn "_(Tensor(a!) self) -> Tensor(a!)", &unary_meta<K, true>);   \
    return op;                                                                                                 \
  }
TSR_UNARY_OP(neg, Unary::Neg)
TSR_UNARY_OP(exp, Unary::Exp)
TSR_UNARY_OP(relu, Unary::Relu)
#undef TSR_UNARY_OP

void declare_unary_ops() {
  for (auto f : {&op_neg, &op_neg_, &op_exp, &op_exp_, &op_relu, &op_relu_}) f();
}

}  // namespace tessera::ops
