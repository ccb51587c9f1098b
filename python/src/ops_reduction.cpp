// Python bindings of the reduction ops (tessera/ops/reduction.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_reduction_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
