// optim::SGD (tessera/optim.h): torch.optim.SGD's single-tensor update.
#include <tessera/autograd.h>
#include <tessera/optim.h>

#include "group_util.h"

namespace tessera::optim {
namespace {

void validate(const SGDOptions& o) {
  TSR_CHECK(o.lr >= 0, ValueError, "SGD: invalid learning rate ", o.lr, " (must be >= 0)");
  TSR_CHECK(o.momentum >= 0, ValueError, "SGD: invalid momentum ", o.momentum, " (must be >= 0)");
  TSR_CHECK(o.weight_decay >= 0, ValueError, "SGD: invalid weight_decay ", o.weight_decay, " (must be >= 0)");
  TSR_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ValueError,
            "SGD: nesterov momentum requires momentum > 0 and dampening = 0 (got momentum ", o.momentum,
            ", dampening ", o.dampening, ")");
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup<SGDOptions>>{{std::move(params), std::nullopt}}, options) {}

SGD::SGD(std::vector<ParamGroup<SGDOptions>> groups, const SGDOptions& defaults)
    : Optimizer("SGD", detail::group_params(groups)), options_(detail::group_options(groups, defaults)) {
  for (const auto& o : options_) validate(o);
  for (const auto& g : groups_) momentum_.emplace_back(g.size());
}

SGDOptions& SGD::options(size_t group) { return group_options(options_, group); }
double SGD::lr(size_t group) const { return group_options(options_, group).lr; }
void SGD::set_lr(double lr, size_t group) { set_group_lr(options_, lr, group); }

void SGD::step() {
  autograd::NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const SGDOptions& o = options_[gi];
    validate(o);  // options() may have been edited since construction
    for (size_t i = 0; i < groups_[gi].size(); ++i) {
      Tensor& p = groups_[gi][i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      detail::check_grad_shape(name_, p, g);
      if (o.maximize) g = g.neg();
      if (o.weight_decay != 0) g = g.add(p, o.weight_decay);
      if (o.momentum != 0) {
        Tensor& buf = momentum_[gi][i];
        if (!buf.defined()) {
          buf = g.clone();
        } else {
          buf.mul_(o.momentum).add_(g, 1 - o.dampening);
        }
        g = o.nesterov ? g.add(buf, o.momentum) : buf;
      }
      p.add_(g, -o.lr);
    }
  }
}

}  // namespace tessera::optim
