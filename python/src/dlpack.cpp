// The Python array API's DLPack protocol on top of tessera/dlpack.h:
// Tensor.__dlpack__, Tensor.__dlpack_device__ and tessera.from_dlpack.
//
// Capsule rules (DLPack's Python spec): a capsule named "dltensor_versioned"
// (DLManagedTensorVersioned) or "dltensor" (legacy DLManagedTensor) owns its
// managed tensor until a consumer renames it "used_dltensor[_versioned]" and takes
// ownership. The capsule's destructor calls the deleter only if nobody did.
#include "common.h"

#include <tessera/dlpack.h>

#include <nanobind/stl/pair.h>

#include <string>
#include <utility>

namespace tessera::python {
namespace {

constexpr const char* kVersioned = "dltensor_versioned";
constexpr const char* kUsedVersioned = "used_dltensor_versioned";
constexpr const char* kLegacy = "dltensor";
constexpr const char* kUsedLegacy = "used_dltensor";

// Capsule destructors may run during exception handling or interpreter teardown:
// keep any pending exception intact while the producer's deleter runs.
void versioned_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersioned)) return;  // consumed (renamed): not ours
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersioned));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  PyErr_Restore(type, value, tb);
}

void legacy_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kLegacy)) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacy));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  PyErr_Restore(type, value, tb);
}

const DeviceTypeSummary* summary_by_name(const std::string& name) {
  static thread_local std::vector<DeviceTypeSummary> cache;
  cache = device_types();
  for (const auto& s : cache)
    if (s.name == name) return &s;
  return nullptr;
}

std::pair<int32_t, int32_t> dlpack_device_of(const Device& d) {
  const DeviceTypeSummary* s = summary_by_name(d.type_name());
  if (s == nullptr || s->dlpack_device_type == 0)
    throw nb::buffer_error(("device " + d.str() + " has no DLPack device type (it cannot be exchanged)").c_str());
  return {s->dlpack_device_type, d.index()};
}

// A (int, int) tuple argument such as max_version=(1, 0) or dl_device=(1, 0);
// anything else is a TypeError naming the argument (not nanobind's bad_cast).
std::pair<int64_t, int64_t> int_pair(nb::handle h, const char* what) {
  std::pair<int64_t, int64_t> out;
  if (!nb::try_cast(h, out, /*convert=*/false))
    throw nb::type_error(("__dlpack__: " + std::string(what) + " must be a tuple of two ints, got " +
                          nb::cast<std::string>(nb::repr(h))).c_str());
  return out;
}

// The Tessera device for a DLPack (type, id), or a ValueError naming what exists.
Device device_of_dlpack(int32_t type, int32_t id) {
  std::string known;
  for (const auto& s : device_types()) {
    if (s.dlpack_device_type == type && type != 0) return Device(s.name + ":" + std::to_string(id));
    if (s.dlpack_device_type != 0)
      known += (known.empty() ? "" : ", ") + s.name + " = " + std::to_string(s.dlpack_device_type);
  }
  throw nb::value_error(("DLPack device type " + std::to_string(type) +
                         " is not provided by any loaded plugin (known: " + known + ")").c_str());
}

// The array API asks __dlpack__ to raise BufferError when the data cannot be
// exported (meta device, read-only tensor in the legacy struct); the core's
// message is kept as is.
template <typename F>
auto export_or_buffer_error(F&& f) {
  try {
    return f();
  } catch (const tessera::ValueError& e) {
    throw nb::buffer_error(e.what());
  }
}

nb::object dlpack(const Tensor& self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                  std::optional<bool> copy) {
  // Synchronous devices only today (docs/dlpack.md): no stream hand-off to do.
  if (!stream.is_none() && !(PyLong_Check(stream.ptr()) && nb::cast<int64_t>(stream) == -1))
    throw nb::value_error(("__dlpack__: stream must be None or -1 for device " + self.device().str() +
                           ", which has no streams").c_str());
  bool versioned = false;
  if (!max_version.is_none()) {
    auto mv = int_pair(max_version, "max_version");
    versioned = mv.first >= 1;  // Tessera speaks 1.x; a 0.x consumer gets the legacy struct
  }
  Tensor t = self;
  bool copied = false;
  if (!dl_device.is_none()) {
    auto want64 = int_pair(dl_device, "dl_device");
    std::pair<int32_t, int32_t> want{static_cast<int32_t>(want64.first), static_cast<int32_t>(want64.second)};
    if (want != dlpack_device_of(self.device())) {
      if (copy.has_value() && !*copy)
        throw nb::buffer_error(("__dlpack__: dl_device=(" + std::to_string(want.first) + ", " +
                                std::to_string(want.second) + ") needs a copy from " + self.device().str() +
                                " but copy=False").c_str());
      t = self.to(device_of_dlpack(want.first, want.second));
      copied = true;
    }
  }
  if (copy.value_or(false) && !copied) {
    t = self.clone();
    copied = true;
  }
  if (versioned) {
    DLManagedTensorVersioned* managed = export_or_buffer_error([&] { return to_dlpack_versioned(t); });
    if (copied) managed->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    PyObject* cap = PyCapsule_New(managed, kVersioned, versioned_capsule_destructor);
    if (cap == nullptr) {
      managed->deleter(managed);
      throw nb::python_error();
    }
    return nb::steal(cap);
  }
  // Legacy export refuses read-only tensors: DLManagedTensor has no flag to say so.
  DLManagedTensor* managed = export_or_buffer_error([&] { return to_dlpack(t); });
  PyObject* cap = PyCapsule_New(managed, kLegacy, legacy_capsule_destructor);
  if (cap == nullptr) {
    managed->deleter(managed);
    throw nb::python_error();
  }
  return nb::steal(cap);
}

