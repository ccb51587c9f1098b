// Samples of the indexing family (docs/ops/indexing.md): indices drawn within
// bounds (the kit checks results, not error paths), duplicates only where the
// result does not depend on which write wins, masks of every density.
#include "samples.h"

#include <algorithm>
#include <numeric>

namespace tessera::kit {

namespace {

TensorInput index_input(Tensor t) { return contiguous(std::move(t)); }

// An int64 index tensor of `shape` whose rows along `dim` are distinct
// positions below `bound` (scatter_ with repeated targets is nondeterministic).
Tensor distinct_index(std::mt19937_64& rng, std::vector<int64_t> shape, int64_t dim, int64_t bound) {
  Tensor t = empty(shape, TensorOptions(kLong));
  const int64_t n = t.numel();
  if (n == 0) return t;
  int64_t* p = t.data_ptr<int64_t>();
  const int64_t len = shape[static_cast<size_t>(dim)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> perm(static_cast<size_t>(bound));
  for (int64_t base = 0; base < n; ++base) {
    if ((base / inner) % len != 0) continue;  // the first element of each line along dim
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t k = 0; k < len; ++k) p[base + k * inner] = perm[static_cast<size_t>(k)];
  }
  return t;
}

}  // namespace

void add_indexing_samples() {
  register_samples("gather", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    for (int64_t dim : {0, 1, -1}) {
      out.push_back(make_sample("[4, 5] dim " + std::to_string(dim) + ", index [3, 5]",
                         {SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, t))), SampleArg::integer(dim),
                          SampleArg::tensor(index_input(random_index(rng, {3, 5}, 0, dim == 0 ? 4 : 5)))}));
    }
    out.push_back(make_sample("transposed [5, 6] dim 1, index [5, 2]",
                       {SampleArg::tensor(transposed(rng, {5, 6}, t, Domain::Any)), SampleArg::integer(1),
                        SampleArg::tensor(index_input(random_index(rng, {5, 2}, 0, 6)))}));
    out.push_back(make_sample("[3, 4, 5] dim 1, index [2, 7, 3] (repeats)",
                       {SampleArg::tensor(contiguous(random_tensor(rng, {3, 4, 5}, t))), SampleArg::integer(1),
                        SampleArg::tensor(index_input(random_index(rng, {2, 7, 3}, 0, 4)))}));
    out.push_back(make_sample("empty index", {SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, t))),
                                       SampleArg::integer(0),
                                       SampleArg::tensor(index_input(random_index(rng, {0, 5}, 0, 4)))}));
    return out;
  });
  register_samples("index_select", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    for (int64_t dim : {0, 1, -1}) {
      out.push_back(make_sample("[4, 6] dim " + std::to_string(dim),
                         {SampleArg::tensor(contiguous(random_tensor(rng, {4, 6}, ctx.dtype))), SampleArg::integer(dim),
                          SampleArg::tensor(index_input(random_index(rng, {9}, 0, dim == 0 ? 4 : 6)))}));
    }
    out.push_back(make_sample("sliced [5, 6] dim 1", {SampleArg::tensor(sliced(rng, {5, 6}, ctx.dtype, Domain::Any)),
                                               SampleArg::integer(1),
                                               SampleArg::tensor(index_input(random_index(rng, {4}, 0, 6)))}));
    out.push_back(make_sample("0-d self", {SampleArg::tensor(contiguous(random_tensor(rng, {}, ctx.dtype))),
                                    SampleArg::integer(0),
                                    SampleArg::tensor(index_input(random_index(rng, {1}, 0, 1)))}));
    return out;
  });
  register_samples("take", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    out.push_back(make_sample("[4, 6], index [3, 5]", {SampleArg::tensor(contiguous(random_tensor(rng, {4, 6}, ctx.dtype))),
                                                SampleArg::tensor(index_input(random_index(rng, {3, 5}, -24, 24)))}));
    out.push_back(make_sample("transposed [5, 6], index [7]", {SampleArg::tensor(transposed(rng, {5, 6}, ctx.dtype, Domain::Any)),
                                                        SampleArg::tensor(index_input(random_index(rng, {7}, 0, 30)))}));
    return out;
  });
  register_samples("masked_fill", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const SampleArg value = is_floating_type(ctx.dtype) ? SampleArg::real(-1.5) : SampleArg::integer(3);
    for (int layout = 0; layout < 3; ++layout) {
      TensorInput self = layout == 0   ? contiguous(random_tensor(rng, {37}, ctx.dtype))
                         : layout == 1 ? transposed(rng, {5, 6}, ctx.dtype, Domain::Any)
                                       : sliced(rng, {5, 6}, ctx.dtype, Domain::Any);
      const std::vector<int64_t> shape = layout == 0 ? std::vector<int64_t>{37} : std::vector<int64_t>{5, 6};
      out.push_back(make_sample(self.layout, {SampleArg::tensor(self),
                                       SampleArg::tensor(contiguous(random_tensor(rng, shape, kBool, Domain::Unit))),
                                       value}));
    }
    out.push_back(make_sample("mask [6] broadcast over [5, 6]",
                       {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype))),
                        SampleArg::tensor(contiguous(random_tensor(rng, {6}, kBool, Domain::Unit))), value}));
    return out;
  });
  register_samples("masked_select", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    out.push_back(make_sample("[37]", {SampleArg::tensor(contiguous(random_tensor(rng, {37}, ctx.dtype))),
                                SampleArg::tensor(contiguous(random_tensor(rng, {37}, kBool, Domain::Unit)))}));
    out.push_back(make_sample("transposed [5, 6], mask [6]", {SampleArg::tensor(transposed(rng, {5, 6}, ctx.dtype, Domain::Any)),
                                                       SampleArg::tensor(contiguous(random_tensor(rng, {6}, kBool, Domain::Unit)))}));
    out.push_back(make_sample("all false", {SampleArg::tensor(contiguous(random_tensor(rng, {4, 3}, ctx.dtype))),
                                     SampleArg::tensor(contiguous(zeros({4, 3}, TensorOptions(kBool))))}));
    out.push_back(make_sample("[1100] all true", {SampleArg::tensor(contiguous(random_tensor(rng, {1100}, ctx.dtype))),
                                           SampleArg::tensor(contiguous(ones({1100}, TensorOptions(kBool))))}));
    return out;
  });
  register_samples("nonzero", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    out.push_back(make_sample("[37]", {SampleArg::tensor(contiguous(random_tensor(rng, {37}, ctx.dtype, Domain::Unit)))}));
    out.push_back(make_sample("[3, 4, 5]", {SampleArg::tensor(contiguous(random_tensor(rng, {3, 4, 5}, ctx.dtype, Domain::Unit)))}));
    out.push_back(make_sample("transposed [5, 6]", {SampleArg::tensor(transposed(rng, {5, 6}, ctx.dtype, Domain::Unit))}));
    out.push_back(make_sample("0-d", {SampleArg::tensor(contiguous(random_tensor(rng, {}, ctx.dtype, Domain::NonZero)))}));
    out.push_back(make_sample("with specials", {SampleArg::tensor(contiguous(random_tensor(rng, {40}, ctx.dtype, Domain::Any)))}));
    out.push_back(make_sample("empty", {SampleArg::tensor(contiguous(random_tensor(rng, {0, 3}, ctx.dtype)))}));
    return out;
  });
  // scatter_(self, dim, index, src): distinct targets per line, so no two writes meet.
  register_samples("scatter_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    for (int64_t dim : {0, 1}) {
      out.push_back(make_sample("[5, 6] dim " + std::to_string(dim) + ", index [3, 4]",
                         {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype))), SampleArg::integer(dim),
                          SampleArg::tensor(index_input(distinct_index(rng, {3, 4}, dim, dim == 0 ? 5 : 6))),
                          SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, ctx.dtype)))}));
    }
    out.push_back(make_sample("transposed self", {SampleArg::tensor(transposed(rng, {5, 6}, ctx.dtype, Domain::Any)),
                                           SampleArg::integer(1),
                                           SampleArg::tensor(index_input(distinct_index(rng, {5, 3}, 1, 6))),
                                           SampleArg::tensor(contiguous(random_tensor(rng, {5, 3}, ctx.dtype)))}));
    return out;
  });
  register_samples("scatter_.value", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const SampleArg value = is_floating_type(ctx.dtype) ? SampleArg::real(2.5) : SampleArg::integer(1);
    for (int64_t dim : {0, 1}) {
      out.push_back(make_sample("[5, 6] dim " + std::to_string(dim),
                         {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype))), SampleArg::integer(dim),
                          SampleArg::tensor(index_input(random_index(rng, {3, 4}, 0, 5))), value}));
    }
    return out;
  });
  register_samples("scatter_add_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const Domain d = is_floating_type(ctx.dtype) ? Domain::Finite : Domain::Small;
    for (int64_t dim : {0, 1}) {
      Sample s = make_sample("[5, 6] dim " + std::to_string(dim) + ", repeated targets",
                      {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype, d))), SampleArg::integer(dim),
                       SampleArg::tensor(index_input(random_index(rng, {4, 4}, 0, 5))),
                       SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, ctx.dtype, d)))});
      out.push_back(std::move(s));
    }
    return out;
  }, 8.0);
  // _scatter(self, dim, index, src, add): scatter_ (distinct targets) and
  // scatter_add_ (repeated ones) into a new tensor; rows covered whole (the
  // cpu plugin's one-pass path) and not, a transposed self.
  register_samples("_scatter", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const Domain d = is_floating_type(ctx.dtype) ? Domain::Finite : Domain::Small;
    for (int64_t dim : {0, 1}) {
      out.push_back(make_sample("[5, 6] dim " + std::to_string(dim) + ", index [3, 4], add=false",
                                {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype, d))),
                                 SampleArg::integer(dim),
                                 SampleArg::tensor(index_input(distinct_index(rng, {3, 4}, dim, dim == 0 ? 5 : 6))),
                                 SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, ctx.dtype, d))),
                                 SampleArg::boolean(false)}));
      out.push_back(make_sample("[5, 6] dim " + std::to_string(dim) + ", repeated targets, add=true",
                                {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype, d))),
                                 SampleArg::integer(dim), SampleArg::tensor(index_input(random_index(rng, {4, 4}, 0, 5))),
                                 SampleArg::tensor(contiguous(random_tensor(rng, {4, 5}, ctx.dtype, d))),
                                 SampleArg::boolean(true)}));
    }
    out.push_back(make_sample("[37, 70] dim 1, every row, index [37, 90], add=true",
                              {SampleArg::tensor(contiguous(random_tensor(rng, {37, 70}, ctx.dtype, d))),
                               SampleArg::integer(1), SampleArg::tensor(index_input(random_index(rng, {37, 90}, 0, 70))),
                               SampleArg::tensor(contiguous(random_tensor(rng, {37, 90}, ctx.dtype, d))),
                               SampleArg::boolean(true)}));
    out.push_back(make_sample("transposed self, add=false",
                              {SampleArg::tensor(transposed(rng, {5, 6}, ctx.dtype, Domain::Any)), SampleArg::integer(1),
                               SampleArg::tensor(index_input(distinct_index(rng, {5, 3}, 1, 6))),
                               SampleArg::tensor(contiguous(random_tensor(rng, {5, 3}, ctx.dtype))),
                               SampleArg::boolean(false)}));
    return out;
  }, 8.0);
  register_samples("index_add_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const Domain d = is_floating_type(ctx.dtype) ? Domain::Finite : Domain::Small;
    const bool fl = is_floating_type(ctx.dtype);
    for (int64_t dim : {0, 1}) {
      for (const SampleArg& alpha : {SampleArg::integer(1), fl ? SampleArg::real(-0.5) : SampleArg::integer(2)}) {
        out.push_back(make_sample("[5, 6] dim " + std::to_string(dim) + ", repeated rows, alpha " + alpha.text(),
                           {SampleArg::tensor(contiguous(random_tensor(rng, {5, 6}, ctx.dtype, d))),
                            SampleArg::integer(dim),
                            SampleArg::tensor(index_input(random_index(rng, {4}, 0, dim == 0 ? 5 : 6))),
                            SampleArg::tensor(contiguous(random_tensor(rng, dim == 0 ? std::vector<int64_t>{4, 6}
                                                                                     : std::vector<int64_t>{5, 4},
                                                                       ctx.dtype, d))),
                            alpha}));
      }
    }
    return out;
  }, 8.0);
}

}  // namespace tessera::kit
