// Meta-versus-cpu cases of the indexing ops.
#include <gtest/gtest.h>

#include "meta_cases.h"
#include <tessera/ops/call.h>

namespace tessera::meta_cases {

namespace {
Tensor idx(IntArrayRef shape, Device d, ScalarType t = kLong) { return zeros(shape, on(d, t)); }
}  // namespace

void add_indexing_cases(CaseMap& c) {
  c["index_select"] = {
      [](Device d) { return std::vector<Tensor>{index_select(ones({3, 4}, on(d)), 1, idx({5}, d))}; },
      [](Device d) { return std::vector<Tensor>{index_select(ones({3}, on(d, kHalf)), -1, idx({}, d, kInt))}; },
      [](Device d) { return std::vector<Tensor>{index_select(ones({}, on(d, kBool)), 0, idx({1}, d))}; }};
  c["gather"] = {[](Device d) { return std::vector<Tensor>{gather(ones({3, 4}, on(d)), 0, idx({2, 3}, d))}; },
                 [](Device d) { return std::vector<Tensor>{gather(ones({3, 4}, on(d, kLong)), 1, idx({3, 0}, d))}; }};
  c["take"] = {[](Device d) { return std::vector<Tensor>{take(ones({3, 4}, on(d, kInt)), idx({2, 2, 2}, d))}; }};
  c["scatter_"] = {[](Device d) {
    Tensor a = ones({3, 4}, on(d));
    a.scatter_(0, idx({2, 4}, d), ones({2, 4}, on(d)));
    return std::vector<Tensor>{a};
  }};
  c["scatter_.value"] = {[](Device d) {
    Tensor a = ones({3, 4}, on(d, kShort));
    a.scatter_(1, idx({3, 2}, d), 7);
    return std::vector<Tensor>{a};
  }};
  c["scatter_add_"] = {[](Device d) {
    Tensor a = ones({3, 4}, on(d, kDouble));
    a.scatter_add_(0, idx({5, 4}, d), ones({5, 4}, on(d, kDouble)));
    return std::vector<Tensor>{a};
  }};
  c["index_add_"] = {[](Device d) {
    Tensor a = ones({3, 4}, on(d));
    a.index_add_(1, idx({2}, d, kInt), ones({3, 2}, on(d)), 2.0);
    return std::vector<Tensor>{a};
  }};
  c["_scatter"] = {[](Device d) {
                      return ops::call("_scatter", {ones({3, 4}, on(d)), int64_t{0}, idx({2, 4}, d), ones({2, 5}, on(d)), true});
                    },
                    [](Device d) {
                      return ops::call("_scatter", {ones({4}, on(d, kByte)), int64_t{-1}, idx({2}, d), ones({3}, on(d, kByte)), false});
                    }};
  c["scatter"] = {[](Device d) { return std::vector<Tensor>{scatter(ones({3, 4}, on(d)), 0, idx({2, 4}, d), ones({2, 4}, on(d)))}; }};
  c["scatter.value"] = {[](Device d) { return std::vector<Tensor>{scatter(ones({3, 4}, on(d, kByte)), 1, idx({1, 1}, d), 2)}; }};
  c["scatter_add"] = {[](Device d) { return std::vector<Tensor>{scatter_add(ones({3}, on(d)), 0, idx({6}, d), ones({6}, on(d)))}; }};
  c["index_add"] = {[](Device d) { return std::vector<Tensor>{index_add(ones({3, 4}, on(d, kLong)), 0, idx({2}, d), ones({2, 4}, on(d, kLong)))}; }};
  c["masked_fill"] = {
      [](Device d) { return std::vector<Tensor>{masked_fill(ones({3, 1}, on(d)), ones({4}, on(d, kBool)), 2.5)}; },
      [](Device d) { return std::vector<Tensor>{masked_fill(ones({2, 3}, on(d, kInt)), ones({}, on(d, kBool)), 1)}; }};
  c["masked_fill_"] = {[](Device d) {
    Tensor a = ones({2, 3}, on(d, kBFloat16));
    a.masked_fill_(ones({3}, on(d, kBool)), -1.0);
    return std::vector<Tensor>{a};
  }};
  c["masked_fill.Tensor"] = {[](Device d) {
    return std::vector<Tensor>{masked_fill(ones({2, 3}, on(d)), ones({2, 1}, on(d, kBool)), ones({}, on(d)))};
  }};
  c["masked_fill_.Tensor"] = {[](Device d) {
    Tensor a = ones({2, 3}, on(d, kLong));
    a.masked_fill_(ones({2, 3}, on(d, kBool)), ones({}, on(d, kLong)));
    return std::vector<Tensor>{a};
  }};
  // The result's size depends on the data: meta refuses it (as nonzero).
  c["masked_select"] = {[](Device d) {
    const Tensor a = ones({2, 3}, on(d)), m = ones({3}, on(d, kBool));
    if (d == Device("meta")) {
      EXPECT_THROW(masked_select(a, m), NotImplementedError);
    } else {
      EXPECT_EQ(masked_select(a, m).sizes().vec(), std::vector<int64_t>{6});
    }
    return std::vector<Tensor>{};
  }};
  c["embedding"] = {[](Device d) { return std::vector<Tensor>{embedding(ones({10, 3}, on(d)), idx({2, 4}, d))}; },
                    [](Device d) { return std::vector<Tensor>{embedding(ones({10, 3}, on(d, kHalf)), idx({}, d, kInt), 0)}; }};
  c["one_hot"] = {[](Device d) { return std::vector<Tensor>{one_hot(idx({2, 3}, d), 5)}; },
                  [](Device d) { return std::vector<Tensor>{one_hot(idx({}, d), 3)}; }};
}

}  // namespace tessera::meta_cases
