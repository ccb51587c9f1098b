// Samples of the linalg family (docs/ops/linalg.md): matrix products of
// several shapes (empty, 1x1, tall, wide, past a blocking size), with
// transposed and sliced operands, and addmm's broadcast self and beta/alpha.
#include "samples.h"

namespace tessera::kit {

namespace {
// Products of many terms: integers stay small so that no result wraps differently; floats finite.
Domain domain(ScalarType t) { return is_floating_type(t) ? Domain::Finite : Domain::Small; }

struct Dims {
  int64_t n, k, m;
};
const Dims kShapes[] = {{3, 4, 5}, {1, 1, 1}, {0, 3, 4}, {4, 0, 3}, {1, 7, 1}, {33, 65, 17}};
}  // namespace

void add_linalg_samples() {
  register_samples("mm", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const Domain d = domain(ctx.dtype);
    for (const Dims& s : kShapes) {
      Sample c;
      c.name = shape_text({s.n, s.k}) + " @ " + shape_text({s.k, s.m});
      c.args = {SampleArg::tensor(contiguous(random_tensor(ctx.rng, {s.n, s.k}, ctx.dtype, d))),
                SampleArg::tensor(contiguous(random_tensor(ctx.rng, {s.k, s.m}, ctx.dtype, d)))};
      out.push_back(std::move(c));
    }
    for (int which = 0; which < 2; ++which) {
      Sample c;
      c.name = which == 0 ? "transposed [6, 5] @ sliced [5, 7]" : "sliced [6, 5] @ transposed [5, 7]";
      c.args = {SampleArg::tensor(which == 0 ? transposed(ctx.rng, {6, 5}, ctx.dtype, d) : sliced(ctx.rng, {6, 5}, ctx.dtype, d)),
                SampleArg::tensor(which == 0 ? sliced(ctx.rng, {5, 7}, ctx.dtype, d) : transposed(ctx.rng, {5, 7}, ctx.dtype, d))};
      out.push_back(std::move(c));
    }
    Sample e;
    e.name = "[4, 5] expanded from [1, 5] @ [5, 3]";
    e.args = {SampleArg::tensor(expanded(ctx.rng, {4, 5}, ctx.dtype, d, 0)),
              SampleArg::tensor(contiguous(random_tensor(ctx.rng, {5, 3}, ctx.dtype, d)))};
    out.push_back(std::move(e));
    return out;
  }, 30.0);
  register_samples("bmm", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const Domain d = domain(ctx.dtype);
    for (int64_t b : {1, 3, 0}) {
      Sample c;
      c.name = "batch " + std::to_string(b) + " of [4, 6] @ [6, 5]";
      c.args = {SampleArg::tensor(contiguous(random_tensor(ctx.rng, {b, 4, 6}, ctx.dtype, d))),
                SampleArg::tensor(contiguous(random_tensor(ctx.rng, {b, 6, 5}, ctx.dtype, d)))};
      out.push_back(std::move(c));
    }
    Sample t;
    t.name = "batch 2, transposed @ sliced";
    t.args = {SampleArg::tensor(transposed(ctx.rng, {2, 4, 6}, ctx.dtype, d)),
              SampleArg::tensor(sliced(ctx.rng, {2, 6, 5}, ctx.dtype, d))};
    out.push_back(std::move(t));
    return out;
  }, 30.0);
  register_samples("addmm", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const Domain d = domain(ctx.dtype);
    const bool fl = is_floating_type(ctx.dtype);
    const std::vector<std::pair<SampleArg, SampleArg>> scales = {
        {SampleArg::integer(1), SampleArg::integer(1)},
        {fl ? SampleArg::real(0.5) : SampleArg::integer(2), fl ? SampleArg::real(-1.5) : SampleArg::integer(-1)},
        {SampleArg::integer(0), SampleArg::integer(1)}};  // beta 0: self's NaN must not reach the result
    for (size_t i = 0; i < scales.size(); ++i) {
      for (int self_kind = 0; self_kind < 3; ++self_kind) {
        Sample c;
        std::vector<int64_t> self_shape = self_kind == 0 ? std::vector<int64_t>{4, 5}
                                          : self_kind == 1 ? std::vector<int64_t>{5}
                                                           : std::vector<int64_t>{};
        c.name = "self " + shape_text(self_shape) + " + [4, 3] @ [3, 5], beta " + scales[i].first.text() +
                 ", alpha " + scales[i].second.text();
        const Domain self_domain = i == 2 ? Domain::Any : d;
        c.args = {SampleArg::tensor(contiguous(random_tensor(ctx.rng, self_shape, ctx.dtype, self_domain))),
                  SampleArg::tensor(contiguous(random_tensor(ctx.rng, {4, 3}, ctx.dtype, d))),
                  SampleArg::tensor(contiguous(random_tensor(ctx.rng, {3, 5}, ctx.dtype, d))), scales[i].first,
                  scales[i].second};
        out.push_back(std::move(c));
      }
    }
    Sample t;
    t.name = "transposed self + transposed [4, 3] @ sliced [3, 5]";
    t.args = {SampleArg::tensor(transposed(ctx.rng, {4, 5}, ctx.dtype, d)),
              SampleArg::tensor(transposed(ctx.rng, {4, 3}, ctx.dtype, d)),
              SampleArg::tensor(sliced(ctx.rng, {3, 5}, ctx.dtype, d)), SampleArg::integer(1), SampleArg::integer(1)};
    out.push_back(std::move(t));
    return out;
  }, 30.0);
}

}  // namespace tessera::kit
