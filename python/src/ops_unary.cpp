// Python bindings of the unary ops (tessera/ops/unary.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_unary_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
