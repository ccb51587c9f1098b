// Meta-versus-cpu cases of the linalg ops (mm, bmm and matmul have theirs in meta_test.cpp).
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_linalg_cases(CaseMap& c) {
  c["addmm"] = {[](Device d) { return std::vector<Tensor>{addmm(ones({5}, on(d)), ones({2, 3}, on(d)), ones({3, 5}, on(d)))}; },
                [](Device d) { return std::vector<Tensor>{addmm(ones({2, 1}, on(d, kInt)), ones({2, 0}, on(d, kInt)), ones({0, 4}, on(d, kInt)), 2, 3)}; }};
  c["addmm_"] = {[](Device d) {
    Tensor a = ones({2, 5}, on(d, kDouble));
    a.addmm_(ones({2, 3}, on(d, kDouble)), ones({3, 5}, on(d, kDouble)), 0.5, 2.0);
    return std::vector<Tensor>{a};
  }};
  c["dot"] = {[](Device d) { return std::vector<Tensor>{dot(ones({4}, on(d)), ones({4}, on(d)))}; },
              [](Device d) { return std::vector<Tensor>{ones({0}, on(d, kLong)).dot(ones({0}, on(d, kLong)))}; }};
  c["outer"] = {[](Device d) { return std::vector<Tensor>{outer(ones({4}, on(d, kInt)), ones({3}, on(d)))}; },
                [](Device d) { return std::vector<Tensor>{ones({2}, on(d, kBool)).outer(ones({0}, on(d, kBool)))}; }};
}

}  // namespace tessera::meta_cases
