// Shared by the test plugins: a device type description whose memory is plain
// host memory (malloc/free/memcpy), one device, host-accessible.
#pragma once

#include <tessera/sdk/plugin.hpp>

#include <cstdlib>
#include <cstring>

namespace tsrtest {

inline TsrError* one_device(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}
inline TsrError* host_allocate(void*, int32_t, size_t n, TsrStream, void** p) {
  *p = std::malloc(n);
  return *p ? nullptr : tessera::sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "test plugin: malloc failed");
}
inline void host_deallocate(void*, int32_t, void* p, size_t, TsrStream) { std::free(p); }
inline TsrError* host_copy(void*, const TsrCopyRequest* r) {
  std::memcpy(r->dst, r->src, r->nbytes);
  return nullptr;
}

/// A host-memory device type called `name` with the given DLPack device type.
inline TsrDeviceTypeDesc host_memory_device(const char* name, int32_t dlpack_device_type) {
  TsrDeviceTypeDesc d{};
  d.name = name;
  d.dlpack_device_type = dlpack_device_type;
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 16;
  d.device_count = &one_device;
  d.allocate = &host_allocate;
  d.deallocate = &host_deallocate;
  d.copy = &host_copy;
  return d;
}

}  // namespace tsrtest
