// Unary pointwise ops (neg, abs, exp, log, sin, tanh, sigmoid, gelu, isnan, ...):
// one meta rule parameterised by the op's dtype rule, the C++ API (function,
// method, in-place and out= forms).
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

// How an op maps its input dtype to the compute and result dtype (PyTorch's).
enum class Rule {
  Float,     // floating ops: bool and integers compute in float32
  Numeric,   // same dtype, bool refused (neg, abs, relu)
  Sign,      // same dtype, bool included
  Square,    // same dtype; bool -> int64 (PyTorch: pow(bool, 2))
  Rounding,  // floor/ceil/round/trunc: same dtype (identity on integers), bool refused
  ToBool,    // logical_not, isnan, isinf, isfinite: bool result, input kept as is
  Bitwise,   // bitwise_not: bool and integers only
};

// Extra arguments the kernel gets after self.
enum class Extra { None, Gelu, Softplus };

[[noreturn, gnu::cold]] void refuse(const StructuredCall& c, const char* why) {
  throw TypeError(detail::str(c.op().name(), ": ", why, " (got a ", dtype_name(c.tensor_arg(0).scalar_type()),
                              " tensor)"));
}

template <Rule R, Extra E, bool InPlace>
void unary_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  c.device = a.device();
  const ScalarType in = a.scalar_type();
  ScalarType compute = in;   // the dtype the kernel runs in (its dispatch dtype)
  ScalarType result = in;    // the dtype of the output
  if constexpr (R == Rule::Float) {
    if (!is_floating_type(in)) compute = result = kDefaultFloat;
  } else if constexpr (R == Rule::Numeric || R == Rule::Rounding) {
    if (in == kBool) {
      if (c.op().name().substr(0, 3) == "neg") refuse(c, "negation of a bool tensor is not supported; use logical_not instead");
      refuse(c, "not supported for bool tensors");
    }
  } else if constexpr (R == Rule::Square) {
    if (in == kBool) compute = result = kLong;
  } else if constexpr (R == Rule::ToBool) {
    result = kBool;
  } else if constexpr (R == Rule::Bitwise) {
    if (is_floating_type(in)) refuse(c, "only bool and integer tensors are supported");
  }
  if constexpr (E == Extra::Gelu) {
    const IValue& mode = c.arg(1);
    TSR_CHECK(mode.tag == IValue::Tag::String && (mode.string() == "none" || mode.string() == "tanh"), ValueError,
              c.op().name(), ": approximate must be 'none' or 'tanh', got '",
              mode.tag == IValue::Tag::String ? mode.string() : std::string_view("?"), "'");
    TsrValue v{};
    v.tag = TSR_VALUE_STRING;
    v.as.string = mode.string() == "tanh" ? "tanh" : "none";  // static storage for the kernel
    c.set_value(1, v);
  }
  if constexpr (E == Extra::Softplus) {
    c.set_scalar(1, c.arg(1).to_scalar(), compute);
    c.set_scalar(2, c.arg(2).to_scalar(), compute);
  }
  if constexpr (InPlace) {
    add_inplace_output(c, a, a.sizes(), result);
  } else {
    c.add_output_borrowed_shape(a.sizes(), result);
  }
  if (compute == in) {
    c.set_tensor_borrowed(0, a);  // the common case: no cast, no reference-count traffic
  } else {
    c.set_tensor(0, cast_and_expand(a, compute, a.sizes()));
  }
  c.dispatch_dtype = compute;
}

// The pointwise lane of an op with no extra arguments: the input dtypes its
// rule computes in unchanged (an op with extra arguments gets no lane).
template <Rule R, Extra E>
const PointwiseLane* unary_lane() {
  if constexpr (E != Extra::None) {
    return nullptr;
  } else {
    static const PointwiseLane lane = [] {
      PointwiseLane l;
      l.num_tensors = 1;
      l.bool_result = R == Rule::ToBool;
      for (int d = 0; d < kNumScalarTypes; ++d) {
        const auto t = static_cast<ScalarType>(d);
        const bool same = R == Rule::Float                               ? is_floating_type(t)
                          : R == Rule::Numeric || R == Rule::Rounding || R == Rule::Square ? t != kBool
                          : R == Rule::Bitwise                           ? !is_floating_type(t)
                                                                         : true;  // Sign, ToBool
        if (same) l.dtypes |= uint16_t(1u << d);
      }
      return l;
    }();
    return &lane;
  }
}

