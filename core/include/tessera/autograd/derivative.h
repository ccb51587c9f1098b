// tessera/autograd/derivative.h — declaring how an op is differentiated.
//
// Every declared op has one autograd rule, set once at start-up (before other
// threads dispatch; not thread-safe against concurrent dispatch of that op):
//  - a derivative formula (define_derivative): the Autograd kernel records a
//    node that saves what the formula needs and, in backward, calls it;
//  - not differentiable (define_not_differentiable): results never require grad;
//  - decomposed (define_decomposed): a composite op whose kernel calls other
//    dispatched ops; autograd records those ops instead.
// An op with no rule that is called on tensors requiring grad throws
// NotImplementedError naming the op.
//
// Formulas are written with ordinary dispatched ops, so they run on every
// device and are differentiable again (double backward). The engine makes each
// returned gradient match its input: a gradient of a broadcast shape is summed
// down to the input's shape, and dtype and device are converted, so formulas
// of broadcasting ops may return the broadcast gradient.
#pragma once

#include <tessera/autograd/node.h>
#include <tessera/dispatcher.h>

#include <optional>
#include <string_view>
#include <vector>

namespace tessera::autograd {

class BackwardContext;

/// Returns one gradient per differentiable input slot (see Derivative::inputs);
/// an undefined tensor means "no gradient" (zero). Slots whose needs_grad() is
/// false may be left undefined.
using BackwardFormula = variable_list (*)(BackwardContext& ctx);

struct Derivative {
  /// Frame argument indices of the differentiable inputs, in order. A Tensor
  /// argument is one slot; a Tensor[] argument is one slot per element.
  std::vector<int> inputs;
  /// Tensor (or Tensor[]) arguments the formula reads with ctx.saved(arg):
  /// saved at forward time, version-checked in backward. Saving only what is
  /// needed keeps memory down and in-place edits of unsaved inputs legal.
  std::vector<int> save_inputs;
  /// Outputs the formula reads with ctx.result(i).
  std::vector<int> save_outputs;
  BackwardFormula formula = nullptr;
};

/// Sets the rule of op `op_name` (NotImplementedError if the op is unknown,
/// ValueError if it already has one or if the indices do not fit its schema).
void define_derivative(std::string_view op_name, Derivative d);
void define_not_differentiable(std::string_view op_name);
void define_decomposed(std::string_view op_name);

/// The rule kinds, for checks such as "every op has a rule".
enum class RuleKind { None, Formula, NotDifferentiable, Decomposed };
RuleKind rule_of(const Operator& op);

/// What a formula sees: the gradients of the outputs, the saved tensors, the
/// forward call's other arguments (copied at forward time) and the metadata of
/// every tensor input. Valid only during the formula call.
class BackwardContext {
 public:
  virtual ~BackwardContext() = default;
  const Operator& op() const { return op_; }
  /// Gradient of output i: zeros if none arrived (grad_defined says which).
  virtual Tensor grad(int output = 0) const = 0;
  virtual bool grad_defined(int output = 0) const = 0;
  /// Saved tensor argument (as it was at forward time); AutogradError if it
  /// was modified in place since, or was freed by an earlier backward.
  virtual Tensor saved(int arg) const = 0;
  virtual std::vector<Tensor> saved_list(int arg) const = 0;
  /// Saved output i (same checks).
  virtual Tensor result(int output = 0) const = 0;
  /// Whether the gradient of differentiable input slot `slot` is wanted.
  virtual bool needs_grad(int slot) const = 0;
  /// Whether this backward records history (create_graph).
  bool create_graph() const;

  // Non-tensor arguments of the forward call.
  virtual bool is_none(int arg) const = 0;
  virtual int64_t int_arg(int arg) const = 0;
  virtual double double_arg(int arg) const = 0;
  virtual bool bool_arg(int arg) const = 0;
  virtual Scalar scalar_arg(int arg) const = 0;
  virtual IntArrayRef int_list(int arg) const = 0;
  virtual std::string_view string_arg(int arg) const = 0;
  virtual ScalarType dtype_arg(int arg) const = 0;
  std::optional<int64_t> opt_int_arg(int arg) const {
    return is_none(arg) ? std::nullopt : std::optional<int64_t>(int_arg(arg));
  }

  // Metadata of tensor argument `arg` (element j for Tensor[]), saved or not.
  virtual IntArrayRef input_sizes(int arg, int j = -1) const = 0;
  virtual ScalarType input_dtype(int arg, int j = -1) const = 0;
  virtual Device input_device(int arg, int j = -1) const = 0;
  /// Strides and storage offset of tensor argument `arg` at forward time (for
  /// formulas that address storage, such as as_strided's).
  virtual IntArrayRef input_strides(int arg, int j = -1) const = 0;
  virtual int64_t input_storage_offset(int arg, int j = -1) const = 0;
  virtual int list_size(int arg) const = 0;

 protected:
  explicit BackwardContext(const Operator& op) : op_(op) {}
  const Operator& op_;
};

}  // namespace tessera::autograd
