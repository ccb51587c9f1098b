// Device types whose device_count the host cannot use, for the device-count
// tests: "count_huge" answers 70000 (device indices are 16-bit: 0..32767),
// "count_negative" answers -3, and "count_ok" answers 2. Host memory.
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

namespace {
TsrError* huge(void*, int32_t* n) {
  *n = 70000;
  return nullptr;
}
TsrError* negative(void*, int32_t* n) {
  *n = -3;
  return nullptr;
}
TsrError* two(void*, int32_t* n) {
  *n = 2;
  return nullptr;
}

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d = tsrtest::host_memory_device("count_huge", 0);
  d.device_count = &huge;
  host.register_device_type(d);
  d = tsrtest::host_memory_device("count_negative", 0);
  d.device_count = &negative;
  host.register_device_type(d);
  d = tsrtest::host_memory_device("count_ok", 0);
  d.device_count = &two;
  host.register_device_type(d);
}
}  // namespace

TSR_SDK_PLUGIN("bad_count", "0.1", "device counts the host cannot index", init, nullptr)
