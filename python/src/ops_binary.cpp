// Python bindings of the binary ops (tessera/ops/binary.h): methods, in-place
// methods returning self, module functions with out=, and the Python operators
// (%, **, //, comparisons, &, |, ^, <<, >> with their reflected and in-place
// forms; +, -, *, / and their forms are in tensor_methods.cpp). add/sub/mul/div
// are bound first in their plain forms, then the overloads that add out=, a
// number as the first operand, and sub_/div_ with a number.
#include "common.h"

#include <string>

namespace tessera::python {
namespace {

std::optional<std::string_view> rounding(const std::optional<std::string>& r) {
  return r ? std::optional<std::string_view>(*r) : std::nullopt;
}

// Module function X(input, other, *, out=None), method X(other), in-place X_(other)
// for an op with X(T, T), X(T, S), X(S, T), X_out(...), Tensor::X and Tensor::X_.
#define TSR_BIND_BINARY(fn, other_name)                                                                           \
  m.def(#fn, [](const Tensor& a, const Tensor& b, nb::handle out) {                                               \
    return with_out(out, [&] { return fn(a, b); }, [&](Tensor& o) { fn##_out(o, a, b); });                          \
  }, nb::arg("input"), nb::arg(other_name), nb::kw_only(), nb::arg("out") = nb::none());                          \
  m.def(#fn, [](const Tensor& a, const Scalar& b, nb::handle out) {                                               \
    return with_out(out, [&] { return fn(a, b); }, [&](Tensor& o) { fn##_out(o, a, b); });                          \
  }, nb::arg("input"), nb::arg(other_name), nb::kw_only(), nb::arg("out") = nb::none());                          \
  m.def(#fn, [](const Scalar& a, const Tensor& b, nb::handle out) {                                               \
    return with_out(out, [&] { return fn(a, b); }, [&](Tensor& o) { fn##_out(o, a, b); });                          \
  }, nb::arg("input"), nb::arg(other_name), nb::kw_only(), nb::arg("out") = nb::none());                          \
  cls.def(#fn, [](const Tensor& a, const Tensor& b) { return a.fn(b); }, nb::arg(other_name));                   \
  cls.def(#fn, [](const Tensor& a, const Scalar& b) { return a.fn(b); }, nb::arg(other_name));                   \
  cls.def(#fn "_", [](nb::handle self, const Tensor& b) { return in_place(self, [&](Tensor& t) { t.fn##_(b); }); }, \
          nb::arg(other_name));                                                                                   \
  cls.def(#fn "_", [](nb::handle self, const Scalar& b) { return in_place(self, [&](Tensor& t) { t.fn##_(b); }); }, \
          nb::arg(other_name));

// Operator `op` (e.g. __mod__) and its reflected and in-place forms calling fn.
#define TSR_BIND_OPERATOR(op, fn)                                                                               \
  cls.def("__" op "__", [](const Tensor& a, const Tensor& b) { return fn(a, b); }, nb::is_operator());        \
  cls.def("__" op "__", [](const Tensor& a, const Scalar& b) { return fn(a, b); }, nb::is_operator());        \
  cls.def("__r" op "__", [](const Tensor& a, const Scalar& b) { return fn(b, a); }, nb::is_operator());       \
  cls.def("__i" op "__", [](nb::handle self, const Tensor& b) {                                               \
    return in_place(self, [&](Tensor& t) { t.fn##_(b); });                                                    \
  }, nb::is_operator());                                                                                      \
  cls.def("__i" op "__", [](nb::handle self, const Scalar& b) {                                               \
    return in_place(self, [&](Tensor& t) { t.fn##_(b); });                                                    \
  }, nb::is_operator());

}  // namespace

void register_binary_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- add, sub, mul, div: methods, in-place methods and plain module functions ----
  cls.def("add", [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return a.add(b, alpha); },
          nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("add", [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return a.add(b, alpha); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("sub", [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return a.sub(b, alpha); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("sub", [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return a.sub(b, alpha); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }, nb::arg("other"))
      .def("mul", [](const Tensor& a, const Scalar& b) { return a.mul(b); }, nb::arg("other"))
      .def("div", [](const Tensor& a, const Tensor& b, const std::optional<std::string>& r) { return a.div(b, rounding(r)); },
           nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none())
      .def("div", [](const Tensor& a, const Scalar& b, const std::optional<std::string>& r) { return a.div(b, rounding(r)); },
           nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none())
      // In-place: return self (the same Python object, as PyTorch does).
      .def("add_", [](nb::handle self, const Tensor& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.add_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("add_", [](nb::handle self, const Scalar& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.add_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("sub_", [](nb::handle self, const Tensor& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.sub_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("mul_", [](nb::handle self, const Tensor& o) { Tensor& t = nb::cast<Tensor&>(self); t.mul_(o); return nb::borrow(self); }, nb::arg("other"))
      .def("mul_", [](nb::handle self, const Scalar& o) { Tensor& t = nb::cast<Tensor&>(self); t.mul_(o); return nb::borrow(self); }, nb::arg("other"))
      .def("div_", [](nb::handle self, const Tensor& o, const std::optional<std::string>& r) { Tensor& t = nb::cast<Tensor&>(self); t.div_(o, rounding(r)); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());
  m.def("add", [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return add(a, b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("add", [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return a.add(b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("sub", [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(a, b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("sub", [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return a.sub(b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, nb::arg("input"), nb::arg("other"));
  m.def("mul", [](const Tensor& a, const Scalar& b) { return a.mul(b); }, nb::arg("input"), nb::arg("other"));
  m.def("div", [](const Tensor& a, const Tensor& b, const std::optional<std::string>& r) { return div(a, b, rounding(r)); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());
  m.def("div", [](const Tensor& a, const Scalar& b, const std::optional<std::string>& r) { return a.div(b, rounding(r)); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());

  // ---- add, sub, mul, div: out=, a number first, in-place with a number (after the plain forms above) ----
  m.def("add", [](const Tensor& a, const Tensor& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return add(a, b, alpha); }, [&](Tensor& o) { add_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("add", [](const Tensor& a, const Scalar& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return add(a, b, alpha); }, [&](Tensor& o) { add_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("add", [](const Scalar& a, const Tensor& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return add(a, b, alpha); }, [&](Tensor& o) { add_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("sub", [](const Tensor& a, const Tensor& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return sub(a, b, alpha); }, [&](Tensor& o) { sub_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("sub", [](const Tensor& a, const Scalar& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return sub(a, b, alpha); }, [&](Tensor& o) { sub_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("sub", [](const Scalar& a, const Tensor& b, const Scalar& alpha, nb::handle out) {
    return with_out(out, [&] { return sub(a, b, alpha); }, [&](Tensor& o) { sub_out(o, a, b, alpha); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1, nb::arg("out") = nb::none());
  m.def("mul", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out(out, [&] { return mul(a, b); }, [&](Tensor& o) { mul_out(o, a, b); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("mul", [](const Tensor& a, const Scalar& b, nb::handle out) {
    return with_out(out, [&] { return mul(a, b); }, [&](Tensor& o) { mul_out(o, a, b); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("mul", [](const Scalar& a, const Tensor& b, nb::handle out) {
    return with_out(out, [&] { return mul(a, b); }, [&](Tensor& o) { mul_out(o, a, b); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("div", [](const Tensor& a, const Tensor& b, const std::optional<std::string>& r, nb::handle out) {
    return with_out(out, [&] { return div(a, b, rounding(r)); }, [&](Tensor& o) { div_out(o, a, b, rounding(r)); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none(),
     nb::arg("out") = nb::none());
  m.def("div", [](const Tensor& a, const Scalar& b, const std::optional<std::string>& r, nb::handle out) {
    return with_out(out, [&] { return div(a, b, rounding(r)); }, [&](Tensor& o) { div_out(o, a, b, rounding(r)); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none(),
     nb::arg("out") = nb::none());
  m.def("div", [](const Scalar& a, const Tensor& b, const std::optional<std::string>& r, nb::handle out) {
    return with_out(out, [&] { return div(a, b, rounding(r)); }, [&](Tensor& o) { div_out(o, a, b, rounding(r)); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none(),
     nb::arg("out") = nb::none());
  cls.def("sub_", [](nb::handle self, const Scalar& b, const Scalar& alpha) {
    return in_place(self, [&](Tensor& t) { t.sub_(b, alpha); });
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  cls.def("div_", [](nb::handle self, const Scalar& b, const std::optional<std::string>& r) {
    return in_place(self, [&](Tensor& t) { t.div_(b, rounding(r)); });
  }, nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());

  // floor division: Python's //.
  m.def("floor_divide", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out(out, [&] { return floor_divide(a, b); }, [&](Tensor& o) { div_out(o, a, b, "floor"); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("floor_divide", [](const Tensor& a, const Scalar& b, nb::handle out) {
    return with_out(out, [&] { return floor_divide(a, b); }, [&](Tensor& o) { div_out(o, a, b, "floor"); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out") = nb::none());
  cls.def("floor_divide", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); }, nb::arg("other"));
  cls.def("floor_divide", [](const Tensor& a, const Scalar& b) { return floor_divide(a, b); }, nb::arg("other"));
  cls.def("__floordiv__", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); }, nb::is_operator());
  cls.def("__floordiv__", [](const Tensor& a, const Scalar& b) { return floor_divide(a, b); }, nb::is_operator());
  cls.def("__rfloordiv__", [](const Tensor& a, const Scalar& b) { return floor_divide(b, a); }, nb::is_operator());
  cls.def("__ifloordiv__", [](nb::handle self, const Tensor& b) {
    return in_place(self, [&](Tensor& t) { t.div_(b, "floor"); });
  }, nb::is_operator());
  cls.def("__ifloordiv__", [](nb::handle self, const Scalar& b) {
    return in_place(self, [&](Tensor& t) { t.div_(b, "floor"); });
  }, nb::is_operator());

  // ---- the other binary ops ----
  TSR_BIND_BINARY(remainder, "other")
  TSR_BIND_BINARY(fmod, "other")
  TSR_BIND_BINARY(pow, "exponent")
  TSR_BIND_BINARY(atan2, "other")
  TSR_BIND_BINARY(maximum, "other")
  TSR_BIND_BINARY(minimum, "other")
  TSR_BIND_BINARY(eq, "other")
  TSR_BIND_BINARY(ne, "other")
  TSR_BIND_BINARY(lt, "other")
  TSR_BIND_BINARY(le, "other")
  TSR_BIND_BINARY(gt, "other")
  TSR_BIND_BINARY(ge, "other")
  TSR_BIND_BINARY(logical_and, "other")
  TSR_BIND_BINARY(logical_or, "other")
  TSR_BIND_BINARY(logical_xor, "other")
  TSR_BIND_BINARY(bitwise_and, "other")
  TSR_BIND_BINARY(bitwise_or, "other")
  TSR_BIND_BINARY(bitwise_xor, "other")
  TSR_BIND_BINARY(bitwise_left_shift, "other")
  TSR_BIND_BINARY(bitwise_right_shift, "other")

  // ---- operators ----
  TSR_BIND_OPERATOR("mod", remainder)
  TSR_BIND_OPERATOR("pow", pow)
  TSR_BIND_OPERATOR("and", bitwise_and)
  TSR_BIND_OPERATOR("or", bitwise_or)
  TSR_BIND_OPERATOR("xor", bitwise_xor)
  TSR_BIND_OPERATOR("lshift", bitwise_left_shift)
  TSR_BIND_OPERATOR("rshift", bitwise_right_shift)
  // Comparisons: Python reflects them itself (2 < t calls t.__gt__(2)). Defining
  // __eq__ keeps tensors hashable by identity (the slot is set after the type exists).
#define TSR_BIND_COMPARISON(op, fn)                                                                      \
  cls.def("__" op "__", [](const Tensor& a, const Tensor& b) { return fn(a, b); }, nb::is_operator()); \
  cls.def("__" op "__", [](const Tensor& a, const Scalar& b) { return fn(a, b); }, nb::is_operator());
  TSR_BIND_COMPARISON("eq", eq)
  TSR_BIND_COMPARISON("ne", ne)
  TSR_BIND_COMPARISON("lt", lt)
  TSR_BIND_COMPARISON("le", le)
  TSR_BIND_COMPARISON("gt", gt)
  TSR_BIND_COMPARISON("ge", ge)
#undef TSR_BIND_COMPARISON
}

}  // namespace tessera::python
