// Meta-versus-cpu cases, one file per op family (meta_cases_<family>.cpp).
// A case builds an op's outputs from the same inputs on the given device; the
// test runs each on cpu and on meta and compares shapes and dtypes; tests/sim
// runs each on cpu and on sim and compares values.
#pragma once

#include <tessera/tessera.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tessera::meta_cases {

using Case = std::function<std::vector<Tensor>(Device)>;
using CaseMap = std::map<std::string, std::vector<Case>>;

inline TensorOptions on(Device d, ScalarType t = kFloat) { return TensorOptions(t).device(d); }

void add_founding_cases(CaseMap& cases);  // add, sum, mm, copy_, views, ... (ABI 1.0's ops)
void add_unary_cases(CaseMap& cases);
void add_binary_cases(CaseMap& cases);
void add_ternary_cases(CaseMap& cases);
void add_reduction_cases(CaseMap& cases);
void add_linalg_cases(CaseMap& cases);
void add_shape_cases(CaseMap& cases);
void add_indexing_cases(CaseMap& cases);
void add_random_cases(CaseMap& cases);
void add_nn_cases(CaseMap& cases);
/// Every family's cases (meta_cases_founding.cpp).
CaseMap all_cases();

}  // namespace tessera::meta_cases
