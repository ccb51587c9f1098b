// tessera/autograd/node.h — the backward graph: Node, Edge, hooks.
//
// Each op output that requires grad points (grad_fn) at the Node that computes
// the gradients of the op's inputs from the gradients of its outputs. A Node's
// next edges lead to the nodes of those inputs: another op's node, or the
// AccumulateGrad node of a leaf. Ownership: a tensor holds its grad_fn
// (shared_ptr); a node holds its next nodes; nothing points back, so the graph
// is freed with the last tensor that can reach it (iteratively: deep graphs do
// not overflow the stack). Nodes are immutable once built, except for hooks and
// released saved tensors; the engine serializes calls to one node.
#pragma once

#include <tessera/autograd/hook_handle.h>
#include <tessera/tensor.h>

#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::autograd {

class Node;
struct RetainedGrad;
using variable_list = std::vector<Tensor>;

/// An input of a node's forward op, seen from the backward side: the node that
/// receives its gradient, and which of that node's gradient inputs it is
/// (the forward op's output number). Invalid (null function) for inputs that
/// do not require grad.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};
/// Most ops have one or two differentiable inputs: kept inline.
using edge_list = boost::container::small_vector<Edge, 2>;

/// What a node knows of each gradient it receives (= each forward output): the
/// shape, dtype and device the gradient must have. `differentiable` is false for
/// integer outputs (indices), which never receive a gradient.
struct InputMetadata {
  DimVector sizes;
  ScalarType dtype = ScalarType::Undefined;
  Device device{DeviceTypeId{0}, 0};
  bool differentiable = true;
  /// A zero tensor of this shape, dtype and device.
  Tensor zeros() const;
};

/// Hooks registered on a tensor (shared by the handle that removes them).
/// Thread-safe: a mutex guards the list.
template <typename Fn>
class HookList {
 public:
  uint64_t add(Fn fn) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_.push_back({next_id_, std::move(fn)});
    return next_id_++;
  }
  bool remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = hooks_.begin(); it != hooks_.end(); ++it)
      if (it->first == id) {
        hooks_.erase(it);
        return true;
      }
    return false;
  }
  /// A copy, so hooks may add or remove hooks while they run.
  std::vector<Fn> snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Fn> out;
    out.reserve(hooks_.size());
    for (const auto& h : hooks_) out.push_back(h.second);
    return out;
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hooks_.empty();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, Fn>> hooks_;
  uint64_t next_id_ = 0;
};
using TensorHook = std::function<Tensor(const Tensor&)>;
using PostAccumulateHook = std::function<void(const Tensor&)>;
using TensorHookList = HookList<TensorHook>;
using PostAccumulateHookList = HookList<PostAccumulateHook>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// "MulBackward0", "AccumulateGrad", or a custom function's name.
  virtual std::string name() const = 0;
  /// Gradients of the forward inputs (one per next edge; undefined = none) from
  /// the gradients of the forward outputs (one per input metadata entry;
  /// undefined = zero). Called by the engine with grad mode set to create_graph.
  virtual variable_list apply(variable_list&& grads) = 0;
  /// Frees saved tensors (after a backward without retain_graph); a later apply
  /// that needs them throws AutogradError.
  virtual void release_variables() {}
  /// Runs the tensor hooks registered for gradient input `input_nr` in
  /// registration order, then fills its retained grad (non-leaves); returns the
  /// possibly replaced gradient. AccumulateGrad overrides it to run its leaf's hooks.
  virtual Tensor run_tensor_hooks(uint32_t input_nr, Tensor grad);
  /// Whether this is a leaf's AccumulateGrad node (its hooks live on the leaf).
  virtual bool is_accumulate_grad() const { return false; }
  /// Whether any tensor hook or retained grad is registered (engine fast path).
  bool has_tensor_hooks() const { return !hooks_.empty(); }

  const edge_list& next_edges() const { return next_edges_; }
  edge_list& mutable_next_edges() { return next_edges_; }
  uint32_t num_outputs() const { return static_cast<uint32_t>(next_edges_.size()); }
  uint32_t num_inputs() const { return static_cast<uint32_t>(input_metadata_.size()); }
  const InputMetadata& input_metadata(uint32_t i) const { return input_metadata_[i]; }
  /// Records the metadata of a forward output; returns its gradient input number.
  uint32_t add_input_metadata(const Tensor& t, bool differentiable = true);
  uint32_t add_input_metadata(InputMetadata m);
  /// Later nodes run first in backward (creation order within a thread).
  uint64_t sequence_nr() const { return sequence_nr_; }

  /// Hooks of the non-leaf tensor that is forward output `input_nr` (created on demand).
  std::shared_ptr<TensorHookList> tensor_hooks(uint32_t input_nr);
  /// Non-leaf retain_grad(): the slot that receives gradient input `input_nr`
  /// after the tensor hooks ran (weakly held: a dead tensor retains nothing).
  void set_retained_grad(uint32_t input_nr, const std::shared_ptr<RetainedGrad>& slot);

  /// Forward call text recorded in anomaly mode ("" otherwise), used in the
  /// message naming the op whose backward produced NaN.
  const std::string& forward_call() const { return forward_call_; }
  void set_forward_call(std::string s) { forward_call_ = std::move(s); }

  /// Serializes the engine's calls to this node (graphs shared by threads) and hook registration.
  std::recursive_mutex& mutex() { return mu_; }

 protected:
  edge_list next_edges_;
  boost::container::small_vector<InputMetadata, 1> input_metadata_;

 private:
  friend class Engine;
  struct PerInputHooks;
  uint64_t sequence_nr_;
  std::vector<std::unique_ptr<PerInputHooks>> hooks_;  // indexed by input_nr, grown on demand
  std::string forward_call_;
  std::recursive_mutex mu_;  // recursive: a hook may run a nested backward through this node
};

/// Makes a shared node (one allocation). Any node frees long chains of next
/// nodes without recursion (see ~Node).
template <typename T, typename... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}

/// The edge a gradient for `t` flows into: t's grad_fn and output number, its
/// leaf's AccumulateGrad node, or an invalid edge if t does not require grad.
Edge gradient_edge(const Tensor& t);

/// Makes `t` (an output of `fn`, gradient input `input_nr`) require grad with
/// history fn. For an in-place op's output this rebases t's history.
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t input_nr);

}  // namespace tessera::autograd
