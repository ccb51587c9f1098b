// tessera::Error subclasses -> the Python exceptions of the same meaning, with the
// core's message unchanged (it already names the op, shapes, dtypes, plugin).
#include "common.h"

namespace tessera::python {

void register_errors(nb::module_&) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;  // Unavailable, PluginError, Internal
      switch (e.code()) {
        case ErrorCode::InvalidArgument: type = PyExc_ValueError; break;
        case ErrorCode::TypeError: type = PyExc_TypeError; break;
        case ErrorCode::IndexError: type = PyExc_IndexError; break;
        case ErrorCode::Unimplemented: type = PyExc_NotImplementedError; break;
        case ErrorCode::OutOfMemory: type = PyExc_MemoryError; break;
        default: break;
      }
      PyErr_SetString(type, e.what());
    }
  });
}

}  // namespace tessera::python
