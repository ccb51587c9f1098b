// Python bindings of the nn ops (tessera/ops/nn.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_nn_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
