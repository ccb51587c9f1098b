// The plugin host: default loading, `info`, and every way a plugin can fail to
// load — each refused with a clear PluginError while the core keeps working.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>

using namespace tessera;

namespace {

void expect_load_error(const std::string& path, std::initializer_list<const char*> fragments) {
  try {
    load_plugin(path);
    ADD_FAILURE() << "expected PluginError for " << path;
  } catch (const PluginError& e) {
    const std::string msg = e.what();
    for (const char* f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
  }
  EXPECT_EQ((ones({2}) + ones({2})).sum().item<float>(), 4.0f);
}

bool has_device_type(const std::string& name) {
  const auto types = device_types();
  return std::any_of(types.begin(), types.end(), [&](const DeviceTypeSummary& t) { return t.name == name; });
}

const PluginInfo* find_plugin(const std::vector<PluginInfo>& ps, const std::string& name) {
  for (const auto& p : ps)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

TEST(PluginHost, DefaultPluginsLoadFromThePluginPath) {
  const auto ps = plugins();
  const PluginInfo* cpu = find_plugin(ps, "cpu");
  const PluginInfo* meta = find_plugin(ps, "meta");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(cpu->abi_major, abi_version_major());
  EXPECT_NE(cpu->path.find("libtessera-cpu.so"), std::string::npos);
  EXPECT_EQ(cpu->device_types, std::vector<std::string>{"cpu"});
  EXPECT_FALSE(cpu->kernels.empty());
  EXPECT_TRUE(meta->kernels.empty());  // meta needs no kernels
  EXPECT_TRUE(plugin_load_errors().empty()) << plugin_load_errors().front();
  const auto devs = devices();
  EXPECT_TRUE(std::find(devs.begin(), devs.end(), Device("cpu:0")) != devs.end());
}

TEST(PluginHost, InfoListsPluginsDevicesAndKernels) {
  const std::string info = info_text();
  EXPECT_NE(info.find("plugin cpu"), std::string::npos) << info;
  EXPECT_NE(info.find("(ABI 1."), std::string::npos);
  EXPECT_NE(info.find("device type meta: 1 device(s)"), std::string::npos) << info;
  // Kernels are grouped by device type and dtypes: add is in the cpu group of all ten dtypes.
  const size_t group = info.find("[cpu] bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64:\n");
  ASSERT_NE(group, std::string::npos) << info;
  const size_t next_group = info.find("    [", group + 1);
  const size_t add = info.find(" add", group);
  EXPECT_TRUE(add != std::string::npos && add < next_group) << info;
  EXPECT_NE(info.find("path: "), std::string::npos);
}

TEST(PluginHost, MissingFile) { expect_load_error("/no/such/dir/libtessera-x.so", {"/no/such/dir/libtessera-x.so", "file not found"}); }

TEST(PluginHost, NotASharedLibrary) {
  expect_load_error(TSRTEST_NOT_A_LIBRARY, {"libtsrtest_not_a_library.so", "not a loadable shared library"});
}

TEST(PluginHost, NoEntrySymbol) {
  expect_load_error(TSRTEST_NO_ENTRY, {"libtsrtest_no_entry.so", "not a Tessera plugin", "tessera_plugin_entry"});
}

TEST(PluginHost, AbiMajorMismatchIsRefusedBeforeInitialize) {
  // The plugin's initialize aborts the process: reaching it would fail the test run.
  expect_load_error(TSRTEST_BAD_MAJOR, {"bad_major", "ABI 2.0", "ABI 1.", "major versions must match"});
  EXPECT_EQ(find_plugin(plugins(), "bad_major"), nullptr);
}

TEST(PluginHost, InitializeErrorKeepsNothing) {
  expect_load_error(TSRTEST_INIT_ERROR, {"init_error", "failed to initialize", "the frobnicator is not connected"});
  EXPECT_FALSE(has_device_type("initfail"));
  EXPECT_EQ(find_plugin(plugins(), "init_error"), nullptr);
  EXPECT_THROW(Device("initfail"), ValueError);
}

TEST(PluginHost, DuplicateKernelRegistrationIsRefused) {
  expect_load_error(TSRTEST_CONFLICT, {"conflict", "add", "cpu", "float32", "already have a kernel"});
}

TEST(PluginHost, LoadingTheSameFileTwiceIsANoOp) {
  const auto ps = plugins();
  const PluginInfo* cpu = find_plugin(ps, "cpu");
  ASSERT_NE(cpu, nullptr);
  const PluginInfo again = load_plugin(cpu->path);
  EXPECT_EQ(again.name, "cpu");
  EXPECT_EQ(plugins().size(), ps.size());
}

TEST(PluginHost, SameNameFromAnotherFileIsRefused) {
  const std::string copy = testing::TempDir() + "libtsrtest_meta_copy.so";
  const auto ps = plugins();
  const PluginInfo* meta = find_plugin(ps, "meta");
  ASSERT_NE(meta, nullptr);
  std::filesystem::copy_file(meta->path, copy, std::filesystem::copy_options::overwrite_existing);
  expect_load_error(copy, {"meta", "already loaded from", meta->path.c_str()});
  std::filesystem::remove(copy);
}

TEST(PluginHost, StoragesHoldTheirPlugin) {
  // Every storage made by a plugin's device keeps a reference to that plugin.
  const Tensor t = ones({4});
  ASSERT_NE(t.storage()->owner(), nullptr);
  const Tensor v = t.view({2, 2});
  EXPECT_EQ(v.storage()->owner(), t.storage()->owner());
}

namespace {
bool library_is_loaded(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}
}  // namespace

TEST(PluginHost, UnloadWaitsForTheLastStorage) {
  unsetenv("TSRTEST_FAULTY_SHUTDOWN");
  if (find_plugin(plugins(), "faulty") == nullptr) load_plugin(TSRTEST_FAULTY);
  Tensor t = full({3}, 2.0, TensorOptions().device("faulty"));
  unload_plugin("faulty");
  EXPECT_EQ(find_plugin(plugins(), "faulty"), nullptr);
  EXPECT_FALSE(has_device_type("faulty"));
  EXPECT_THROW(Device("faulty"), ValueError);                     // gone from lookups
  EXPECT_THROW(empty({1}, TensorOptions().device(t.device())), UnavailableError);  // no new memory
  EXPECT_THROW(t.fill_(1), NotImplementedError);                  // kernels withdrawn
  // The storage still holds the plugin: its memory and copy function work.
  EXPECT_TRUE(library_is_loaded(TSRTEST_FAULTY));
  EXPECT_EQ(std::getenv("TSRTEST_FAULTY_SHUTDOWN"), nullptr);
  EXPECT_EQ(t.cpu().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  t = Tensor();  // last storage: shutdown runs, library closes
  EXPECT_NE(std::getenv("TSRTEST_FAULTY_SHUTDOWN"), nullptr);
  EXPECT_FALSE(library_is_loaded(TSRTEST_FAULTY));
  // It can be loaded again, under a new device type id.
  load_plugin(TSRTEST_FAULTY);
  EXPECT_EQ(full({2}, 5.0, TensorOptions().device("faulty")).cpu().to_vector<float>(), (std::vector<float>{5, 5}));
  EXPECT_THROW(unload_plugin("no_such_plugin"), ValueError);
}

TEST(PluginHost, TheDefaultDeviceFollowsAReloadedCpuPlugin) {
  const auto ps = plugins();
  const PluginInfo* cpu = find_plugin(ps, "cpu");
  ASSERT_NE(cpu, nullptr);
  const std::string path = cpu->path;
  Tensor kept = full({2}, 3.0);  // on the first cpu device type
  unload_plugin("cpu");
  EXPECT_THROW(Device(), ValueError);  // no cpu until it is loaded again
  load_plugin(path);
  const Tensor fresh = ones({2});  // Device() finds the new "cpu"
  EXPECT_NE(fresh.device().type(), kept.device().type());
  EXPECT_EQ((fresh + fresh).to_vector<float>(), (std::vector<float>{2, 2}));
  // The old tensor's bytes are still readable through its (unloaded) plugin's copy.
  EXPECT_EQ(kept.to(Device()).to_vector<float>(), (std::vector<float>{3, 3}));
}
