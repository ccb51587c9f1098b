// Python bindings of the linalg ops (tessera/ops/linalg.h): methods and module functions.
// mm/bmm/matmul are bound first in their plain forms; their out= overloads come
// after and require `out`, so calls without it keep the lean plain binding.
// (The @ operator, __matmul__, is in tensor_methods.cpp.)
#include "common.h"

namespace tessera::python {
namespace {

// with_out, computing without the GIL: GEMMs can run long.
template <typename Compute, typename ComputeOut>
nb::object with_out_nogil(nb::handle out, Compute compute, ComputeOut compute_out) {
  return with_out(
      out,
      [&] {
        nb::gil_scoped_release release;
        return compute();
      },
      [&](Tensor& o) {
        nb::gil_scoped_release release;
        compute_out(o);
      });
}

}  // namespace

void register_linalg_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- matmul, mm, bmm: methods and plain module functions ----
  // GEMMs can run long: other Python threads run meanwhile. Safe because the
  // arguments' Python objects keep every input storage (and any DLPack
  // producer) alive, so no producer deleter can run without the GIL here.
  cls.def("matmul", &Tensor::matmul, nb::arg("other"), nb::call_guard<nb::gil_scoped_release>())
      .def("mm", &Tensor::mm, nb::arg("mat2"), nb::call_guard<nb::gil_scoped_release>())
      .def("bmm", &Tensor::bmm, nb::arg("mat2"), nb::call_guard<nb::gil_scoped_release>());
  m.def("matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, nb::arg("input"), nb::arg("other"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("mm", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::arg("input"), nb::arg("mat2"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, nb::arg("input"), nb::arg("mat2"),
        nb::call_guard<nb::gil_scoped_release>());

  m.def("addmm", [](const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha,
                    nb::handle out) {
    return with_out_nogil(out, [&] { return addmm(self, a, b, beta, alpha); },
                    [&](Tensor& o) { addmm_out(o, self, a, b, beta, alpha); });
  }, nb::arg("input"), nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1,
     nb::arg("out") = nb::none());
  m.def("dot", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out_nogil(out, [&] { return dot(a, b); }, [&](Tensor& o) { dot_out(o, a, b); });
  }, nb::arg("input"), nb::arg("tensor"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("outer", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out_nogil(out, [&] { return outer(a, b); }, [&](Tensor& o) { outer_out(o, a, b); });
  }, nb::arg("input"), nb::arg("vec2"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("ger", [](const Tensor& a, const Tensor& b) { return outer(a, b); }, nb::arg("input"), nb::arg("vec2"));
  // out= overloads of the mm/bmm/matmul bindings above.
  m.def("mm", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out_nogil(out, [&] { return mm(a, b); }, [&](Tensor& o) { mm_out(o, a, b); });
  }, nb::arg("input"), nb::arg("mat2"), nb::kw_only(), nb::arg("out"));
  m.def("bmm", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out_nogil(out, [&] { return bmm(a, b); }, [&](Tensor& o) { bmm_out(o, a, b); });
  }, nb::arg("input"), nb::arg("mat2"), nb::kw_only(), nb::arg("out"));
  m.def("matmul", [](const Tensor& a, const Tensor& b, nb::handle out) {
    return with_out_nogil(out, [&] { return matmul(a, b); }, [&](Tensor& o) { matmul_out(o, a, b); });
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("out"));

  cls.def("addmm", [](const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
    return self.addmm(a, b, beta, alpha);
  }, nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1,
     nb::call_guard<nb::gil_scoped_release>())
      .def("addmm_", [](nb::handle self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
        nb::cast<Tensor&>(self).addmm_(a, b, beta, alpha);
        return nb::borrow(self);
      }, nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1)
      .def("dot", &Tensor::dot, nb::arg("tensor"))
      .def("outer", &Tensor::outer, nb::arg("vec2"))
      .def("ger", &Tensor::outer, nb::arg("vec2"));
}

}  // namespace tessera::python
