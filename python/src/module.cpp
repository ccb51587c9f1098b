// Entry point of tessera._C: registers each topic's bindings in dependency order
// (dtypes and devices before the Tensor methods that take them).
#include "common.h"

namespace tessera::python {

std::vector<int64_t> sizes_from_object(nb::handle obj, const char* what) {
  std::vector<int64_t> out;
  if (PyLong_Check(obj.ptr())) {
    out.push_back(nb::cast<int64_t>(obj));
    return out;
  }
  if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr()))
    throw nb::type_error((std::string(what) + ": sizes must be ints or a sequence of ints").c_str());
  for (nb::handle item : nb::iter(obj)) {
    if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr()))
      throw nb::type_error((std::string(what) + ": sizes must be ints, got " +
                            nb::cast<std::string>(nb::str(item.type().attr("__name__")))).c_str());
    out.push_back(nb::cast<int64_t>(item));
  }
  return out;
}

std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return sizes_from_object(args[0], what);
  return sizes_from_object(args, what);
}

// Declared here rather than in common.h: only the entry point calls it.
void register_autograd(nb::module_& m, nb::class_<Tensor>& cls);

}  // namespace tessera::python

NB_MODULE(_C, m) {
  using namespace tessera::python;
  m.doc() = "Tessera tensor runtime (C++ core bindings)";
  register_errors(m);
  register_dtype_device(m);
  nb::class_<tessera::Tensor> cls(m, "Tensor");
  register_tensor_methods(m, cls);
  register_indexing(cls);
  register_factories(m);
  register_dlpack(m, cls);
  register_unary_ops(m, cls);
  register_binary_ops(m, cls);
  register_ternary_ops(m, cls);
  register_reduction_ops(m, cls);
  register_linalg_ops(m, cls);
  register_shape_ops(m, cls);
  register_indexing_ops(m, cls);
  register_random_ops(m, cls);
  register_nn_ops(m, cls);
  register_autograd(m, cls);
}
