// Adds a kernel to another plugin's device type: mm for bool on "cpu" (the cpu
// plugin has none), for the load-order tests. It can only load after the cpu
// plugin, which the host guarantees for the default set whatever the order of
// TESSERA_PLUGIN_PATH; the kernel itself is never run by the tests.
#include <tessera/sdk/plugin.hpp>

namespace {
TsrError* refuse(const TsrKernelCall*) {
  return tessera::sdk::make_error(TSR_ERROR_UNIMPLEMENTED, "cpu_extra: not meant to run");
}

void init(const tessera::sdk::Host& host, void**) {
  host.register_kernel("mm", "cpu", TSR_DTYPE_BIT(TSR_DTYPE_BOOL), &refuse);
}
}  // namespace

TSR_SDK_PLUGIN("cpu_extra", "0.1", "adds a kernel to the cpu device type", init, nullptr)
