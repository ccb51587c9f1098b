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

// An input of an elementwise in-place op that shares memory with self without
// being exactly self's elements is read from a snapshot, so the result does not
// depend on the order the kernel visits elements in (NumPy's semantics). Judged
// by addresses (memory_overlap), so separately imported views of one buffer
// count as well as views of one storage.
inline Tensor unaliased(const Tensor& in, const Tensor& self) {
  return memory_overlap(in, self) == MemoryOverlap::kPartial ? in.clone() : in;
}

}  // namespace tessera::ops
