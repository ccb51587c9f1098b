// Shared declarations of the tessera._C bindings: the Scalar caster, the dtype
// wrapper, the helpers several binding files use (argument parsing, the out= and
// in-place protocols, factory options), and one registration function per topic
// (each in its own .cpp).
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
// Ints beyond int64 are an OverflowError naming `what` and the value.
std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what);
std::vector<int64_t> sizes_from_object(nb::handle obj, const char* what);

/// Raises the Python exception `type` with `message` (throws nb::python_error).
[[noreturn]] void raise_py(PyObject* type, const std::string& message);
/// A Python int (or an object with __index__) as int64_t. OverflowError naming
/// `what` and the value when it is outside int64; TypeError when it is no int.
int64_t int64_of(nb::handle obj, const char* what);
/// A Python real number (float, int, or an object with __float__ or __index__)
/// as a double. TypeError naming `what` and the type when it is none;
/// OverflowError (Python's) for an int too large for a double.
double double_of(nb::handle obj, const char* what);
/// The OverflowError for a Python int outside int64, naming `what` and the value.
[[noreturn]] void raise_int64_overflow(nb::handle value, const char* what);
/// A short text for an int in messages: its digits, or its bit length when huge.
std::string describe_int(nb::handle value);

/// A tensor argument given as a Python object (out=, ...): TypeError naming
/// `what` and the type when it is not a tessera.Tensor.
Tensor& tensor_arg(nb::handle obj, const char* what);

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
  compute_out(tensor_arg(out, "out="));
  return nb::borrow(out);
}

/// A device= argument: None, a tessera.device or a device string ("cuda:1").
/// The string is parsed when the call runs, not while nanobind matches
/// overloads, so an unknown device is the ValueError tessera.device() gives
/// (naming the registered device types), not a TypeError about signatures.
struct DeviceArg {
  std::optional<Device> value;
  explicit operator bool() const { return value.has_value(); }
  const Device& operator*() const { return *value; }
  const Device* operator->() const { return &*value; }
  Device value_or(const Device& d) const { return value.value_or(d); }
};

/// The TensorOptions of a factory's dtype= and device= (each left unset when None).
inline TensorOptions options(const std::optional<DType>& dtype, const DeviceArg& device) {
  TensorOptions o;
  if (dtype) o = o.dtype(dtype->type);
  if (device) o = o.device(*device);
  return o;
}

/// A factory's requires_grad=: True marks the new tensor as a leaf that
/// requires grad (only floating dtypes: TypeError otherwise, from requires_grad_()).
inline Tensor grad_if(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

void register_errors(nb::module_& m);
void register_dtype_device(nb::module_& m);
void register_tensor_methods(nb::module_& m, nb::class_<Tensor>& cls);
void register_indexing(nb::class_<Tensor>& cls);
void register_factories(nb::module_& m);
void register_dlpack(nb::module_& m, nb::class_<Tensor>& cls);
void register_streams(nb::module_& m);
void register_memory(nb::module_& m, nb::class_<Tensor>& cls);
/// The Tensor type's buffer-protocol slots (bf_getbuffer/bf_releasebuffer),
/// for nb::type_slots when the class is created (dlpack.cpp).
const PyType_Slot* tensor_buffer_slots();
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
void register_ops_call(nb::module_& m);  // ops_call.cpp: tessera.ops, any op by name


}  // namespace tessera::python

namespace nanobind::detail {

// Python bool/int/float <-> tessera::Scalar. bool is tested first because a
// Python bool is also an int. An int beyond int64 never wraps: in the
// converting pass (the last chance for any overload) it is accepted and the
// call raises OverflowError naming the value when the argument is used, so
// `t + 2**70` says what is wrong instead of listing signatures. nb::cast and
// nb::try_cast (cast_flags::manual) simply fail on it, since they convert
// where no exception may escape.
template <>
struct type_caster<tessera::Scalar> {
  using Value = tessera::Scalar;
  static constexpr auto Name = const_name("bool | int | float");
  template <typename T_> using Cast = movable_cast_t<T_>;
  template <typename T_> static constexpr bool can_cast() { return true; }

  Value value;
  object overflow;  // the int that did not fit, raised when the value is taken

  explicit operator Value*() { check(); return &value; }
  explicit operator Value&() { check(); return value; }
  explicit operator Value&&() { check(); return std::move(value); }

  void check() {
    if (overflow.is_valid())
      tessera::python::raise_py(PyExc_OverflowError, "Python int " + tessera::python::describe_int(overflow) +
                                                         " is out of range for a tessera number (int64: "
                                                         "-9223372036854775808 to 9223372036854775807)");
  }

