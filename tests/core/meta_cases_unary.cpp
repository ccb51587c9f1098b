// Meta-versus-cpu cases of the unary ops: every op and in-place variant, on
// float, integer (promoted by the floating ops), bool and 0-d float16 inputs.
#include "meta_cases.h"

namespace tessera::meta_cases {

namespace {

template <typename F>
std::vector<Case> unary(F fn, bool with_bool) {
  std::vector<Case> v{[fn](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d)))}; },
                      [fn](Device d) { return std::vector<Tensor>{fn(ones({4}, on(d, kInt)))}; },
                      [fn](Device d) { return std::vector<Tensor>{fn(ones({}, on(d, kHalf)))}; },
                      [fn](Device d) { return std::vector<Tensor>{fn(ones({0, 3}, on(d, kDouble)))}; }};
  if (with_bool) v.push_back([fn](Device d) { return std::vector<Tensor>{fn(ones({3}, on(d, kBool)))}; });
  return v;
}

// In place on a tensor of `dtype` (one whose dtype the op can write back into).
template <typename F>
std::vector<Case> inplace(F fn, ScalarType dtype) {
  return {[fn, dtype](Device d) {
    Tensor a = ones({2, 3}, on(d, dtype));
    fn(a);
    return std::vector<Tensor>{a};
  }};
}

}  // namespace

