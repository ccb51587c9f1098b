// libcxx_plugin_test.cpp — the gcc/libstdc++ core loads a plugin built with
// clang++ and libc++ (libcxx_plugin.cpp, see libcxx_plugin.cmake) and every C++
// exception thrown in that plugin's kernels comes back as the matching
// tessera::Error, converted by the SDK's guard — never as a libc++ exception
// the host has to catch itself (H11's "crossed the C ABI").
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

using namespace tessera;

namespace {

const char* const kPath = TSRTEST_LIBCXX_PLUGIN;

const PluginInfo& libcxx_plugin() {
  static PluginInfo info;
  static std::once_flag once;
  std::call_once(once, [] { info = load_plugin(kPath); });
  return info;
}

Tensor on(const char* device, std::initializer_list<float> values) {
  libcxx_plugin();
  return tensor(values).to(Device(device));
}

std::string maps() {
  std::ifstream f("/proc/self/maps");
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Runs `op` on the throwing device; it must raise exactly `Expected` whose
// message holds `needle` and names the plugin (H9), made from a TsrError the
// plugin's guard returned, not by the host catching a stray exception (H11).
template <typename Expected>
void expect_error(const char* what, const std::function<Tensor()>& op, const std::string& needle) {
  SCOPED_TRACE(what);
  try {
    (void)op();
    ADD_FAILURE() << "no error";
  } catch (const Expected& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel of plugin 'libcxx' for libcxx_throw"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("crossed the C ABI"), std::string::npos) << "a C++ exception left the plugin: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace

TEST(AbiLibcxxPlugin, LoadsBesideLibstdcxx) {
  const PluginInfo& info = libcxx_plugin();
  EXPECT_EQ(info.name, "libcxx");
  EXPECT_EQ(info.device_types, (std::vector<std::string>{"libcxx", "libcxx_throw"}));
  // Both C++ runtimes are mapped in this one process, or the test proves nothing.
  const std::string m = maps();
  EXPECT_NE(m.find("/libc++.so.1"), std::string::npos) << "libc++ is not loaded";
  EXPECT_NE(m.find("/libc++abi.so.1"), std::string::npos) << "libc++abi is not loaded";
  EXPECT_NE(m.find("/libstdc++.so.6"), std::string::npos) << "the core does not use libstdc++";
}

TEST(AbiLibcxxPlugin, ExceptionsInKernelsBecomeTesseraErrors) {
  const Tensor a = on("libcxx_throw", {1, 2, 3});
  const Tensor b = on("libcxx_throw", {4, 5, 6});
  expect_error<UnavailableError>("sdk::Error", [&] { return a + b; },
                                 "libcxx_throw kernel add(float32): libcxx_throw says unavailable");
  expect_error<IndexError>("std::out_of_range from vector::at", [&] { return a - b; }, "std::out_of_range");
  expect_error<ValueError>("std::invalid_argument thrown inside libc++.so", [&] { return a * b; },
                           "std::invalid_argument");
  expect_error<InternalError>("std::bad_function_call", [&] { return neg(a); }, "C++ exception in plugin");
  expect_error<OutOfMemoryError>("std::bad_alloc", [&] { return a / b; }, "out of memory");
  expect_error<InternalError>("throw 42", [&] { return relu(a); }, "unknown C++ exception in plugin");
}

TEST(AbiLibcxxPlugin, ComputesAfterEachError) {
  const Tensor t = on("libcxx_throw", {1, 2});
  for (int i = 0; i < 50; ++i) {
    EXPECT_THROW((void)(t - t), IndexError);
    EXPECT_THROW((void)(t * t), ValueError);
  }
  const Tensor a = on("libcxx", {1, -2, 3});
  const Tensor b = on("libcxx", {10, 20, 30});
  EXPECT_EQ((a.add(b, 2)).cpu().to_vector<float>(), (std::vector<float>{21, 38, 63}));
  EXPECT_EQ(relu(a - b).cpu().to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(relu(neg(a) * b).cpu().to_vector<float>(), (std::vector<float>{0, 40, 0}));
}
