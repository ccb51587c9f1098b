// The CUDA plugin, device part: raw device memory for the core's caching
// allocator (cudaMalloc/cudaFree; cudaMallocAsync when TESSERA_ALLOC_CONF says
// backend:plugin), expandable segments through the driver's virtual memory
// management (cuMemAddressReserve/cuMemCreate/cuMemMap/cuMemSetAccess, one
// physical handle per granule so that any whole granules can be unmapped),
// pinned host memory, streams, timing events and copies, through the CUDA
// runtime (linked statically; it loads libcuda itself, and the driver entry
// points come from cudaGetDriverEntryPointByVersion, so nothing links libcuda).
// With no driver or no GPU, device_count reports zero devices and the reason.
// Kernels register from their own files (kernels.hpp); ops without a cuda
// kernel report that no kernel exists.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <tessera/sdk/plugin.hpp>

#include "kernels.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using tessera::sdk::Error;

[[noreturn]] void fail(cudaError_t e, const char* what) {
  cudaGetLastError();  // clear the sticky non-fatal error state
  const TsrErrorCode code = e == cudaErrorMemoryAllocation ? TSR_ERROR_OUT_OF_MEMORY
                            : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) ? TSR_ERROR_UNAVAILABLE
                                                                                            : TSR_ERROR_INTERNAL;
  throw Error(code, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(e, what);
}

// Makes `index` current for the scope, restoring the caller's device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != index) check(cudaSetDevice(index), "cudaSetDevice");
    restore_ = previous_ != index;
  }
  ~DeviceGuard() {
    if (restore_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool restore_ = false;
};

cudaStream_t as_stream(TsrStream s) { return reinterpret_cast<cudaStream_t>(s); }
cudaEvent_t as_event(TsrEvent e) { return reinterpret_cast<cudaEvent_t>(e); }

TsrError* device_count(void*, int32_t* count) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *count = 0;
    return tessera::sdk::make_error(TSR_ERROR_UNAVAILABLE,
                                    std::string("CUDA is unavailable: ") + cudaGetErrorName(e) + " (" +
                                        cudaGetErrorString(e) + ")");
  }
  *count = n;
  return nullptr;
}

TsrError* describe_device(void*, int32_t index, char* buf, size_t size) {
  return tessera::sdk::guard([&] {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
    std::snprintf(buf, size, "%s, %.1f GiB, compute capability %d.%d, %d SMs", p.name,
                  static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), p.major, p.minor,
                  p.multiProcessorCount);
  });
}

// The bytes the device's default pool holds beyond what is allocated from it
// (freed blocks cudaMallocAsync keeps for reuse).
size_t pool_cached_bytes(cudaMemPool_t pool) {
  std::uint64_t reserved = 0, used = 0;  // the attributes are cuuint64_t (uint64_t)
  if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return reserved > used ? static_cast<size_t>(reserved - used) : 0;
}

// Whether the core asked for the plugin's own allocator (TESSERA_ALLOC_CONF
// backend:plugin): then allocations go to the stream-ordered pool
// (cudaMallocAsync), else plain cudaMalloc serves the core's caching allocator
// as PyTorch's does. Read once; the core reads the same variable.
bool async_pool() {
  static const bool on = [] {
    const char* conf = std::getenv("TESSERA_ALLOC_CONF");
    return conf != nullptr && std::strstr(conf, "backend:plugin") != nullptr;
  }();
  return on;
}

