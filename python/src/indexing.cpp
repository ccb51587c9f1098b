// Basic indexing: t[int], t[slice], t[None], t[...] and tuples of those. Every
// result is a view (select / slice / unsqueeze), like NumPy basic indexing.
// Assignment t[idx] = value writes through the same view.
#include "common.h"

#include <stdexcept>
#include <string>

namespace tessera::python {
namespace {

bool is_index_int(nb::handle h) { return PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()); }

Tensor index(const Tensor& self, nb::handle key) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(key)) items.push_back(h);
  } else {
    items.push_back(key);
  }
  // How many tensor dims the items consume, to expand one Ellipsis.
  int64_t consumed = 0, ellipses = 0;
  for (nb::handle h : items) {
    if (h.ptr() == Py_Ellipsis) ++ellipses;
    else if (is_index_int(h) || PySlice_Check(h.ptr())) ++consumed;
    else if (!h.is_none())
      throw nb::type_error(("only integers, slices, None and ... are valid indices, got " +
                            nb::cast<std::string>(nb::str(h.type().attr("__name__")))).c_str());
  }
  if (ellipses > 1) throw nb::index_error("an index can only have a single ellipsis ('...')");
  if (consumed > self.dim())
    throw nb::index_error(("too many indices for tensor of dimension " + std::to_string(self.dim())).c_str());

  Tensor t = self;
  int64_t dim = 0;
  for (nb::handle h : items) {
    if (h.ptr() == Py_Ellipsis) {
      dim += self.dim() - consumed;
    } else if (h.is_none()) {
      t = t.unsqueeze(dim++);
    } else if (is_index_int(h)) {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
      if (overflow != 0) {  // beyond int64: out of range for every dim, as in Python's lists
        throw nb::index_error(("index " + nb::cast<std::string>(nb::str(h)) + " is out of range for dimension " +
                               std::to_string(dim) + " of size " + std::to_string(t.size(dim)))
                                  .c_str());
      }
      if (i == -1 && PyErr_Occurred()) throw nb::python_error();
      t = t.select(dim, static_cast<int64_t>(i));  // select checks the range (IndexError)
    } else {
      // Any Python ints: PySlice_Unpack clamps them to Py_ssize_t and
      // PySlice_AdjustIndices to the dim, exactly as slice.indices() does.
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      if (step <= 0) throw nb::value_error("slice step must be positive");
      const Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(t.size(dim)), &start, &stop, step);
      t = t.slice(dim, start, std::max(start, stop), step);
      if (t.size(dim) != len)  // the core's slice computes len(range(n)[start:stop:step]) too
        throw std::logic_error("slice: the core's length " + std::to_string(t.size(dim)) + " differs from Python's " +
                               std::to_string(len));
      ++dim;
    }
  }
  return t;
}

}  // namespace

void register_indexing(nb::class_<Tensor>& cls) {
  cls.def("__getitem__", &index, nb::arg("key"))
      .def("__setitem__", [](Tensor& self, nb::handle key, const Tensor& value) {
        Tensor v = index(self, key);
        v.copy_(value);
      }, nb::arg("key"), nb::arg("value"))
      .def("__setitem__", [](Tensor& self, nb::handle key, const Scalar& value) {
        Tensor v = index(self, key);
        v.fill_(value);
      }, nb::arg("key"), nb::arg("value"));
}

}  // namespace tessera::python
