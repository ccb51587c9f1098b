// optim::Adam and optim::AdamW (tessera/optim.h): torch.optim.Adam's
// single-tensor update; AdamW is the same with decoupled weight decay.
#include <tessera/autograd.h>
#include <tessera/optim.h>

#include "group_util.h"

#include <cmath>

namespace tessera::optim {
namespace {

void validate(const std::string& who, const AdamOptions& o) {
  TSR_CHECK(o.lr >= 0, ValueError, who, ": invalid learning rate ", o.lr, " (must be >= 0)");
  TSR_CHECK(o.eps >= 0, ValueError, who, ": invalid eps ", o.eps, " (must be >= 0)");
  TSR_CHECK(o.betas.first >= 0 && o.betas.first < 1, ValueError, who, ": invalid beta1 ", o.betas.first,
            " (must be in [0, 1))");
  TSR_CHECK(o.betas.second >= 0 && o.betas.second < 1, ValueError, who, ": invalid beta2 ", o.betas.second,
            " (must be in [0, 1))");
  TSR_CHECK(o.weight_decay >= 0, ValueError, who, ": invalid weight_decay ", o.weight_decay, " (must be >= 0)");
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("Adam", std::vector<ParamGroup<AdamOptions>>{{std::move(params), std::nullopt}}, options, false) {}

Adam::Adam(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults)
    : Adam("Adam", std::move(groups), defaults, false) {}

Adam::Adam(std::string name, std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults,
           bool decoupled)
    : Optimizer(std::move(name), detail::group_params(groups)),
      decoupled_(decoupled),
      options_(detail::group_options(groups, defaults)) {
  for (const auto& o : options_) validate(name_, o);
  for (const auto& g : groups_) state_.emplace_back(g.size());
}

AdamOptions& Adam::options(size_t group) { return group_options(options_, group); }
double Adam::lr(size_t group) const { return group_options(options_, group).lr; }
void Adam::set_lr(double lr, size_t group) { set_group_lr(options_, lr, group); }

int64_t Adam::step_count(const Tensor& param) const {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].size(); ++i)
      if (groups_[g][i].is_same(param)) return state_[g][i].step;
  throw ValueError(name_ + ".step_count: the tensor is not one of this optimizer's parameters");
}

void Adam::step() {
  autograd::NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const AdamOptions& o = options_[gi];
    validate(name_, o);  // options() may have been edited since construction
    const auto [beta1, beta2] = o.betas;
    for (size_t i = 0; i < groups_[gi].size(); ++i) {
      Tensor& p = groups_[gi][i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      detail::check_grad_shape(name_, p, g);
      State& s = state_[gi][i];
      if (s.step == 0) {
        s.exp_avg = zeros_like(p);
        s.exp_avg_sq = zeros_like(p);
        if (o.amsgrad) s.max_exp_avg_sq = zeros_like(p);
      }
      ++s.step;
      if (o.maximize) g = g.neg();
      if (o.weight_decay != 0) {
        if (decoupled_)
          p.mul_(1 - o.lr * o.weight_decay);
        else
          g = g.add(p, o.weight_decay);
      }
      s.exp_avg.lerp_(g, 1 - beta1);
      s.exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
      const double t = static_cast<double>(s.step);
      const double bias_correction1 = 1 - std::pow(beta1, t);
      const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, t));
      Tensor v = s.exp_avg_sq;
      if (o.amsgrad) {
        if (!s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(p);  // amsgrad switched on later
        s.max_exp_avg_sq.maximum_(s.exp_avg_sq);
        v = s.max_exp_avg_sq;
      }
      const Tensor denom = v.sqrt().div_(bias_correction2_sqrt).add_(o.eps);
      p.addcdiv_(s.exp_avg, denom, -o.lr / bias_correction1);
    }
  }
}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("AdamW", std::vector<ParamGroup<AdamOptions>>{{std::move(params), std::nullopt}}, options, true) {}

AdamW::AdamW(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults)
    : Adam("AdamW", std::move(groups), defaults, true) {}

}  // namespace tessera::optim
