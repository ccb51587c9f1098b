// What the Tensor class has besides the op library: properties (shape, dtype,
// device, strides, ...), conversions (to, cpu, item, tolist), repr, the T
// property, the Python arithmetic operators (+, -, *, /, @ with their reflected
// and in-place forms: protocol sugar over the ops) and the module functions
// equal and allclose. The dispatcher ops themselves (add, view, sum, mm, ...)
// are bound in their families' files, ops_<family>.cpp. Every call goes
// straight to the C++ API, which does the checking; errors come back through
// the translator in errors.cpp.
#include "common.h"

#include <string>

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;

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
      .def("to", [](const Tensor& t, const DType& d, bool /*non_blocking: same device*/) { return t.to(d.type); }, nb::arg("dtype"),
           nb::arg("non_blocking") = false)
      .def("to", [](const Tensor& t, const DeviceArg& dev, const OptDType& d, bool non_blocking) {
        if (!dev) return d ? t.to(d->type) : t;  // to(None) keeps the device, as in PyTorch
        return t.to(*dev, d ? d->type : t.scalar_type(), non_blocking);
      }, nb::arg("device"), nb::arg("dtype") = nb::none(), nb::arg("non_blocking") = false,
         "A copy on `device` (and/or as `dtype`). non_blocking=True from pinned memory to a device, or from a "
         "device to the host (the result is then pinned), returns once the copy is queued on the device's "
         "current stream (docs/streams.md).")
      .def("cpu", &Tensor::cpu)
      .def("cuda", [](const Tensor& t, nb::handle device, bool non_blocking) {
        // device: None (cuda:0, as PyTorch's current device here), an index, "cuda:N" or a tessera.device.
        Device d("cuda:0");
        if (nb::isinstance<nb::int_>(device)) d = Device("cuda:" + std::to_string(nb::cast<int64_t>(device)));
        else if (nb::isinstance<nb::str>(device)) d = Device(nb::cast<std::string>(device));
        else if (!device.is_none()) d = nb::cast<Device>(device);
        if (d.type_name() != "cuda")
          throw nb::value_error(("Tensor.cuda(): expected a cuda device, got " + d.str()).c_str());
        return t.to(d, t.scalar_type(), non_blocking);
      }, nb::arg("device") = nb::none(), nb::arg("non_blocking") = false,
         "A copy on a cuda device (this tensor itself when already there), as to(\"cuda:N\").")
      .def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().type_name() == "cuda"; })
      // The reversed dims (a permute view), as PyTorch's Tensor.T.
      .def_prop_ro("T", [](const Tensor& t) {
        std::vector<int64_t> d(static_cast<size_t>(t.dim()));
        for (size_t i = 0; i < d.size(); ++i) d[i] = t.dim() - 1 - static_cast<int64_t>(i);
        return t.permute(d);
      });

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
        // A 0-d tensor of the scalar's kind rather than div_(Scalar)'s wrapped
        // number: a dimensioned self outranks either, so promotion is the same.
        Tensor& t = nb::cast<Tensor&>(self);
        t.div_(scalar_tensor(b, TensorOptions(t.device())));
        return nb::borrow(self);
      }, nb::is_operator());

  // Whole-tensor comparisons returning a bool (tensor.h functions, not dispatcher ops).
  m.def("equal", [](const Tensor& a, const Tensor& b) { return equal(a, b); }, nb::arg("input"), nb::arg("other"));
  m.def("allclose", [](const Tensor& a, const Tensor& b, double rtol, double atol) { return allclose(a, b, rtol, atol); },
        nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8);
}

}  // namespace tessera::python
