// Internal: out= forms that write their result straight into `out`.
//
// out_form(op, out, compute) runs the functional op with a thread-local target
// set: the structured call of that op (matched by name, so the ops a composite
// calls inside never take it) allocates no output and hands `out` to the
// plugin kernel as its output when `out` fits exactly — the result's dtype,
// device and shape, contiguous, writable, and sharing no memory with an input
// (a pointwise op may read the very elements it writes). Otherwise, and when
// autograd records the call (the target is suspended there), the result is
// computed as usual and copied into `out` (assign_out), as before.
#pragma once

#include <tessera/tensor.h>

#include <string_view>

#include "ops.h"

namespace tessera::ops {

struct OutTarget {
  const Tensor* out;
  std::string_view op;  // the op whose structured call may write into out
};

/// The target of the out= form running on this thread, or null.
extern constinit thread_local const OutTarget* t_out_target __attribute__((tls_model("initial-exec")));

/// Hides the target for a scope (autograd recording a node: a result with
/// history is copied into out, never written there by the kernel).
class OutTargetSuspend {
 public:
  OutTargetSuspend() : outer_(t_out_target) { t_out_target = nullptr; }
  ~OutTargetSuspend() { t_out_target = outer_; }
  OutTargetSuspend(const OutTargetSuspend&) = delete;
  OutTargetSuspend& operator=(const OutTargetSuspend&) = delete;

 private:
  const OutTarget* outer_;
};

/// The out= form of op `op`: compute() calls the functional op; returns `out`,
/// written by the kernel or assigned from the result (assign_out's checks and
/// errors, naming `label`, or `op` when label is empty).
template <class F>
Tensor& out_form(std::string_view op, Tensor& out, F&& compute, std::string_view label = {}) {
  Tensor result;
  {
    const OutTarget target{&out, op};
    const OutTarget* outer = t_out_target;
    t_out_target = out.defined() ? &target : nullptr;
    struct Restore {
      const OutTarget* outer;
      ~Restore() { t_out_target = outer; }
    } restore{outer};
    result = compute();
  }
  if (result.defined() && result.unsafeGetTensorImpl() == out.unsafeGetTensorImpl()) return out;
  return assign_out(label.empty() ? op : label, result, out);
}

}  // namespace tessera::ops
