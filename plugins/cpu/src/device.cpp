// The "cpu" device type. One device (index 0), ordinary host memory, and no
// asynchrony: every kernel and copy has finished when its call returns. So
// there is only the default (NULL) stream — stream_create/stream_destroy stay
// NULL (UNIMPLEMENTED) — synchronization calls succeed at once, and events are
// always complete (event_create hands out one static, shared sentinel).
#include "device.hpp"

#include "common.hpp"
#include "aligned_memory.hpp"
#include "parallel.hpp"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tessera::cpu {

namespace {

std::string g_model = "CPU";
const char* g_kernel_isa = "baseline";

void check_index(int32_t index) {
  if (index != 0) {
    fail(TSR_ERROR_OUT_OF_RANGE, "cpu: device index " + std::to_string(index) + " does not exist (one device, index 0)");
  }
}

TsrError* device_count(void*, int32_t* count) noexcept {
  return sdk::guard([&] { *count = 1; });
}

TsrError* describe_device(void*, int32_t index, char* buf, size_t buf_size) noexcept {
  return sdk::guard([&] {
    check_index(index);
    if (buf == nullptr || buf_size == 0) invalid("cpu: describe_device needs a buffer of at least 1 byte");
    std::snprintf(buf, buf_size, "%s, %d OpenMP threads, %s kernels", g_model.c_str(), omp_get_max_threads(),
                  g_kernel_isa);
  });
}

// Raw host memory for the core's caching allocator, which caches freed blocks
// itself (docs/memory.md): this plugin keeps none, so that the core's
// statistics and empty_cache cover all of the device's memory.
TsrError* allocate(void*, int32_t index, size_t nbytes, TsrStream, void** ptr) noexcept {
  return sdk::guard([&] {
    check_index(index);
    if (nbytes > SIZE_MAX / 2) [[unlikely]] {  // no such memory; rounding up to pages would wrap
      fail(TSR_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating " + std::to_string(nbytes) +
                                        " bytes (more than half the address space)");
    }
    void* p = aligned_malloc(nbytes);
    if (p == nullptr && nbytes > 0) [[unlikely]]
      fail(TSR_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating " + std::to_string(nbytes) + " bytes");
    prefer_huge_pages(p, nbytes);
    *ptr = p;
  });
}

void deallocate(void*, int32_t, void* ptr, size_t, TsrStream) noexcept { aligned_free(ptr); }

// Physical memory in total, and what the kernel counts as available.
TsrError* memory_info(void*, int32_t index, size_t* free_bytes, size_t* total_bytes) noexcept {
  return sdk::guard([&] {
    check_index(index);
    if (free_bytes == nullptr || total_bytes == nullptr) invalid("cpu: memory_info needs two outputs");
    const long page = sysconf(_SC_PAGESIZE);
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long avail = sysconf(_SC_AVPHYS_PAGES);
    *total_bytes = page > 0 && pages > 0 ? size_t(page) * size_t(pages) : 0;
    *free_bytes = page > 0 && avail > 0 ? size_t(page) * size_t(avail) : 0;
  });
}

TsrError* copy(void*, const TsrCopyRequest* req) noexcept {
  return sdk::guard([&] {
    if (req == nullptr || req->struct_size < offsetof(TsrCopyRequest, stream)) {
      invalid("cpu copy: malformed TsrCopyRequest");
    }
    switch (req->kind) {
      case TSR_COPY_HOST_TO_DEVICE: check_index(req->dst_device_index); break;
      case TSR_COPY_DEVICE_TO_HOST: check_index(req->src_device_index); break;
      case TSR_COPY_DEVICE_TO_DEVICE:
        check_index(req->dst_device_index);
        check_index(req->src_device_index);
        break;
      default: invalid("cpu copy: unknown copy kind " + std::to_string(req->kind));
    }
    if (req->nbytes == 0 || req->dst == req->src) return;
    if (req->dst == nullptr || req->src == nullptr) invalid("cpu copy: NULL pointer");
    auto* dst = static_cast<char*>(req->dst);
    const auto* src = static_cast<const char*>(req->src);
    const size_t n = req->nbytes;
    if (dst < src + n && src < dst + n) {  // overlapping ranges: not a memcpy
      std::memmove(dst, src, n);
      return;
    }
    // Large copies use every core's memory bandwidth.
    parallel_for(static_cast<int64_t>(n), int64_t{1} << 22, [&](int64_t begin, int64_t end) {
      std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
    });
  });
}

TsrError* synchronize_stream(void*, int32_t index, TsrStream) noexcept {
  return sdk::guard([&] { check_index(index); });
}
TsrError* stream_wait_event(void*, int32_t index, TsrStream, TsrEvent) noexcept {
  return sdk::guard([&] { check_index(index); });
}

// Events never wait for anything; one sentinel stands for all of them.
struct EventSentinel {
  int unused;
} g_event_sentinel{0};

TsrError* event_create(void*, int32_t index, TsrEvent* event) noexcept {
  return sdk::guard([&] {
    check_index(index);
    *event = reinterpret_cast<TsrEvent>(&g_event_sentinel);
  });
}
TsrError* event_destroy(void*, int32_t, TsrEvent) noexcept { return nullptr; }
TsrError* event_record(void*, int32_t index, TsrEvent, TsrStream) noexcept {
  return sdk::guard([&] { check_index(index); });
}
TsrError* event_query(void*, int32_t, TsrEvent, int32_t* completed) noexcept {
  return sdk::guard([&] { *completed = 1; });
}
TsrError* event_synchronize(void*, int32_t, TsrEvent) noexcept { return nullptr; }
TsrError* device_synchronize(void*, int32_t index) noexcept {
  return sdk::guard([&] { check_index(index); });
}

}  // namespace

void init_device_info(const char* kernel_isa) {
  g_kernel_isa = kernel_isa;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    // x86: "model name : ..."; some other architectures: "Processor : ..." / "cpu model : ...".
    if (line.rfind("model name", 0) == 0 || line.rfind("Processor", 0) == 0 || line.rfind("cpu model", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const size_t begin = line.find_first_not_of(" \t", colon + 1);
      if (begin == std::string::npos) continue;
      g_model = line.substr(begin);
      break;
    }
  }
}

const std::string& cpu_model() { return g_model; }

TsrDeviceTypeDesc cpu_device_desc() {
  TsrDeviceTypeDesc d{};
  d.struct_size = sizeof(TsrDeviceTypeDesc);
  d.name = "cpu";
  d.dlpack_device_type = kDLCPU;
  // Caching: the core may keep freed blocks for reuse (the device is synchronous).
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE | TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  d.memory_alignment = kMemoryAlignment;
  d.context = nullptr;
  d.device_count = &device_count;
  d.describe_device = &describe_device;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.copy = &copy;
  d.stream_create = nullptr;   // only the default stream exists
  d.stream_destroy = nullptr;
  d.stream_synchronize = &synchronize_stream;
  d.stream_wait_event = &stream_wait_event;
  d.event_create = &event_create;
  d.event_destroy = &event_destroy;
  d.event_record = &event_record;
  d.event_query = &event_query;
  d.event_synchronize = &event_synchronize;
  d.device_synchronize = &device_synchronize;
  d.memory_info = &memory_info;
  return d;
}

}  // namespace tessera::cpu
