// tessera/autograd/gradcheck.h — checking gradients against finite differences.
//
// The functions compare the Jacobian autograd computes with central finite
// differences in float64. Inputs should be float64 tensors that require grad
// (others are held constant). They return true, or throw AutogradError naming
// the output, input, element and both values of the first mismatch (or return
// false when raise_exception is false). Not thread-safe for shared inputs (the
// inputs are perturbed in place and restored).
#pragma once

#include <tessera/autograd.h>

#include <functional>
#include <vector>

namespace tessera::autograd {

using GradcheckFn = std::function<variable_list(const variable_list&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise_exception = true;
  /// Also check that a backward with zero output gradients gives zeros.
  bool check_undefined_grad = false;
};

/// Checks d fn(inputs) / d inputs.
bool gradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& options = {});
/// Checks the second derivative: gradcheck of the function
/// (inputs, grad_outputs) -> grad(fn(inputs), inputs, grad_outputs, create_graph)
/// with random float64 grad_outputs (`seed` makes them reproducible).
bool gradgradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& options = {},
                   uint64_t seed = 0);

}  // namespace tessera::autograd
