// Meta-versus-cpu cases of the random ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_random_cases(CaseMap& c) {
  c["uniform_"] = {[](Device d) { return std::vector<Tensor>{empty({2, 3}, on(d)).uniform_(-1, 1)}; },
                   [](Device d) { return std::vector<Tensor>{rand({4}, std::nullopt, on(d, kHalf))}; }};
  c["normal_"] = {[](Device d) { return std::vector<Tensor>{empty({2, 3}, on(d, kDouble)).normal_(1, 2)}; },
                  [](Device d) { return std::vector<Tensor>{randn({0, 5}, std::nullopt, on(d, kBFloat16))}; }};
  c["random_"] = {[](Device d) { return std::vector<Tensor>{randint(0, 10, {3, 2}, std::nullopt, on(d, kLong))}; },
                  [](Device d) { return std::vector<Tensor>{empty({5}, on(d, kByte)).random_(0, 256)}; }};
  c["bernoulli_.float"] = {[](Device d) { return std::vector<Tensor>{empty({4}, on(d, kBool)).bernoulli_(0.3)}; }};
  c["bernoulli_.Tensor"] = {[](Device d) {
    return std::vector<Tensor>{bernoulli(full({2, 3}, 0.5, on(d)))};
  }};
  c["randperm"] = {[](Device d) { return std::vector<Tensor>{randperm(7, std::nullopt, TensorOptions().device(d))}; },
                   [](Device d) { return std::vector<Tensor>{randperm(3, std::nullopt, on(d, kInt))}; }};
  c["dropout"] = {[](Device d) { return std::vector<Tensor>{dropout(ones({3, 4}, on(d)), 0.5, true)}; }};
}

}  // namespace tessera::meta_cases
