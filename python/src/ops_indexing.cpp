// Python bindings of the indexing ops (tessera/ops/indexing.h): methods and module
// functions. (Indexing with t[...] is __getitem__/__setitem__, in indexing.cpp.)
#include "common.h"

namespace tessera::python {

void register_indexing_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("index_select", &Tensor::index_select, nb::arg("dim"), nb::arg("index"))
      .def("gather", &Tensor::gather, nb::arg("dim"), nb::arg("index"))
      .def("scatter", nb::overload_cast<int64_t, const Tensor&, const Tensor&>(&Tensor::scatter, nb::const_),
           nb::arg("dim"), nb::arg("index"), nb::arg("src"))
      .def("scatter", nb::overload_cast<int64_t, const Tensor&, const Scalar&>(&Tensor::scatter, nb::const_),
           nb::arg("dim"), nb::arg("index"), nb::arg("value"))
      .def("scatter_", [](nb::handle self, int64_t dim, const Tensor& index, const Tensor& src) {
        return in_place(self, [&](Tensor& t) { t.scatter_(dim, index, src); });
      }, nb::arg("dim"), nb::arg("index"), nb::arg("src"))
      .def("scatter_", [](nb::handle self, int64_t dim, const Tensor& index, const Scalar& value) {
        return in_place(self, [&](Tensor& t) { t.scatter_(dim, index, value); });
      }, nb::arg("dim"), nb::arg("index"), nb::arg("value"))
      .def("scatter_add", &Tensor::scatter_add, nb::arg("dim"), nb::arg("index"), nb::arg("src"))
      .def("scatter_add_", [](nb::handle self, int64_t dim, const Tensor& index, const Tensor& src) {
        return in_place(self, [&](Tensor& t) { t.scatter_add_(dim, index, src); });
      }, nb::arg("dim"), nb::arg("index"), nb::arg("src"))
      .def("index_add", &Tensor::index_add, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(),
           nb::arg("alpha") = 1)
      .def("index_add_", [](nb::handle self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
        return in_place(self, [&](Tensor& t) { t.index_add_(dim, index, source, alpha); });
      }, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("masked_fill", nb::overload_cast<const Tensor&, const Tensor&>(&Tensor::masked_fill, nb::const_),
           nb::arg("mask"), nb::arg("value"))
      .def("masked_fill", nb::overload_cast<const Tensor&, const Scalar&>(&Tensor::masked_fill, nb::const_),
           nb::arg("mask"), nb::arg("value"))
      .def("masked_fill_", [](nb::handle self, const Tensor& mask, const Tensor& value) {
        return in_place(self, [&](Tensor& t) { t.masked_fill_(mask, value); });
      }, nb::arg("mask"), nb::arg("value"))
      .def("masked_fill_", [](nb::handle self, const Tensor& mask, const Scalar& value) {
        return in_place(self, [&](Tensor& t) { t.masked_fill_(mask, value); });
      }, nb::arg("mask"), nb::arg("value"))
      .def("masked_select", &Tensor::masked_select, nb::arg("mask"))
      .def("take", &Tensor::take, nb::arg("index"))
      .def("nonzero", &Tensor::nonzero);

  m.def("index_select", [](const Tensor& a, int64_t dim, const Tensor& index) { return index_select(a, dim, index); },
        nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  m.def("gather", [](const Tensor& a, int64_t dim, const Tensor& index) { return gather(a, dim, index); },
        nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  m.def("scatter", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter(a, dim, index, src);
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  m.def("scatter", [](const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value) {
    return scatter(a, dim, index, value);
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  m.def("scatter_add", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_add(a, dim, index, src);
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  m.def("index_add", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
    return index_add(a, dim, index, source, alpha);
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("masked_fill", [](const Tensor& a, const Tensor& mask, const Tensor& value, std::optional<Tensor> out) {
    if (!out) return masked_fill(a, mask, value);
    return masked_fill_out(*out, a, mask, value);
  }, nb::arg("input"), nb::arg("mask"), nb::arg("value"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("masked_fill", [](const Tensor& a, const Tensor& mask, const Scalar& value, std::optional<Tensor> out) {
    if (!out) return masked_fill(a, mask, value);
    return masked_fill_out(*out, a, mask, value);
  }, nb::arg("input"), nb::arg("mask"), nb::arg("value"), nb::kw_only(), nb::arg("out") = nb::none());
  m.def("masked_select", [](const Tensor& a, const Tensor& mask) { return masked_select(a, mask); }, nb::arg("input"),
        nb::arg("mask"));
  m.def("take", [](const Tensor& a, const Tensor& index) { return take(a, index); }, nb::arg("input"),
        nb::arg("index"));
  m.def("nonzero", [](const Tensor& a) { return nonzero(a); }, nb::arg("input"));
  // ATen's argument order (torch.embedding(weight, indices)), not torch.nn.functional's.
  m.def("embedding", [](const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
    return embedding(weight, indices, padding_idx);
  }, nb::arg("weight"), nb::arg("indices"), nb::arg("padding_idx") = nb::none());
  m.def("one_hot", [](const Tensor& a, int64_t num_classes) { return one_hot(a, num_classes); }, nb::arg("input"),
        nb::arg("num_classes") = -1);
}

}  // namespace tessera::python
