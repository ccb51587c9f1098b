// Tensor properties, conversions, views, ops (as methods and module functions) and
// the Python arithmetic operators. Every call goes straight to the C++ API, which
// does the checking; errors come back through the translator in errors.cpp.
#include "common.h"

#include <string>

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;
std::optional<ScalarType> unwrap(const OptDType& d) {
  return d ? std::optional<ScalarType>(d->type) : std::nullopt;
}

nb::tuple to_tuple(IntArrayRef v) {
  nb::list l;
  for (int64_t x : v) l.append(x);
  return nb::tuple(l);
}

// Nested Python lists from a tensor: read once as int64/double/bool on the cpu,
// then grouped bottom-up one dim at a time (no recursion, so a tensor of
// thousands of dims cannot exhaust the C stack).
nb::object tolist(const Tensor& t) {
  Tensor c = t.to(Device("cpu")).contiguous();
  std::vector<nb::object> flat;
  flat.reserve(static_cast<size_t>(c.numel()));
  if (c.dtype() == kBool) {
    for (int64_t v : c.to(kLong).to_vector<int64_t>()) flat.push_back(nb::bool_(v != 0));
  } else if (is_floating_type(c.dtype())) {
    for (double v : c.to(kDouble).to_vector<double>()) flat.push_back(nb::float_(v));
  } else {
    for (int64_t v : c.to(kLong).to_vector<int64_t>()) flat.push_back(nb::int_(v));
  }
  if (c.dim() == 0) return flat.at(0);
  auto sizes = c.sizes();
  // Level d holds prod(sizes[0..d)) lists of sizes[d] items each.
  std::vector<size_t> lists_at(sizes.size(), 1);
  for (size_t d = 1; d < sizes.size(); ++d)
    if (__builtin_mul_overflow(lists_at[d - 1], static_cast<size_t>(sizes[d - 1]), &lists_at[d]))
      raise_py(PyExc_MemoryError, detail::str("tolist(): out of memory: a tensor of shape ", c.sizes(),
                                              " needs more (empty) lists than can be counted"));
  std::vector<nb::object> items = std::move(flat);
  for (int64_t d = c.dim() - 1; d >= 0; --d) {
    const size_t lists = lists_at[static_cast<size_t>(d)];
    const auto len = static_cast<size_t>(sizes[d]);
    std::vector<nb::object> next;
    try {
      next.reserve(lists);
    } catch (const std::exception&) {  // bad_alloc, or length_error beyond max_size()
      raise_py(PyExc_MemoryError, detail::str("tolist(): out of memory building the ", lists, " lists of dim ", d,
                                              " of a tensor of shape ", c.sizes()));
    }
    for (size_t i = 0; i < lists; ++i) {
      nb::object l = nb::steal(PyList_New(static_cast<Py_ssize_t>(len)));
      if (!l.is_valid()) throw nb::python_error();
      for (size_t j = 0; j < len; ++j)
        PyList_SET_ITEM(l.ptr(), static_cast<Py_ssize_t>(j), items[i * len + j].release().ptr());
      next.push_back(std::move(l));
    }
    items = std::move(next);
  }
  return items.at(0);
}

std::vector<int64_t> dims_of(nb::handle dim) {
  return sizes_from_object(dim, "sum");
}

Tensor sum_impl(const Tensor& t, nb::handle dim, bool keepdim, const OptDType& dtype) {
  if (dim.is_none()) {
    if (keepdim) {
      std::vector<int64_t> all(static_cast<size_t>(t.dim()));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      return t.sum(all, true, unwrap(dtype));
    }
    return t.sum(unwrap(dtype));
  }
  return t.sum(dims_of(dim), keepdim, unwrap(dtype));
}

std::optional<std::string_view> rounding(const std::optional<std::string>& s) {
  return s ? std::optional<std::string_view>(*s) : std::nullopt;
}

}  // namespace

