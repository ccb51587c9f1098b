// tessera/nn/module.h — nn::Module: parameters, buffers and submodules by name.
//
// A Module owns named tensors and named child modules, as torch.nn.Module:
//   - a parameter is a leaf tensor that requires grad (unless registered with
//     requires_grad = false), registered with register_parameter; optimizers
//     update it in place;
//   - a buffer is state that is not trained (e.g. running statistics), saved in
//     the state dict when persistent;
//   - a child is another Module (shared ownership), registered with
//     register_module; its tensors appear under "<child name>.<name>".
// Names are unique within a module across the three kinds and contain no '.'.
// Registration order is kept everywhere: named_parameters(), state_dict(), ...
// list a module's own tensors first, then each child's, recursively (pre-order,
// as PyTorch).
//
// Subclasses register their tensors in their constructor, keep the references
// register_parameter/register_buffer return (they stay valid for the module's
// lifetime, and follow to(): the slot is updated in place), and override
// forward().
//
// Threading: a Module is not synchronized. forward() may run on several threads
// at once if nothing mutates the module meanwhile (registration, train/eval,
// to(), load_state_dict, an optimizer step, zero_grad).
#pragma once

#include <tessera/serialize.h>
#include <tessera/tensor.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::nn {

/// What load_state_dict(strict=false) found: keys it expected and did not get,
/// and keys it got and does not know.
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  /// `type_name` is what repr() prints ("Linear"); subclasses pass their own.
  explicit Module(std::string type_name = "Module");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration ----

  /// Registers `tensor` as the parameter `name` and returns a reference to the
  /// stored tensor. The stored tensor is tensor.detach() (same data, no
  /// history) marked requires_grad(requires_grad). An undefined tensor
  /// registers an absent parameter (like PyTorch's None): listed nowhere, but
  /// the name is taken. ValueError for an empty name, a name with '.', a name
  /// already used in this module; TypeError (from requires_grad_) for a
  /// non-floating tensor that should require grad.
  Tensor& register_parameter(const std::string& name, const Tensor& tensor, bool requires_grad = true);
  /// Registers a buffer (stored as given, sharing data; may be undefined). A
  /// non-persistent buffer is not part of state_dict(). Errors as above.
  Tensor& register_buffer(const std::string& name, const Tensor& tensor, bool persistent = true);
  /// Registers `module` as the child `name` and returns it. ValueError for a
  /// null module, a bad or taken name, or a module that is this one.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ---- traversal (each returns a snapshot; the tensors are shared) ----

  /// Parameters with dotted names: this module's first, then each child's
  /// (recursively if `recurse`), in registration order. A tensor registered
  /// twice (shared weights) is listed once, under its first name.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// Buffers (defined ones), named and ordered as parameters.
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// Direct children in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  /// This module (name "") and every descendant, pre-order, dotted names.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

  // ---- mode ----

  /// Sets training mode on this module and every descendant. Returns *this.
  Module& train(bool on = true);
  /// train(false).
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }

  /// Clears the gradients of every parameter: set_to_none drops .grad (the
  /// default, as PyTorch), else an existing .grad is detached and zeroed in place.
  void zero_grad(bool set_to_none = true);

  // ---- device and dtype ----

  /// Moves every parameter and buffer (and each parameter's .grad) to `device`.
  /// Tensors already there are kept; moved ones are new leaf tensors with the
  /// same requires_grad, stored into the same slots (references from
  /// register_parameter see them; tensors taken before, e.g. by an optimizer,
  /// do not: move the module before making its optimizer). Returns *this.
  Module& to(Device device);
  /// Casts the floating-point parameters and buffers (others are kept) to a
  /// floating `dtype` (TypeError otherwise). Same rules as to(device).
  Module& to(ScalarType dtype);
  Module& to(Device device, ScalarType dtype);

  // ---- state ----

  /// Parameters and persistent buffers by dotted name, in traversal order
  /// (shared weights appear under each name). The tensors are detached aliases
  /// of the module's: writing them in place writes the module.
  StateDict state_dict() const;
  /// Copies `dict` into the parameters and persistent buffers, in place and
  /// without recording history; values are cast to each tensor's dtype and
  /// device. Checks everything before writing anything: a key of the module
  /// absent from `dict` (missing) or a key of `dict` the module lacks
  /// (unexpected) is a ValueError naming the keys when `strict`, and is
  /// returned otherwise; a shape mismatch is always a ValueError naming the key
  /// and both shapes.
  LoadResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- forward ----

  /// The module's computation on one input. The base throws NotImplementedError.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // ---- description ----

  const std::string& type_name() const { return type_name_; }
  /// The arguments repr() prints inside the parentheses ("in_features=2, ...").
  virtual std::string extra_repr() const { return {}; }
  /// PyTorch-style text: "Linear(in_features=2, out_features=3, bias=True)",
  /// with children indented on their own lines.
  std::string repr() const;

 protected:
  /// Called by train() on each module after its flag changed (for subclasses
  /// that cache mode-dependent state). The default does nothing.
  virtual void on_train(bool /*on*/) {}

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  template <typename F>
  void visit(const std::string& prefix, bool recurse, F&& f) const;
  using Slots = std::vector<std::unique_ptr<Slot>>;
  // named_parameters()/named_buffers(): the defined tensors of one slot list, once each.
  std::vector<std::pair<std::string, Tensor>> named_slots(Slots Module::*which, bool recurse) const;
  void convert(const std::optional<Device>& device, const std::optional<ScalarType>& dtype);

  std::string type_name_;
  bool training_ = true;
  // unique_ptr: registration returns references that later registrations must not move.
  Slots params_;
  Slots buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace tessera::nn
