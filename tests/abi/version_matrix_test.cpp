// The ABI version matrix in this core (docs/abi.md §6, "How the promises are
// tested"): the frozen plugin of each released minor does what its minor
// promises; other majors are refused naming both versions; short struct_size
// values, NULL optional slots and unknown bits in what a plugin registers
// behave as docs/abi.md says. The plugins are plain C (version_matrix_*.c);
// the frozen ones are built against their own minor's header.
//
// Under ctest each test is its own process; a plain run of the binary runs
// them in one, which the tests allow for (the expandable-segment test is first
// among the vm12 tests because the allocator setting applies only to
// allocators built afterwards).
#include <gtest/gtest.h>
#include <tessera/abi.h>
#include <tessera/memory.h>
#include <tessera/ops/call.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

using namespace tessera;

namespace {

// Loads `path` once per process (a second load_plugin of the same file is a no-op).
PluginInfo load(const char* path) { return load_plugin(path); }

std::string load_error(const char* path) {
  try {
    load_plugin(path);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "(loaded)";
}

const DeviceTypeSummary* find_type(const std::vector<DeviceTypeSummary>& ts, const std::string& name) {
  for (const DeviceTypeSummary& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

std::string description(const std::string& type) {
  const auto ts = device_types();
  const DeviceTypeSummary* t = find_type(ts, type);
  return t != nullptr && !t->device_descriptions.empty() ? t->device_descriptions[0] : "";
}

// "key=value" counters from a device description.
std::map<std::string, long> counters(const std::string& text) {
  std::map<std::string, long> out;
  static const std::regex kv("([a-z_0-9]+)=(-?[0-9]+)");
  for (std::sregex_iterator it(text.begin(), text.end(), kv), end; it != end; ++it)
    out[(*it)[1]] = std::stol((*it)[2]);
  return out;
}

std::vector<float> values(const Tensor& t) { return t.cpu().contiguous().to_vector<float>(); }

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- 1.1: unknown device types are not unknown ops ----------------------------

TEST(AbiVersionMatrix, V1_1LoadsAloneAndSkipsItsAbsentPartner) {
  const PluginInfo info = load(VM_FROZEN_V1_1);
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.abi_minor, 1u);
  // Without frozen10 loaded: the op of a later core was NOT_FOUND, the partner's
  // device type UNKNOWN_DEVICE_TYPE, and the plugin skipped both (it would
  // have failed its initialize on any other code).
  const auto c = counters(description("vm11"));
  EXPECT_EQ(c.at("unknown_op"), TSR_ERROR_NOT_FOUND) << description("vm11");
  EXPECT_EQ(c.at("partner"), TSR_ERROR_UNKNOWN_DEVICE_TYPE) << description("vm11");
  EXPECT_NE(description("vm11").find("host 1." + std::to_string(TSR_ABI_VERSION_MINOR)), std::string::npos);
  for (const KernelInfo& k : info.kernels) EXPECT_EQ(k.device_type, "vm11") << k.op;

  const TensorOptions o = TensorOptions(kFloat).device(Device("vm11"));
  const Tensor a = full({2, 3}, 1.5, o), b = full({2, 3}, 2.0, o);
  EXPECT_EQ(values(a.add(b.t().t(), 3)), std::vector<float>(6, 7.5f));
}

TEST(AbiVersionMatrix, V1_1AddsKernelsToThe1_0PluginsDeviceWhenItLoadsFirst) {
  load(VM_FROZEN_V1_0);
  load(VM_FROZEN_V1_1);
  if (counters(description("vm11")).at("partner") == TSR_ERROR_UNKNOWN_DEVICE_TYPE)
    GTEST_SKIP() << "vm11 was loaded before frozen10 in this process (a plain run of the binary)";
  EXPECT_EQ(counters(description("vm11")).at("partner"), 0) << description("vm11");
  // frozen10's own kernels are float32; float64 comes from the 1.1 plugin.
  const TensorOptions o = TensorOptions(kDouble).device(Device("frozen10"));
  const Tensor a = full({4}, 0.25, o), b = full({4}, 1.0, o);
  EXPECT_EQ((a + b).cpu().to_vector<double>(), std::vector<double>(4, 1.25));
}

// ---- 1.2: workspace, memory_info, timing, va_*, host_* -------------------------

TEST(AbiVersionMatrix, V1_2ExpandableSegmentsGrowThroughVaSlots) {  // keep first of the vm12 tests
  set_alloc_conf("expandable_segments:True");
  const PluginInfo info = load(VM_FROZEN_V1_2);
  EXPECT_EQ(info.abi_minor, 2u);
  const long mapped = counters(description("vm12")).at("va_map");
  Tensor a = ones({1 << 20}).to(Device("vm12"));  // 4 MiB: two 2 MiB granules at least
  const auto c = counters(description("vm12"));
  EXPECT_GE(c.at("va_reserve"), 1) << description("vm12");
  EXPECT_GT(c.at("va_map"), mapped) << description("vm12");
  EXPECT_EQ(a.cpu().sum().item<double>(), double(1 << 20));
  set_alloc_conf("");
}

TEST(AbiVersionMatrix, V1_2AddUsesTheHostsWorkspace) {
  load(VM_FROZEN_V1_2);
  const Device d("vm12");
  const Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({2, 3});
  const Tensor a = x.to(d);
  const Tensor b = (x * 10.0).t().contiguous().to(d).t();  // strided: [2, 3] with strides [1, 2]
  const auto before = counters(description("vm12"));
  const int64_t held = memory_allocated(d);
  {
    const Tensor r = a.add(b, 2);
    EXPECT_EQ(values(r), (std::vector<float>{21, 42, 63, 84, 105, 126}));
  }
  const auto after = counters(description("vm12"));
  EXPECT_GT(after.at("workspace"), before.at("workspace")) << description("vm12");
  EXPECT_EQ(after.at("fallback"), before.at("fallback")) << "this host has the workspace slot";
  EXPECT_EQ(memory_allocated(d), held) << "the workspace is freed after the call";
}

TEST(AbiVersionMatrix, V1_2MemoryInfoGivesTheTotalForAMemoryFraction) {
  load(VM_FROZEN_V1_2);
  const Device d("vm12");
  Tensor keep = ones({16}).to(d);  // builds the allocator
  empty_cache(d);                  // a cached block would be reused within any limit
  set_per_process_memory_fraction(1.0 / 512, d);  // 2 MiB of the plugin's 1 GiB
  EXPECT_GT(counters(description("vm12")).at("memory_info"), 0);
  const std::string oom = error_of<OutOfMemoryError>([&] { Tensor big = empty({1 << 20}, TensorOptions(kFloat).device(d)); });
  EXPECT_NE(oom, "(no error)");
  set_per_process_memory_fraction(1.0, d);
  Tensor big = empty({1 << 20}, TensorOptions(kFloat).device(d));
  EXPECT_EQ(big.numel(), 1 << 20);
}

TEST(AbiVersionMatrix, V1_2TimingEventsUseCreateFlagsAndElapsedTime) {
  load(VM_FROZEN_V1_2);
  const Stream s = Stream::create(Device("vm12"));
  Event start(true), end(true);
  start.record(s);
  end.record(s);
  end.synchronize();
  EXPECT_GE(start.elapsed_time(end), 0.0);
  const auto c = counters(description("vm12"));
  EXPECT_GE(c.at("event_create_flags"), 2);
  EXPECT_GE(c.at("event_elapsed_time"), 1);
}

TEST(AbiVersionMatrix, V1_2PinnedMemoryComesFromHostAllocate) {
  load(VM_FROZEN_V1_2);
  const long before = counters(description("vm12")).at("host_allocate");
  const Tensor p = tensor({1.0f, 2.0f, 3.0f}).pin_memory("vm12");
  EXPECT_TRUE(p.is_pinned("vm12"));
  EXPECT_GT(counters(description("vm12")).at("host_allocate"), before);
  EXPECT_EQ(values(p.to(Device("vm12"), /*non_blocking=*/true)), (std::vector<float>{1, 2, 3}));
}

// 1.3: the frozen plugin's op (register_op) works on its device and on cpu, with
// its in-place variant and its composite derivative.
TEST(AbiVersionMatrix, V1_3OpDefinedByTheFrozenPluginWorksWithItsDerivative) {
  const PluginInfo info = load(VM_FROZEN_V1_3);
  ASSERT_EQ(info.ops.size(), 1u);
  EXPECT_EQ(info.ops[0].schema, "vm_frozen_v1_3::scale(Tensor self, float factor=2.0) -> Tensor");
  const Tensor x = tensor({1.0f, -2.0f, 3.0f});
  EXPECT_EQ(values(ops::call("vm_frozen_v1_3::scale", {x}).at(0)), (std::vector<float>{2, -4, 6}));
  EXPECT_EQ(values(ops::call("vm_frozen_v1_3::scale", {x.to(Device("vm13")), 0.5}).at(0)),
            (std::vector<float>{0.5f, -1, 1.5f}));
  Tensor y = x.clone();
  ops::call("vm_frozen_v1_3::scale_", {y, 3.0});
  EXPECT_EQ(values(y), (std::vector<float>{3, -6, 9}));
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  ops::call("vm_frozen_v1_3::scale", {w, -1.5}).at(0).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<float>{-1.5f, -1.5f}));
}

// ---- majors -----------------------------------------------------------------------

TEST(AbiVersionMatrix, Major0IsRefusedNamingBothVersions) {
  const std::string host = "ABI 1." + std::to_string(TSR_ABI_VERSION_MINOR);
  const std::string msg = load_error(VM_MAJOR0);
  EXPECT_NE(msg.find("ABI 0.9"), std::string::npos) << msg;
  EXPECT_NE(msg.find(host), std::string::npos) << msg;
  EXPECT_NE(msg.find("major"), std::string::npos) << msg;
}

TEST(AbiVersionMatrix, Major2WithAnUnknownLayoutIsRefusedNamingBothVersions) {
  // struct_size covers struct_size and abi_version only: all a host may assume of another major.
  const std::string msg = load_error(VM_MAJOR2);
  EXPECT_NE(msg.find("ABI 2.5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ABI 1." + std::to_string(TSR_ABI_VERSION_MINOR)), std::string::npos) << msg;
  const auto ps = plugins();
  EXPECT_TRUE(std::none_of(ps.begin(), ps.end(), [](const PluginInfo& p) { return p.name == "vm_major2"; }));
}

// ---- short struct_size in plugin structs -------------------------------------------

TEST(AbiVersionMatrix, PluginInfoNotCoveringAbiVersionIsMalformed) {
  const std::string msg = load_error(VM_INFO12);
  EXPECT_NE(msg.find("malformed plugin description (struct_size 12)"), std::string::npos) << msg;
}

TEST(AbiVersionMatrix, PluginInfoEndingBeforeInitializeIsRefusedWithoutCallingIt) {
  const std::string msg = load_error(VM_INFO40);  // initialize lies beyond struct_size: a trap
  EXPECT_NE(msg.find("no initialize function"), std::string::npos) << msg;
}

TEST(AbiVersionMatrix, ShortDescriptionsAndUnknownBitsInRegistrations) {
  const PluginInfo info = load(VM_SLOTS);
  const auto c = counters(description("vmcaps"));
  ASSERT_FALSE(c.empty()) << description("vmcaps");
  EXPECT_EQ(c.at("async_short"), TSR_ERROR_INVALID_ARGUMENT) << "an ASYNC type whose stream slots lie beyond struct_size lacks them";
  EXPECT_EQ(c.at("kernel_size40"), TSR_ERROR_INVALID_ARGUMENT) << "a TsrKernelDesc ending before `context`";
  EXPECT_EQ(c.at("kernel_size0"), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(c.at("mixed_mask"), 0) << "unknown dtype bits beside float32 are ignored (P12)";
  ASSERT_EQ(info.kernels.size(), 1u);
  EXPECT_EQ(info.kernels[0].op, "fill_");
  EXPECT_EQ(info.kernels[0].dtypes, std::vector<std::string>{"float32"});
  EXPECT_EQ(info.device_types, (std::vector<std::string>{"vmshort", "vmcaps", "vmnull"}));

  // Unknown capability bits are ignored: vmcaps is a plain host-memory device.
  const Tensor t = tensor({1.0f, 2.0f}).to(Device("vmcaps"));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(AbiVersionMatrix, SlotsBeyondStructSizeAreNeverCalled) {
  load(VM_SLOTS);
  // vmshort's description ends after `copy`: every later slot is a trap that aborts.
  const Device d("vmshort");
  Tensor t = full({3}, 2.5, TensorOptions(kFloat).device(d));  // fill_, a float32 kernel
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, 2.5f));
  EXPECT_EQ(tensor({1.0f, 2.0f}).to(d).cpu().to_vector<float>(), (std::vector<float>{1, 2}));  // both copy kinds
  synchronize(d);                                             // no device_synchronize: nothing to wait for
  EXPECT_NE(error_of<ValueError>([&] { Stream::create(d); }), "(no error)");
  EXPECT_NE(error_of<ValueError>([&] { (void)tensor({1.0f}).pin_memory("vmshort"); }).find("no host_allocate"),
            std::string::npos);
  const auto ts = device_types();
  ASSERT_NE(find_type(ts, "vmshort"), nullptr);
  EXPECT_TRUE(find_type(ts, "vmshort")->device_descriptions.empty()) << "describe_device is NULL";
  EXPECT_NE(info_text().find("vmshort"), std::string::npos);
}

TEST(AbiVersionMatrix, NullOptional1_2SlotsAreErrorsNotCrashes) {
  load(VM_SLOTS);
  const Device d("vmnull");  // ASYNC, CACHING_ALLOCATOR, every 1.2 slot NULL
  const Tensor t = tensor({1.0f, 2.0f, 3.0f}).to(d);
  EXPECT_EQ(t.cpu().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_NE(error_of<ValueError>([&] { set_per_process_memory_fraction(0.5, d); }).find("memory_info"),
            std::string::npos);
  const Stream s = Stream::create(d);
  Event plain;
  plain.record(s);  // event_create serves without event_create_flags
  plain.synchronize();
  Event timed(true);
  EXPECT_NE(error_of<ValueError>([&] { timed.record(s); }).find("event_elapsed_time"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] { (void)tensor({1.0f}).pin_memory("vmnull"); }).find("no host_allocate"),
            std::string::npos);
}

// Keep last: it unloads vm_slots, whose TsrPluginInfo ends before `shutdown` (a trap).
TEST(AbiVersionMatrix, ShutdownBeyondStructSizeIsNotCalledAtUnload) {
  load(VM_SLOTS);
  {
    Tensor t = full({2}, 1.0, TensorOptions(kFloat).device(Device("vmshort")));
    unload_plugin("vm_slots");
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(2, 1.0f));
  }  // the last tensor: the host would call shutdown now, were it present
  const auto ps = plugins();
  EXPECT_TRUE(std::none_of(ps.begin(), ps.end(), [](const PluginInfo& p) { return p.name == "vm_slots"; }));
}
