// Each seeded bug of seeded_bugs_plugin.cpp is reported by the kit with a
// message naming the op, dtype, case and the first mismatching element (or
// byte), and the right kernels beside them pass.
#include <gtest/gtest.h>

#include <tessera/tessera.h>

#include <cstddef>
#include <map>
#include <string>

#include "kit.h"

namespace {

using tessera::kit::CaseResult;
using tessera::kit::Options;
using tessera::kit::Report;

Report run(const std::string& device, const std::string& op, const std::string& dtype) {
  Options o;
  o.plugin = SEEDED_BUGS_PLUGIN;
  o.device_type = device;
  o.op_regex = op;
  o.dtypes = {dtype};
  return tessera::kit::run(o);
}

// The failures of one check, and the text the console report shows for them.
std::vector<CaseResult> failures(const Report& r, const std::string& check) {
  std::vector<CaseResult> out;
  for (const CaseResult& c : r.results)
    if (c.status == CaseResult::Status::Fail && c.check == check) out.push_back(c);
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SeededBugs, OffByOneInAStridedLoopFailsOnlyStridedCasesNamingTheLastElement) {
  const Report r = run("buggy", "neg", "float32");
  EXPECT_FALSE(r.passed());
  const auto f = failures(r, "values");
  ASSERT_FALSE(f.empty());
  for (const CaseResult& c : f) {
    EXPECT_EQ(c.op, "neg");
    EXPECT_EQ(c.dtype, "float32");
    // Only layouts the kernel walks with strides: transposed, every other element, sliced, expanded.
    EXPECT_TRUE(contains(c.sample, "transposed") || contains(c.sample, "every other") || contains(c.sample, "sliced") ||
                contains(c.sample, "expanded"))
        << c.sample;
    EXPECT_TRUE(contains(c.message, "element [4, 5] (flat 29)")) << c.message;  // the last of [5, 6]
  }
  const std::string text = tessera::kit::format(r, tessera::kit::Output::Console);
  EXPECT_TRUE(contains(text, "FAIL neg(float32) case 'transposed [5, 6]' [values]: element [4, 5]")) << text;
  // Contiguous cases pass.
  bool contiguous_passed = false;
  for (const CaseResult& c : r.results)
    contiguous_passed |= c.sample == "[4, 5, 6]" && c.check == "values" && c.status == CaseResult::Status::Pass;
  EXPECT_TRUE(contiguous_passed);
}

TEST(SeededBugs, OutOfBoundsWriteChangesTheGuardBytesPastTheOutput) {
  const Report r = run("buggy", "abs", "float32");
  const auto f = failures(r, "guard");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(failures(r, "values").empty()) << "the values themselves are right";
  for (const CaseResult& c : f) {
    EXPECT_EQ(c.op, "abs");
    EXPECT_TRUE(contains(c.message, "the first at byte offset")) << c.message;
    EXPECT_TRUE(contains(c.message, "(past its end)")) << c.message;
  }
  // The first element past a [4, 5, 6] float32 output is at byte 480.
  bool named = false;
  for (const CaseResult& c : f) named |= c.sample == "[4, 5, 6]" && contains(c.message, "byte offset 480 ");
  EXPECT_TRUE(named);
}

TEST(SeededBugs, WrongPromotionShowsOnValuesBeyondTheNarrowType) {
  const Report r = run("buggy", "add", "int64");
  const auto f = failures(r, "values");
  ASSERT_FALSE(f.empty());
  for (const CaseResult& c : f) {
    EXPECT_EQ(c.dtype, "int64");
    // The first differing element is one the samples put beyond 32 bits (INT64_MAX or INT64_MIN).
    EXPECT_TRUE(contains(c.message, "cpu 922337203685477") || contains(c.message, "cpu -922337203685477"))
        << c.message;
  }
}

TEST(SeededBugs, KernelWritingItsInputIsCaught) {
  const Report r = run("buggy", "exp", "float32");
  const auto f = failures(r, "inputs");
  ASSERT_FALSE(f.empty());
  for (const CaseResult& c : f) EXPECT_TRUE(contains(c.message, "argument 'self' was changed: element [")) << c.message;
}

TEST(SeededBugs, DataRaceOnSharedStateFailsTheThreadCheck) {
  Report r;
  // Thread interleavings vary: a few tries, each running the threads over every case.
  for (int attempt = 0; attempt < 5 && failures(r, "threads").empty(); ++attempt) r = run("buggy", "sqrt", "float32");
  const auto f = failures(r, "threads");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(contains(f[0].message, "thread ")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, ": element [")) << f[0].message;
  EXPECT_TRUE(failures(r, "values").empty()) << "alone, each call is right";
}

