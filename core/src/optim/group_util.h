// Helpers shared by the optimizers: splitting ParamGroups, gradient checks.
#pragma once

#include <tessera/optim.h>

namespace tessera::optim::detail {

template <typename Options>
std::vector<std::vector<Tensor>> group_params(const std::vector<ParamGroup<Options>>& groups) {
  std::vector<std::vector<Tensor>> out;
  for (const auto& g : groups) out.push_back(g.params);
  return out;
}

template <typename Options>
std::vector<Options> group_options(const std::vector<ParamGroup<Options>>& groups, const Options& defaults) {
  std::vector<Options> out;
  for (const auto& g : groups) out.push_back(g.options.value_or(defaults));
  return out;
}

inline void check_grad_shape(const std::string& who, const Tensor& p, const Tensor& g) {
  TSR_CHECK(g.sizes().equals(p.sizes()), ValueError, who, ".step: a gradient of shape ", g.sizes(),
            " for a parameter of shape ", p.sizes());
}

}  // namespace tessera::optim::detail
