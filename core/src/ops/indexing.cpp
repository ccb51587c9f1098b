// Indexing ops whose output shape depends on the data: nonzero. The kernel sizes
// its output through TsrKernelCall.allocate_output.
#include <tessera/error.h>

#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {

void nonzero_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  c.add_data_dependent_output(kLong);
  c.set_tensor(0, self);
  c.dispatch_dtype = self.scalar_type();
}

}  // namespace

const Operator& op_nonzero() {
  static const Operator& op =
      Dispatcher::instance().declare_structured("nonzero(Tensor self) -> Tensor", kDataDependent, &nonzero_meta);
  return op;
}

void declare_indexing_ops() {
  for (auto f : {&op_nonzero}) f();
}

}  // namespace tessera::ops
