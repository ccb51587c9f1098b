// Samples of the random family (docs/ops/random.md): the kernels take the
// Philox seed and offset as arguments and every device must give the same
// bits for them (the kernel contract), so the kit compares with cpu like any
// op, over seeds, offsets, layouts and each op's parameters.
#include "samples.h"

namespace tessera::kit {

namespace {


// The in-place random ops' self: its old values do not matter, its layout does.
std::vector<TensorInput> selves(const SampleContext& ctx) {
  return {contiguous(random_tensor(ctx.rng, {37}, ctx.dtype, Domain::Small)),
          transposed(ctx.rng, {5, 6}, ctx.dtype, Domain::Small), sliced(ctx.rng, {5, 6}, ctx.dtype, Domain::Small),
          contiguous(random_tensor(ctx.rng, {1027}, ctx.dtype, Domain::Small)),
          contiguous(random_tensor(ctx.rng, {0}, ctx.dtype, Domain::Small))};
}

const std::pair<int64_t, int64_t> kSeeds[] = {{0, 0}, {42, 12345}, {-1, 3}};  // seed -1: all bits set
}  // namespace

void add_random_samples() {
  register_samples("uniform_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    for (const TensorInput& self : selves(ctx))
      for (auto [seed, offset] : kSeeds)
        out.push_back(make_sample(SampleArg::tensor(self).text() + ", seed " + std::to_string(seed) + ", offset " +
                               std::to_string(offset),
                           {SampleArg::tensor(self), SampleArg::real(-2), SampleArg::real(3), SampleArg::integer(seed),
                            SampleArg::integer(offset)}));
    return out;
  }, 2.0);
  register_samples("normal_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    for (const TensorInput& self : selves(ctx))
      for (auto [seed, offset] : kSeeds)
        out.push_back(make_sample(SampleArg::tensor(self).text() + ", seed " + std::to_string(seed),
                           {SampleArg::tensor(self), SampleArg::real(1.5), SampleArg::real(0.5), SampleArg::integer(seed),
                            SampleArg::integer(offset)}));
    return out;
  }, 8.0);  // log and cos of the Box-Muller transform differ by ulps between math libraries
  register_samples("random_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const int64_t hi = ctx.dtype == kBool ? 2 : ctx.dtype == kChar ? 100 : 200;
    const int64_t lo = ctx.dtype == kBool || ctx.dtype == kByte ? 0 : -50;
    for (const TensorInput& self : selves(ctx))
      for (auto [seed, offset] : kSeeds)
        out.push_back(make_sample(SampleArg::tensor(self).text() + ", seed " + std::to_string(seed),
                           {SampleArg::tensor(self), SampleArg::integer(lo), SampleArg::integer(hi),
                            SampleArg::integer(seed), SampleArg::integer(offset)}));
    return out;
  });
  register_samples("bernoulli_.float", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    for (const TensorInput& self : selves(ctx))
      for (double p : {0.0, 0.3, 1.0})
        out.push_back(make_sample(SampleArg::tensor(self).text() + ", p " + SampleArg::real(p).text(),
                           {SampleArg::tensor(self), SampleArg::real(p), SampleArg::integer(7), SampleArg::integer(9)}));
    return out;
  });
  register_samples("bernoulli_.Tensor", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    for (const TensorInput& self : selves(ctx)) {
      const Tensor shape_of = self.view ? self.view(self.base) : self.base;
      out.push_back(make_sample(SampleArg::tensor(self).text(),
                         {SampleArg::tensor(self),
                          SampleArg::tensor(contiguous(random_tensor(ctx.rng, shape_of.sizes().vec(), kDouble, Domain::Unit))),
                          SampleArg::integer(3), SampleArg::integer(5)}));
    }
    return out;
  });
  register_samples("dropout", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    for (const TensorInput& in : selves(ctx))
      for (double p : {0.0, 0.25, 1.0})
        for (bool train : {true, false})
          out.push_back(make_sample(SampleArg::tensor(in).text() + ", p " + SampleArg::real(p).text() + (train ? ", train" : ""),
                             {SampleArg::tensor(in), SampleArg::real(p), SampleArg::boolean(train), SampleArg::integer(11),
                              SampleArg::integer(13)}));
    return out;
  }, 2.0);
  register_samples("randperm", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const int64_t big = ctx.dtype == kByte ? 200 : ctx.dtype == kChar ? 100 : is_floating_type(ctx.dtype) && ctx.dtype == kHalf ? 1000 : 1100;
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{10}, big})
      for (auto [seed, offset] : kSeeds)
        out.push_back(make_sample("n " + std::to_string(n) + ", seed " + std::to_string(seed),
                           {SampleArg::integer(n), SampleArg::integer(seed), SampleArg::integer(offset),
                            SampleArg::scalar_type(ctx.dtype), SampleArg::device()}));
    return out;
  });
}

}  // namespace tessera::kit
