// Factories with PyTorch signatures that are not dispatcher ops of their own:
// tensor(data), zeros/ones(*size), full(size, value), the *_like factories, each
// with requires_grad=, and the requires_grad= overloads of rand/randn. The
// dispatcher ops empty and arange are bound with the shape family (ops_shape.cpp).
#include "common.h"

#include <cmath>
#include <climits>
#include <new>
#include <string>

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;

// tensor(data) accepts at most this many nesting levels (= dims): the core's
// limit on a tensor's dims (core/src/checked_math.h kMaxDims), NumPy's NPY_MAXDIMS.
constexpr size_t kMaxNesting = 64;

std::string py_type_name(nb::handle obj) { return nb::cast<std::string>(nb::str(obj.type().attr("__name__"))); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Reads nested lists/tuples of numbers: the shape, the values, and the inferred
// kind (bool < int < float, as PyTorch infers bool / int64 / float32). The
// recursion is bounded by kMaxNesting; the lists on the current path are
// remembered so that a list containing itself (directly or through other lists)
// is refused instead of walked forever. Values are kept as int64 until the
// first float, then as double (one 8-byte slot per element); the buffer is
// reserved once the shape is known, so a nested list too large for memory
// fails at once with a MemoryError naming its shape.
class NestedReader {
 public:
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int kind = -1;  // -1 none yet, 0 bool, 1 int, 2 float

  void read(nb::handle data) {
    walk(data, 0);
    if (count_ != expected_)  // a list changed size while it was read (a number's __index__ can run code)
      raise_py(PyExc_ValueError, "tensor(): the nested sequence changed while it was being read (shape " +
                                     shape_text(shape) + ", " + std::to_string(count_) + " elements read)");
  }

 private:
  bool shape_known_ = false;
  int64_t expected_ = 0;  // elements the shape holds, once known
  int64_t count_ = 0;     // elements read
  std::vector<PyObject*> path_;  // the lists being walked, outermost first

  void walk(nb::handle obj, size_t depth) {
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
      for (size_t d = 0; d < path_.size(); ++d) {
        if (path_[d] == obj.ptr())
          raise_py(PyExc_ValueError, "tensor(): the nested sequence contains itself (the " + py_type_name(obj) +
                                         " at depth " + std::to_string(d) + " is also an element at depth " +
                                         std::to_string(depth) + "); a tensor cannot be built from a cycle");
      }
      if (depth >= kMaxNesting)
        raise_py(PyExc_ValueError, "tensor(): the sequence is nested deeper than " + std::to_string(kMaxNesting) +
                                       " levels; a tensor built from nested lists has at most " +
                                       std::to_string(kMaxNesting) + " dims");
      // A concrete list or tuple (list subclasses are read through their iterator).
      nb::object seq = nb::steal(PySequence_Fast(obj.ptr(), "tensor(): expected a sequence"));
      if (!seq.is_valid()) throw nb::python_error();
      const int64_t n = static_cast<int64_t>(PySequence_Fast_GET_SIZE(seq.ptr()));
      if (!shape_known_ && depth == shape.size()) shape.push_back(n);
      if (depth >= shape.size())
        raise_py(PyExc_ValueError, "tensor(): ragged nested sequence: a " + py_type_name(obj) + " at depth " +
                                       std::to_string(depth) + " where a number was expected (shape so far " +
                                       shape_text(shape) + ")");
      if (shape[depth] != n)
        raise_py(PyExc_ValueError, "tensor(): ragged nested sequence: a " + py_type_name(obj) + " of length " +
                                       std::to_string(n) + " at depth " + std::to_string(depth) +
                                       " where every sequence has length " + std::to_string(shape[depth]) +
                                       " (every list at one depth must have the same length)");
      if (n == 0 && depth + 1 == shape.size()) known();
      path_.push_back(obj.ptr());
      for (int64_t k = 0; k < n; ++k) {
        // Re-read the size: a number's __index__/__float__ may shrink the list.
        if (k >= static_cast<int64_t>(PySequence_Fast_GET_SIZE(seq.ptr()))) break;
        nb::object item = nb::borrow(PySequence_Fast_GET_ITEM(seq.ptr(), k));  // kept alive while read
        walk(item, depth + 1);
      }
      path_.pop_back();
      return;
    }
    if (depth != shape.size())  // depth < shape.size(): a list was expected
      raise_py(PyExc_ValueError, "tensor(): ragged nested sequence: a number at depth " + std::to_string(depth) +
                                     " where a sequence of length " + std::to_string(shape[depth]) +
                                     " was expected");
    if (!shape_known_) known();
    leaf(obj);
  }

  // The shape is complete: reserve the whole buffer now.
  void known() {
    shape_known_ = true;
    int64_t numel = 1;
    bool overflow = false;
    for (int64_t s : shape) overflow |= __builtin_mul_overflow(numel, s, &numel);
    if (overflow || numel > static_cast<int64_t>(ints.max_size()))
      raise_py(PyExc_MemoryError, "tensor(): out of memory building a tensor of shape " + shape_text(shape) +
                                      ": its element count does not fit in memory");
    expected_ = numel;
    try {
      ints.reserve(static_cast<size_t>(numel));
    } catch (const std::bad_alloc&) {
      raise_py(PyExc_MemoryError, "tensor(): out of memory building a tensor of shape " + shape_text(shape) + " (" +
                                      std::to_string(numel) + " elements, " + std::to_string(numel * 8) +
                                      " bytes as int64/float64)");
    }
  }

  void push_int(int64_t v) {
    ++count_;
    if (kind == 2) {
      floats.push_back(static_cast<double>(v));
    } else {
      ints.push_back(v);
    }
  }

  void push_float(double v) {
    ++count_;
    if (kind != 2) {  // the first float: every value so far becomes a double
      kind = 2;
      try {
        floats.reserve(static_cast<size_t>(expected_));
      } catch (const std::bad_alloc&) {
        raise_py(PyExc_MemoryError, "tensor(): out of memory building a float tensor of shape " + shape_text(shape) +
                                        " (" + std::to_string(expected_) + " elements)");
      }
      for (int64_t x : ints) floats.push_back(static_cast<double>(x));
      std::vector<int64_t>().swap(ints);
    }
    floats.push_back(v);
  }

  void push_int_object(nb::handle i) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0) raise_int64_overflow(i, "tensor()");
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    kind = std::max(kind, 1);
    push_int(static_cast<int64_t>(v));
  }

  void leaf(nb::handle obj) {
    PyObject* o = obj.ptr();
    if (PyBool_Check(o)) {
      kind = std::max(kind, 0);
      push_int(o == Py_True ? 1 : 0);
    } else if (PyLong_Check(o)) {
      push_int_object(obj);
    } else if (PyFloat_Check(o)) {
      push_float(PyFloat_AS_DOUBLE(o));
    } else if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyObject_HasAttrString(o, "__dlpack__") &&
               PyIndex_Check(o)) {
      // Other integer types (NumPy integers) through __index__.
      nb::object i = nb::steal(PyNumber_Index(o));
      if (!i.is_valid()) throw nb::python_error();
      push_int_object(i);
    } else if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyObject_HasAttrString(o, "__dlpack__") &&
               Py_TYPE(o)->tp_as_number != nullptr && Py_TYPE(o)->tp_as_number->nb_float != nullptr) {
      // Other real types (NumPy floats, Fraction, ...) through __float__.
      const double d = PyFloat_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
      push_float(d);
    } else {
      raise_py(PyExc_TypeError, "tensor(): expected numbers or nested lists of numbers, got " + py_type_name(obj));
    }
  }
};