  // A Python int: true with the value; false (no error set) if it is outside
  // int64, after remembering it when `defer` allows.
  bool from_int(PyObject* o, bool defer) noexcept {
    int overflowed = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflowed);
    if (overflowed == 0 && !(v == -1 && PyErr_Occurred())) {
      value = tessera::Scalar(static_cast<int64_t>(v));
      return true;
    }
    PyErr_Clear();
    if (!defer) return false;
    overflow = borrow(o);
    return true;
  }

  bool from_python(handle src, uint32_t flags, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    const bool convert = (flags & cast_flags::convert) != 0;
    const bool defer = convert && (flags & cast_flags::manual) == 0;
    if (PyBool_Check(o)) {
      value = tessera::Scalar(o == Py_True);
      return true;
    }
    if (PyLong_Check(o)) return from_int(o, defer);
    if (PyFloat_Check(o)) {
      value = tessera::Scalar(PyFloat_AS_DOUBLE(o));
      return true;
    }
    // Second (converting) pass only: NumPy scalars and other number types,
    // through __index__ (integers) or __float__. Strings are not numbers here.
    // Arrays (anything with __dlpack__, e.g. a 1-element ndarray) are tensors, not scalars.
    if (convert && !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyObject_HasAttrString(o, "__dlpack__")) {
      if (PyIndex_Check(o)) {
        PyObject* i = PyNumber_Index(o);
        if (i == nullptr) {
          PyErr_Clear();
          return false;
        }
        bool ok = from_int(i, defer);
        Py_DECREF(i);
        return ok;
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
  template <typename T_, enable_if_t<std::is_same_v<std::remove_cv_t<T_>, Value>> = 0>
  static handle from_cpp(T_* p, rv_policy policy, cleanup_list* list) noexcept {
    if (!p) return none().release();
    return from_cpp(*p, policy, list);
  }
};

// std::optional<Scalar>: nanobind's generic optional caster takes the inner
// value inside its noexcept from_python, where the deferred OverflowError above
// would terminate the process; this one defers it to the call like the Scalar caster.
template <>
struct type_caster<std::optional<tessera::Scalar>> {
  using Value = std::optional<tessera::Scalar>;
  static constexpr auto Name = const_name("bool | int | float | None");
  template <typename T_> using Cast = movable_cast_t<T_>;
  template <typename T_> static constexpr bool can_cast() { return true; }

  Value value;
  type_caster<tessera::Scalar> inner;
  bool has = false;

  explicit operator Value*() { take(); return &value; }
  explicit operator Value&() { take(); return value; }
  explicit operator Value&&() { take(); return std::move(value); }
  void take() {
    if (has) value = inner.operator tessera::Scalar&();
  }

  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    if (src.is_none()) {
      has = false;
      value.reset();
      return true;
    }
    has = inner.from_python(src, flags, cleanup);
    return has;
  }

  static handle from_cpp(const Value& v, rv_policy policy, cleanup_list* cleanup) noexcept {
    if (!v) return none().release();
    return type_caster<tessera::Scalar>::from_cpp(*v, policy, cleanup);
  }
};

// DeviceArg: None, a tessera.device (the bound class) or a str. The str is
// kept as is and turned into a Device when the call runs (see DeviceArg).
template <>
struct type_caster<tessera::python::DeviceArg> {
  using Value = tessera::python::DeviceArg;
  static constexpr auto Name = const_name("tessera._C.device | str");
  template <typename T_> using Cast = movable_cast_t<T_>;
  template <typename T_> static constexpr bool can_cast() { return true; }

  Value value;
  std::string spec;
  bool parse = false;

  explicit operator Value*() { take(); return &value; }
  explicit operator Value&() { take(); return value; }
  explicit operator Value&&() { take(); return std::move(value); }
  void take() {
    if (parse) value.value = tessera::Device(spec);  // tessera::ValueError naming the known types
    parse = false;
  }

  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    if (src.is_none()) {
      value.value.reset();
      return true;
    }
    if (PyUnicode_Check(src.ptr())) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(src.ptr(), &n);
      if (s == nullptr) {
        PyErr_Clear();
        return false;
      }
      spec.assign(s, static_cast<size_t>(n));
      parse = true;
      return true;
    }
    make_caster<tessera::Device> c;
    if (!c.from_python(src, flags & ~static_cast<uint32_t>(cast_flags::convert), cleanup)) return false;
    value.value = c.operator tessera::Device&();
    return true;
  }

  static handle from_cpp(const Value& v, rv_policy policy, cleanup_list* cleanup) noexcept {
    if (!v.value) return none().release();
    return make_caster<tessera::Device>::from_cpp(*v.value, policy, cleanup);
  }
};

}  // namespace nanobind::detail
