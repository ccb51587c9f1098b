// Meta-versus-cpu cases of the ternary ops.
#include "meta_cases.h"

#include <tessera/ops/call.h>

namespace tessera::meta_cases {

void add_ternary_cases(CaseMap& c) {
  c["where"] = {
      [](Device d) {
        return std::vector<Tensor>{where(ones({2, 1}, on(d, kBool)), ones({3}, on(d, kInt)), ones({2, 3}, on(d)))};
      },
      [](Device d) { return std::vector<Tensor>{where(ones({0, 3}, on(d, kBool)), ones({3}, on(d, kLong)), Scalar(2))}; },
      [](Device d) { return std::vector<Tensor>{where(ones({4}, on(d, kBool)), Scalar(1.5), Scalar(2))}; }};
  c["where_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kDouble));
    x.where_(ones({3}, on(d, kBool)), ones({2, 1}, on(d)));
    return std::vector<Tensor>{x};
  }};
  c["clamp"] = {
      [](Device d) { return std::vector<Tensor>{clamp(ones({2, 3}, on(d, kInt)), Scalar(0), Scalar(2.5))}; },
      [](Device d) {
        return std::vector<Tensor>{clamp(ones({2, 3}, on(d, kHalf)), ones({3}, on(d, kFloat)), std::nullopt)};
      },
      [](Device d) {
        return std::vector<Tensor>{clamp(ones({0, 3}, on(d, kByte)), std::nullopt, ones({2, 1, 1}, on(d, kChar)))};
      }};
  // _clamp by name, promoting over all three; and through clamp, which runs it
  // (both bounds, self's dtype).
  c["_clamp"] = {
      [](Device d) {
        return ops::call("_clamp", {ones({2, 3}, on(d, kInt)), ones({3}, on(d, kDouble)), ones({2, 1}, on(d))});
      },
      [](Device d) { return std::vector<Tensor>{clamp(ones({0, 3}, on(d, kHalf)), Scalar(0), Scalar(2.5))}; }};
  c["_clamp_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kFloat));
    x.clamp_(ones({3}, on(d)), ones({2, 1}, on(d)));
    return std::vector<Tensor>{x};
  }};
  c["clamp_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kDouble));
    x.clamp_(ones({3}, on(d)), ones({2, 1}, on(d)));
    return std::vector<Tensor>{x};
  }};
  c["clamp_min"] = {[](Device d) { return std::vector<Tensor>{clamp_min(ones({2, 3}, on(d, kLong)), ones({3}, on(d)))}; }};
  c["clamp_max"] = {[](Device d) { return std::vector<Tensor>{clamp_max(ones({2, 3}, on(d, kLong)), Scalar(1))}; }};
  c["clamp_min_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d));
    x.clamp_min_(Scalar(0.5));
    return std::vector<Tensor>{x};
  }};
  c["clamp_max_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kInt));
    x.clamp_max_(ones({3}, on(d, kByte)));
    return std::vector<Tensor>{x};
  }};
  c["lerp"] = {
      [](Device d) { return std::vector<Tensor>{lerp(ones({2, 3}, on(d)), ones({3}, on(d)), Scalar(0.25))}; },
      [](Device d) {
        return std::vector<Tensor>{lerp(ones({3}, on(d, kHalf)), ones({2, 1}, on(d, kHalf)), ones({}, on(d, kHalf)))};
      }};
  c["lerp_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kDouble));
    x.lerp_(ones({3}, on(d, kDouble)), ones({2, 1}, on(d, kDouble)));
    return std::vector<Tensor>{x};
  }};
  c["addcmul"] = {
      [](Device d) {
        return std::vector<Tensor>{addcmul(ones({2, 3}, on(d, kInt)), ones({3}, on(d, kLong)), ones({2, 1}, on(d, kInt)), 2)};
      },
      [](Device d) { return std::vector<Tensor>{addcmul(ones({0, 3}, on(d)), ones({3}, on(d, kHalf)), ones({}, on(d)))}; }};
  c["addcmul_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kDouble));
    x.addcmul_(ones({3}, on(d)), ones({2, 1}, on(d)), 0.5);
    return std::vector<Tensor>{x};
  }};
  c["addcdiv"] = {[](Device d) {
    return std::vector<Tensor>{addcdiv(ones({2, 3}, on(d, kInt)), ones({3}, on(d)), ones({2, 1}, on(d, kInt)), 2)};
  }};
  c["addcdiv_"] = {[](Device d) {
    Tensor x = ones({2, 3}, on(d, kDouble));
    x.addcdiv_(ones({3}, on(d)), ones({2, 1}, on(d)), 0.5);
    return std::vector<Tensor>{x};
  }};
}

}  // namespace tessera::meta_cases
