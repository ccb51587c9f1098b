// The Python array API's DLPack protocol on top of tessera/dlpack.h:
// Tensor.__dlpack__, Tensor.__dlpack_device__ and tessera.from_dlpack; and the
// NumPy-facing protocols built on the same zero-copy views: Tensor.__array__
// and the buffer protocol (memoryview(t)).
//
// Capsule rules (DLPack's Python spec): a capsule named "dltensor_versioned"
// (DLManagedTensorVersioned) or "dltensor" (legacy DLManagedTensor) owns its
// managed tensor until a consumer renames it "used_dltensor[_versioned]" and takes
// ownership. The capsule's destructor calls the deleter only if nobody did.
//
// Streams (the array API's rule, docs/dlpack.md): __dlpack__(stream=s) hands
// the tensor off to the consumer's stream s on an asynchronous device (None
// and -1 only on synchronous ones); from_dlpack(x) asks x.__dlpack_device__()
// and passes Tessera's current stream there as x.__dlpack__(stream=...).
#include "common.h"

#include <tessera/abi.h>  // TSR_DEVICE_CAP_HOST_ACCESSIBLE
#include <tessera/dlpack.h>

#include <nanobind/stl/pair.h>

#include <climits>
#include <memory>
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

// A (int, int) tuple argument such as max_version=(1, 0) or dl_device=(1, 0):
// the two Python ints; anything else is a TypeError naming the argument.
std::pair<nb::object, nb::object> int_pair(nb::handle h, const char* what) {
  const bool seq = PyTuple_Check(h.ptr()) || PyList_Check(h.ptr());
  if (seq && nb::len(h) == 2) {
    nb::object a = h[0], b = h[1];
    if (PyLong_Check(a.ptr()) && PyLong_Check(b.ptr())) return {a, b};
  }
  throw nb::type_error(("__dlpack__: " + std::string(what) + " must be a tuple of two ints, got " +
                        nb::cast<std::string>(nb::repr(h))).c_str());
}

// An int of a dl_device pair within [0, INT32_MAX] (DLDevice holds int32s),
// else a ValueError naming the pair: (2**32 + 1, 0) must not wrap to (1, 0).
int32_t dl_device_int(nb::handle v, nb::handle pair, const char* what) {
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0 || x < 0 || x > INT32_MAX) {
    const std::string a = describe_int(nb::borrow(pair)[0]), b = describe_int(nb::borrow(pair)[1]);
    throw nb::value_error(("__dlpack__: dl_device=(" + a + ", " + b + ") is not a DLPack device: its " + what +
                           " must be in [0, 2147483647]").c_str());
  }
  return static_cast<int32_t>(x);
}

// The Tessera device for a DLPack (type, id). The array API asks for
// BufferError when the producer cannot export to the requested device.
Device device_of_dlpack(int32_t type, int32_t id) {
  std::string known;
  for (const auto& s : device_types()) {
    if (s.dlpack_device_type == type && type != 0) {
      if (id >= s.device_count)
        throw nb::buffer_error(("__dlpack__: dl_device=(" + std::to_string(type) + ", " + std::to_string(id) +
                                ") is " + s.name + ":" + std::to_string(id) + ", which does not exist: device type '" +
                                s.name + "' (plugin '" + s.plugin + "') has " + std::to_string(s.device_count) +
                                " device(s)").c_str());
      return Device(s.name + ":" + std::to_string(id));
    }
    if (s.dlpack_device_type != 0)
      known += (known.empty() ? "" : ", ") + s.name + " = " + std::to_string(s.dlpack_device_type);
  }
  throw nb::buffer_error(("__dlpack__: DLPack device type " + std::to_string(type) +
                          " is not provided by any loaded plugin (known: " + known + ")").c_str());
}