// The range of an integer dtype.
struct IntRange {
  int64_t lo, hi;
};
IntRange int_range(ScalarType t) {
  switch (t) {
    case kByte: return {0, 255};
    case kChar: return {-128, 127};
    case kShort: return {-32768, 32767};
    case kInt: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

// Values that an integer dtype cannot hold are refused, as PyTorch's tensor()
// does, and as Python's int() does for floats: OverflowError for values out of
// range (and infinities), ValueError for NaN. Floats in range truncate toward zero.
void check_fits(const NestedReader& n, ScalarType target) {
  if (!is_integral_type(target)) return;
  const IntRange r = int_range(target);
  const std::string name(dtype_name(target));
  const std::string range = " (" + std::to_string(r.lo) + " to " + std::to_string(r.hi) + ")";
  if (n.kind == 2) {
    // The truncated value must lie in [lo, hi + 1): both bounds are exact doubles
    // (hi + 1 is a power of two; for int64 the sum rounds to exactly 2**63).
    const double lo = static_cast<double>(r.lo), hi_excl = static_cast<double>(r.hi) + 1.0;
    for (double v : n.floats) {
      if (std::isnan(v)) raise_py(PyExc_ValueError, "tensor(): cannot convert float NaN to " + name);
      const double whole = std::trunc(v);
      if (!(whole >= lo && whole < hi_excl)) {
        nb::object f = nb::float_(v);
        raise_py(PyExc_OverflowError, "tensor(): " + nb::cast<std::string>(nb::repr(f)) +
                                          " is out of range for " + name + range);
      }
    }
  } else if (target != kLong) {
    for (int64_t v : n.ints)
      if (v < r.lo || v > r.hi)
        raise_py(PyExc_OverflowError, "tensor(): " + std::to_string(v) + " is out of range for " + name + range);
  }
}

Tensor make_tensor(nb::handle data, const OptDType& dtype, const DeviceArg& device) {
  if (nb::isinstance<Tensor>(data)) {
    Tensor src = nb::cast<Tensor>(data);
    return src.to(device.value_or(src.device()), dtype ? dtype->type : src.dtype()).clone();
  }
  // Arrays of other frameworks (anything with __dlpack__): imported zero-copy,
  // then copied, since tensor() always copies its data (as in PyTorch).
  if (!PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) && nb::hasattr(data, "__dlpack__")) {
    Tensor src = nb::cast<Tensor>(nb::module_::import_("tessera._C").attr("from_dlpack")(data));
    return src.to(device.value_or(src.device()), dtype ? dtype->type : src.dtype()).clone();
  }
  NestedReader n;
  n.read(data);
  ScalarType inferred = n.kind == 0 ? kBool : n.kind == 1 ? kLong : kDefaultFloat;
  ScalarType target = dtype ? dtype->type : inferred;
  check_fits(n, target);
  // Build on the cpu from the reader's buffer (int64 keeps integers exact,
  // double keeps floats), then convert to the requested dtype and device.
  try {
    Tensor host;
    if (n.kind == 2 || n.kind == -1) {
      auto* buf = new std::vector<double>(std::move(n.floats));
      buf->reserve(1);  // a non-null address even for zero elements
      host = from_blob(buf->data(), n.shape, [buf](void*) { delete buf; }, TensorOptions(kDouble));
    } else {
      auto* buf = new std::vector<int64_t>(std::move(n.ints));
      buf->reserve(1);
      host = from_blob(buf->data(), n.shape, [buf](void*) { delete buf; }, TensorOptions(kLong));
    }
    // .to() may return the same storage when nothing changes; that storage is ours alone.
    return host.to(device.value_or(Device("cpu")), target);
  } catch (const std::bad_alloc&) {
    raise_py(PyExc_MemoryError, "tensor(): out of memory building a tensor of shape " + shape_text(n.shape) +
                                    " and dtype " + std::string(dtype_name(target)));
  }
}

// *_like: the input's dtype and device unless given.
TensorOptions like(const Tensor& t, const OptDType& dtype, const DeviceArg& device) {
  return TensorOptions(dtype ? dtype->type : t.dtype()).device(device.value_or(t.device()));
}

using OptGen = std::optional<Generator>;

}  // namespace

