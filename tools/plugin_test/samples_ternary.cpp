// Samples of the ternary family (docs/ops/ternary.md): the pointwise cases for
// three tensors; where's condition is bool.
#include "samples.h"

namespace tessera::kit {

void add_ternary_samples() {
  register_samples("where", [](const SampleContext& ctx) {
    // The condition is bool whatever the dtype: build the cases, then make input 0 a bool tensor alike.
    std::vector<Sample> out = pointwise_samples(ctx, {Domain::Unit, Domain::Any, Domain::Any}, {{}});
    for (Sample& s : out) {
      TensorInput& c = s.args[0].tensors[0];
      c.base = c.base.ne(Scalar(0));
    }
    return out;
  });
  register_samples("addcdiv", [](const SampleContext& ctx) {
    return pointwise_samples(ctx, {Domain::Any, Domain::Any, Domain::NonZero}, option_variants(ctx, 3));
  }, 2.0);
  register_samples("lerp", [](const SampleContext& ctx) {
    return pointwise_samples(ctx, {Domain::Any, Domain::Any, Domain::Unit}, option_variants(ctx, 3));
  }, 2.0);
  register_family_default("ternary", [](const Operator&) -> SampleFn {
    return [](const SampleContext& ctx) {
      return pointwise_samples(ctx, {Domain::Any, Domain::Any, Domain::Any}, option_variants(ctx, 3));
    };
  });
}

}  // namespace tessera::kit
