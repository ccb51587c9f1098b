// tessera/optim.h — optimizers (torch.optim): SGD, Adam, AdamW.
//
// An optimizer holds the parameters it updates (shared Tensor handles: the
// module's own tensors, e.g. from nn::Module::parameters()) in one or more
// parameter groups, each with its own options (lr, ...). step() applies one
// update to every parameter that has a .grad, in place and without recording
// history; a parameter without a .grad is skipped (its state untouched), as in
// PyTorch. The update rules are exactly torch.optim's (the single-tensor
// implementations; see each class), including the first-step special cases.
// zero_grad() clears the gradients. Optimizer state (momentum buffers, Adam's
// moments) lives in the optimizer, created lazily on the first step of each
// parameter in the parameter's dtype and device.
//
// Errors: constructors throw ValueError for an empty parameter list, a
// parameter given twice, an undefined tensor, a non-leaf tensor (one with a
// grad_fn: optimize its leaf), and out-of-range options (naming the option and
// value). step() throws ValueError if a gradient's shape differs from its
// parameter's.
//
// Threading: not synchronized; call step()/zero_grad() from one thread at a
// time, and not while a backward that accumulates into the same parameters runs.
#pragma once

#include <tessera/tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::optim {

/// A set of parameters with their own options; nullopt options mean the
/// optimizer's defaults.
template <typename Options>
struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<Options> options;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter with a .grad (see the file comment).
  virtual void step() = 0;
  /// Clears every parameter's .grad: set_to_none drops it (the default, as
  /// PyTorch), else an existing .grad is detached and zeroed in place.
  void zero_grad(bool set_to_none = true);

  size_t num_param_groups() const { return groups_.size(); }
  /// The parameters of group `group` (IndexError when out of range).
  const std::vector<Tensor>& params(size_t group = 0) const;
  /// The learning rate of a group (IndexError when out of range), and setting
  /// it (ValueError when negative), e.g. for a schedule.
  virtual double lr(size_t group = 0) const = 0;
  virtual void set_lr(double lr, size_t group = 0) = 0;

 protected:
  /// Validates the groups (see the file comment); `name` prefixes the errors.
  Optimizer(std::string name, std::vector<std::vector<Tensor>> groups);
  void check_group(size_t group) const;
  /// The per-group options of a subclass (`options` holds one per group):
  /// the options of `group`, IndexError naming the optimizer when out of range.
  template <typename Options>
  Options& group_options(std::vector<Options>& options, size_t group) const {
    check_group(group);
    return options[group];
  }
  template <typename Options>
  const Options& group_options(const std::vector<Options>& options, size_t group) const {
    check_group(group);
    return options[group];
  }
  /// Sets the lr of `group` in `options`; ValueError naming the optimizer when negative.
  template <typename Options>
  void set_group_lr(std::vector<Options>& options, double lr, size_t group) const {
    Options& o = group_options(options, group);
    check_lr(lr);
    o.lr = lr;
  }
  void check_lr(double lr) const;
  std::string name_;
  std::vector<std::vector<Tensor>> groups_;
};

// ---- SGD ----

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// torch.optim.SGD. For each parameter p with gradient g:
///   g = -g if maximize;  g = g + weight_decay * p if weight_decay != 0
///   if momentum != 0: b = g on the first step, else b = momentum * b + (1 - dampening) * g;
///                     g = g + momentum * b if nesterov, else g = b
///   p = p - lr * g
/// ValueError for lr, momentum or weight_decay < 0, or nesterov without
/// momentum > 0 and dampening == 0.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, const SGDOptions& options = {});
  SGD(std::vector<ParamGroup<SGDOptions>> groups, const SGDOptions& defaults = {});
  void step() override;
  /// A group's options; changes apply from the next step (IndexError when out of range).
  SGDOptions& options(size_t group = 0);
  double lr(size_t group = 0) const override;
  void set_lr(double lr, size_t group = 0) override;

 private:
  std::vector<SGDOptions> options_;
  std::vector<std::vector<Tensor>> momentum_;  // per group, per parameter (undefined until used)
};

// ---- Adam, AdamW ----

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

/// torch.optim.Adam. For each parameter p with gradient g, at step t (from 1):
///   g = -g if maximize;  g = g + weight_decay * p if weight_decay != 0
///   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
///   vmax = max(vmax, v) if amsgrad (and v below is vmax)
///   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// ValueError for lr, eps or weight_decay < 0, or a beta outside [0, 1).
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  Adam(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults = {});
  void step() override;
  AdamOptions& options(size_t group = 0);
  double lr(size_t group = 0) const override;
  void set_lr(double lr, size_t group = 0) override;
  /// How many steps a parameter took (0 before its first); ValueError for a
  /// tensor this optimizer does not hold.
  int64_t step_count(const Tensor& param) const;

 protected:
  Adam(std::string name, std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults, bool decoupled);

 private:
  struct State {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  bool decoupled_;
  std::vector<AdamOptions> options_;
  std::vector<std::vector<State>> state_;
};

/// torch.optim.AdamW: Adam with decoupled weight decay. Before the Adam update
/// (which then uses no L2 term): p = p * (1 - lr * weight_decay). Its default
/// weight_decay is 1e-2 (AdamW::default_options()).
class AdamW : public Adam {
 public:
  static AdamOptions default_options() {
    AdamOptions o;
    o.weight_decay = 1e-2;
    return o;
  }
  explicit AdamW(std::vector<Tensor> params, const AdamOptions& options = default_options());
  AdamW(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults = default_options());
};

}  // namespace tessera::optim