// Host memory (the device type declares TSR_DEVICE_CAP_HOST_ACCESSIBLE): what
// the buffer protocol and a zero-copy __array__ can hand out.
bool is_host(const Tensor& t) {
  const DeviceTypeSummary* s = summary_by_name(t.device().type_name());
  return s != nullptr && (s->capabilities & TSR_DEVICE_CAP_HOST_ACCESSIBLE) != 0;
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

std::string short_repr(nb::handle h) {
  if (PyLong_Check(h.ptr())) return describe_int(h);
  std::string r = nb::cast<std::string>(nb::repr(h));
  return r.size() > 80 ? r.substr(0, 77) + "..." : r;
}

bool is_async(const Device& d) {
  const DeviceTypeSummary* s = summary_by_name(d.type_name());
  return s != nullptr && (s->capabilities & TSR_DEVICE_CAP_ASYNC) != 0;
}

// The stream= argument of __dlpack__ (the array API's value) as the core takes
// it. Synchronous devices accept None and -1 only; asynchronous ones any int
// the device's encoding allows (tessera/dlpack.h DLPackStream), refused with
// ValueError like everything else that is not a stream value.
DLPackStream stream_argument(const Device& device, nb::handle stream) {
  if (stream.is_none()) return std::nullopt;
  int overflow = 0;
  long long v = 0;
  const bool is_int = PyLong_Check(stream.ptr()) && !PyBool_Check(stream.ptr());
  if (is_int) {
    v = PyLong_AsLongLongAndOverflow(stream.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  }
  if (!is_async(device)) {
    if (!is_int || overflow != 0 || v != -1)
      throw nb::value_error(("__dlpack__: stream must be None or -1 for device " + device.str() +
                             ", which has no streams (got stream=" + short_repr(stream) + ")").c_str());
    return kDLPackNoSync;
  }
  if (!is_int || overflow != 0)
    throw nb::value_error(("__dlpack__: stream must be None or an int from -1 to 2**63 - 1 for device " +
                           device.str() + " (got stream=" + short_repr(stream) + ")").c_str());
  check_dlpack_stream(device, v, "__dlpack__");  // ValueError, not the BufferError of other refusals
  return v;
}

nb::object dlpack(const Tensor& self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                  std::optional<bool> copy) {
  bool versioned = false;
  if (!max_version.is_none()) {
    auto mv = int_pair(max_version, "max_version");
    // Tessera speaks 1.x; a 0.x consumer gets the legacy struct. Compared as
    // Python ints, so any major (even beyond int64) is fine.
    versioned = PyObject_RichCompareBool(mv.first.ptr(), nb::int_(1).ptr(), Py_GE) == 1;
  }
  std::optional<Device> target;  // dl_device, when it is not the tensor's device
  if (!dl_device.is_none()) {
    auto want_obj = int_pair(dl_device, "dl_device");
    const std::pair<int32_t, int32_t> want{dl_device_int(want_obj.first, dl_device, "device type"),
                                           dl_device_int(want_obj.second, dl_device, "device index")};
    if (want != dlpack_device_of(self.device())) {
      if (copy.has_value() && !*copy)
        throw nb::buffer_error(("__dlpack__: dl_device=(" + std::to_string(want.first) + ", " +
                                std::to_string(want.second) + ") needs a copy from " + self.device().str() +
                                " but copy=False").c_str());
      target = device_of_dlpack(want.first, want.second);
    }
  }
  // The stream is one of the device the consumer uses the tensor on. A copy to
  // it is queued on Tessera's current stream there, so the hand-off covers it.
  const DLPackStream consumer_stream = stream_argument(target ? *target : self.device(), stream);
  Tensor t = self;
  bool copied = false;
  if (target) {
    t = self.to(*target);
    copied = true;
  }
  if (copy.value_or(false) && !copied) {
    t = self.clone();
    copied = true;
  }
  if (versioned) {
    DLManagedTensorVersioned* managed =
        export_or_buffer_error([&] { return to_dlpack_versioned(t, false, consumer_stream); });
    if (copied) managed->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    PyObject* cap = PyCapsule_New(managed, kVersioned, versioned_capsule_destructor);
    if (cap == nullptr) {
      managed->deleter(managed);
      throw nb::python_error();
    }
    return nb::steal(cap);
  }
  // Legacy export refuses read-only tensors: DLManagedTensor has no flag to say so.
  DLManagedTensor* managed = export_or_buffer_error([&] { return to_dlpack(t, consumer_stream); });
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
  PyObject* dlpack_device_name;  // "__dlpack_device__"
  PyObject* max_version;       // (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)
  PyObject* kw_max_version;    // ("max_version",)
  PyObject* kw_max_version_copy;  // ("max_version", "copy")
  PyObject* kw_stream;         // ("stream",)
  PyObject* kw_stream_max_version;       // ("stream", "max_version")
  PyObject* kw_stream_max_version_copy;  // ("stream", "max_version", "copy")
};
CallConstants g_call{};

[[noreturn]] void throw_not_a_producer(nb::handle obj) {
  throw nb::type_error(("from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got " +
                        nb::cast<std::string>(nb::str(obj.type().attr("__name__")))).c_str());
}

// The stream= value to pass to a producer (the array API's consumer side):
// Tessera's current stream on the device obj.__dlpack_device__() reports, when
// that is an asynchronous device; nullopt (pass nothing, i.e. None) otherwise,
// also for a producer without __dlpack_device__ or with a malformed answer
// (the import then judges the device the capsule names).
DLPackStream consumer_stream_of(nb::handle obj) {
  PyObject* r = PyObject_CallMethodNoArgs(obj.ptr(), g_call.dlpack_device_name);
  if (r == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw nb::python_error();
    PyErr_Clear();
    return std::nullopt;
  }
  nb::object dev = nb::steal(r);
  if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) return std::nullopt;
  int o1 = 0, o2 = 0;
  const long long type = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(r, 0), &o1);
  const long long id = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(r, 1), &o2);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  if (o1 != 0 || o2 != 0 || type < 0 || type > INT32_MAX || id < 0 || id > INT32_MAX) return std::nullopt;
  return dlpack_consumer_stream(DLDevice{static_cast<DLDeviceType>(type), static_cast<int32_t>(id)});
}