void register_tensor_methods(nb::module_& m, nb::class_<Tensor>& cls) {
  // Properties and conversions.
  cls.def_prop_ro("shape", [](const Tensor& t) { return to_tuple(t.sizes()); })
      .def("size", [](const Tensor& t) { return to_tuple(t.sizes()); })
      .def("size", [](const Tensor& t, int64_t d) { return t.size(d); }, nb::arg("dim"))
      .def_prop_ro("dtype", [](const Tensor& t) { return DType{t.dtype()}; })
      .def_prop_ro("device", [](const Tensor& t) { return t.device(); })
      .def_prop_ro("ndim", [](const Tensor& t) { return t.dim(); })
      .def("dim", [](const Tensor& t) { return t.dim(); })
      .def("numel", [](const Tensor& t) { return t.numel(); })
      .def("element_size", [](const Tensor& t) { return t.element_size(); })
      .def("is_contiguous", [](const Tensor& t) { return t.is_contiguous(); })
      .def_prop_ro("is_read_only", [](const Tensor& t) { return t.is_read_only(); })
      .def("stride", [](const Tensor& t) { return to_tuple(t.strides()); })
      .def("stride", [](const Tensor& t, int64_t d) { return t.stride(d); }, nb::arg("dim"))
      .def("storage_offset", [](const Tensor& t) { return t.storage_offset(); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("__repr__", &Tensor::to_string)
      // Diagnostic: references to this TensorImpl (tests check DLPack deleters ran).
      .def("_use_count", &Tensor::use_count)
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
        return t.size(0);
      })
      .def("__bool__", [](const Tensor& t) {
        if (t.numel() != 1) throw nb::value_error("the truth value of a tensor with more than one element is ambiguous");
        return t.item().to_bool();
      })
      .def("item", [](const Tensor& t) { return t.item(); })
      .def("tolist", &tolist)
      .def("to", [](const Tensor& t, const DType& d) { return t.to(d.type); }, nb::arg("dtype"))
      .def("to", [](const Tensor& t, const DeviceArg& dev, const OptDType& d) {
        if (!dev) return d ? t.to(d->type) : t;  // to(None) keeps the device, as in PyTorch
        return d ? t.to(*dev, d->type) : t.to(*dev);
      }, nb::arg("device"), nb::arg("dtype") = nb::none())
      .def("cpu", &Tensor::cpu)
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone);

  // Views: metadata only, sharing storage.
  cls.def("view", [](const Tensor& t, nb::args a) { return t.view(sizes_from_args(a, "view")); })
      .def("reshape", [](const Tensor& t, nb::args a) { return t.reshape(sizes_from_args(a, "reshape")); })
      .def("permute", [](const Tensor& t, nb::args a) { return t.permute(sizes_from_args(a, "permute")); })
      .def("expand", [](const Tensor& t, nb::args a) { return t.expand(sizes_from_args(a, "expand")); })
      .def("transpose", &Tensor::transpose, nb::arg("dim0"), nb::arg("dim1"))
      .def("t", &Tensor::t)
      .def_prop_ro("T", [](const Tensor& t) {
        std::vector<int64_t> d(static_cast<size_t>(t.dim()));
        for (size_t i = 0; i < d.size(); ++i) d[i] = t.dim() - 1 - static_cast<int64_t>(i);
        return t.permute(d);
      })
      .def("narrow", &Tensor::narrow, nb::arg("dim"), nb::arg("start"), nb::arg("length"))
      .def("slice", &Tensor::slice, nb::arg("dim") = 0, nb::arg("start") = nb::none(), nb::arg("end") = nb::none(),
           nb::arg("step") = 1)
      .def("as_strided", [](const Tensor& t, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
        return t.as_strided(sizes_from_object(size, "as_strided"), sizes_from_object(stride, "as_strided"), offset);
      }, nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none())
      .def("select", &Tensor::select, nb::arg("dim"), nb::arg("index"))
      .def("squeeze", [](const Tensor& t, std::optional<int64_t> d) { return d ? t.squeeze(*d) : t.squeeze(); },
           nb::arg("dim") = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def("flatten", &Tensor::flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);

  // Ops as methods.
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
      .def("neg", &Tensor::neg)
      .def("exp", &Tensor::exp)
      .def("relu", &Tensor::relu)
      .def("sum", &sum_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("dtype") = nb::none())
      // GEMMs can run long: other Python threads run meanwhile. Safe because the
      // arguments' Python objects keep every input storage (and any DLPack
      // producer) alive, so no producer deleter can run without the GIL here.
      .def("matmul", &Tensor::matmul, nb::arg("other"), nb::call_guard<nb::gil_scoped_release>())
      .def("mm", &Tensor::mm, nb::arg("mat2"), nb::call_guard<nb::gil_scoped_release>())
      .def("nonzero", &Tensor::nonzero)
      .def("bmm", &Tensor::bmm, nb::arg("mat2"), nb::call_guard<nb::gil_scoped_release>())
      // In-place: return self (the same Python object, as PyTorch does).
      .def("fill_", [](nb::handle self, const Scalar& v) { Tensor& t = nb::cast<Tensor&>(self); t.fill_(v); return nb::borrow(self); }, nb::arg("value"))
      .def("zero_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.zero_(); return nb::borrow(self); })
      .def("copy_", [](nb::handle self, const Tensor& src) { Tensor& t = nb::cast<Tensor&>(self); t.copy_(src); return nb::borrow(self); }, nb::arg("src"))
      .def("add_", [](nb::handle self, const Tensor& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.add_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("add_", [](nb::handle self, const Scalar& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.add_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("sub_", [](nb::handle self, const Tensor& o, const Scalar& alpha) { Tensor& t = nb::cast<Tensor&>(self); t.sub_(o, alpha); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1)
      .def("mul_", [](nb::handle self, const Tensor& o) { Tensor& t = nb::cast<Tensor&>(self); t.mul_(o); return nb::borrow(self); }, nb::arg("other"))
      .def("mul_", [](nb::handle self, const Scalar& o) { Tensor& t = nb::cast<Tensor&>(self); t.mul_(o); return nb::borrow(self); }, nb::arg("other"))
      .def("div_", [](nb::handle self, const Tensor& o, const std::optional<std::string>& r) { Tensor& t = nb::cast<Tensor&>(self); t.div_(o, rounding(r)); return nb::borrow(self); },
           nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none())
      .def("neg_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.neg_(); return nb::borrow(self); })
      .def("exp_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.exp_(); return nb::borrow(self); })
      .def("relu_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.relu_(); return nb::borrow(self); });

  // NumPy defers to our reflected operators (np.float32(2) * t calls
  // t.__rmul__) instead of building an object array of tensors.
  cls.attr("__array_ufunc__") = nb::none();

  // Python operators; a number on either side is a wrapped scalar (PyTorch promotion).
  cls.def("__add__", [](const Tensor& a, const Tensor& b) { return a + b; }, nb::is_operator())
      .def("__add__", [](const Tensor& a, const Scalar& b) { return a + b; }, nb::is_operator())
      .def("__radd__", [](const Tensor& a, const Scalar& b) { return b + a; }, nb::is_operator())
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return a - b; }, nb::is_operator())
      .def("__sub__", [](const Tensor& a, const Scalar& b) { return a - b; }, nb::is_operator())
      .def("__rsub__", [](const Tensor& a, const Scalar& b) { return b - a; }, nb::is_operator())
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return a * b; }, nb::is_operator())
      .def("__mul__", [](const Tensor& a, const Scalar& b) { return a * b; }, nb::is_operator())
      .def("__rmul__", [](const Tensor& a, const Scalar& b) { return b * a; }, nb::is_operator())
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return a / b; }, nb::is_operator())
      .def("__truediv__", [](const Tensor& a, const Scalar& b) { return a / b; }, nb::is_operator())
      .def("__rtruediv__", [](const Tensor& a, const Scalar& b) { return b / a; }, nb::is_operator())
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, nb::is_operator(),
           nb::call_guard<nb::gil_scoped_release>())
      .def("__neg__", [](const Tensor& a) { return -a; })
      .def("__pos__", [](const Tensor& a) { return a; })
      // In-place operators mutate the tensor and hand back the same object.
      .def("__iadd__", [](nb::handle self, const Tensor& b) { nb::cast<Tensor&>(self).add_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__iadd__", [](nb::handle self, const Scalar& b) { nb::cast<Tensor&>(self).add_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__isub__", [](nb::handle self, const Tensor& b) { nb::cast<Tensor&>(self).sub_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__isub__", [](nb::handle self, const Scalar& b) { nb::cast<Tensor&>(self).add_(b, -1); return nb::borrow(self); }, nb::is_operator())
      .def("__imul__", [](nb::handle self, const Tensor& b) { nb::cast<Tensor&>(self).mul_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__imul__", [](nb::handle self, const Scalar& b) { nb::cast<Tensor&>(self).mul_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__itruediv__", [](nb::handle self, const Tensor& b) { nb::cast<Tensor&>(self).div_(b); return nb::borrow(self); }, nb::is_operator())
      .def("__itruediv__", [](nb::handle self, const Scalar& b) {
        // No div_(Scalar) in the C++ API: a 0-d tensor of the scalar's kind keeps
        // the same promotion (a dimensioned self outranks a 0-d other).
        Tensor& t = nb::cast<Tensor&>(self);
        t.div_(scalar_tensor(b, TensorOptions(t.device())));
        return nb::borrow(self);
      }, nb::is_operator());

  // The same ops as module functions (tessera.add(a, b), ...).
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
  m.def("neg", [](const Tensor& a) { return neg(a); }, nb::arg("input"));
  m.def("exp", [](const Tensor& a) { return exp(a); }, nb::arg("input"));
  m.def("relu", [](const Tensor& a) { return relu(a); }, nb::arg("input"));
  m.def("sum", &sum_impl, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
        nb::arg("dtype") = nb::none());
  m.def("matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, nb::arg("input"), nb::arg("other"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("mm", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::arg("input"), nb::arg("mat2"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, nb::arg("input"), nb::arg("mat2"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("nonzero", [](const Tensor& a) { return nonzero(a); }, nb::arg("input"));
  m.def("equal", [](const Tensor& a, const Tensor& b) { return equal(a, b); }, nb::arg("input"), nb::arg("other"));
  m.def("allclose", [](const Tensor& a, const Tensor& b, double rtol, double atol) { return allclose(a, b, rtol, atol); },
        nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8);
}

}  // namespace tessera::python