TsrError* allocate(void*, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    if (!async_pool()) {
      const cudaError_t e = cudaMalloc(ptr, nbytes);
      if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        throw Error(TSR_ERROR_OUT_OF_MEMORY, "cudaMalloc of " + std::to_string(nbytes) + " bytes on cuda:" +
                                                 std::to_string(index) + ": cudaErrorMemoryAllocation (" +
                                                 std::to_string(free_bytes) + " of " + std::to_string(total) +
                                                 " bytes free)");
      }
      return check(e, "cudaMalloc");
    }
    cudaError_t e = cudaMallocAsync(ptr, nbytes, as_stream(stream));
    if (e != cudaErrorMemoryAllocation) return check(e, "cudaMallocAsync");
    // Out of memory: the pool may hold freed blocks (some still pending on
    // streams). Wait for them, give every cached byte back to the driver and
    // ask once more, before the core is told (docs/plugin-guide.md).
    cudaGetLastError();
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, index), "cudaDeviceGetDefaultMemPool");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const size_t cached = pool_cached_bytes(pool);
    check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
    e = cudaMallocAsync(ptr, nbytes, as_stream(stream));
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw Error(TSR_ERROR_OUT_OF_MEMORY, "cudaMallocAsync of " + std::to_string(nbytes) + " bytes on cuda:" +
                                               std::to_string(index) + ": cudaErrorMemoryAllocation, also after "
                                               "releasing the " + std::to_string(cached) +
                                               " bytes the memory pool cached");
    }
    check(e, "cudaMallocAsync");
  });
}

// Stream-ordered for the pool; cudaFree waits for the device itself (the core
// frees plain segments only when it releases its cache).
void deallocate(void*, int32_t index, void* ptr, size_t, TsrStream stream) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(index);
  const cudaError_t e = async_pool() ? cudaFreeAsync(ptr, as_stream(stream)) : cudaFree(ptr);
  if (e != cudaSuccess) cudaGetLastError();
  cudaSetDevice(previous);
}

TsrError* memory_info(void*, int32_t index, size_t* free_bytes, size_t* total_bytes) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
  });
}

// ---- expandable segments: the driver's virtual memory management ----------

// Driver entry points, looked up through the runtime (no link to libcuda).
struct Driver {
  decltype(&cuMemAddressReserve) address_reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuGetErrorName) error_name = nullptr;
  std::string missing;  // the first entry point that could not be found
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    auto get = [&](const char* name, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult q{};
      if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess || p == nullptr) {
        cudaGetLastError();
        if (r.missing.empty()) r.missing = name;
        return;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuMemAddressReserve", r.address_reserve);
    get("cuMemAddressFree", r.address_free);
    get("cuMemCreate", r.create);
    get("cuMemRelease", r.release);
    get("cuMemMap", r.map);
    get("cuMemUnmap", r.unmap);
    get("cuMemSetAccess", r.set_access);
    get("cuMemGetAllocationGranularity", r.granularity);
    get("cuGetErrorName", r.error_name);
    return r;
  }();
  if (!d.missing.empty())
    throw Error(TSR_ERROR_UNIMPLEMENTED, "the CUDA driver has no " + d.missing + " (virtual memory management)");
  return d;
}

void check_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "?";
  driver().error_name(r, &name);
  const TsrErrorCode code = r == CUDA_ERROR_OUT_OF_MEMORY ? TSR_ERROR_OUT_OF_MEMORY : TSR_ERROR_INTERNAL;
  throw Error(code, std::string(what) + ": " + name);
}

CUmemAllocationProp physical_props(int index) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = index;
  return p;
}

// The physical handle behind each mapped granule, by address.
std::mutex g_va_mu;
std::map<CUdeviceptr, CUmemGenericAllocationHandle> g_va_handles;

size_t granule(int index) {
  size_t g = 0;
  const CUmemAllocationProp p = physical_props(index);
  check_cu(driver().granularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  return g;
}

TsrError* va_granularity(void*, int32_t index, size_t* out) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    *out = granule(index);
  });
}

TsrError* va_reserve(void*, int32_t index, size_t nbytes, void** base) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    CUdeviceptr p = 0;
    check_cu(driver().address_reserve(&p, nbytes, 0, 0, 0), "cuMemAddressReserve");
    *base = reinterpret_cast<void*>(p);
  });
}

void va_release(void*, int32_t index, void* base, size_t nbytes) {
  DeviceGuard g(index);
  driver().address_free(reinterpret_cast<CUdeviceptr>(base), nbytes);
}

