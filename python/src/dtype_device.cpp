// tessera.dtype objects (tessera.float32, ...), tessera.device, devices(), and
// plugin loading.
#include "common.h"

#include <nanobind/stl/vector.h>

#include <string>

namespace tessera::python {

void register_dtype_device(nb::module_& m) {
  nb::class_<DType>(m, "dtype")
      .def("__repr__", [](const DType& d) { return "tessera." + std::string(dtype_name(d.type)); })
      .def("__eq__", [](const DType& a, const DType& b) { return a == b; })
      .def("__eq__", [](const DType&, nb::handle) { return false; })
      .def("__hash__", [](const DType& d) { return static_cast<int64_t>(d.type); })
      .def_prop_ro("itemsize", [](const DType& d) { return element_size(d.type); })
      .def_prop_ro("is_floating_point", [](const DType& d) { return is_floating_type(d.type); });

  // PyTorch names, including its aliases (float = float32, long = int64, ...).
  const std::pair<const char*, ScalarType> names[] = {
      {"bool", kBool},       {"uint8", kUInt8},     {"int8", kInt8},       {"int16", kInt16},
      {"int32", kInt32},     {"int64", kInt64},     {"float16", kFloat16}, {"bfloat16", kBFloat16},
      {"float32", kFloat32}, {"float64", kFloat64}, {"short", kInt16},     {"int", kInt32},
      {"long", kInt64},      {"half", kFloat16},    {"float", kFloat32},   {"double", kFloat64}};
  // Exposed as a dict and bound to module names in tessera/__init__.py: as
  // attributes of _C, `bool`, `int` and `float` would shadow the builtins in
  // the generated _C.pyi.
  nb::dict table;
  for (const auto& [name, type] : names) table[name] = DType{type};
  m.attr("_dtypes") = table;

  nb::class_<Device>(m, "device")
      .def(nb::init<const std::string&>(), nb::arg("spec"))
      .def("__init__", [](Device* self, const std::string& type, nb::handle index) {
        // Any int: the core's parser names the ones out of range.
        new (self) Device(type + ":" + std::to_string(int64_of(index, "device(): index")));
      }, nb::arg("type"), nb::arg("index"))
      .def_prop_ro("type", [](const Device& d) { return d.type_name(); })
      .def_prop_ro("index", &Device::index)
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__eq__", [](const Device&, nb::handle) { return false; })
      .def("__hash__", [](const Device& d) { return d.type() * 65536 + d.index(); });
  // device= arguments also take "cpu", "cuda:1", ... through DeviceArg
  // (common.h), not nanobind's implicit conversion: that one turns the
  // ValueError for an unknown device into a TypeError about overloads and
  // prints a line on stderr.

  m.def("devices", &tessera::devices, "Every device of every loaded plugin.");
  m.def("_device_types", [] {
    nb::list out;
    for (const DeviceTypeSummary& t : tessera::device_types()) {
      nb::dict d;
      d["name"] = t.name;
      d["plugin"] = t.plugin;
      d["device_count"] = t.device_count;
      d["unavailable_reason"] = t.unavailable_reason;
      d["descriptions"] = t.device_descriptions;
      out.append(d);
    }
    return out;
  }, "Every registered device type: name, plugin, device_count, unavailable_reason, descriptions "
     "(what tessera.cuda and `tessera info` read).");
  m.def("load_plugin", [](const std::string& path) { return tessera::load_plugin(path).name; },
        nb::arg("path"), "Load a plugin library; returns its name.");
  m.def("unload_plugin", [](const std::string& name) { tessera::unload_plugin(name); }, nb::arg("name"),
        "Unload the plugin `name`: its kernels go, calls of the ops it defined fail naming it, and its library "
        "closes when the last tensor it made is freed.");
  m.def("info", &tessera::info_text, "Plugins, device types, devices and kernels, as text.");
}

}  // namespace tessera::python
