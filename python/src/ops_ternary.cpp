// Python bindings of the ternary ops (tessera/ops/ternary.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_ternary_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
