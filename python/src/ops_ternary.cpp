// Python bindings of the ternary ops (tessera/ops/ternary.h): methods (with
// in-place forms returning self) and module functions with out=.
#include "common.h"

namespace tessera::python {
namespace {

using OptT = std::optional<Tensor>;
using OptS = std::optional<Scalar>;

// The new tensor, or `out` itself once the result has been written into it.


}  // namespace

void register_ternary_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- where ----
#define TSR_BIND_WHERE(Self, Other)                                                                      \
  m.def("where", [](const Tensor& c, const Self& a, const Other& b, nb::handle out) {                    \
    return with_out(out, [&] { return where(c, a, b); }, [&](Tensor& o) { where_out(o, c, a, b); });       \
  }, nb::arg("condition"), nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  TSR_BIND_WHERE(Tensor, Tensor)
  TSR_BIND_WHERE(Tensor, Scalar)
  TSR_BIND_WHERE(Scalar, Tensor)
  TSR_BIND_WHERE(Scalar, Scalar)
#undef TSR_BIND_WHERE
  cls.def("where", [](const Tensor& a, const Tensor& c, const Tensor& b) { return a.where(c, b); },
          nb::arg("condition"), nb::arg("other"));
  cls.def("where", [](const Tensor& a, const Tensor& c, const Scalar& b) { return a.where(c, b); },
          nb::arg("condition"), nb::arg("other"));
  cls.def("where_", [](nb::handle self, const Tensor& c, const Tensor& b) {
    return in_place(self, [&](Tensor& t) { t.where_(c, b); });
  }, nb::arg("condition"), nb::arg("other"));
  cls.def("where_", [](nb::handle self, const Tensor& c, const Scalar& b) {
    return in_place(self, [&](Tensor& t) { t.where_(c, b); });
  }, nb::arg("condition"), nb::arg("other"));

  // ---- clamp: numbers or tensors as bounds (not mixed, as in PyTorch) ----
#define TSR_BIND_CLAMP(Opt)                                                                                 \
  m.def("clamp", [](const Tensor& a, const Opt& lo, const Opt& hi, nb::handle out) {                        \
    return with_out(out, [&] { return clamp(a, lo, hi); }, [&](Tensor& o) { clamp_out(o, a, lo, hi); });      \
  }, nb::arg("input"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none(), nb::kw_only(),             \
     nb::arg("out") = nb::none());                                                                          \
  cls.def("clamp", [](const Tensor& a, const Opt& lo, const Opt& hi) { return a.clamp(lo, hi); },           \
          nb::arg("min") = nb::none(), nb::arg("max") = nb::none());                                        \
  cls.def("clamp_", [](nb::handle self, const Opt& lo, const Opt& hi) {                                     \
    return in_place(self, [&](Tensor& t) { t.clamp_(lo, hi); });                                            \
  }, nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  TSR_BIND_CLAMP(OptS)
  TSR_BIND_CLAMP(OptT)
#undef TSR_BIND_CLAMP
#define TSR_BIND_CLAMP_BOUND(fn, name, Bound)                                                             \
  m.def(#fn, [](const Tensor& a, const Bound& v, nb::handle out) {                                        \
    return with_out(out, [&] { return fn(a, v); }, [&](Tensor& o) { fn##_out(o, a, v); });                  \
  }, nb::arg("input"), nb::arg(name), nb::kw_only(), nb::arg("out") = nb::none());                        \
  cls.def(#fn, [](const Tensor& a, const Bound& v) { return a.fn(v); }, nb::arg(name));                   \
  cls.def(#fn "_", [](nb::handle self, const Bound& v) { return in_place(self, [&](Tensor& t) { t.fn##_(v); }); }, \
          nb::arg(name));
  TSR_BIND_CLAMP_BOUND(clamp_min, "min", Tensor)
  TSR_BIND_CLAMP_BOUND(clamp_min, "min", Scalar)
  TSR_BIND_CLAMP_BOUND(clamp_max, "max", Tensor)
  TSR_BIND_CLAMP_BOUND(clamp_max, "max", Scalar)
#undef TSR_BIND_CLAMP_BOUND

  // ---- lerp ----
#define TSR_BIND_LERP(Weight)                                                                                 \
  m.def("lerp", [](const Tensor& a, const Tensor& e, const Weight& w, nb::handle out) {                       \
    return with_out(out, [&] { return lerp(a, e, w); }, [&](Tensor& o) { lerp_out(o, a, e, w); });             \
  }, nb::arg("input"), nb::arg("end"), nb::arg("weight"), nb::kw_only(), nb::arg("out") = nb::none());        \
  cls.def("lerp", [](const Tensor& a, const Tensor& e, const Weight& w) { return a.lerp(e, w); }, nb::arg("end"), \
          nb::arg("weight"));                                                                                 \
  cls.def("lerp_", [](nb::handle self, const Tensor& e, const Weight& w) {                                    \
    return in_place(self, [&](Tensor& t) { t.lerp_(e, w); });                                                 \
  }, nb::arg("end"), nb::arg("weight"));
  TSR_BIND_LERP(Tensor)
  TSR_BIND_LERP(Scalar)
#undef TSR_BIND_LERP

  // ---- addcmul, addcdiv ----
#define TSR_BIND_ADDC(fn)                                                                                    \
  m.def(#fn, [](const Tensor& a, const Tensor& x, const Tensor& y, const Scalar& v, nb::handle out) {       \
    return with_out(out, [&] { return fn(a, x, y, v); }, [&](Tensor& o) { fn##_out(o, a, x, y, v); });         \
  }, nb::arg("input"), nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1,          \
     nb::arg("out") = nb::none());                                                                           \
  cls.def(#fn, [](const Tensor& a, const Tensor& x, const Tensor& y, const Scalar& v) { return a.fn(x, y, v); }, \
          nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);                      \
  cls.def(#fn "_", [](nb::handle self, const Tensor& x, const Tensor& y, const Scalar& v) {                  \
    return in_place(self, [&](Tensor& t) { t.fn##_(x, y, v); });                                             \
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  TSR_BIND_ADDC(addcmul)
  TSR_BIND_ADDC(addcdiv)
#undef TSR_BIND_ADDC
}

}  // namespace tessera::python
