// Python bindings of the shape ops (tessera/ops/shape.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_shape_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
