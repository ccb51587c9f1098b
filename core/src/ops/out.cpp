// The out= forms of ops: one checked copy of the functional result into `out`.
#include <tessera/error.h>

#include "../structured.h"
#include "ops.h"

namespace tessera::ops {

Tensor& assign_out(std::string_view op, const Tensor& result, Tensor& out) {
  TSR_CHECK(out.defined(), ValueError, op, ": out= got an undefined tensor");
  TSR_CHECK(out.device() == result.device(), ValueError, op, ": out= tensor is on ", out.device(),
            " but the result is on ", result.device());
  TSR_CHECK(out.sizes().equals(result.sizes()), ValueError, op, ": out= tensor has shape ", out.sizes(),
            " but the result has shape ", result.sizes());
  TSR_CHECK(can_cast(result.scalar_type(), out.scalar_type()), TypeError, op, ": result type ",
            dtype_name(result.scalar_type()), " cannot be cast to the out= tensor's dtype ",
            dtype_name(out.scalar_type()));
  out.copy_(result);
  return out;
}

}  // namespace tessera::ops