void unmap_granules(CUdeviceptr addr, size_t nbytes, size_t step) {
  const Driver& d = driver();
  std::lock_guard lock(g_va_mu);
  for (CUdeviceptr a = addr; a < addr + nbytes; a += step) {
    auto it = g_va_handles.find(a);
    if (it == g_va_handles.end()) continue;
    d.unmap(a, step);
    d.release(it->second);
    g_va_handles.erase(it);
  }
}

TsrError* va_map(void*, int32_t index, void* addr, size_t nbytes) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    const Driver& d = driver();
    const size_t step = granule(index);
    const CUmemAllocationProp props = physical_props(index);
    CUmemAccessDesc access{};
    access.location = props.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const auto base = reinterpret_cast<CUdeviceptr>(addr);
    for (CUdeviceptr a = base; a < base + nbytes; a += step) {
      CUmemGenericAllocationHandle h = 0;
      CUresult r = d.create(&h, step, &props, 0);
      const bool created = r == CUDA_SUCCESS;
      bool mapped = false;
      if (created) {
        r = d.map(a, step, 0, h, 0);
        mapped = r == CUDA_SUCCESS;
      }
      if (mapped) r = d.set_access(a, step, &access, 1);
      if (r != CUDA_SUCCESS) {
        // Nothing stays mapped (the slot's contract): this granule, then the earlier ones.
        if (mapped) d.unmap(a, step);
        if (created) d.release(h);
        unmap_granules(base, a - base, step);
        check_cu(r, "cuMemCreate/cuMemMap/cuMemSetAccess");
      }
      std::lock_guard lock(g_va_mu);
      g_va_handles[a] = h;
    }
  });
}

void va_unmap(void*, int32_t index, void* addr, size_t nbytes) {
  try {
    DeviceGuard g(index);
    unmap_granules(reinterpret_cast<CUdeviceptr>(addr), nbytes, granule(index));
  } catch (...) {
    // Cannot fail by contract; a failure here leaves the memory mapped until exit.
  }
}

// ---- pinned host memory ---------------------------------------------------------

TsrError* host_allocate(void*, size_t nbytes, void** ptr) {
  return tessera::sdk::guard([&] {
    const cudaError_t e = cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw Error(TSR_ERROR_OUT_OF_MEMORY, "cudaHostAlloc of " + std::to_string(nbytes) + " bytes: out of pinned memory");
    }
    check(e, "cudaHostAlloc");
  });
}

void host_deallocate(void*, void* ptr, size_t) {
  if (cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
}

// Ordered on the request's stream; the host waits when it must (pageable host
// memory, a result it reads) and not for non-blocking copies of pinned memory.
TsrError* copy(void*, const TsrCopyRequest* r) {
  return tessera::sdk::guard([&] {
    const int index = r->kind == TSR_COPY_DEVICE_TO_HOST ? r->src_device_index : r->dst_device_index;
    DeviceGuard g(index);
    if (r->kind == TSR_COPY_DEVICE_TO_DEVICE && r->src_device_index != r->dst_device_index) {
      check(cudaMemcpyPeerAsync(r->dst, r->dst_device_index, r->src, r->src_device_index, r->nbytes,
                                as_stream(r->stream)),
            "cudaMemcpyPeerAsync");
      return;
    }
    const cudaMemcpyKind kind = r->kind == TSR_COPY_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                                : r->kind == TSR_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                                     : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(r->dst, r->src, r->nbytes, kind, as_stream(r->stream)), "cudaMemcpyAsync");
  });
}

