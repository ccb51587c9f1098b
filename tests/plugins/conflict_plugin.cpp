// A plugin that registers a kernel for (add, cpu, float32), which the CPU plugin
// already provides: the host must refuse it (ALREADY_EXISTS) and, since the SDK
// rethrows, the plugin fails to initialize and nothing of it stays.
#include <tessera/sdk/plugin.hpp>

namespace {
TsrError* kernel(const TsrKernelCall*) { return nullptr; }
void init(const tessera::sdk::Host& host, void**) {
  host.register_kernel("add", "cpu", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &kernel);
}
}  // namespace

TSR_SDK_PLUGIN("conflict", "0.1", "registers a kernel that already exists", init, nullptr)
