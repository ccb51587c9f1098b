// The frozen ABI 1.0 plugin (DESIGN §2 rule 10; docs/abi.md "Compatibility"):
// tests/abi/frozen_v1_0_plugin/ is a plugin written once against ABI 1.0 with
// plain C and abi.h only, never edited. This suite loads the binary built from
// it into the current core and runs tensors through it. When this fails, the
// current core or abi.h broke ABI 1.x compatibility — fix them, not the plugin.
//
// Tests that need the cpu device (copies to and from it) are skipped when
// libtessera-cpu.so is not in the plugin folder; the rest read the frozen
// device's memory directly, which it declares host-accessible.
#include <gtest/gtest.h>
#include <tessera/abi.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "elf_tools.h"

using namespace tessera;

namespace {

const char* const kPath = TSRTEST_FROZEN_V1_0;

// Each test runs in its own process under ctest, and in one process under a
// plain run of the binary: load the plugin once either way.
const PluginInfo& frozen() {
  static PluginInfo info;
  static std::once_flag once;
  std::call_once(once, [] { info = load_plugin(kPath); });
  return info;
}

Device frozen_device() {
  frozen();
  return Device("frozen10");
}

bool cpu_available() {
  const auto types = device_types();
  return std::any_of(types.begin(), types.end(),
                     [](const DeviceTypeSummary& t) { return t.name == "cpu" && t.device_count > 0; });
}

// The elements of a float32 tensor on a host-accessible device, in row-major
// order, read through its strides (no cpu device or copy kernel needed).
std::vector<float> host_values(const Tensor& t) {
  std::vector<float> out;
  const float* base = t.data_ptr<float>();
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const int64_t n = t.numel();
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t rem = linear, offset = 0;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      offset += (rem % sizes[d]) * strides[d];
      rem /= sizes[d];
    }
    out.push_back(base[offset]);
  }
  return out;
}

// Writes 0, 1, 2, ... into a contiguous float32 tensor on a host-accessible device.
Tensor iota_on_frozen(std::vector<int64_t> shape) {
  Tensor t = full(shape, 0.0, TensorOptions(kFloat).device(frozen_device()));
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}

}  // namespace

TEST(AbiFrozenV1_0Plugin, LoadsAndReportsAbi1_0) {
  const PluginInfo& info = frozen();
  EXPECT_EQ(info.name, "frozen_v1_0");
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.abi_minor, 0u) << "the frozen plugin implements ABI 1.0 whatever this core's minor version ("
                                << abi_version_minor() << ") is";
  EXPECT_EQ(abi_version_major(), 1u);

  const auto ps = plugins();
  const auto it = std::find_if(ps.begin(), ps.end(), [](const PluginInfo& p) { return p.name == "frozen_v1_0"; });
  ASSERT_NE(it, ps.end()) << "tessera::plugins() does not list the frozen plugin";
  EXPECT_EQ(it->abi_major, 1u);
  EXPECT_EQ(it->abi_minor, 0u);
  EXPECT_EQ(it->version, "1.0.0");
  EXPECT_EQ(it->device_types, std::vector<std::string>{"frozen10"});
  ASSERT_EQ(it->kernels.size(), 2u);
  for (const KernelInfo& k : it->kernels) {
    EXPECT_TRUE(k.op == "fill_" || k.op == "add") << k.op;
    EXPECT_EQ(k.device_type, "frozen10");
    EXPECT_EQ(k.dtypes, std::vector<std::string>{"float32"}) << k.op;
  }
}

TEST(AbiFrozenV1_0Plugin, RegistersItsDeviceType) {
  frozen();
  const auto types = device_types();
  const auto t = std::find_if(types.begin(), types.end(), [](const DeviceTypeSummary& d) { return d.name == "frozen10"; });
  ASSERT_NE(t, types.end());
  EXPECT_EQ(t->plugin, "frozen_v1_0");
  EXPECT_EQ(t->dlpack_device_type, 12);  // kDLExtDev
  EXPECT_EQ(t->capabilities, TSR_DEVICE_CAP_HOST_ACCESSIBLE);
  EXPECT_EQ(t->device_count, 1);
  EXPECT_TRUE(t->unavailable_reason.empty()) << t->unavailable_reason;
  ASSERT_EQ(t->device_descriptions.size(), 1u);
  EXPECT_NE(t->device_descriptions[0].find("frozen ABI 1.0"), std::string::npos) << t->device_descriptions[0];
  EXPECT_NE(info_text().find("plugin frozen_v1_0 1.0.0 (ABI 1.0)"), std::string::npos) << info_text();
}

TEST(AbiFrozenV1_0Plugin, FillAndOnes) {
  const Tensor a = full({2, 3}, 1.5, TensorOptions(kFloat).device(frozen_device()));
  EXPECT_EQ(a.device(), frozen_device());
  EXPECT_EQ(a.scalar_type(), kFloat);
  EXPECT_EQ(host_values(a), std::vector<float>(6, 1.5f));
  const Tensor b = ones({4}, TensorOptions(kFloat).device(frozen_device()));
  EXPECT_EQ(host_values(b), std::vector<float>(4, 1.0f));
  Tensor c = full({3}, 7, TensorOptions(kFloat).device(frozen_device()));  // INT scalar
  EXPECT_EQ(host_values(c), std::vector<float>(3, 7.0f));
  c.fill_(true);  // BOOL scalar
  EXPECT_EQ(host_values(c), std::vector<float>(3, 1.0f));
  // A strided destination: every other element of a row.
  Tensor d = full({2, 4}, 0.0, TensorOptions(kFloat).device(frozen_device()));
  d.slice(1, 0, 4, 2).fill_(5.0);
  EXPECT_EQ(host_values(d), (std::vector<float>{5, 0, 5, 0, 5, 0, 5, 0}));
}