TsrError* stream_create(void*, int32_t index, TsrStream* s) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *s = reinterpret_cast<TsrStream>(st);
  });
}
TsrError* stream_destroy(void*, int32_t index, TsrStream s) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaStreamDestroy(as_stream(s)), "cudaStreamDestroy");
  });
}
TsrError* stream_synchronize(void*, int32_t index, TsrStream s) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaStreamSynchronize(as_stream(s)), "cudaStreamSynchronize");
  });
}
TsrError* stream_wait_event(void*, int32_t index, TsrStream s, TsrEvent e) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaStreamWaitEvent(as_stream(s), as_event(e), 0), "cudaStreamWaitEvent");
  });
}
TsrError* event_create(void*, int32_t index, TsrEvent* e) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    *e = reinterpret_cast<TsrEvent>(ev);
  });
}
TsrError* event_create_flags(void*, int32_t index, uint32_t flags, TsrEvent* e) {
  return tessera::sdk::guard([&] {
    if ((flags & ~uint32_t{TSR_EVENT_TIMING}) != 0)
      throw Error(TSR_ERROR_INVALID_ARGUMENT, "event flags " + std::to_string(flags) + " hold unknown bits");
    DeviceGuard g(index);
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, (flags & TSR_EVENT_TIMING) ? cudaEventDefault : cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
    *e = reinterpret_cast<TsrEvent>(ev);
  });
}
TsrError* event_elapsed_time(void*, int32_t index, TsrEvent start, TsrEvent end, float* ms) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    const cudaError_t r = cudaEventElapsedTime(ms, as_event(start), as_event(end));
    if (r == cudaErrorInvalidResourceHandle || r == cudaErrorNotReady) {
      cudaGetLastError();
      throw Error(TSR_ERROR_INVALID_ARGUMENT, std::string("elapsed_time: ") + cudaGetErrorName(r) +
                                                  " (both events must be timing events, recorded and complete)");
    }
    check(r, "cudaEventElapsedTime");
  });
}
TsrError* event_destroy(void*, int32_t index, TsrEvent e) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaEventDestroy(as_event(e)), "cudaEventDestroy");
  });
}
TsrError* event_record(void*, int32_t index, TsrEvent e, TsrStream s) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaEventRecord(as_event(e), as_stream(s)), "cudaEventRecord");
  });
}
TsrError* event_query(void*, int32_t index, TsrEvent e, int32_t* completed) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    const cudaError_t r = cudaEventQuery(as_event(e));
    if (r == cudaErrorNotReady) {
      cudaGetLastError();
      *completed = 0;
      return;
    }
    check(r, "cudaEventQuery");
    *completed = 1;
  });
}
TsrError* event_synchronize(void*, int32_t index, TsrEvent e) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaEventSynchronize(as_event(e)), "cudaEventSynchronize");
  });
}
TsrError* device_synchronize(void*, int32_t index) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  });
}

void init(const tessera::sdk::Host& host, void**) {
  TsrDeviceTypeDesc d{};
  d.name = "cuda";
  d.dlpack_device_type = kDLCUDA;
  d.capabilities = TSR_DEVICE_CAP_ASYNC | TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  d.memory_alignment = 256;
  d.device_count = &device_count;
  d.describe_device = &describe_device;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.copy = &copy;
  d.stream_create = &stream_create;
  d.stream_destroy = &stream_destroy;
  d.stream_synchronize = &stream_synchronize;
  d.stream_wait_event = &stream_wait_event;
  d.event_create = &event_create;
  d.event_destroy = &event_destroy;
  d.event_record = &event_record;
  d.event_query = &event_query;
  d.event_synchronize = &event_synchronize;
  d.device_synchronize = &device_synchronize;
  d.memory_info = &memory_info;
  d.event_create_flags = &event_create_flags;
  d.event_elapsed_time = &event_elapsed_time;
  d.va_granularity = &va_granularity;
  d.va_reserve = &va_reserve;
  d.va_release = &va_release;
  d.va_map = &va_map;
  d.va_unmap = &va_unmap;
  d.host_allocate = &host_allocate;
  d.host_deallocate = &host_deallocate;
  host.register_device_type(d);
  tessera::cuda::register_unary(host);
  tessera::cuda::register_binary(host);
  tessera::cuda::register_ternary(host);
  tessera::cuda::register_reduction(host);
  tessera::cuda::register_shape(host);
  tessera::cuda::register_indexing(host);
  tessera::cuda::register_linalg(host);
  tessera::cuda::register_nn(host);
  tessera::cuda::register_conv(host);
  tessera::cuda::register_random(host);
}

}  // namespace

TSR_SDK_PLUGIN("cuda", "0.2.0", "NVIDIA CUDA devices (memory, streams, events, copies, pinned memory; the op library)", init,
               nullptr)
