// tessera.ops: any op by name (tessera::ops::call), the schema's argument
// names as keywords. The Python package (tessera/ops.py) resolves attribute
// names to op names; this file converts Python values to ops::Arg and back.
#include <tessera/dispatcher.h>
#include <tessera/ops/call.h>

#include "common.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

namespace tessera::python {
namespace {

ops::Arg to_arg(nb::handle v, const std::string& op, const std::string& what) {
  if (v.is_none()) return std::monostate{};
  if (nb::isinstance<Tensor>(v)) return nb::cast<Tensor>(v);
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return int64_of(v, (op + ": " + what).c_str());
  if (PyFloat_Check(v.ptr())) return PyFloat_AsDouble(v.ptr());
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  if (nb::isinstance<DType>(v)) return nb::cast<DType>(v).type;
  if (nb::isinstance<Device>(v)) return nb::cast<Device>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    const nb::sequence seq = nb::borrow<nb::sequence>(v);
    bool tensors = nb::len(seq) > 0;
    for (nb::handle item : seq) tensors = tensors && nb::isinstance<Tensor>(item);
    if (tensors) {
      std::vector<Tensor> ts;
      for (nb::handle item : seq) ts.push_back(nb::cast<Tensor>(item));
      return ts;
    }
    std::vector<int64_t> ints;
    for (nb::handle item : seq) {
      if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr()))
        throw nb::type_error((op + ": " + what + " must be a list of ints or of tensors").c_str());
      ints.push_back(int64_of(item, (op + ": " + what).c_str()));
    }
    return ints;
  }
  throw nb::type_error((op + ": " + what + " cannot be a " +
                        nb::cast<std::string>(nb::str(v.type().attr("__name__")))).c_str());
}

nb::object call_op(const std::string& name, const nb::tuple& args, const nb::dict& kwargs) {
  std::vector<ops::Arg> positional;
  for (size_t i = 0; i < args.size(); ++i) positional.push_back(to_arg(args[i], name, "argument " + std::to_string(i)));
  std::vector<ops::KwArg> named;
  for (auto [key, value] : kwargs) {
    const std::string k = nb::cast<std::string>(key);
    named.emplace_back(k, to_arg(value, name, "argument '" + k + "'"));
  }
  // The GIL stays held, as for the ops bound one by one (ops_binary.cpp).
  const std::vector<Tensor> out = ops::call(name, positional, named);
  if (out.size() == 1) return nb::cast(out[0]);
  nb::list results;
  for (const Tensor& t : out) results.append(nb::cast(t));
  return nb::tuple(results);
}

}  // namespace

void register_ops_call(nb::module_& m) {
  m.def("_call_op", &call_op, nb::arg("name"), nb::arg("args"), nb::arg("kwargs"),
        "Calls the op `name` with the schema's arguments (tessera::ops::call); tessera.ops wraps it.");
  m.def("_has_op", [](const std::string& name) { return Dispatcher::instance().find(name) != nullptr; },
        "Whether an op of that name is declared (a map lookup: tessera.ops' fast path).");
  m.def("_op_schemas", [] {
    nb::dict out;
    for (const Operator* op : Dispatcher::instance().operators()) out[op->name().c_str()] = op->schema().text;
    return out;
  }, "Every declared op's name and schema text.");
}

}  // namespace tessera::python
