// Python bindings of the random ops (tessera/ops/random.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_random_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
