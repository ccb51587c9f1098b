// Every op a plugin can register a kernel for has a sample generator, and
// the generators give what the kit needs: cases the cpu plugin accepts.
#include <gtest/gtest.h>

#include <tessera/tessera.h>

#include "runner.h"
#include "samples.h"

namespace {

using namespace tessera;

TEST(KitSamples, EveryStructuredOpHasAGeneratorAndCasesTheCpuRuns) {
  load_default_plugins();
  kit::ensure_samples_registered();
  std::vector<std::string> missing;
  for (const Operator* op : Dispatcher::instance().operators()) {
    if (!op->is_structured()) continue;
    // A plugin-defined op (a test may have loaded one) gets the generic cases (plugin_op_samples).
    if (kit::find_plugin_op(op->kernel_source().name())) continue;
    if (kit::find_samples(op->kernel_source().name()) == nullptr) missing.push_back(op->name());
  }
  EXPECT_TRUE(missing.empty()) << "no sample generator for: " << ::testing::PrintToString(missing);
}

TEST(KitSamples, MostCasesOfEveryOpRunOnCpu) {
  // A generator whose cases the reference refuses tests nothing: at least half
  // of each op's cases must run on cpu for its first registered dtype.
  load_default_plugins();
  kit::Options o;
  o.plugin = "cpu";
  const kit::Target t = kit::load_target(o);
  std::string seen;
  for (const kit::OpCase& c : kit::op_cases(t, o)) {
    if (seen == c.op->name()) continue;
    seen = c.op->name();
    const std::vector<kit::Sample> samples = kit::samples_for(c, 0);
    ASSERT_FALSE(samples.empty()) << c.op->name();
    size_t ran = 0;
    for (const kit::Sample& s : samples) {
      try {
        kit::Materialized m = kit::materialize(s, Device("cpu"));
        (void)kit::call_op(*c.op, m);
        ++ran;
      } catch (const std::exception&) {
      }
    }
    // An in-place variant shares its functional op's cases, of which those
    // broadcasting self or changing its dtype (div_ of integers) do not apply.
    const size_t need = c.op == c.sample_op ? (samples.size() + 1) / 2 : 1;
    EXPECT_GE(ran, need) << c.op->name() << "(" << dtype_name(c.dtype) << "): " << ran << " of " << samples.size()
                         << " cases run";
  }
}

TEST(KitSamples, ValuesIncludeSpecialsOnlyWhereTheDomainAllows) {
  std::mt19937_64 rng(1);
  const Tensor any = kit::random_tensor(rng, {37}, kFloat, kit::Domain::Any);
  EXPECT_TRUE(any.isnan().any().item<bool>());
  EXPECT_TRUE(any.isinf().any().item<bool>());
  const Tensor finite = kit::random_tensor(rng, {37}, kFloat, kit::Domain::Finite);
  EXPECT_TRUE(finite.isfinite().all().item<bool>());
  const Tensor nonzero = kit::random_tensor(rng, {200}, kLong, kit::Domain::NonZero);
  EXPECT_FALSE(nonzero.eq(Scalar(0)).any().item<bool>());
  const Tensor shifts = kit::random_tensor(rng, {200}, kShort, kit::Domain::Shift);
  EXPECT_TRUE(shifts.ge(Scalar(0)).all().item<bool>() && shifts.lt(Scalar(16)).all().item<bool>());
}

}  // namespace
