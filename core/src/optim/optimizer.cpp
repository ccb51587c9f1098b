// optim::Optimizer: parameter groups and zero_grad (tessera/optim.h).
#include <tessera/autograd.h>
#include <tessera/optim.h>

#include <unordered_set>

namespace tessera::optim {

Optimizer::Optimizer(std::string name, std::vector<std::vector<Tensor>> groups)
    : name_(std::move(name)), groups_(std::move(groups)) {
  size_t total = 0;
  std::unordered_set<const TensorImpl*> seen;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].size(); ++i) {
      const Tensor& p = groups_[g][i];
      TSR_CHECK(p.defined(), ValueError, name_, ": parameter ", i, " of group ", g, " is an undefined tensor");
      TSR_CHECK(p.is_leaf(), ValueError, name_, ": parameter ", i, " of group ", g,
                " is not a leaf tensor (it has a grad_fn); an optimizer updates leaves");
      TSR_CHECK(p.is_floating_point(), TypeError, name_, ": parameter ", i, " of group ", g,
                " has dtype ", p.scalar_type(), "; only floating tensors can be optimized");
      TSR_CHECK(seen.insert(p.unsafeGetTensorImpl()).second, ValueError, name_, ": parameter ", i, " of group ", g,
                " appears more than once in the optimizer's parameters");
      ++total;
    }
  }
  TSR_CHECK(total > 0, ValueError, name_, ": got an empty parameter list");
}

Optimizer::~Optimizer() = default;

void Optimizer::check_group(size_t group) const {
  TSR_CHECK(group < groups_.size(), IndexError, name_, ": parameter group ", group, " out of range (",
            groups_.size(), " groups)");
}

void Optimizer::check_lr(double lr) const {
  TSR_CHECK(lr >= 0, ValueError, name_, ": invalid learning rate ", lr, " (must be >= 0)");
}

const std::vector<Tensor>& Optimizer::params(size_t group) const {
  check_group(group);
  return groups_[group];
}

void Optimizer::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (auto& group : groups_) {
    for (Tensor& p : group) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
        continue;
      }
      if (g.grad_fn()) {  // a grad built with create_graph: cut it from its graph first
        g = g.detach();
        p.set_grad(g);
      }
      g.zero_();
    }
  }
}

}  // namespace tessera::optim
