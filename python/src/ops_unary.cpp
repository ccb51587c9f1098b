// Python bindings of the unary ops (tessera/ops/unary.h): module functions with
// out=, methods, in-place methods returning self, and the operators __abs__ and
// __invert__ (__neg__ is in tensor_methods.cpp). neg, exp and relu are bound
// first in their plain forms, then their out= overloads.
#include "common.h"

namespace tessera::python {
// FN: module function fn(input, *, out=None) (with out, the same Python object is returned, as in PyTorch); METHOD: t.fn(); INPLACE: t.fn_() -> self.
#define TSR_PY_UNARY_FN(fn)                                                             \
  m.def(                                                                                \
      #fn,                                                                              \
      [](const Tensor& a, Tensor* out) -> nb::object {                                  \
        if (out == nullptr) return nb::cast(fn(a));                                     \
        fn##_out(*out, a);                                                              \
        return nb::find(out);                                                           \
      },                                                                                \
      nb::arg("input"), nb::kw_only(), nb::arg("out").none() = nb::none());
#define TSR_PY_UNARY_METHOD(fn) cls.def(#fn, [](const Tensor& a) { return a.fn(); });
#define TSR_PY_UNARY_INPLACE(fn)                   \
  cls.def(#fn "_", [](nb::handle self) {           \
    nb::cast<Tensor&>(self).fn##_();               \
    return nb::borrow(self);                       \
  });

#define TSR_PY_UNARY_LIST(X)                                                                               \
  X(abs) X(sign) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt) X(reciprocal) X(square) \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(sigmoid) X(silu) X(erf) X(floor)     \
  X(ceil) X(round) X(trunc) X(logical_not) X(bitwise_not)

void register_unary_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // neg, exp, relu: methods, in-place methods (returning self) and plain module functions.
  cls.def("neg", &Tensor::neg)
      .def("exp", &Tensor::exp)
      .def("relu", &Tensor::relu)
      .def("neg_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.neg_(); return nb::borrow(self); })
      .def("exp_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.exp_(); return nb::borrow(self); })
      .def("relu_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.relu_(); return nb::borrow(self); });
  m.def("neg", [](const Tensor& a) { return neg(a); }, nb::arg("input"));
  m.def("exp", [](const Tensor& a) { return exp(a); }, nb::arg("input"));
  m.def("relu", [](const Tensor& a) { return relu(a); }, nb::arg("input"));
  // Their out= overloads.
  TSR_PY_UNARY_FN(neg)
  TSR_PY_UNARY_FN(exp)
  TSR_PY_UNARY_FN(relu)

  TSR_PY_UNARY_LIST(TSR_PY_UNARY_FN)
  TSR_PY_UNARY_LIST(TSR_PY_UNARY_METHOD)
  TSR_PY_UNARY_LIST(TSR_PY_UNARY_INPLACE)
  TSR_PY_UNARY_FN(isnan)
  TSR_PY_UNARY_FN(isinf)
  TSR_PY_UNARY_FN(isfinite)
  TSR_PY_UNARY_METHOD(isnan)
  TSR_PY_UNARY_METHOD(isinf)
  TSR_PY_UNARY_METHOD(isfinite)

  m.def(
      "gelu",
      [](const Tensor& a, const std::string& approximate, Tensor* out) -> nb::object {
        if (out == nullptr) return nb::cast(gelu(a, approximate));
        gelu_out(*out, a, approximate);
        return nb::find(out);
      },
      nb::arg("input"), nb::kw_only(), nb::arg("approximate") = "none", nb::arg("out").none() = nb::none());
  cls.def("gelu", [](const Tensor& a, const std::string& approximate) { return a.gelu(approximate); },
          nb::kw_only(), nb::arg("approximate") = "none");
  cls.def(
      "gelu_",
      [](nb::handle self, const std::string& approximate) {
        nb::cast<Tensor&>(self).gelu_(approximate);
        return nb::borrow(self);
      },
      nb::kw_only(), nb::arg("approximate") = "none");

  m.def(
      "softplus",
      [](const Tensor& a, const Scalar& beta, const Scalar& threshold, Tensor* out) -> nb::object {
        if (out == nullptr) return nb::cast(softplus(a, beta, threshold));
        softplus_out(*out, a, beta, threshold);
        return nb::find(out);
      },
      nb::arg("input"), nb::arg("beta") = 1, nb::arg("threshold") = 20, nb::kw_only(),
      nb::arg("out").none() = nb::none());
  cls.def("softplus", [](const Tensor& a, const Scalar& beta, const Scalar& threshold) { return a.softplus(beta, threshold); },
          nb::arg("beta") = 1, nb::arg("threshold") = 20);
  cls.def(
      "softplus_",
      [](nb::handle self, const Scalar& beta, const Scalar& threshold) {
        nb::cast<Tensor&>(self).softplus_(beta, threshold);
        return nb::borrow(self);
      },
      nb::arg("beta") = 1, nb::arg("threshold") = 20);

  cls.def("__abs__", [](const Tensor& a) { return a.abs(); });
  cls.def("__invert__", [](const Tensor& a) { return a.bitwise_not(); });
}

}  // namespace tessera::python