// Takes ownership of a capsule's managed tensor: renames the capsule first, since
// tessera::from_dlpack owns the struct from entry, also when it throws.
Tensor from_capsule(nb::handle cap) {
  if (PyCapsule_IsValid(cap.ptr(), kVersioned)) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), kVersioned));
    if (PyCapsule_SetName(cap.ptr(), kUsedVersioned) != 0) throw nb::python_error();
    return tessera::from_dlpack(managed);
  }
  if (PyCapsule_IsValid(cap.ptr(), kLegacy)) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kLegacy));
    if (PyCapsule_SetName(cap.ptr(), kUsedLegacy) != 0) throw nb::python_error();
    return tessera::from_dlpack(managed);
  }
  const char* name = PyCapsule_GetName(cap.ptr());
  PyErr_Clear();
  std::string n = name ? name : "<unnamed>";
  if (n == kUsedVersioned || n == kUsedLegacy)
    throw nb::value_error(("from_dlpack: the DLPack capsule was already consumed (its name is '" + n +
                           "'); a capsule can be imported only once").c_str());
  throw nb::value_error(("from_dlpack: expected a capsule named 'dltensor_versioned' or 'dltensor', got '" + n +
                         "'").c_str());
}

// Interned names and the max_version tuple, made once: from_dlpack of a small
// array is dominated by this Python-level call overhead. Deliberately leaked
// (process lifetime), so nothing is released after interpreter finalization.
struct CallConstants {
  PyObject* dlpack_name;       // "__dlpack__"
  PyObject* max_version;       // (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)
  PyObject* kw_max_version;    // ("max_version",)
  PyObject* kw_max_version_copy;  // ("max_version", "copy")
};
CallConstants g_call{};

[[noreturn]] void throw_not_a_producer(nb::handle obj) {
  throw nb::type_error(("from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got " +
                        nb::cast<std::string>(nb::str(obj.type().attr("__name__")))).c_str());
}

// obj.__dlpack__(max_version=(1, minor)[, copy=copy]). Returns None when the
// producer rejects the keywords with TypeError (a pre-1.0 producer).
nb::object call_dlpack(nb::handle obj, std::optional<bool> copy) {
  PyObject* args[3] = {obj.ptr(), g_call.max_version, copy ? (*copy ? Py_True : Py_False) : nullptr};
  PyObject* kwnames = copy ? g_call.kw_max_version_copy : g_call.kw_max_version;
  PyObject* r = PyObject_VectorcallMethod(g_call.dlpack_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
  if (r != nullptr) return nb::steal(r);
  if (PyErr_ExceptionMatches(PyExc_AttributeError) && !PyObject_HasAttr(obj.ptr(), g_call.dlpack_name)) {
    PyErr_Clear();
    throw_not_a_producer(obj);
  }
  if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
  PyErr_Clear();
  return nb::none();
}

nb::object call_legacy_dlpack(nb::handle obj) {
  PyObject* r = PyObject_CallMethodNoArgs(obj.ptr(), g_call.dlpack_name);
  if (r == nullptr) throw nb::python_error();
  return nb::steal(r);
}

Tensor from_dlpack_obj(nb::handle obj, const DeviceArg& device, std::optional<bool> copy) {
  Tensor t;
  bool copied = false;
  if (PyCapsule_CheckExact(obj.ptr())) {
    t = from_capsule(obj);
  } else {
    nb::object cap = call_dlpack(obj, copy);
    copied = copy.value_or(false) && !cap.is_none();
    if (cap.is_none()) cap = call_legacy_dlpack(obj);
    if (!PyCapsule_CheckExact(cap.ptr()))
      throw nb::type_error("from_dlpack: __dlpack__() did not return a PyCapsule");
    t = from_capsule(cap);
  }
  if (device && *device != t.device()) {
    if (copy.has_value() && !*copy)
      throw nb::buffer_error(("from_dlpack: the tensor is on " + t.device().str() + "; moving it to " +
                              device->str() + " needs a copy but copy=False").c_str());
    return t.to(*device);
  }
  if (copy.value_or(false) && !copied) return t.clone();  // legacy producer could not copy for us
  return t;
}

}  // namespace

void register_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("__dlpack__", &dlpack, nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "Export as a DLPack capsule (Python array API).");
  cls.def("__dlpack_device__", [](const Tensor& t) { return dlpack_device_of(t.device()); });
  m.def("from_dlpack", &from_dlpack_obj, nb::arg("obj"), nb::kw_only(), nb::arg("device") = nb::none(),
        nb::arg("copy") = nb::none(), "Import a tensor from any DLPack producer or capsule, without copying.");
  g_call.dlpack_name = PyUnicode_InternFromString("__dlpack__");
  g_call.max_version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
  g_call.kw_max_version = Py_BuildValue("(s)", "max_version");
  g_call.kw_max_version_copy = Py_BuildValue("(ss)", "max_version", "copy");
  if (!g_call.dlpack_name || !g_call.max_version || !g_call.kw_max_version || !g_call.kw_max_version_copy)
    throw nb::python_error();
  m.attr("__dlpack_version__") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
}

}  // namespace tessera::python
