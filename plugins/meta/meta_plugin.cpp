// The "meta" plugin: a device type whose tensors have shapes and dtypes but no
// bytes (TSR_DEVICE_CAP_NO_STORAGE). The core runs every op's shape rule and
// never calls a kernel, allocate or copy for it, so every op — including ones
// added later — works on meta with no code here.
#include <tessera/sdk/plugin.hpp>

#include <cstring>

namespace {

TsrError* meta_device_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

TsrError* meta_describe(void*, int32_t, char* buf, size_t size) {
  std::strncpy(buf, "shapes and dtypes only, no memory", size - 1);
  buf[size - 1] = '\0';
  return nullptr;
}

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d{};
  d.name = "meta";
  d.dlpack_device_type = 0;  // nothing to exchange through DLPack
  d.capabilities = TSR_DEVICE_CAP_NO_STORAGE;
  d.memory_alignment = 1;
  d.device_count = &meta_device_count;
  d.describe_device = &meta_describe;
  host.register_device_type(d);
}

}  // namespace

TSR_SDK_PLUGIN("meta", "0.1.0", "Meta device: shapes and dtypes without memory", init, nullptr)
