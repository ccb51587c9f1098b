// tessera::Error subclasses -> the Python exceptions of the same meaning, with the
// core's message unchanged (it already names the op, shapes, dtypes, plugin).
// C++ standard exceptions that reach the bindings (an allocation failing, a
// nanobind cast of a bad argument) get a sentence instead of a bare
// "std::bad_alloc": nothing reaches Python as RuntimeError("std::...").
#include "common.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <typeinfo>

namespace tessera::python {

namespace {
PyObject* g_out_of_memory = nullptr;  // tessera.OutOfMemoryError, a MemoryError (lives as long as the module)
}  // namespace

void register_errors(nb::module_& m) {
  g_out_of_memory = PyErr_NewExceptionWithDoc(
      "tessera.OutOfMemoryError",
      "A device (or the caching allocator's limit) has no room for an allocation; the message names the device, "
      "the bytes asked, what is allocated and reserved, the limit and the setting that may help (docs/memory.md).",
      PyExc_MemoryError, nullptr);
  if (g_out_of_memory == nullptr) throw nb::python_error();
  m.attr("OutOfMemoryError") = nb::borrow(g_out_of_memory);
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
        case ErrorCode::OutOfMemory: type = g_out_of_memory; break;
        default: break;
      }
      PyErr_SetString(type, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError,
                      "out of memory: a C++ allocation in the tessera bindings failed (std::bad_alloc)");
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_MemoryError,
                      (std::string("out of memory: a buffer larger than the C++ library allows was requested "
                                   "(std::length_error: ") + e.what() + ")").c_str());
    } catch (const std::bad_cast&) {  // nb::cast_error: a Python value that does not fit the C++ parameter
      PyErr_SetString(PyExc_TypeError,
                      "an argument has a type (or an int a value beyond int64) that this tessera call cannot "
                      "convert (std::bad_cast)");
    } catch (const std::exception& e) {
      // Anything else: the Python class nanobind would pick, and a message that
      // names the C++ exception instead of only its what().
      PyObject* type = PyExc_RuntimeError;
      if (dynamic_cast<const std::overflow_error*>(&e)) type = PyExc_OverflowError;
      else if (dynamic_cast<const std::out_of_range*>(&e)) type = PyExc_IndexError;
      else if (dynamic_cast<const std::logic_error*>(&e) || dynamic_cast<const std::range_error*>(&e))
        type = PyExc_ValueError;
      int status = 0;
      std::unique_ptr<char, void (*)(void*)> name(
          abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), &std::free);
      PyErr_SetString(type, (std::string("C++ exception ") + (status == 0 && name ? name.get() : typeid(e).name()) +
                             " in a tessera call: " + e.what()).c_str());
    }
  });
}

}  // namespace tessera::python