TEST(SeededBugs, KernelReturningSuccessWithoutWritingIsCaught) {
  const Report r = run("buggy", "mul", "float32");
  const auto f = failures(r, "values");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(contains(f[0].message, "element [")) << f[0].message;
}

TEST(SeededBugs, KernelIgnoringItsStreamReadsInputsBeforeTheyArrive) {
  const Report bad = run("deferred", "neg", "float32");
  const auto f = failures(bad, "values");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(contains(f[0].message, "element [")) << f[0].message;
  // The same device's stream-ordered kernel passes: the failure is the kernel's, not the device's.
  const Report good = run("deferred", "abs", "float32");
  EXPECT_TRUE(good.passed()) << tessera::kit::format(good, tessera::kit::Output::Console);
}

// Found by the kit on "deferred": reading an asynchronous device whose memory
// the host can address went straight to the bytes, before the device's queued
// upload had run. Such copies now go through the device, on its stream.
TEST(DeferredDevice, CopiesOutOfAnAsynchronousHostAccessibleDeviceWaitForItsStream) {
  tessera::load_plugin(SEEDED_BUGS_PLUGIN);
  using namespace tessera;
  const Tensor x = tensor({1.5, -2.0, 3.25}, TensorOptions(kFloat));
  const Tensor queued = x.pin_memory("deferred").to(Device("deferred"), /*non_blocking=*/true);
  EXPECT_TRUE(queued.to(Device("cpu")).eq(x).all().item<bool>());
  const Tensor on_sim = x.pin_memory("deferred").to(Device("deferred"), true).to(Device("sim"));
  EXPECT_TRUE(on_sim.to(Device("cpu")).eq(x).all().item<bool>());
}

TEST(KitAbi, AWellBuiltPluginPassesEveryAbiCheck) {
  const Report r = run("buggy", "neg", "float32");
  size_t abi = 0;
  for (const CaseResult& c : r.results) {
    if (c.op != "ABI") continue;
    ++abi;
    EXPECT_EQ(c.status, CaseResult::Status::Pass) << c.check << ": " << c.message;
  }
  EXPECT_EQ(abi, 6u) << "exports, no-core, version, struct_size, loads, shutdown";
}

TEST(KitAbi, ExtraExportsALinkToTheCoreAndAWrongStructSizeAreReported) {
  Options o;
  o.plugin = SLOPPY_ABI_PLUGIN;
  const Report r = tessera::kit::run(o);
  std::map<std::string, CaseResult> abi;
  for (const CaseResult& c : r.results)
    if (c.op == "ABI") abi[c.check] = c;
  EXPECT_EQ(abi["exports"].status, CaseResult::Status::Fail);
  EXPECT_TRUE(contains(abi["exports"].message, "sloppy_abi_helper")) << abi["exports"].message;
  EXPECT_EQ(abi["no-core"].status, CaseResult::Status::Fail);
  EXPECT_TRUE(contains(abi["no-core"].message, "libtessera.so")) << abi["no-core"].message;
  EXPECT_EQ(abi["struct_size"].status, CaseResult::Status::Fail);
  EXPECT_TRUE(contains(abi["struct_size"].message, "TsrDeviceTypeDesc.struct_size " +
                                                       std::to_string(offsetof(TsrDeviceTypeDesc, memory_info))))
      << abi["struct_size"].message;
  EXPECT_EQ(abi["version"].status, CaseResult::Status::Pass);
  // Its kernel is right: every neg check passes.
  for (const CaseResult& c : r.results)
    if (c.op == "neg") EXPECT_NE(c.status, CaseResult::Status::Fail) << c.sample << ": " << c.message;
}

TEST(Kit, JsonAndJunitReportsCarryTheFailures) {
  const Report r = run("buggy", "mul", "float32");
  const std::string json = tessera::kit::format(r, tessera::kit::Output::Json);
  EXPECT_TRUE(contains(json, "\"passed\": false"));
  EXPECT_TRUE(contains(json, "\"op\": \"mul\", \"dtype\": \"float32\""));
  const std::string xml = tessera::kit::format(r, tessera::kit::Output::Junit);
  EXPECT_TRUE(contains(xml, "<testsuite name=\"mul\""));
  EXPECT_TRUE(contains(xml, "<failure message=\"element ["));
}

}  // namespace
