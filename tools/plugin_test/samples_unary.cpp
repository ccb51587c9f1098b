// Samples of the unary family (docs/ops/unary.md): every unary op gets the
// pointwise cases, with its options' variants.
#include "samples.h"

namespace tessera::kit {

void add_unary_samples() {
  // Transcendental functions may differ by a few ulps between math libraries.
  for (const char* op : {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
                         "atan", "sinh", "cosh", "tanh", "sigmoid", "gelu", "silu", "softplus", "erf", "rsqrt"}) {
    register_samples(
        op,
        [](const SampleContext& ctx) {
          return pointwise_samples(ctx, {Domain::Any},
                                   option_variants(ctx, 1, {{"approximate", {SampleArg::string("none"),
                                                                             SampleArg::string("tanh")}}}));
        },
        4.0);
  }
  register_family_default("unary", [](const Operator&) -> SampleFn {
    return [](const SampleContext& ctx) { return pointwise_samples(ctx, {Domain::Any}, option_variants(ctx, 1)); };
  });
}

}  // namespace tessera::kit
