#include "saved_variable.h"

#include <tessera/autograd.h>
#include <tessera/error.h>

#include "autograd_meta.h"

namespace tessera::autograd {

SavedVariable::SavedVariable(const Tensor& t, bool is_output, const std::string& what) {
  if (!t.defined()) return;
  TSR_CHECK(!t.unsafeGetTensorImpl()->is_inference(), AutogradError, what,
            ": an inference tensor (made in inference mode) cannot be saved for backward; clone() it outside "
            "inference mode, or run the whole computation in inference mode");
  defined_ = true;
  is_output_ = is_output;
  version_ = t.unsafeGetTensorImpl()->storage()->version();
  requires_grad_ = requires_grad_impl(t.unsafeGetTensorImpl());
  if (is_output) {
    const AutogradMeta* m = meta_of(t);
    output_nr_ = m ? m->output_nr : 0;
    data_ = shallow_alias(t);  // no grad_fn: the node must not own itself
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const Node& node, const std::string& what, const std::shared_ptr<Node>& owner) const {
  if (!defined_) return {};
  TSR_CHECK(!released_, AutogradError,
            "autograd: trying to backward through the graph a second time (the saved tensors of ", node.name(),
            " were freed by the first backward). Pass retain_graph=true to the first backward (or grad) call "
            "if you need to backward through the graph again");
  const uint32_t now = data_.unsafeGetTensorImpl()->storage()->version();
  TSR_CHECK(now == version_, AutogradError, "autograd: ", what, " of ", node.name(),
            " (needed to compute its gradient) has been modified by an in-place operation: it is at version ", now,
            ", but ", node.name(), " saved it at version ", version_,
            ". Use an out-of-place op, or clone() the tensor before modifying it");
  if (is_output_ && requires_grad_ && owner && is_grad_enabled()) {
    // Double backward through a saved output: give it back its history.
    Tensor t = shallow_alias(data_);
    set_history(t, owner, output_nr_);
    return t;
  }
  return data_;
}

}  // namespace tessera::autograd