void register_factories(nb::module_& m) {
  m.def("tensor", [](nb::handle data, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(make_tensor(data, dtype, device), rg);
  }, nb::arg("data"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("zeros", [](nb::args size, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(zeros(sizes_from_args(size, "zeros"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("ones", [](nb::args size, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(ones(sizes_from_args(size, "ones"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("full", [](nb::handle size, const Scalar& value, const OptDType& dtype, const DeviceArg& device,
                   bool rg) {
    return grad_if(full(sizes_from_object(size, "full"), value, options(dtype, device)), rg);
  }, nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);

  // rand/randn with requires_grad: the random family (ops_random.cpp) binds
  // them without it; these overloads, with requires_grad a required keyword,
  // match only calls that pass it, so the two never compete.
  m.def("rand", [](nb::args size, const OptGen& g, const OptDType& dtype, const DeviceArg& device,
                   bool rg) {
    return grad_if(rand(sizes_from_args(size, "rand"), g, options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad"));
  m.def("randn", [](nb::args size, const OptGen& g, const OptDType& dtype, const DeviceArg& device,
                    bool rg) {
    return grad_if(randn(sizes_from_args(size, "randn"), g, options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad"));

  m.def("zeros_like", [](const Tensor& t, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(dtype || device ? zeros(t.sizes(), like(t, dtype, device)) : zeros_like(t), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("ones_like", [](const Tensor& t, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(dtype || device ? ones(t.sizes(), like(t, dtype, device)) : ones_like(t), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("empty_like", [](const Tensor& t, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(empty(t.sizes(), like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("full_like", [](const Tensor& t, const Scalar& value, const OptDType& dtype,
                        const DeviceArg& device, bool rg) {
    return grad_if(full(t.sizes(), value, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("rand_like", [](const Tensor& t, const OptGen& g, const OptDType& dtype, const DeviceArg& device,
                        bool rg) {
    return grad_if(rand(t.sizes(), g, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("randn_like", [](const Tensor& t, const OptGen& g, const OptDType& dtype, const DeviceArg& device,
                         bool rg) {
    return grad_if(randn(t.sizes(), g, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
}

}  // namespace tessera::python
