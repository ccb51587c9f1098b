// A plugin whose initialize registers a device type and a kernel, then fails.
// The host must report the plugin's message and keep nothing it registered.
#include <tessera/sdk/plugin.hpp>

#include <cstdlib>

namespace {
TsrError* count(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}
TsrError* alloc(void*, int32_t, size_t n, TsrStream, void** p) {
  *p = std::malloc(n);
  return nullptr;
}
void dealloc(void*, int32_t, void* p, size_t, TsrStream) { std::free(p); }
TsrError* copy(void*, const TsrCopyRequest*) { return nullptr; }
TsrError* kernel(const TsrKernelCall*) { return nullptr; }

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d{};
  d.name = "initfail";
  d.dlpack_device_type = 1000;
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 16;
  d.device_count = &count;
  d.allocate = &alloc;
  d.deallocate = &dealloc;
  d.copy = &copy;
  host.register_device_type(d);
  host.register_kernel("fill_", "initfail", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &kernel);
  throw tessera::sdk::Error(TSR_ERROR_UNAVAILABLE, "the frobnicator is not connected");
}
}  // namespace

TSR_SDK_PLUGIN("init_error", "0.1", "fails to initialize", init, nullptr)
