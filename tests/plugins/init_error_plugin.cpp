// A plugin whose initialize registers a device type and a kernel, then fails.
// The host must report the plugin's message and keep nothing it registered.
#include "host_memory_device.hpp"

namespace {
TsrError* kernel(const TsrKernelCall*) { return nullptr; }

void init(const tessera::sdk::Host& host, void**) {
  const TsrDeviceTypeDesc d = tsrtest::host_memory_device("initfail", 1000);
  host.register_device_type(d);
  host.register_kernel("fill_", "initfail", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &kernel);
  throw tessera::sdk::Error(TSR_ERROR_UNAVAILABLE, "the frobnicator is not connected");
}
}  // namespace

TSR_SDK_PLUGIN("init_error", "0.1", "fails to initialize", init, nullptr)
