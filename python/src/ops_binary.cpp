// Python bindings of the binary ops (tessera/ops/binary.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_binary_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
