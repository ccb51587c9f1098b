// The conformance kit on plugin-defined ops (ABI 1.3), with the opkit test
// plugin (plugin_op_kit_plugin.cpp): its generic cases follow each op's schema,
// the right kernels pass in test and grad mode, ops without a cpu kernel are
// checked against the meta rule and by gradcheck, and each seeded bug
// (TSRTEST_OPKIT_BUG) is reported.
#include <gtest/gtest.h>

#include <tessera/tessera.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "kit.h"
#include "runner.h"
#include "samples.h"

namespace {

using namespace tessera;
using kit::CaseResult;
using kit::Report;

// The plugin reads the variable on every kernel call: set between runs only.
void seed_bug(const char* bug) {
  if (bug == nullptr) ::unsetenv("TSRTEST_OPKIT_BUG");
  else ::setenv("TSRTEST_OPKIT_BUG", bug, 1);
}

Report run(kit::Mode mode, const std::string& op = "", const char* bug = nullptr) {
  seed_bug(bug);
  kit::Options o;
  o.plugin = OPKIT_PLUGIN;
  o.mode = mode;
  o.op_regex = op;
  Report r = kit::run(o);
  seed_bug(nullptr);
  return r;
}

std::vector<CaseResult> with(const Report& r, const std::string& op, const std::string& check, CaseResult::Status st) {
  std::vector<CaseResult> out;
  for (const CaseResult& c : r.results)
    if (c.op == op && c.check == check && c.status == st) out.push_back(c);
  return out;
}

std::vector<CaseResult> failures(const Report& r) {
  std::vector<CaseResult> out;
  for (const CaseResult& c : r.results)
    if (c.status == CaseResult::Status::Fail) out.push_back(c);
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string text(const Report& r) { return kit::format(r, kit::Output::Console); }

// The cases of (op, dtype) on opkit.
std::vector<kit::Sample> samples_of(const std::string& op, ScalarType dtype, kit::OpCase* out_case = nullptr) {
  kit::Options o;
  o.plugin = OPKIT_PLUGIN;
  const kit::Target t = kit::load_target(o);
  for (const kit::OpCase& c : kit::op_cases(t, o)) {
    if (c.op->name() != op || c.dtype != dtype) continue;
    if (out_case) *out_case = c;
    return kit::samples_for(c, 0);
  }
  ADD_FAILURE() << "no case for " << op;
  return {};
}

TEST(PluginOpKitSamples, AReductionGetsShapesLayoutsAndDimVariants) {
  kit::OpCase c{};
  const auto samples = samples_of("opkit::sumsq", kFloat, &c);
  EXPECT_TRUE(c.plugin_op);
  EXPECT_TRUE(c.cpu_reference);
  std::set<std::string> names, dims;
  bool keepdim_true = false;
  for (const kit::Sample& s : samples) {
    names.insert(s.name);
    ASSERT_EQ(s.args.size(), 3u);
    EXPECT_EQ(s.args[0].kind, kit::SampleArg::Kind::Tensor);
    dims.insert(s.args[1].text());
    keepdim_true |= s.args[2].kind == kit::SampleArg::Kind::Bool && s.args[2].b;
  }
  for (const char* n : {"0-d", "[5]", "[3, 4]", "transposed [3, 4]", "sliced [3, 4]"}) EXPECT_TRUE(names.count(n)) << n;
  // The default (None, every dim) and the dims argument's variants.
  EXPECT_EQ(dims, (std::set<std::string>{"None", "[0]", "[-1]", "[0, 1]"}));
  EXPECT_TRUE(keepdim_true);
}

TEST(PluginOpKitSamples, ABroadcastingOpGetsThePointwiseCasesAndItsInPlaceVariantTheSame) {
  const auto samples = samples_of("opkit::sin_mul", kDouble);
  std::set<std::string> names;
  std::set<std::string> alphas;
  for (const kit::Sample& s : samples) {
    names.insert(s.name);
    ASSERT_EQ(s.args.size(), 3u);
    alphas.insert(s.args[2].text());
  }
  for (const char* n : {"0-d", "empty [0, 3]", "1027 elements (a vector loop's tail)", "input 1 transposed [5, 6]",
                        "input 1 every other element [5, 6]", "input 0 [3, 1] broadcast against [4, 3, 5]",
                        "input 1 expanded [5, 6] from [1, 6]"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(alphas, (std::set<std::string>{"1", "2.5"}));  // the default and the float variant
  kit::OpCase c{};
  const auto inplace = samples_of("opkit::sin_mul_", kDouble, &c);
  EXPECT_EQ(c.sample_op->name(), "opkit::sin_mul");
  EXPECT_EQ(inplace.size(), samples.size());
}

TEST(PluginOpKitSamples, WithoutACpuKernelValuesArePositiveAndArgumentsWithoutDefaultsGetValues) {
  kit::OpCase c{};
  const auto cube = samples_of("opkit::cube", kFloat, &c);
  EXPECT_TRUE(c.plugin_op);
  EXPECT_FALSE(c.cpu_reference);
  for (const kit::Sample& s : cube)
    for (const kit::SampleArg& a : s.args)
      for (const kit::TensorInput& in : a.tensors)
        if (in.base.numel() > 0) {
          EXPECT_TRUE(in.base.gt(Scalar(0)).all().item<bool>()) << s.name;
        }
  // sumsq_backward(Tensor grad, Tensor self, int[]? dim, bool keepdim): no defaults.
  std::set<std::string> options;
  for (const kit::Sample& s : samples_of("opkit::sumsq_backward", kFloat)) {
    ASSERT_EQ(s.args.size(), 4u);
    EXPECT_EQ(s.args[2].kind, kit::SampleArg::Kind::None);
    options.insert(s.args[3].text());
  }
  EXPECT_EQ(options, (std::set<std::string>{"False", "True"}));
}

TEST(PluginOpKit, RightKernelsPassAndOpsWithoutACpuKernelAreCheckedAgainstTheMetaRule) {
  const Report r = run(kit::Mode::Test);
  EXPECT_TRUE(r.passed()) << text(r);
  EXPECT_GT(with(r, "opkit::sin_mul", "values", CaseResult::Status::Pass).size(), 10u);
  EXPECT_GT(with(r, "opkit::sin_mul_", "values", CaseResult::Status::Pass).size(), 5u);
  EXPECT_GT(with(r, "opkit::sumsq", "values", CaseResult::Status::Pass).size(), 5u);
  EXPECT_FALSE(with(r, "opkit::sin_mul", "threads", CaseResult::Status::Pass).empty());
  // cube: no cpu kernel. Said once per dtype; every case checked against meta and for finite values.
  const auto note = with(r, "opkit::cube", "reference", CaseResult::Status::Skip);
  ASSERT_FALSE(note.empty());
  EXPECT_TRUE(contains(note[0].message, "no cpu reference")) << note[0].message;
  EXPECT_GT(with(r, "opkit::cube", "meta", CaseResult::Status::Pass).size(), 10u);
  EXPECT_GT(with(r, "opkit::cube", "finite", CaseResult::Status::Pass).size(), 10u);
  EXPECT_TRUE(with(r, "opkit::cube", "values", CaseResult::Status::Pass).empty());
  EXPECT_FALSE(with(r, "opkit::cube", "threads", CaseResult::Status::Pass).empty());
  bool noted = false;
  for (const std::string& n : r.notes) noted |= contains(n, "no cpu reference for opkit::cube(float32)");
  EXPECT_TRUE(noted);
  // The ABI probe sees the op definitions and their struct_size.
  const auto abi = with(r, "ABI", "struct_size", CaseResult::Status::Pass);
  ASSERT_EQ(abi.size(), 1u);
  EXPECT_TRUE(contains(abi[0].message, "and 7 op definitions carry the header's sizes")) << abi[0].message;
}

TEST(PluginOpKit, AWrongStridedReadIsCaughtOnlyWhereOtherIsStrided) {
  const Report r = run(kit::Mode::Test, "opkit::sin_mul", "sin_mul");
  EXPECT_FALSE(r.passed());
  const auto f = failures(r);
  ASSERT_FALSE(f.empty());
  for (const CaseResult& c : f) {
    EXPECT_EQ(c.op, "opkit::sin_mul");
    EXPECT_EQ(c.check, "values");
    EXPECT_TRUE(contains(c.sample, "input 1 transposed") || contains(c.sample, "input 1 every other")) << c.sample;
    EXPECT_TRUE(contains(c.message, "element [")) << c.message;
  }
  EXPECT_TRUE(contains(text(r), "FAIL opkit::sin_mul(float32) case 'input 1 transposed [5, 6], 1' [values]: element ["))
      << text(r);
}

TEST(PluginOpKit, ANonFiniteResultIsCaughtWithoutACpuReference) {
  const Report r = run(kit::Mode::Test, "opkit::cube", "cube");
  const auto f = failures(r);
  ASSERT_FALSE(f.empty());
  for (const CaseResult& c : f) {
    EXPECT_EQ(c.check, "finite");
    EXPECT_TRUE(contains(c.message, "is inf")) << c.message;
  }
  EXPECT_TRUE(contains(text(r), "FAIL opkit::cube(float32) case '1027 elements (a vector loop's tail)' [finite]: "
                                "element [1026] (flat 1026) is inf"))
      << text(r);
}

TEST(PluginOpKit, GradModeChecksGradientsGradcheckAndGradgradcheck) {
  const Report r = run(kit::Mode::Grad);
  EXPECT_TRUE(r.passed()) << text(r);
  EXPECT_FALSE(with(r, "opkit::sin_mul", "grad", CaseResult::Status::Pass).empty());
  for (const char* op : {"opkit::sin_mul", "opkit::sumsq", "opkit::cube", "opkit::cube_backward"})
    EXPECT_FALSE(with(r, op, "gradcheck", CaseResult::Status::Pass).empty()) << op;
  // cube's backward op is differentiable (cube_backward_backward); sin_mul's is not.
  EXPECT_FALSE(with(r, "opkit::cube", "gradgradcheck", CaseResult::Status::Pass).empty());
  const auto skipped = with(r, "opkit::sin_mul", "gradgradcheck", CaseResult::Status::Skip);
  ASSERT_FALSE(skipped.empty());
  EXPECT_TRUE(contains(skipped[0].message, "backward is not differentiable")) << skipped[0].message;
  // Without a cpu kernel there is nothing to compare gradients with.
  EXPECT_TRUE(with(r, "opkit::cube", "grad", CaseResult::Status::Pass).empty());
  EXPECT_FALSE(with(r, "opkit::cube", "backward", CaseResult::Status::Pass).empty());
}

TEST(PluginOpKit, AWrongBackwardOpIsCaughtAgainstCpu) {
  const Report r = run(kit::Mode::Grad, "opkit::sin_mul", "sin_mul_backward");
  const auto f = with(r, "opkit::sin_mul", "grad", CaseResult::Status::Fail);
  ASSERT_FALSE(f.empty()) << text(r);
  for (const CaseResult& c : f) EXPECT_TRUE(contains(c.message, "gradient of input 1: element [")) << c.message;
}

TEST(PluginOpKit, AWrongBackwardWithoutACpuKernelIsCaughtByGradcheck) {
  const Report r = run(kit::Mode::Grad, "opkit::cube", "cube_backward");
  const auto f = with(r, "opkit::cube", "gradcheck", CaseResult::Status::Fail);
  ASSERT_FALSE(f.empty()) << text(r);
  EXPECT_TRUE(contains(f[0].message, "Jacobian mismatch")) << f[0].message;
}

TEST(PluginOpKit, CoverageListsThePluginsOps) {
  const Report r = run(kit::Mode::Coverage);
  std::string notes;
  for (const std::string& n : r.notes) notes += n;
  EXPECT_TRUE(contains(notes, "opkit::sin_mul [opkit]: pointwise, in-place variant opkit::sin_mul_; "
                              "tensor arguments broadcast")) << notes;
  EXPECT_TRUE(contains(notes, "opkit::sumsq [opkit]: -; reduction of argument 'self' over dims 'dim'")) << notes;
  EXPECT_TRUE(contains(notes, "opkit::cube [opkit]: pointwise; same shape as argument 'self'")) << notes;
  EXPECT_TRUE(contains(notes, "float32, float64 | -")) << notes;  // cube: kernels on opkit, none on cpu
  EXPECT_FALSE(with(r, "opkit::cube", "reference", CaseResult::Status::Skip).empty());
}

}  // namespace
