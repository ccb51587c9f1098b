// Meta-versus-cpu cases of the reduction ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_reduction_cases(CaseMap& c) {
  using T = std::vector<Tensor>;
  c["mean"] = {[](Device d) { return T{ones({2, 3, 4}, on(d)).mean()}; },
               [](Device d) { return T{ones({2, 3, 4}, on(d, kHalf)).mean({0, -1}, true)}; },
               [](Device d) { return T{ones({2, 3}, on(d, kInt)).mean({1}, false, kDouble)}; }};
  c["prod"] = {[](Device d) { return T{ones({2, 3}, on(d)).prod()}; },
               [](Device d) { return T{ones({2, 3}, on(d, kInt)).prod({1}, true)}; },
               [](Device d) { return T{ones({2, 3}, on(d, kBool)).prod({0}, false, kFloat)}; }};
  c["amax"] = {[](Device d) { return T{ones({2, 3, 4}, on(d)).amax({0, 2})}; },
               [](Device d) { return T{ones({2, 3}, on(d, kByte)).amax({}, true)}; }};
  c["amin"] = {[](Device d) { return T{ones({2, 3, 4}, on(d, kBFloat16)).amin({-1}, true)}; },
               [](Device d) { return T{ones({}, on(d, kLong)).amin()}; }};
  c["max"] = {[](Device d) { return T{ones({2, 3}, on(d, kInt)).max()}; }};
  c["min"] = {[](Device d) { return T{ones({2, 3}, on(d, kHalf)).min()}; }};
  c["max.dim"] = {[](Device d) {
                    auto [v, i] = ones({2, 3}, on(d)).max(1);
                    return T{v, i};
                  },
                  [](Device d) {
                    auto [v, i] = ones({2, 3}, on(d, kBool)).max(0, true);
                    return T{v, i};
                  }};
  c["min.dim"] = {[](Device d) {
    auto [v, i] = ones({4, 2, 3}, on(d, kShort)).min(-2, true);
    return T{v, i};
  }};
  c["argmax"] = {[](Device d) { return T{ones({2, 3}, on(d)).argmax()}; },
                 [](Device d) { return T{ones({2, 3}, on(d, kInt)).argmax(1, true)}; }};
  c["argmin"] = {[](Device d) { return T{ones({2, 3}, on(d, kDouble)).argmin(0)}; },
                 [](Device d) { return T{ones({2, 3}, on(d)).argmin(std::nullopt, true)}; }};
  c["any"] = {[](Device d) { return T{ones({2, 3}, on(d)).any()}; },
              [](Device d) { return T{ones({2, 3}, on(d, kByte)).any({1}, true)}; }};
  c["all"] = {[](Device d) { return T{ones({2, 3}, on(d, kInt)).all({0})}; },
              [](Device d) { return T{ones({0, 3}, on(d, kBool)).all()}; }};
  c["var"] = {[](Device d) { return T{ones({2, 3}, on(d)).var()}; },
              [](Device d) { return T{ones({2, 3, 4}, on(d, kDouble)).var({0, 2}, 0, true)}; }};
  c["std"] = {[](Device d) { return T{ones({2, 3}, on(d, kHalf)).std({1})}; }};
  c["norm"] = {[](Device d) { return T{ones({2, 3}, on(d)).norm()}; },
               [](Device d) { return T{ones({2, 3}, on(d, kDouble)).norm(1, {1}, true)}; }};
  c["logsumexp"] = {[](Device d) { return T{ones({2, 3}, on(d)).logsumexp({1})}; },
                    [](Device d) { return T{ones({2, 3}, on(d, kInt)).logsumexp({0, 1}, true)}; }};
  c["cumsum"] = {[](Device d) { return T{ones({2, 3}, on(d)).cumsum(1)}; },
                 [](Device d) { return T{ones({2, 3}, on(d, kInt)).cumsum(0)}; },
                 [](Device d) { return T{ones({4}, on(d, kByte)).cumsum(0, kHalf)}; }};
  c["cumprod"] = {[](Device d) { return T{ones({2, 3}, on(d, kBool)).cumprod(-1)}; },
                  [](Device d) { return T{ones({}, on(d, kDouble)).cumprod(0)}; }};
}

}  // namespace tessera::meta_cases
