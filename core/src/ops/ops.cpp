// What the op families share (ops.h): declaring every op when libtessera loads,
// out= forms, numbers given in place of tensors, whether a kernel op can run.
#include <tessera/error.h>

#include "../autograd/rules.h"
#include "../device_registry.h"
#include "../plugin_kernels.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"

namespace tessera::ops {

bool runs_on(const Operator& op, Device device, ScalarType dtype) {
  return device_entry(device).no_storage() || find_plugin_kernel(op, device.type(), dtype) != nullptr;
}

void declare_all_ops() {
  declare_unary_ops();
  declare_binary_ops();
  declare_ternary_ops();
  declare_reduction_ops();
  declare_linalg_ops();
  declare_shape_ops();
  declare_indexing_ops();
  declare_random_ops();
  declare_nn_ops();
  // Every op has its autograd rule before any dispatch can reach the Autograd key.
  autograd::define_all_derivatives();
  autograd::install_autograd_kernel();
}

namespace {
// Ops exist before any plugin can register kernels for them.
const bool g_declared = (declare_all_ops(), true);
}  // namespace

constinit thread_local const OutTarget* t_out_target __attribute__((tls_model("initial-exec"))) = nullptr;

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

Tensor wrapped_number(const Scalar& s, Device device) {
  Tensor t = empty_on({}, s.default_dtype() == kDefaultFloat ? kDouble : s.default_dtype(), device);
  t.fill_(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

}  // namespace tessera::ops
