// Python bindings of the indexing ops (tessera/ops/indexing.h): methods and module functions.
#include "common.h"

namespace tessera::python {

void register_indexing_ops(nb::module_&, nb::class_<Tensor>&) {}

}  // namespace tessera::python
