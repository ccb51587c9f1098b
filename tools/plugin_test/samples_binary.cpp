// Samples of the binary family (docs/ops/binary.md): the pointwise cases for
// two tensors, with the domains the integer kernels need.
#include "samples.h"

#include <string>

namespace tessera::kit {

namespace {

std::vector<Domain> domains(const std::string& op, ScalarType t) {
  if (is_floating_type(t)) return {Domain::Any, Domain::Any};
  // Integer division by zero is an error (docs/ops/binary.md); shifts take 0..bits-1; powers stay small.
  if (op == "div" || op == "remainder" || op == "fmod") return {Domain::Any, Domain::NonZero};
  if (op == "bitwise_left_shift" || op == "bitwise_right_shift") return {Domain::Any, Domain::Shift};
  if (op == "pow") return {Domain::Small, Domain::Small};
  return {Domain::Any, Domain::Any};
}
}  // namespace

void add_binary_samples() {
  register_samples("atan2", [](const SampleContext& ctx) {
    return pointwise_samples(ctx, domains("atan2", ctx.dtype), option_variants(ctx, 2));
  }, 4.0);
  register_samples("pow", [](const SampleContext& ctx) {
    return pointwise_samples(ctx, domains("pow", ctx.dtype), option_variants(ctx, 2));
  }, 4.0);
  register_family_default("binary", [](const Operator& op) -> SampleFn {
    const std::string name = op.name();
    return [name](const SampleContext& ctx) {
      return pointwise_samples(
          ctx, domains(name, ctx.dtype),
          option_variants(ctx, 2, {{"rounding_mode", {SampleArg::none(), SampleArg::string("trunc"),
                                                      SampleArg::string("floor")}}}));
    };
  });
}

}  // namespace tessera::kit
