// Version negotiation (docs/abi.md §6 and changelog): the host offers 1.0 to
// its own minor and reports it, and tells an unknown device type apart from
// an unknown op (TSR_ERROR_UNKNOWN_DEVICE_TYPE) only for plugins implementing
// 1.1 or later; a plugin that implements 1.0 sees exactly 1.0's codes. Every
// probe also registers a device type with 1.1's struct_size followed by bytes
// that would be a partial 1.2 slot group: accepted, since the host reads no
// field beyond struct_size (H5).
//
// The probe plugins (tests/plugins/version_probe_plugin.c, plain C99, built as
// ABI 1.0, 1.1, 1.2, 1.3 and 1.7) register what the host must refuse and fail their
// initialize on purpose with the codes they got, which the PluginError carries.
#include <gtest/gtest.h>
#include <tessera/abi.h>
#include <tessera/dispatcher.h>
#include <tessera/tessera.h>

#include <string>

using namespace tessera;

namespace {

std::string probe(const char* path) {
  try {
    load_plugin(path);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "(loaded)";
}

std::string codes(int unknown_op, int unknown_device_type, int unknown_dtypes, const std::string& register_op = "-") {
  return "vprobe: offer 1.0-1." + std::to_string(TSR_ABI_VERSION_MINOR) + " host 1." +
         std::to_string(TSR_ABI_VERSION_MINOR) + " unknown_op=" + std::to_string(unknown_op) +
         " unknown_device_type=" + std::to_string(unknown_device_type) +
         " unknown_dtypes=" + std::to_string(unknown_dtypes) + " old_desc=0 register_op=" + register_op;
}

}  // namespace

TEST(AbiNegotiation, HostSpeaks1_3) {
  static_assert(TSR_ABI_VERSION_MAJOR == 1 && TSR_ABI_VERSION_MINOR >= 3);
  static_assert(TSR_ERROR_UNKNOWN_DEVICE_TYPE == 10);
  EXPECT_EQ(abi_version_major(), 1u);
  EXPECT_EQ(abi_version_minor(), uint32_t(TSR_ABI_VERSION_MINOR));
}

TEST(AbiNegotiation, A1_0PluginSeesOnly1_0ErrorCodes) {
  const std::string msg = probe(TSRTEST_VPROBE_V1_0);
  EXPECT_NE(msg.find(codes(TSR_ERROR_NOT_FOUND, TSR_ERROR_NOT_FOUND, TSR_ERROR_NOT_FOUND)), std::string::npos) << msg;
}

TEST(AbiNegotiation, A1_1PluginTellsUnknownDeviceTypesFromUnknownOps) {
  const std::string msg = probe(TSRTEST_VPROBE_V1_1);
  EXPECT_NE(msg.find(codes(TSR_ERROR_NOT_FOUND, TSR_ERROR_UNKNOWN_DEVICE_TYPE, TSR_ERROR_NOT_FOUND)),
            std::string::npos)
      << msg;
}

TEST(AbiNegotiation, A1_2PluginKeepsThe1_1Codes) {
  const std::string msg = probe(TSRTEST_VPROBE_V1_2);
  EXPECT_NE(msg.find(codes(TSR_ERROR_NOT_FOUND, TSR_ERROR_UNKNOWN_DEVICE_TYPE, TSR_ERROR_NOT_FOUND)),
            std::string::npos)
      << msg;
}

// 1.3 adds register_op: an op in the plugin's namespace and a kernel for it are
// taken, an op outside it is refused (INVALID_ARGUMENT); 1.1's codes stay.
TEST(AbiNegotiation, A1_3PluginDefinesOpsInItsNamespace) {
  const std::string msg = probe(TSRTEST_VPROBE_V1_3);
  EXPECT_NE(msg.find(codes(TSR_ERROR_NOT_FOUND, TSR_ERROR_UNKNOWN_DEVICE_TYPE, TSR_ERROR_NOT_FOUND, "0,0,1")),
            std::string::npos)
      << msg;
  // Its initialize failed, so its op was not kept.
  EXPECT_EQ(Dispatcher::instance().find("vprobe_v1_3::probe"), nullptr);
}

TEST(AbiNegotiation, ANewerMinorGetsTheNewestBehaviourThisHostHas) {
  const std::string msg = probe(TSRTEST_VPROBE_V1_7);
  EXPECT_NE(msg.find(codes(TSR_ERROR_NOT_FOUND, TSR_ERROR_UNKNOWN_DEVICE_TYPE, TSR_ERROR_NOT_FOUND, "0,0,1")),
            std::string::npos)
      << msg;
}