TEST(AbiFrozenV1_0Plugin, AddSameShapeStridedBroadcastAndInPlace) {
  const Tensor a = iota_on_frozen({2, 3});                                          // 0..5
  const Tensor b = full({2, 3}, 10.0, TensorOptions(kFloat).device(frozen_device()));
  const Tensor sum = a + b;
  EXPECT_EQ(sum.device(), frozen_device());
  EXPECT_EQ(host_values(sum), (std::vector<float>{10, 11, 12, 13, 14, 15}));

  EXPECT_EQ(host_values(a.add(b, 2)), (std::vector<float>{20, 21, 22, 23, 24, 25}));  // alpha

  // Transposed (non-contiguous) operands.
  const Tensor at = a.t();  // [3, 2], strides [1, 3]
  EXPECT_EQ(host_values(at + at), (std::vector<float>{0, 6, 2, 8, 4, 10}));

  // Broadcast: the [3] operand arrives with stride 0 in dimension 0.
  const Tensor row = iota_on_frozen({3});
  EXPECT_EQ(host_values(a + row), (std::vector<float>{0, 2, 4, 3, 5, 7}));

  // In place: the output is self.
  Tensor c = iota_on_frozen({2, 3});
  const void* before = c.data_ptr();
  c.add_(b);
  EXPECT_EQ(c.data_ptr(), before);
  EXPECT_EQ(host_values(c), (std::vector<float>{10, 11, 12, 13, 14, 15}));
}

TEST(AbiFrozenV1_0Plugin, DtypesWithoutAKernelAreRefusedNamingThePlugin) {
  try {
    full({2}, 1.0, TensorOptions(kDouble).device(frozen_device()));
    ADD_FAILURE() << "expected an error: the frozen plugin has float32 kernels only";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("frozen_v1_0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  }
}

TEST(AbiFrozenV1_0Plugin, CopiesToAndFromCpu) {
  frozen();
  if (!cpu_available()) GTEST_SKIP() << "libtessera-cpu.so is not in the plugin folder yet";
  // cpu -> frozen10 runs the frozen plugin's copy (HOST_TO_DEVICE).
  const Tensor host = tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({2, 3});
  const Tensor a = host.to(frozen_device());
  EXPECT_EQ(a.device(), frozen_device());
  EXPECT_EQ(host_values(a), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const Tensor b = ones({2, 3}, TensorOptions(kFloat).device(frozen_device()));
  // frozen10 -> cpu, then compare on the cpu.
  const Tensor back = (a + b).cpu();
  EXPECT_EQ(back.device(), Device("cpu"));
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(equal(back, host + 1.0));
}

TEST(AbiFrozenV1_0Plugin, ExportsOnlyTheEntryPoint) {
  std::vector<tsr_abi_test::Symbol> syms;
  std::string error;
  ASSERT_TRUE(tsr_abi_test::exported_symbols(kPath, syms, error)) << error;
  ASSERT_EQ(syms.size(), 1u) << kPath << " must export only tessera_plugin_entry; it exports:"
                             << tsr_abi_test::describe(syms);
  EXPECT_EQ(syms[0].name, "tessera_plugin_entry");
  EXPECT_EQ(syms[0].kind, 'T');
  std::vector<std::string> needed;
  ASSERT_TRUE(tsr_abi_test::needed_libraries(kPath, needed, error)) << error;
  for (const std::string& lib : needed) EXPECT_NE(lib.rfind("libtessera", 0), 0u) << kPath << " links " << lib;
}

// Keep last: it unloads the plugin (each test has its own process under ctest).
TEST(AbiFrozenV1_0Plugin, UnloadWaitsForItsLastTensorAndTheFileLoadsAgain) {
  frozen();
  Tensor t = full({3}, 2.5, TensorOptions(kFloat).device(frozen_device()));
  unload_plugin("frozen_v1_0");

  // Gone for new work...
  const auto ps = plugins();
  EXPECT_TRUE(std::none_of(ps.begin(), ps.end(), [](const PluginInfo& p) { return p.name == "frozen_v1_0"; }));
  EXPECT_THROW(Device("frozen10"), ValueError);
  // ...while the tensor it produced keeps its library loaded and its memory valid.
  EXPECT_EQ(host_values(t), std::vector<float>(3, 2.5f));
  if (cpu_available()) {
    EXPECT_EQ(t.cpu().to_vector<float>(), std::vector<float>(3, 2.5f));
  }
  t = Tensor();  // the last storage: deallocate, then shutdown, then the library closes

  const PluginInfo again = load_plugin(kPath);
  EXPECT_EQ(again.abi_major, 1u);
  EXPECT_EQ(again.abi_minor, 0u);
  const Tensor u = full({2}, 4.0, TensorOptions(kFloat).device(Device("frozen10")));
  EXPECT_EQ(host_values(u + u), std::vector<float>(2, 8.0f));
}
