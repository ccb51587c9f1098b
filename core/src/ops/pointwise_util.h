// Internal: pieces shared by the pointwise ops' meta rules (unary, binary, ternary).
#pragma once

#include <tessera/error.h>

#include "../structured.h"

namespace tessera::ops {

// For an in-place op whose compute dtype differs from self's, the kernel writes
// a temporary that is then copied into self; otherwise it writes self directly.
inline void add_inplace_output(StructuredCall& c, const Tensor& self, IntArrayRef shape, ScalarType compute) {
  check_writable(c.op(), self);
  if (!self.sizes().equals(shape)) [[unlikely]] {
    throw ValueError(detail::str(c.op().name(), ": output with shape ", self.sizes(),
                                 " does not match the broadcast shape ", shape));
  }
  if (!can_cast(compute, self.scalar_type())) [[unlikely]] {
    throw TypeError(detail::str(c.op().name(), ": result type ", dtype_name(compute),
                                " cannot be cast to the desired output type ", dtype_name(self.scalar_type())));
  }
  if (compute == self.scalar_type()) {
    c.add_aliased_output(self);
  } else {
    c.add_output(shape, compute);
    c.copy_result_into(self);
  }
}

// An input of an in-place op that shares memory with self without being exactly
// self is read from a snapshot, so the result does not depend on the order the
// kernel visits elements in (NumPy's semantics).
inline Tensor unaliased(const Tensor& in, const Tensor& self) {
  if (in.storage().get() != self.storage().get() || self.storage()->data() == nullptr) return in;
  if (in.data_ptr() == self.data_ptr() && in.sizes().equals(self.sizes()) && in.strides().equals(self.strides()))
    return in;
  return in.clone();
}

}  // namespace tessera::ops