constexpr char kFamily[] = "unary";

// op_<fn> and op_<fn>_; ARGS are the schemas' arguments after self.
#define TSR_UNARY_FN(fn, R, E, ARGS)                                                          \
  constinit OpHandle op_##fn{structured(kFamily, #fn "(Tensor self" ARGS ") -> Tensor", kPointwise, \
                                        &unary_meta<R, E, false>, &unary_lane<R, E>)};
#define TSR_UNARY_OP(fn, R, E, ARGS)                                                                      \
  TSR_UNARY_FN(fn, R, E, ARGS)                                                                            \
  constinit OpHandle op_##fn##_{                                                                          \
      inplace_variant(kFamily, op_##fn, #fn "_(Tensor(a!) self" ARGS ") -> Tensor(a!)", &unary_meta<R, E, true>)};

#define TSR_UNARY_LIST(X)                                                         \
  X(neg, Rule::Numeric, Extra::None, "")                                          \
  X(exp, Rule::Float, Extra::None, "")                                            \
  X(relu, Rule::Numeric, Extra::None, "")                                         \
  X(abs, Rule::Numeric, Extra::None, "")                                          \
  X(sign, Rule::Sign, Extra::None, "")                                            \
  X(exp2, Rule::Float, Extra::None, "")                                           \
  X(expm1, Rule::Float, Extra::None, "")                                          \
  X(log, Rule::Float, Extra::None, "")                                            \
  X(log2, Rule::Float, Extra::None, "")                                           \
  X(log10, Rule::Float, Extra::None, "")                                          \
  X(log1p, Rule::Float, Extra::None, "")                                          \
  X(sqrt, Rule::Float, Extra::None, "")                                           \
  X(rsqrt, Rule::Float, Extra::None, "")                                          \
  X(reciprocal, Rule::Float, Extra::None, "")                                     \
  X(square, Rule::Square, Extra::None, "")                                        \
  X(sin, Rule::Float, Extra::None, "")                                            \
  X(cos, Rule::Float, Extra::None, "")                                            \
  X(tan, Rule::Float, Extra::None, "")                                            \
  X(asin, Rule::Float, Extra::None, "")                                           \
  X(acos, Rule::Float, Extra::None, "")                                           \
  X(atan, Rule::Float, Extra::None, "")                                           \
  X(sinh, Rule::Float, Extra::None, "")                                           \
  X(cosh, Rule::Float, Extra::None, "")                                           \
  X(tanh, Rule::Float, Extra::None, "")                                           \
  X(sigmoid, Rule::Float, Extra::None, "")                                        \
  X(gelu, Rule::Float, Extra::Gelu, ", *, str approximate='none'")                \
  X(silu, Rule::Float, Extra::None, "")                                           \
  X(softplus, Rule::Float, Extra::Softplus, ", Scalar beta=1, Scalar threshold=20") \
  X(erf, Rule::Float, Extra::None, "")                                            \
  X(floor, Rule::Rounding, Extra::None, "")                                       \
  X(ceil, Rule::Rounding, Extra::None, "")                                        \
  X(round, Rule::Rounding, Extra::None, "")                                       \
  X(trunc, Rule::Rounding, Extra::None, "")                                       \
  X(logical_not, Rule::ToBool, Extra::None, "")                                   \
  X(bitwise_not, Rule::Bitwise, Extra::None, "")
#define TSR_PREDICATE_LIST(X)                \
  X(isnan, Rule::ToBool, Extra::None, "")    \
  X(isinf, Rule::ToBool, Extra::None, "")    \
  X(isfinite, Rule::ToBool, Extra::None, "")

TSR_UNARY_LIST(TSR_UNARY_OP)
TSR_PREDICATE_LIST(TSR_UNARY_FN)
#undef TSR_UNARY_OP
#undef TSR_UNARY_FN

}  // namespace

