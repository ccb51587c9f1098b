// A test device type for the DLPack tests: "dlpack_ext", DLPack device type
// kDLExtDev, two devices, no kernels. Its memory is ordinary host memory but the
// type is NOT host-accessible, so the core treats it like a GPU and moves bytes
// only through copy(). Lets the tests check device type and index mapping on
// import and export beyond the CPU (which has one device, index 0).
#include <tessera/sdk/plugin.hpp>

#include <cstdlib>
#include <cstring>

namespace {

TsrError* device_count(void*, int32_t* count) {
  *count = 2;
  return nullptr;
}

TsrError* allocate(void*, int32_t, size_t nbytes, TsrStream, void** ptr) {
  *ptr = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
  return *ptr != nullptr ? nullptr : tessera::sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "dlpack_ext: out of memory");
}

void deallocate(void*, int32_t, void* ptr, size_t, TsrStream) { std::free(ptr); }

TsrError* copy(void*, const TsrCopyRequest* r) {
  std::memcpy(r->dst, r->src, r->nbytes);
  return nullptr;
}

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d{};
  d.name = "dlpack_ext";
  d.dlpack_device_type = kDLExtDev;
  d.capabilities = 0;
  d.memory_alignment = 64;
  d.device_count = &device_count;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.copy = &copy;
  host.register_device_type(d);
}

}  // namespace

TSR_SDK_PLUGIN("dlpack_ext", "0.1", "test device type for the DLPack tests (kDLExtDev, 2 devices)", init, nullptr)
