// Entry point of tessera._C: registers each topic's bindings in dependency order
// (dtypes and devices before the Tensor methods that take them).
#include "common.h"

namespace tessera::python {

void raise_py(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

std::string describe_int(nb::handle value) {
  // Ints of thousands of digits would flood the message (and str() refuses
  // beyond sys.get_int_max_str_digits()): give their size instead.
  const int64_t bits = nb::cast<int64_t>(value.attr("bit_length")());
  if (bits <= 200) return nb::cast<std::string>(nb::str(value));
  return std::string(PyObject_RichCompareBool(value.ptr(), nb::int_(0).ptr(), Py_LT) == 1 ? "-" : "") + "an int of " +
         std::to_string(bits) + " bits";
}

void raise_int64_overflow(nb::handle value, const char* what) {
  raise_py(PyExc_OverflowError, std::string(what) + ": " + describe_int(value) +
                                    " is out of range for int64 (-9223372036854775808 to 9223372036854775807)");
}

int64_t int64_of(nb::handle obj, const char* what) {
  nb::object i;
  if (PyLong_Check(obj.ptr())) {
    i = nb::borrow(obj);
  } else if (PyIndex_Check(obj.ptr())) {
    i = nb::steal(PyNumber_Index(obj.ptr()));
    if (!i.is_valid()) throw nb::python_error();
  } else {
    raise_py(PyExc_TypeError, std::string(what) + ": expected an int, got " +
                                  nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) raise_int64_overflow(i, what);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<int64_t>(v);
}

double double_of(nb::handle obj, const char* what) {
  const PyNumberMethods* nm = Py_TYPE(obj.ptr())->tp_as_number;
  const bool real = PyFloat_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyIndex_Check(obj.ptr()) ||
                    (nm != nullptr && nm->nb_float != nullptr);
  if (!real || PyComplex_Check(obj.ptr()))  // complex has nb_float (it raises), but no real value
    raise_py(PyExc_TypeError, std::string(what) + ": expected a real number, got " +
                                  nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  const double v = PyFloat_AsDouble(obj.ptr());  // OverflowError for an int beyond a double's range
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

Tensor& tensor_arg(nb::handle obj, const char* what) {
  if (!nb::isinstance<Tensor>(obj))
    raise_py(PyExc_TypeError, std::string(what) + " must be a tessera.Tensor, got " +
                                  nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  return nb::cast<Tensor&>(obj);
}

std::vector<int64_t> sizes_from_object(nb::handle obj, const char* what) {
  std::vector<int64_t> out;
  if (PyLong_Check(obj.ptr())) {
    out.push_back(int64_of(obj, what));
    return out;
  }
  if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr()))
    throw nb::type_error((std::string(what) + ": sizes must be ints or a sequence of ints").c_str());
  for (nb::handle item : nb::iter(obj)) {
    if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr()))
      throw nb::type_error((std::string(what) + ": sizes must be ints, got " +
                            nb::cast<std::string>(nb::str(item.type().attr("__name__")))).c_str());
    out.push_back(int64_of(item, what));
  }
  return out;
}

std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return sizes_from_object(args[0], what);
  return sizes_from_object(args, what);
}

// Declared here rather than in common.h: only the entry point calls it.
void register_autograd(nb::module_& m, nb::class_<Tensor>& cls);

}  // namespace tessera::python

NB_MODULE(_C, m) {
  using namespace tessera::python;
  m.doc() = "Tessera tensor runtime (C++ core bindings)";
  register_errors(m);
  register_dtype_device(m);
  register_streams(m);
  // The buffer protocol (memoryview(t), NumPy) is a type slot: see dlpack.cpp.
  nb::class_<tessera::Tensor> cls(m, "Tensor", nb::type_slots(tensor_buffer_slots()));
  register_tensor_methods(m, cls);
  register_memory(m, cls);
  register_indexing(cls);
  register_factories(m);
  register_dlpack(m, cls);
  register_unary_ops(m, cls);
  register_binary_ops(m, cls);
  register_ternary_ops(m, cls);
  register_reduction_ops(m, cls);
  register_linalg_ops(m, cls);
  register_shape_ops(m, cls);
  register_indexing_ops(m, cls);
  register_random_ops(m, cls);
  register_nn_ops(m, cls);
  register_ops_call(m);
  register_autograd(m, cls);
}
