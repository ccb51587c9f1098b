// Internal: the node that accumulates a leaf's gradient into its .grad.
#pragma once

#include <tessera/autograd/node.h>

namespace tessera::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  /// Adds grads[0] to the leaf's .grad (in place unless create_graph), then
  /// runs its post-accumulate-grad hooks. Serialized by the node mutex.
  variable_list apply(variable_list&& grads) override;
  Tensor run_tensor_hooks(uint32_t input_nr, Tensor grad) override;
  bool is_accumulate_grad() const override { return true; }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;  // the leaf (strong: the leaf's meta holds this node weakly)
};

}  // namespace tessera::autograd
