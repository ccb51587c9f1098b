// A host-memory device of 8 KiB, for the memory-pressure tests: device type
// "capped" lets the core cache its blocks (TSR_DEVICE_CAP_CACHING_ALLOCATOR)
// and answers OUT_OF_MEMORY when an allocation would take it past 8 KiB
// outstanding, so blocks the core keeps cached are exactly what can make an
// allocation fail. One kernel: neg for float32 (contiguous operands).
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

namespace {

constexpr size_t kCapacity = 8192;
std::atomic<size_t> g_outstanding{0};

TsrError* capped_allocate(void*, int32_t, size_t n, TsrStream, void** p) {
  size_t cur = g_outstanding.load();
  do {
    if (n > kCapacity - cur)
      return tessera::sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "capped: " + std::to_string(n) + " bytes asked, " +
                                                                   std::to_string(cur) + " of 8192 in use");
  } while (!g_outstanding.compare_exchange_weak(cur, cur + n));
  *p = std::malloc(n == 0 ? 1 : n);
  if (*p == nullptr) {
    g_outstanding -= n;
    return tessera::sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "capped: malloc failed");
  }
  return nullptr;
}
void capped_deallocate(void*, int32_t, void* p, size_t n, TsrStream) {
  if (p == nullptr) return;
  std::free(p);
  g_outstanding -= n;
}

TsrError* neg_kernel(const TsrKernelCall* c) {
  return tessera::sdk::guard([&] {
    const DLTensor& in = *c->args[0].as.tensor;
    const DLTensor& out = c->outputs[0];
    const int64_t n = tessera::sdk::numel(out);
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(out.data)[i] = -static_cast<const float*>(in.data)[i];
  });
}

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d = tsrtest::host_memory_device("capped", 1002);
  d.capabilities |= TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  d.allocate = &capped_allocate;
  d.deallocate = &capped_deallocate;
  host.register_device_type(d);
  host.register_kernel("neg", "capped", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &neg_kernel);
}

void shutdown(void*) noexcept {}

}  // namespace

TSR_SDK_PLUGIN("capped", "0.1", "an 8 KiB device whose cached blocks can run it out of memory", init, shutdown)