// obj.__dlpack__([stream=s, ]max_version=(1, minor)[, copy=copy]). Returns None
// when the producer rejects the keywords with TypeError (a pre-1.0 producer).
nb::object call_dlpack(nb::handle obj, DLPackStream stream, std::optional<bool> copy) {
  nb::object stream_value = stream ? nb::int_(*stream) : nb::object();
  PyObject* args[4] = {obj.ptr()};
  size_t n = 1;
  if (stream) args[n++] = stream_value.ptr();
  args[n++] = g_call.max_version;
  if (copy) args[n++] = *copy ? Py_True : Py_False;
  PyObject* kwnames = stream ? (copy ? g_call.kw_stream_max_version_copy : g_call.kw_stream_max_version)
                             : (copy ? g_call.kw_max_version_copy : g_call.kw_max_version);
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

// The pre-1.0 call: obj.__dlpack__() or obj.__dlpack__(stream=s) (the stream
// argument predates max_version).
nb::object call_legacy_dlpack(nb::handle obj, DLPackStream stream) {
  PyObject* r;
  if (stream) {
    nb::object stream_value = nb::int_(*stream);
    PyObject* args[2] = {obj.ptr(), stream_value.ptr()};
    r = PyObject_VectorcallMethod(g_call.dlpack_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, g_call.kw_stream);
  } else {
    r = PyObject_CallMethodNoArgs(obj.ptr(), g_call.dlpack_name);
  }
  if (r == nullptr) throw nb::python_error();
  return nb::steal(r);
}

Tensor from_dlpack_obj(nb::handle obj, const DeviceArg& device, std::optional<bool> copy) {
  Tensor t;
  bool copied = false;
  if (PyCapsule_CheckExact(obj.ptr())) {
    t = from_capsule(obj);
  } else {
    // The producer orders its work before Tessera's current stream (async
    // devices); without any, no need to ask for its device (a call per import).
    const DLPackStream stream = dlpack_has_async_devices() ? consumer_stream_of(obj) : std::nullopt;
    nb::object cap = call_dlpack(obj, stream, copy);
    copied = copy.value_or(false) && !cap.is_none();
    if (cap.is_none()) cap = call_legacy_dlpack(obj, stream);
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
  // copy=True gives a writable copy of our own: a pre-1.0 producer could not
  // copy for us, and a legacy capsule (read-only here, whoever made it) or a
  // read-only versioned one does not hand over writable memory.
  if (copy.value_or(false) && (!copied || t.is_read_only())) return t.clone();
  return t;
}

// ---------------------------------------------------------------------------
// NumPy: __array__ and the buffer protocol

// Tensor.__array__(dtype=None, copy=None) with NumPy 2's meaning of copy:
// None copies only when needed (another device, another dtype), False never
// copies (ValueError when it would have to), True always copies. Host tensors
// are handed over through DLPack without copying, read-only ones read-only.
nb::object to_numpy(nb::handle self, nb::handle dtype, nb::handle copy_arg) {
  const Tensor& t = nb::cast<const Tensor&>(self);
  std::optional<bool> copy;
  if (!copy_arg.is_none()) {
    const int truth = PyObject_IsTrue(copy_arg.ptr());
    if (truth < 0) throw nb::python_error();
    copy = truth == 1;
  }
  nb::module_ np = nb::module_::import_("numpy");
  const bool host = is_host(t);
  const bool bf16 = t.dtype() == kBFloat16;
  nb::object want = dtype.is_none() ? nb::none() : np.attr("dtype")(dtype);
  const bool convert = !want.is_none() && (bf16 || !want.equal(np.attr("dtype")(std::string(dtype_name(t.dtype())))));
  const std::string what = detail::str(dtype_name(t.dtype()), t.sizes(), " tensor on ", t.device().str());
  if (copy == false && (!host || convert))
    throw nb::value_error(("Tensor.__array__: copy=False, but a NumPy array of this " + what +
                           (convert ? " as " + nb::cast<std::string>(nb::str(want)) : std::string()) +
                           " needs a copy").c_str());
  if (bf16 && want.is_none())
    throw nb::type_error(("Tensor.__array__: NumPy has no bfloat16 dtype (" + what +
                          "); ask for one, e.g. np.asarray(t, dtype=np.float32), or convert first with "
                          "t.to(tessera.float32)").c_str());
  Tensor h = t;
  bool copied = false;
  if (!host) {
    h = h.to(Device("cpu"));
    copied = true;
  }
  if (bf16) {  // exact: every bfloat16 is a float32
    h = h.to(kFloat);
    copied = true;
  }
  nb::object arr = np.attr("from_dlpack")(nb::cast(h));
  if (!want.is_none() && !arr.attr("dtype").equal(want)) {
    arr = arr.attr("astype")(want);
    copied = true;
  }
  if (copy == true && !copied) arr = arr.attr("copy")();
  return arr;
}

const char* buffer_format(ScalarType t) {
  switch (t) {
    case kBool: return "?";
    case kByte: return "B";
    case kChar: return "b";
    case kShort: return "h";
    case kInt: return "i";
    case kLong: return "q";
    case kHalf: return "e";
    case kFloat: return "f";
    case kDouble: return "d";
    default: return nullptr;  // bfloat16: no struct-module format
  }
}

// Whether elements lie back to back in row-major (C) or column-major (Fortran)
// order, as the buffer protocol defines it (dims of size 1 have any stride).
bool dense(IntArrayRef sizes, IntArrayRef strides, bool fortran) {
  int64_t expected = 1;
  const size_t n = sizes.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = fortran ? k : n - 1 - k;
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

// What a Py_buffer points into: the tensor (keeping its storage alive however
// the Python object changes meanwhile) and the shape and byte strides arrays.
struct BufferView {
  Tensor tensor;
  std::vector<Py_ssize_t> shape, strides;
};

alignas(16) char g_empty_buffer[16];  // buf of zero-size tensors, which may have no data pointer

int buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  return -1;
}

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    const Tensor& t = nb::cast<const Tensor&>(nb::handle(self));
    const std::string what = detail::str(dtype_name(t.dtype()), t.sizes(), " tensor on ", t.device().str());
    if (!is_host(t))
      return buffer_error("buffer protocol: the " + what + " is not in host memory; copy it first with .cpu()");
    const char* format = buffer_format(t.dtype());
    if (format == nullptr)
      return buffer_error("buffer protocol: the " + what +
                          " has no buffer format (bfloat16 has none); convert it first, e.g. .to(tessera.float32)");
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && t.is_read_only())
      return buffer_error("buffer protocol: the " + what + " is read-only; a writable buffer was requested");
    if (t.dim() > PyBUF_MAX_NDIM)
      return buffer_error("buffer protocol: the " + what + " has more than " + std::to_string(PyBUF_MAX_NDIM) +
                          " dims");
    const bool c = dense(t.sizes(), t.strides(), false), f = dense(t.sizes(), t.strides(), true);
    const bool with_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    if (((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c) ||
        ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f) ||
        ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f) || (!with_strides && !c))
      return buffer_error("buffer protocol: the " + what +
                          " is not contiguous in the order requested; use .contiguous() or request strides");
    auto hold = std::make_unique<BufferView>();
    hold->tensor = t;
    const auto itemsize = static_cast<Py_ssize_t>(t.element_size());
    for (int64_t d = 0; d < t.dim(); ++d) {
      hold->shape.push_back(static_cast<Py_ssize_t>(t.size(d)));
      hold->strides.push_back(static_cast<Py_ssize_t>(t.stride(d)) * itemsize);
    }
    view->buf = t.numel() == 0 || t.data_ptr() == nullptr ? static_cast<void*>(g_empty_buffer) : t.data_ptr();
    view->len = static_cast<Py_ssize_t>(t.numel()) * itemsize;
    view->itemsize = itemsize;
    view->readonly = t.is_read_only() ? 1 : 0;
    view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(format) : nullptr;
    view->ndim = static_cast<int>(t.dim());
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? hold->shape.data() : nullptr;
    view->strides = with_strides ? hold->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = hold.release();
    view->obj = Py_NewRef(self);
    return 0;
  } catch (nb::python_error& e) {
    e.restore();
    return -1;
  } catch (const std::exception& e) {
    return buffer_error(std::string("buffer protocol: ") + e.what());
  }
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferView*>(view->internal); }

PyType_Slot g_buffer_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(&tensor_getbuffer)},
                                {Py_bf_releasebuffer, reinterpret_cast<void*>(&tensor_releasebuffer)},
                                {0, nullptr}};

}  // namespace

const PyType_Slot* tensor_buffer_slots() { return g_buffer_slots; }

void register_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("__array__", &to_numpy, nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(),
          "A NumPy array of the tensor (NumPy 2's copy= rules; no copy for host tensors unless asked).");
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
  g_call.dlpack_device_name = PyUnicode_InternFromString("__dlpack_device__");
  g_call.kw_stream = Py_BuildValue("(s)", "stream");
  g_call.kw_stream_max_version = Py_BuildValue("(ss)", "stream", "max_version");
  g_call.kw_stream_max_version_copy = Py_BuildValue("(sss)", "stream", "max_version", "copy");
  if (!g_call.dlpack_name || !g_call.max_version || !g_call.kw_max_version || !g_call.kw_max_version_copy ||
      !g_call.dlpack_device_name || !g_call.kw_stream || !g_call.kw_stream_max_version ||
      !g_call.kw_stream_max_version_copy)
    throw nb::python_error();
  m.attr("__dlpack_version__") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
}

}  // namespace tessera::python
