// Shared declarations of the tessera._C bindings: the Scalar caster, the dtype
// wrapper, and one registration function per topic (each in its own .cpp).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <tessera/tessera.h>

#include <cstdint>
#include <vector>

namespace nb = nanobind;

namespace tessera::python {

// A Python-visible dtype object (tessera.float32). A wrapper rather than the
// enum itself so that its repr is 'tessera.float32' and it hashes by value.
struct DType {
  ScalarType type;
  bool operator==(const DType& o) const { return type == o.type; }
};

// Sizes given either as *args (t.view(2, 3)) or as one sequence (t.view((2, 3))).
std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what);
std::vector<int64_t> sizes_from_object(nb::handle obj, const char* what);

/// In-place methods return self: the same Python object, as PyTorch does.
template <typename F>
nb::object in_place(nb::handle self, F&& f) {
  f(nb::cast<Tensor&>(self));
  return nb::borrow(self);
}

/// The out= protocol of module functions: without `out`, the functional result
/// (compute()); with it, compute_out(out) writes the result into it and `out`
/// itself (the same Python object) is returned.
template <typename Compute, typename ComputeOut>
nb::object with_out(nb::handle out, Compute&& compute, ComputeOut&& compute_out) {
  if (out.is_none()) return nb::cast(compute());
  compute_out(nb::cast<Tensor&>(out));
  return nb::borrow(out);
}

void register_errors(nb::module_& m);
void register_dtype_device(nb::module_& m);
void register_tensor_methods(nb::module_& m, nb::class_<Tensor>& cls);
void register_indexing(nb::class_<Tensor>& cls);
void register_factories(nb::module_& m);
void register_dlpack(nb::module_& m, nb::class_<Tensor>& cls);
// The op library, one file per family (ops_<family>.cpp): methods and module functions.
void register_unary_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_binary_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_ternary_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_reduction_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_linalg_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_shape_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_indexing_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_random_ops(nb::module_& m, nb::class_<Tensor>& cls);
void register_nn_ops(nb::module_& m, nb::class_<Tensor>& cls);


}  // namespace tessera::python

namespace nanobind::detail {

// Python bool/int/float <-> tessera::Scalar. bool is tested first because a
// Python bool is also an int; ints beyond int64 are rejected (no silent wrap).
template <>
struct type_caster<tessera::Scalar> {
  NB_TYPE_CASTER(tessera::Scalar, const_name("bool | int | float"))

  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    if (PyBool_Check(o)) {
      value = tessera::Scalar(o == Py_True);
      return true;
    }
    if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
      }
      value = tessera::Scalar(static_cast<int64_t>(v));
      return true;
    }
    if (PyFloat_Check(o)) {
      value = tessera::Scalar(PyFloat_AS_DOUBLE(o));
      return true;
    }
    // Second (converting) pass only: NumPy scalars and other number types,
    // through __index__ (integers) or __float__. Strings are not numbers here.
    // Arrays (anything with __dlpack__, e.g. a 1-element ndarray) are tensors, not scalars.
    if ((flags & static_cast<uint8_t>(cast_flags::convert)) && !PyUnicode_Check(o) && !PyBytes_Check(o) &&
        !PyObject_HasAttrString(o, "__dlpack__")) {
      if (PyIndex_Check(o)) {
        PyObject* i = PyNumber_Index(o);
        if (i != nullptr) {
          bool ok = from_python(i, 0, nullptr);
          Py_DECREF(i);
          if (ok) return true;
        }
        PyErr_Clear();
        return false;
      }
      if (Py_TYPE(o)->tp_as_number != nullptr && Py_TYPE(o)->tp_as_number->nb_float != nullptr) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          return false;
        }
        value = tessera::Scalar(d);
        return true;
      }
    }
    return false;
  }

  static handle from_cpp(const tessera::Scalar& s, rv_policy, cleanup_list*) noexcept {
    if (s.is_bool()) return PyBool_FromLong(s.to_bool() ? 1 : 0);
    if (s.is_integral()) return PyLong_FromLongLong(s.to_long());
    return PyFloat_FromDouble(s.to_double());
  }
};

}  // namespace nanobind::detail
