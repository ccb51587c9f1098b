// Meta-versus-cpu cases of the founding ops of ABI 1.0 (add, sum, mm, copy_,
// the views, ...), which predate the per-family case files. Shared by
// meta_test.cpp and tests/sim (sim-versus-cpu values).
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_founding_cases(CaseMap& c) {
  auto binary = [](auto fn) {
    return std::vector<Case>{
        [fn](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d)), ones({3}, on(d, kInt)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({4, 1}, on(d, kByte)), ones({1, 5}, on(d, kChar)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({2}, on(d, kHalf)), ones({2}, on(d, kBFloat16)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({0, 2}, on(d, kLong)), ones({2}, on(d, kLong)))}; }};
  };
  c["add"] = binary([](const Tensor& a, const Tensor& b) { return add(a, b); });
  c["sub"] = binary([](const Tensor& a, const Tensor& b) { return sub(a, b); });
  c["mul"] = binary([](const Tensor& a, const Tensor& b) { return mul(a, b); });
  c["div"] = binary([](const Tensor& a, const Tensor& b) { return div(a, b); });
  c["div"].push_back([](Device d) { return std::vector<Tensor>{div(ones({3}, on(d, kInt)), ones({3}, on(d, kInt)), "floor")}; });
  auto inplace = [](auto fn) {
    return std::vector<Case>{[fn](Device d) {
      Tensor a = ones({2, 3}, on(d, kDouble));
      fn(a, ones({3}, on(d)));
      return std::vector<Tensor>{a};
    }};
  };
  c["add_"] = inplace([](Tensor& a, const Tensor& b) { a.add_(b); });
  c["sub_"] = inplace([](Tensor& a, const Tensor& b) { a.sub_(b); });
  c["mul_"] = inplace([](Tensor& a, const Tensor& b) { a.mul_(b); });
  c["div_"] = inplace([](Tensor& a, const Tensor& b) { a.div_(b); });
  auto unary = [](auto fn) {
    return std::vector<Case>{[fn](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d)))}; },
                             [fn](Device d) { return std::vector<Tensor>{fn(ones({4}, on(d, kInt)))}; },
                             [fn](Device d) { return std::vector<Tensor>{fn(ones({}, on(d, kHalf)))}; }};
  };
  c["neg"] = unary([](const Tensor& a) { return neg(a); });
  c["exp"] = unary([](const Tensor& a) { return exp(a); });
  c["relu"] = unary([](const Tensor& a) { return relu(a); });
  c["neg_"] = inplace([](Tensor& a, const Tensor&) { a.neg_(); });
  c["exp_"] = inplace([](Tensor& a, const Tensor&) { a.exp_(); });
  c["relu_"] = inplace([](Tensor& a, const Tensor&) { a.relu_(); });
  c["sum"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).sum()}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d, kInt)).sum({0, 2}, true)}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d, kBool)).sum({-1})}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).sum({1}, false, kDouble)}; }};
  c["mm"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).mm(ones({3, 5}, on(d)))}; }};
  c["bmm"] = {[](Device d) { return std::vector<Tensor>{ones({4, 2, 3}, on(d, kDouble)).bmm(ones({4, 3, 5}, on(d, kDouble)))}; }};
  c["matmul"] = {[](Device d) { return std::vector<Tensor>{ones({3}, on(d)).matmul(ones({3}, on(d)))}; },
                 [](Device d) { return std::vector<Tensor>{ones({2, 1, 3, 4}, on(d)).matmul(ones({5, 4, 2}, on(d)))}; },
                 [](Device d) { return std::vector<Tensor>{ones({4}, on(d)).matmul(ones({3, 4, 2}, on(d)))}; }};
  c["copy_"] = {[](Device d) {
    Tensor a = empty({2, 3}, on(d, kHalf));
    a.copy_(ones({3}, on(d, kLong)));
    return std::vector<Tensor>{a};
  }};
  c["fill_"] = {[](Device d) { return std::vector<Tensor>{empty({3}, on(d, kInt)).fill_(2.5)}; }};
  c["arange"] = {[](Device d) { return std::vector<Tensor>{arange(0, 10, 3, TensorOptions().device(d))}; },
                 [](Device d) { return std::vector<Tensor>{arange(0.0, 1.0, 0.1, TensorOptions().device(d))}; }};
  c["empty"] = {[](Device d) { return std::vector<Tensor>{empty({2, 0, 3}, on(d, kBool))}; }};
  c["view"] = {[](Device d) { return std::vector<Tensor>{ones({6}, on(d)).view({2, -1})}; }};
  c["reshape"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d)).t().reshape({12})}; }};
  c["transpose"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).transpose(0, 2)}; }};
  c["permute"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).permute({1, 2, 0})}; }};
  c["narrow"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).narrow(0, 1, 3)}; }};
  c["slice"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).slice(0, 1, 5, 2)}; }};
  c["select"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).select(1, -1)}; }};
  c["squeeze"] = {[](Device d) { return std::vector<Tensor>{ones({1, 3, 1}, on(d)).squeeze()}; }};
  c["squeeze.dim"] = {[](Device d) { return std::vector<Tensor>{ones({1, 3, 1}, on(d)).squeeze(2)}; }};
  c["unsqueeze"] = {[](Device d) { return std::vector<Tensor>{ones({3}, on(d)).unsqueeze(0)}; }};
  c["expand"] = {[](Device d) { return std::vector<Tensor>{ones({3, 1}, on(d)).expand({2, 3, 4})}; }};
  c["as_strided"] = {[](Device d) { return std::vector<Tensor>{ones({6}, on(d)).as_strided({2, 2}, {1, 2})}; }};
  c["contiguous"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d)).t().contiguous()}; }};
  c["clone"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d, kBFloat16)).clone()}; }};
}

CaseMap all_cases() {
  CaseMap c;
  add_founding_cases(c);
  add_unary_cases(c);
  add_binary_cases(c);
  add_ternary_cases(c);
  add_reduction_cases(c);
  add_linalg_cases(c);
  add_shape_cases(c);
  add_indexing_cases(c);
  add_random_cases(c);
  add_nn_cases(c);
  return c;
}

}  // namespace tessera::meta_cases
