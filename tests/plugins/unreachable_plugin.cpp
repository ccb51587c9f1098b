// Registers kernels dispatch never reaches, next to reachable ones, for the
// warning tests: exp for int64 and float32 (the core computes exp of integers
// in float32, so the int64 kernel never runs), and add for every dtype (all
// reachable). Device type "unreach", host memory.
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

namespace {
TsrError* noop_kernel(const TsrKernelCall*) { return nullptr; }

void init(const tessera::sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("unreach", 0));
  host.register_kernel("exp", "unreach", TSR_DTYPE_BIT(TSR_DTYPE_INT64) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32),
                       &noop_kernel);
  host.register_kernel("add", "unreach", (uint64_t{1} << TSR_DTYPE_COUNT_1_0) - 1, &noop_kernel);
}
}  // namespace

TSR_SDK_PLUGIN("unreachable", "0.1", "kernels dispatch never reaches", init, nullptr)
