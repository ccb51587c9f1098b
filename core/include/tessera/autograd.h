// tessera/autograd.h — reverse-mode automatic differentiation.
//
// Autograd is a dispatch layer: a tensor that requires grad carries the
// Autograd dispatch key, and the one Autograd kernel records, for every op on
// such tensors, a Node built from the op's declared derivative formula
// (tessera/autograd/derivative.h), then runs the op below the Autograd key.
// backward() and grad() run the engine over that graph on the calling thread.
// Formulas are ordinary dispatched ops, so gradients run on any device and,
// with create_graph, are themselves differentiable. docs/autograd.md has the rules.
//
// Threading: grad mode, inference mode and anomaly mode are per thread
// (guards affect only the thread that made them; new threads start with grad
// enabled). backward/grad may run on several threads at once on independent
// graphs, and on graphs sharing leaves (accumulation into a shared .grad is
// serialized).
#pragma once

#include <tessera/autograd/node.h>
#include <tessera/tensor.h>

#include <optional>
#include <vector>

namespace tessera::autograd {

// ---- grad mode ----

/// Whether ops on this thread record history (false under no_grad or inference mode).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);
/// Whether this thread is in inference mode.
bool is_inference_mode_enabled();

/// RAII: ops in scope record no history (results do not require grad). Nests.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// RAII: re-enables recording inside a no_grad scope (not inside inference mode).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

/// RAII: sets grad mode to `enabled` for the scope.
class SetGradEnabledGuard {
 public:
  explicit SetGradEnabledGuard(bool enabled);
  ~SetGradEnabledGuard();
  SetGradEnabledGuard(const SetGradEnabledGuard&) = delete;
  SetGradEnabledGuard& operator=(const SetGradEnabledGuard&) = delete;

 private:
  bool prev_;
};

/// RAII: inference mode. The Autograd key is excluded from every dispatch (no
/// autograd work at all, cheaper than no_grad), and tensors created in scope
/// are inference tensors: saving one for backward later is an AutogradError.
/// InferenceMode(false) is a no-op scope (for code that is generic over it).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool prev_inference_;
  bool prev_grad_;
};

// ---- running backward ----

/// Accumulates into the .grad of the leaves reachable from `tensors` the
/// gradient of sum(tensors[i] * grad_tensors[i]). A missing grad_tensors[i] is
/// 1 for a one-element tensor, else AutogradError. retain_graph defaults to
/// create_graph; without it the graph's saved tensors are freed and a second
/// backward through it throws AutogradError. create_graph records the backward
/// itself (higher-order gradients). `inputs`, if given, limits accumulation to
/// those tensors. Errors: AutogradError naming the problem; any op error from a
/// formula propagates (the graph is then left as it was, minus freed buffers).
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});

/// The gradients of sum(outputs[i] * grad_outputs[i]) with respect to each of
/// `inputs`, returned instead of accumulated into .grad. An input the outputs
/// do not depend on gets an undefined tensor if allow_unused, else AutogradError.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

// ---- anomaly mode ----

/// When enabled (per thread), each node records its forward call, and a
/// backward that produces NaN throws AutogradError naming the forward op and
/// call whose backward produced it.
bool is_anomaly_enabled();
void set_anomaly_enabled(bool enabled);
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tessera::autograd