void declare_unary_ops() {
#define TSR_BOTH(fn, R, E, A) &op_##fn, &op_##fn##_,
#define TSR_ONE(fn, R, E, A) &op_##fn,
  declare_now({TSR_UNARY_LIST(TSR_BOTH) TSR_PREDICATE_LIST(TSR_ONE)});
#undef TSR_BOTH
#undef TSR_ONE
}

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {
namespace {
using V = IValue;

}  // namespace

#define TSR_UNARY_API(fn, R, E, A)                                                                       \
  Tensor fn(const Tensor& self) { return call_pointwise(ops::op_##fn(), self); }                       \
  Tensor& fn##_out(Tensor& out, const Tensor& self) { return ops::out_form(#fn, out, [&] { return fn(self); }, #fn "_out"); } \
  Tensor Tensor::fn() const { return tessera::fn(*this); }
#define TSR_UNARY_INPLACE_API(fn, R, E, A) \
  Tensor& Tensor::fn##_() { return ops::call_inplace(*this, ops::op_##fn##_(), {V::of(*this)}); }

#define TSR_PLAIN_LIST(X)                                                                                    \
  X(neg, , , ) X(exp, , , ) X(relu, , , )                                                                    \
  X(abs, , , ) X(sign, , , ) X(exp2, , , ) X(expm1, , , ) X(log, , , ) X(log2, , , ) X(log10, , , )              \
  X(log1p, , , ) X(sqrt, , , ) X(rsqrt, , , ) X(reciprocal, , , ) X(square, , , ) X(sin, , , ) X(cos, , , )       \
  X(tan, , , ) X(asin, , , ) X(acos, , , ) X(atan, , , ) X(sinh, , , ) X(cosh, , , ) X(tanh, , , )               \
  X(sigmoid, , , ) X(silu, , , ) X(erf, , , ) X(floor, , , ) X(ceil, , , ) X(round, , , ) X(trunc, , , )         \
  X(logical_not, , , ) X(bitwise_not, , , )
TSR_PLAIN_LIST(TSR_UNARY_API)
TSR_PLAIN_LIST(TSR_UNARY_INPLACE_API)
TSR_UNARY_API(isnan, , , )
TSR_UNARY_API(isinf, , , )
TSR_UNARY_API(isfinite, , , )
#undef TSR_PLAIN_LIST

Tensor operator-(const Tensor& self) { return neg(self); }
#undef TSR_UNARY_API
#undef TSR_UNARY_INPLACE_API

Tensor gelu(const Tensor& self, std::string_view approximate) {
  return ops::call(ops::op_gelu(), {V::of(self), V::of(approximate)});
}
Tensor& gelu_out(Tensor& out, const Tensor& self, std::string_view approximate) {
  return ops::out_form("gelu_out", out, [&] { return gelu(self, approximate); });
}
Tensor Tensor::gelu(std::string_view approximate) const { return tessera::gelu(*this, approximate); }
Tensor& Tensor::gelu_(std::string_view approximate) {
  return ops::call_inplace(*this, ops::op_gelu_(), {V::of(*this), V::of(approximate)});
}

Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return ops::call(ops::op_softplus(), {V::of(self), V::of(beta), V::of(threshold)});
}
Tensor& softplus_out(Tensor& out, const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return ops::out_form("softplus_out", out, [&] { return softplus(self, beta, threshold); });
}
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const {
  return tessera::softplus(*this, beta, threshold);
}
Tensor& Tensor::softplus_(const Scalar& beta, const Scalar& threshold) {
  return ops::call_inplace(*this, ops::op_softplus_(), {V::of(*this), V::of(beta), V::of(threshold)});
}

}  // namespace tessera
