// tessera/autograd/function.h — custom autograd functions in C++.
//
//   struct Cube : tessera::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * 3 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs with grad mode off and receives the caller's arguments (Tensor,
// std::vector<Tensor> and anything else); it returns a Tensor or a
// variable_list. backward receives one gradient per output (zeros for outputs
// that received none, unless set_materialize_grads(false)) and returns one
// gradient per Tensor argument of forward, in order (std::vector<Tensor>
// arguments count one per element); extra trailing undefined tensors may be
// omitted. A wrong count or shape is an AutogradError naming the function.
// With create_graph, backward runs with grad mode on and is differentiable.
#pragma once

#include <tessera/autograd.h>

#include <any>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace tessera::autograd {

class CustomFunctionNode;
variable_list detail_wire_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs,
                                 variable_list outputs);
void prepare_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs);

/// Per-call state shared by forward and backward of one custom function call.
/// Not thread-safe; lives as long as the graph node.
class AutogradContext {
 public:
  /// Tensors backward needs (inputs or outputs of forward): version-checked,
  /// freed after a backward without retain_graph.
  void save_for_backward(variable_list tensors);
  /// The saved tensors; AutogradError if one was modified in place or freed.
  variable_list get_saved_variables() const;
  /// Outputs (of forward's result) that are not differentiable: they do not
  /// require grad and their gradients are zeros.
  void mark_non_differentiable(const variable_list& outputs);
  /// Whether backward gets zeros (default) or undefined tensors for outputs
  /// that received no gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Whether forward's Tensor argument i (flattened) needs a gradient.
  bool needs_input_grad(size_t i) const;
  /// Anything else backward needs (ints, shapes, ...).
  std::map<std::string, std::any> saved_data;

 private:
  friend class CustomFunctionNode;
  friend void prepare_custom(const std::shared_ptr<CustomFunctionNode>&, const variable_list&);
  friend variable_list detail_wire_custom(const std::shared_ptr<CustomFunctionNode>&, const variable_list&,
                                          variable_list);
  struct Saved;
  std::vector<std::shared_ptr<Saved>> saved_;
  std::vector<const TensorImpl*> non_differentiable_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
  bool released_ = false;
  std::string name_;
  CustomFunctionNode* node_ = nullptr;
};

/// The node a custom function call records. Public for bindings (Python's
/// Function uses it with a backward that calls into Python).
class CustomFunctionNode : public Node {
 public:
  using BackwardFn = std::function<variable_list(AutogradContext*, variable_list)>;
  CustomFunctionNode(std::string name, BackwardFn backward);
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override;
  AutogradContext& context() { return ctx_; }

 private:
  std::string name_;
  BackwardFn backward_;
  AutogradContext ctx_;
  uint32_t num_tensor_inputs_ = 0;
  friend variable_list detail_wire_custom(const std::shared_ptr<CustomFunctionNode>&, const variable_list&,
                                          variable_list);
};

/// Prepares `node` for a call whose Tensor arguments are `inputs` (sets edges
/// and needs_input_grad). Call before forward.
void prepare_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs);
/// Connects forward's `outputs` to the graph through `node` (when any input
/// requires grad and grad mode is on) and returns them. Outputs that alias an
/// input are returned as views with their own history.
variable_list detail_wire_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs,
                                 variable_list outputs);

namespace detail {
template <typename A>
void collect_tensors(variable_list& out, const A& a) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    out.push_back(a);
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    out.insert(out.end(), a.begin(), a.end());
  }
}
}  // namespace detail

template <class T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto node = make_node<CustomFunctionNode>(
        typeid(T).name(), [](AutogradContext* ctx, variable_list grads) { return T::backward(ctx, std::move(grads)); });
    variable_list inputs;
    (detail::collect_tensors(inputs, args), ...);
    prepare_custom(node, inputs);
    using Out = decltype(T::forward(&node->context(), std::forward<Args>(args)...));
    variable_list outs;
    {
      NoGradGuard no_grad;
      if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>) {
        outs.push_back(T::forward(&node->context(), std::forward<Args>(args)...));
      } else {
        outs = T::forward(&node->context(), std::forward<Args>(args)...);
      }
    }
    outs = detail_wire_custom(node, inputs, std::move(outs));
    if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>) {
      return outs[0];
    } else {
      return outs;
    }
  }
};

}  // namespace tessera::autograd
