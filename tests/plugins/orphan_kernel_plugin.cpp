// Registers, through the SDK, a kernel for a device type nobody registered
// ("no_such_device"), next to one for its own device type. A 1.1 host answers
// TSR_ERROR_UNKNOWN_DEVICE_TYPE, which the SDK does not skip: the load fails
// naming the device type (a 1.0 SDK skipped it silently, as an unknown op).
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

namespace {
TsrError* noop_kernel(const TsrKernelCall*) { return nullptr; }

void init(const tessera::sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("orphan", 0));
  host.register_kernel("fill_", "orphan", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &noop_kernel);
  host.register_kernel("fill_", "no_such_device", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &noop_kernel);
}
}  // namespace

TSR_SDK_PLUGIN("orphan_kernel", "0.1", "a kernel for an unknown device type", init, nullptr)