void add_unary_cases(CaseMap& c) {
  c["abs"] = unary([](const Tensor& a) { return abs(a); }, false);
  c["abs_"] = inplace([](Tensor& a) { a.abs_(); }, kDouble);
  c["sign"] = unary([](const Tensor& a) { return sign(a); }, true);
  c["sign_"] = inplace([](Tensor& a) { a.sign_(); }, kDouble);
  c["exp2"] = unary([](const Tensor& a) { return exp2(a); }, true);
  c["exp2_"] = inplace([](Tensor& a) { a.exp2_(); }, kDouble);
  c["expm1"] = unary([](const Tensor& a) { return expm1(a); }, true);
  c["expm1_"] = inplace([](Tensor& a) { a.expm1_(); }, kDouble);
  c["log"] = unary([](const Tensor& a) { return log(a); }, true);
  c["log_"] = inplace([](Tensor& a) { a.log_(); }, kDouble);
  c["log2"] = unary([](const Tensor& a) { return log2(a); }, true);
  c["log2_"] = inplace([](Tensor& a) { a.log2_(); }, kDouble);
  c["log10"] = unary([](const Tensor& a) { return log10(a); }, true);
  c["log10_"] = inplace([](Tensor& a) { a.log10_(); }, kDouble);
  c["log1p"] = unary([](const Tensor& a) { return log1p(a); }, true);
  c["log1p_"] = inplace([](Tensor& a) { a.log1p_(); }, kDouble);
  c["sqrt"] = unary([](const Tensor& a) { return sqrt(a); }, true);
  c["sqrt_"] = inplace([](Tensor& a) { a.sqrt_(); }, kDouble);
  c["rsqrt"] = unary([](const Tensor& a) { return rsqrt(a); }, true);
  c["rsqrt_"] = inplace([](Tensor& a) { a.rsqrt_(); }, kDouble);
  c["reciprocal"] = unary([](const Tensor& a) { return reciprocal(a); }, true);
  c["reciprocal_"] = inplace([](Tensor& a) { a.reciprocal_(); }, kDouble);
  c["square"] = unary([](const Tensor& a) { return square(a); }, true);
  c["square_"] = inplace([](Tensor& a) { a.square_(); }, kDouble);
  c["sin"] = unary([](const Tensor& a) { return sin(a); }, true);
  c["sin_"] = inplace([](Tensor& a) { a.sin_(); }, kDouble);
  c["cos"] = unary([](const Tensor& a) { return cos(a); }, true);
  c["cos_"] = inplace([](Tensor& a) { a.cos_(); }, kDouble);
  c["tan"] = unary([](const Tensor& a) { return tan(a); }, true);
  c["tan_"] = inplace([](Tensor& a) { a.tan_(); }, kDouble);
  c["asin"] = unary([](const Tensor& a) { return asin(a); }, true);
  c["asin_"] = inplace([](Tensor& a) { a.asin_(); }, kDouble);
  c["acos"] = unary([](const Tensor& a) { return acos(a); }, true);
  c["acos_"] = inplace([](Tensor& a) { a.acos_(); }, kDouble);
  c["atan"] = unary([](const Tensor& a) { return atan(a); }, true);
  c["atan_"] = inplace([](Tensor& a) { a.atan_(); }, kDouble);
  c["sinh"] = unary([](const Tensor& a) { return sinh(a); }, true);
  c["sinh_"] = inplace([](Tensor& a) { a.sinh_(); }, kDouble);
  c["cosh"] = unary([](const Tensor& a) { return cosh(a); }, true);
  c["cosh_"] = inplace([](Tensor& a) { a.cosh_(); }, kDouble);
  c["tanh"] = unary([](const Tensor& a) { return tanh(a); }, true);
  c["tanh_"] = inplace([](Tensor& a) { a.tanh_(); }, kDouble);
  c["sigmoid"] = unary([](const Tensor& a) { return sigmoid(a); }, true);
  c["sigmoid_"] = inplace([](Tensor& a) { a.sigmoid_(); }, kDouble);
  c["silu"] = unary([](const Tensor& a) { return silu(a); }, true);
  c["silu_"] = inplace([](Tensor& a) { a.silu_(); }, kDouble);
  c["erf"] = unary([](const Tensor& a) { return erf(a); }, true);
  c["erf_"] = inplace([](Tensor& a) { a.erf_(); }, kDouble);
  c["floor"] = unary([](const Tensor& a) { return floor(a); }, false);
  c["floor_"] = inplace([](Tensor& a) { a.floor_(); }, kDouble);
  c["ceil"] = unary([](const Tensor& a) { return ceil(a); }, false);
  c["ceil_"] = inplace([](Tensor& a) { a.ceil_(); }, kDouble);
  c["round"] = unary([](const Tensor& a) { return round(a); }, false);
  c["round_"] = inplace([](Tensor& a) { a.round_(); }, kDouble);
  c["trunc"] = unary([](const Tensor& a) { return trunc(a); }, false);
  c["trunc_"] = inplace([](Tensor& a) { a.trunc_(); }, kDouble);
  c["logical_not"] = unary([](const Tensor& a) { return logical_not(a); }, true);
  c["logical_not_"] = inplace([](Tensor& a) { a.logical_not_(); }, kDouble);
  c["bitwise_not"] = {[](Device d) { return std::vector<Tensor>{bitwise_not(ones({2, 3}, on(d, kInt)))}; },
                 [](Device d) { return std::vector<Tensor>{bitwise_not(ones({3}, on(d, kBool)))}; },
                 [](Device d) { return std::vector<Tensor>{bitwise_not(ones({}, on(d, kByte)))}; }};
  c["bitwise_not_"] = inplace([](Tensor& a) { a.bitwise_not_(); }, kLong);
  c["isnan"] = unary([](const Tensor& a) { return isnan(a); }, true);
  c["isinf"] = unary([](const Tensor& a) { return isinf(a); }, true);
  c["isfinite"] = unary([](const Tensor& a) { return isfinite(a); }, true);
  c["gelu"] = unary([](const Tensor& a) { return gelu(a); }, true);
  c["gelu"].push_back([](Device d) { return std::vector<Tensor>{gelu(ones({2}, on(d)), "tanh")}; });
  c["gelu_"] = inplace([](Tensor& a) { a.gelu_("tanh"); }, kDouble);
  c["softplus"] = unary([](const Tensor& a) { return softplus(a); }, true);
  c["softplus"].push_back([](Device d) { return std::vector<Tensor>{softplus(ones({2}, on(d, kBFloat16)), 2, 0.5)}; });
  c["softplus_"] = inplace([](Tensor& a) { a.softplus_(0.5, 3); }, kFloat);
}

}  // namespace tessera::meta_cases
