// Internal: the autograd rule stored on each Operator.
#pragma once

#include <tessera/autograd/derivative.h>

#include <string>

#include "../operator_slots.h"

namespace tessera::autograd {

struct Rule {
  RuleKind kind = RuleKind::None;
  Derivative derivative;
  std::string node_name;  // "MulBackward"
};

inline const Rule* rule_ptr(const Operator& op) { return static_cast<const Rule*>(detail::OperatorSlots::autograd_rule(op)); }

/// Installs the Autograd key's fallback kernel (called once when libtessera loads).
void install_autograd_kernel();
/// Declares every built-in op's rule (formulas_*.cpp; called once at load).
void define_all_derivatives();

}  // namespace tessera::autograd
