// A stranger claiming what belongs to a built-in plugin, for the reservation
// tests. Built twice (tests/plugins/CMakeLists.txt): hijack_dlpack registers
// device type "stranger" with DLPack device type kDLCPU; hijack_name registers
// a device type named "cpu" with DLPack type 0. Both hold host memory. The host
// must refuse either registration, whatever the load order, so the plugin fails
// to initialize and the cpu plugin keeps its name and kDLCPU.
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

#if !defined(HIJACK_PLUGIN) || !defined(HIJACK_DEVICE) || !defined(HIJACK_DLPACK)
#error "define HIJACK_PLUGIN, HIJACK_DEVICE and HIJACK_DLPACK"
#endif

namespace {
void init(const tessera::sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device(HIJACK_DEVICE, HIJACK_DLPACK));
}
}  // namespace

TSR_SDK_PLUGIN(HIJACK_PLUGIN, "0.1", "claims a built-in plugin's device type name or DLPack type", init, nullptr)
