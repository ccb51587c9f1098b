// Python bindings of the linalg ops (tessera/ops/linalg.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_linalg_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
