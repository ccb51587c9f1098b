// Factories with PyTorch signatures: tensor(data), zeros/ones/empty(*size),
// full(size, value), arange(end) / arange(start, end, step), the *_like
// factories, each with requires_grad=.
#include "common.h"

#include <string>

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;

TensorOptions options(const OptDType& dtype, const std::optional<Device>& device) {
  TensorOptions o;
  if (dtype) o = o.dtype(dtype->type);
  if (device) o = o.device(*device);
  return o;
}

// Walks nested lists/tuples of numbers: shape, values, and the inferred kind
// (bool < int < float, as PyTorch infers bool / int64 / float32).
struct Nested {
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;
  int kind = -1;  // -1 none yet, 0 bool, 1 int, 2 float
  bool shape_known = false;

  void walk(nb::handle obj, size_t depth) {
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
      int64_t n = static_cast<int64_t>(PySequence_Size(obj.ptr()));
      if (!shape_known) {
        if (depth == shape.size()) shape.push_back(n);
      }
      if (depth >= shape.size() || shape[depth] != n)
        throw nb::value_error("tensor(): ragged nested sequence (every list at one depth must have the same length)");
      if (n == 0 && depth + 1 == shape.size()) shape_known = true;
      for (nb::handle item : nb::iter(obj)) walk(item, depth + 1);
      return;
    }
    if (depth != shape.size())
      throw nb::value_error("tensor(): ragged nested sequence (a number where a list was expected)");
    shape_known = true;
    if (PyBool_Check(obj.ptr())) {
      kind = std::max(kind, 0);
      i.push_back(obj.ptr() == Py_True);
      f.push_back(obj.ptr() == Py_True);
    } else if (PyLong_Check(obj.ptr())) {
      kind = std::max(kind, 1);
      int64_t v = nb::cast<int64_t>(obj);  // raises on overflow
      i.push_back(v);
      f.push_back(static_cast<double>(v));
    } else if (PyFloat_Check(obj.ptr())) {
      kind = 2;
      double v = PyFloat_AS_DOUBLE(obj.ptr());
      i.push_back(0);
      f.push_back(v);
    } else if (Scalar sc; nb::try_cast(obj, sc)) {
      // Other number types (NumPy scalars), through the Scalar caster.
      kind = std::max(kind, sc.is_floating_point() ? 2 : sc.is_integral() ? 1 : 0);
      i.push_back(sc.is_floating_point() ? 0 : sc.to_long());
      f.push_back(sc.to_double());
    } else {
      throw nb::type_error(("tensor(): expected numbers or nested lists of numbers, got " +
                            nb::cast<std::string>(nb::str(obj.type().attr("__name__")))).c_str());
    }
  }
};

Tensor make_tensor(nb::handle data, const OptDType& dtype, const std::optional<Device>& device) {
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
  Nested n;
  n.walk(data, 0);
  ScalarType inferred = n.kind == 0 ? kBool : n.kind == 1 ? kLong : kDefaultFloat;
  ScalarType target = dtype ? dtype->type : inferred;
  // Build on the cpu from an owned buffer (int64 keeps big integers exact, double
  // keeps floats), then convert to the requested dtype and device.
  Tensor host;
  if (n.kind == 2 || n.kind == -1 || is_floating_type(target)) {
    auto* buf = new std::vector<double>(std::move(n.f));
    buf->reserve(1);  // a non-null address even for zero elements
    host = from_blob(buf->data(), n.shape, [buf](void*) { delete buf; }, TensorOptions(kDouble));
  } else {
    auto* buf = new std::vector<int64_t>(std::move(n.i));
    buf->reserve(1);
    host = from_blob(buf->data(), n.shape, [buf](void*) { delete buf; }, TensorOptions(kLong));
  }
  Tensor out = host.to(device.value_or(Device("cpu")), target);
  // .to() may return the same storage when nothing changes; that storage is ours alone.
  return out;
}

// requires_grad=True marks the new tensor as a leaf that requires grad (only
// floating dtypes: TypeError otherwise, from requires_grad_()).
Tensor grad_if(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// *_like: the input's dtype and device unless given.
TensorOptions like(const Tensor& t, const OptDType& dtype, const std::optional<Device>& device) {
  return TensorOptions(dtype ? dtype->type : t.dtype()).device(device.value_or(t.device()));
}

using OptGen = std::optional<Generator>;

}  // namespace

void register_factories(nb::module_& m) {
  m.def("tensor", [](nb::handle data, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(make_tensor(data, dtype, device), rg);
  }, nb::arg("data"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("zeros", [](nb::args size, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(zeros(sizes_from_args(size, "zeros"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("ones", [](nb::args size, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(ones(sizes_from_args(size, "ones"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("empty", [](nb::args size, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(empty(sizes_from_args(size, "empty"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("full", [](nb::handle size, const Scalar& value, const OptDType& dtype, const std::optional<Device>& device,
                   bool rg) {
    return grad_if(full(sizes_from_object(size, "full"), value, options(dtype, device)), rg);
  }, nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("arange", [](const Scalar& end, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(arange(end, options(dtype, device)), rg);
  }, nb::arg("end"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("arange", [](const Scalar& start, const Scalar& end, const Scalar& step, const OptDType& dtype,
                     const std::optional<Device>& device, bool rg) {
    return grad_if(arange(start, end, step, options(dtype, device)), rg);
  }, nb::arg("start"), nb::arg("end"), nb::arg("step") = 1, nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);

  // rand/randn with requires_grad: the random family (ops_random.cpp) binds
  // them without it; these overloads, with requires_grad a required keyword,
  // match only calls that pass it, so the two never compete.
  m.def("rand", [](nb::args size, const OptGen& g, const OptDType& dtype, const std::optional<Device>& device,
                   bool rg) {
    return grad_if(rand(sizes_from_args(size, "rand"), g, options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad"));
  m.def("randn", [](nb::args size, const OptGen& g, const OptDType& dtype, const std::optional<Device>& device,
                    bool rg) {
    return grad_if(randn(sizes_from_args(size, "randn"), g, options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad"));

  m.def("zeros_like", [](const Tensor& t, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(dtype || device ? zeros(t.sizes(), like(t, dtype, device)) : zeros_like(t), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("ones_like", [](const Tensor& t, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(dtype || device ? ones(t.sizes(), like(t, dtype, device)) : ones_like(t), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("empty_like", [](const Tensor& t, const OptDType& dtype, const std::optional<Device>& device, bool rg) {
    return grad_if(empty(t.sizes(), like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("full_like", [](const Tensor& t, const Scalar& value, const OptDType& dtype,
                        const std::optional<Device>& device, bool rg) {
    return grad_if(full(t.sizes(), value, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("rand_like", [](const Tensor& t, const OptGen& g, const OptDType& dtype, const std::optional<Device>& device,
                        bool rg) {
    return grad_if(rand(t.sizes(), g, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("randn_like", [](const Tensor& t, const OptGen& g, const OptDType& dtype, const std::optional<Device>& device,
                         bool rg) {
    return grad_if(randn(t.sizes(), g, like(t, dtype, device)), rg);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
}

}  // namespace tessera::python
