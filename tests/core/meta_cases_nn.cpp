// Meta-versus-cpu cases of the nn ops.
#include "meta_cases.h"

#include <tessera/ops/call.h>

namespace tessera::meta_cases {

void add_nn_cases(CaseMap& c) {
  using T = std::vector<Tensor>;
  c["softmax"] = {[](Device d) { return T{softmax(ones({2, 3}, on(d)), -1)}; },
                  [](Device d) { return T{softmax(ones({2, 3, 4}, on(d, kHalf)), 1)}; },
                  [](Device d) { return T{ones({4}, on(d, kInt)).softmax(0, kDouble)}; },
                  [](Device d) { return T{softmax(ones({}, on(d)), 0)}; }};
  c["log_softmax"] = {[](Device d) { return T{log_softmax(ones({2, 3}, on(d, kBFloat16)), 0)}; },
                      [](Device d) { return T{ones({0, 3}, on(d)).log_softmax(-1, kDouble)}; }};
  c["layer_norm"] = {[](Device d) { return T{layer_norm(ones({2, 3, 4}, on(d)), {3, 4})}; },
                     [](Device d) {
                       return T{layer_norm(ones({2, 4}, on(d, kDouble)), {4}, ones({4}, on(d, kDouble)),
                                           ones({4}, on(d, kDouble)), 1e-3)};
                     }};
  c["mse_loss"] = {[](Device d) { return T{mse_loss(ones({2, 3}, on(d)), ones({3}, on(d)))}; },
                   [](Device d) { return T{mse_loss(ones({2, 3}, on(d, kHalf)), ones({2, 3}, on(d, kHalf)), "none")}; },
                   [](Device d) { return T{mse_loss(ones({4}, on(d, kDouble)), ones({4}, on(d, kDouble)), "sum")}; }};
  c["nll_loss"] = {[](Device d) { return T{nll_loss(ones({3, 4}, on(d)), ones({3}, on(d, kLong)))}; },
                   [](Device d) {
                     return T{nll_loss(ones({2, 4, 5}, on(d, kDouble)), ones({2, 5}, on(d, kLong)),
                                       ones({4}, on(d, kDouble)), "none")};
                   },
                   [](Device d) { return T{nll_loss(ones({4}, on(d)), ones({}, on(d, kLong)), std::nullopt, "sum")}; }};
  // Every output mask: input gradient only (affine ones [0]), affine only, both.
  c["_layer_norm_backward"] = {
      [](Device d) {
        return ops::call("_layer_norm_backward",
                         {ones({2, 3, 4}, on(d)), ones({2, 3, 4}, on(d)), std::vector<int64_t>{3, 4}, std::monostate{}, 1e-5,
                          true, false});
      },
      [](Device d) {
        return ops::call("_layer_norm_backward", {ones({5, 4}, on(d, kHalf)), ones({5, 4}, on(d, kHalf)),
                                                  std::vector<int64_t>{4}, ones({4}, on(d)), 1e-5, false, true});
      },
      [](Device d) {
        return ops::call("_layer_norm_backward", {ones({0, 4}, on(d, kDouble)), ones({0, 4}, on(d, kDouble)),
                                                  std::vector<int64_t>{4}, ones({4}, on(d, kDouble)), 0.1, true, true});
      }};
  c["_max_pool2d_backward"] = {
      [](Device d) {
        return ops::call("_max_pool2d_backward",
                         {ones({2, 3, 4, 4}, on(d)), ones({2, 3, 8, 8}, on(d)), std::vector<int64_t>{2, 2}});
      },
      [](Device d) {
        return ops::call("_max_pool2d_backward", {ones({3, 4, 3}, on(d, kDouble)), ones({3, 7, 5}, on(d, kDouble)),
                                                  std::vector<int64_t>{3, 2}, std::vector<int64_t>{2, 2},
                                                  std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, true});
      }};
  c["_conv2d_backward_weight"] = {
      [](Device d) {
        return ops::call("_conv2d_backward_weight", {ones({2, 6, 4, 3}, on(d)), ones({2, 4, 7, 6}, on(d)),
                                                     std::vector<int64_t>{6, 2, 3, 3}, std::vector<int64_t>{2, 1},
                                                     std::vector<int64_t>{1, 0}, std::vector<int64_t>{1, 2}, int64_t{2}});
      },
      [](Device d) {
        return ops::call("_conv2d_backward_weight", {ones({1, 2, 5, 4}, on(d, kDouble)), ones({1, 3, 5, 4}, on(d, kDouble)),
                                                     std::vector<int64_t>{2, 3, 3, 3}, std::vector<int64_t>{1},
                                                     std::vector<int64_t>{1}});
      }};
  c["_nll_loss_smoothed"] = {[](Device d) {
    return T{cross_entropy(ones({3, 4}, on(d)), ones({3}, on(d, kLong)), std::nullopt, "none", -100, 0.1)};
  }};
  c["cross_entropy"] = {
      [](Device d) { return T{cross_entropy(ones({3, 4}, on(d)), ones({3}, on(d, kLong)))}; },
      [](Device d) { return T{cross_entropy(ones({3, 4, 2}, on(d)), ones({3, 4, 2}, on(d)), std::nullopt, "none")}; }};
  c["conv2d"] = {[](Device d) { return T{conv2d(ones({2, 4, 7, 6}, on(d)), ones({6, 2, 3, 3}, on(d)), ones({6}, on(d)),
                                                {2, 1}, {1, 0}, {1, 2}, 2)}; },
                 [](Device d) { return T{conv2d(ones({3, 5, 5}, on(d, kHalf)), ones({2, 3, 2, 2}, on(d, kHalf)))}; },
                 [](Device d) {
                   return T{conv2d(ones({1, 1, 5, 4}, on(d, kDouble)), ones({1, 1, 2, 3}, on(d, kDouble)), std::nullopt,
                                   {1}, "same")};
                 }};
  c["max_pool2d"] = {[](Device d) { return T{max_pool2d(ones({2, 3, 7, 7}, on(d)), {3, 3}, {2, 2}, {1, 1}, {1}, true)}; },
                     [](Device d) { return T{max_pool2d(ones({3, 4, 5}, on(d, kInt)), {2})}; }};
  c["avg_pool2d"] = {[](Device d) { return T{avg_pool2d(ones({2, 3, 7, 7}, on(d)), {3, 2}, {2}, {1}, true, false)}; },
                     [](Device d) { return T{avg_pool2d(ones({3, 4, 5}, on(d, kBFloat16)), {2}, {}, {1}, false, true, 3)}; }};
}

}  // namespace tessera::meta_cases
