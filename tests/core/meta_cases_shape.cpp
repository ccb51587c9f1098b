// Meta-versus-cpu cases of the shape ops.
#include "meta_cases.h"

#include <tessera/ops/call.h>

namespace tessera::meta_cases {

void add_shape_cases(CaseMap& c) {
  c["cat"] = {[](Device d) { return std::vector<Tensor>{cat({ones({2, 3}, on(d)), ones({4, 3}, on(d, kInt))})}; },
              [](Device d) { return std::vector<Tensor>{cat({ones({2, 3}, on(d, kByte)), ones({0}, on(d, kChar)), ones({2, 1}, on(d, kByte))}, -1)}; },
              [](Device d) { return std::vector<Tensor>{cat({ones({0}, on(d, kHalf)), ones({0}, on(d, kBFloat16))})}; }};
  c["_cat"] = {[](Device d) {
                 return ops::call("_cat", {std::vector<Tensor>{ones({2, 3}, on(d)), ones({2, 5}, on(d))}, int64_t{-1}});
               },
               [](Device d) {
                 return ops::call("_cat", {std::vector<Tensor>{ones({0, 2}, on(d, kLong)), ones({3, 2}, on(d, kLong))},
                                           int64_t{0}});
               }};
  c["stack"] = {[](Device d) { return std::vector<Tensor>{stack({ones({2, 3}, on(d)), ones({2, 3}, on(d, kDouble))}, 1)}; },
                [](Device d) { return std::vector<Tensor>{stack({ones({}, on(d, kBool))}, -1)}; }};
  c["flip"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d, kLong)).flip({0, -1})}; },
               [](Device d) { return std::vector<Tensor>{ones({}, on(d)).flip({})}; }};
  c["roll"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d, kShort)).roll({1})}; },
               [](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).roll({1, -4}, {0, 1})}; }};
  c["repeat"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d, kBool)).repeat({2, 1, 3})}; },
                 [](Device d) { return std::vector<Tensor>{ones({2}, on(d)).repeat({0, 2})}; }};
  c["tile"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d, kHalf)).tile({2})}; }};
  c["pad"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).pad({1, 2, -1, 0}, "constant", 3.0)}; },
              [](Device d) { return std::vector<Tensor>{pad(ones({4}, on(d, kInt)), {0, 1})}; }};
  c["tril"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d)).tril(1)}; },
               [](Device d) { return std::vector<Tensor>{ones({2, 0, 4}, on(d, kBool)).tril()}; }};
  c["triu"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d, kLong)).triu(-1)}; }};
  c["tril_"] = {[](Device d) {
    Tensor a = ones({3, 3}, on(d, kDouble));
    a.tril_();
    return std::vector<Tensor>{a};
  }};
  c["triu_"] = {[](Device d) {
    Tensor a = ones({2, 3, 3}, on(d, kBFloat16));
    a.triu_(2);
    return std::vector<Tensor>{a};
  }};
}

}  // namespace tessera::meta_cases
