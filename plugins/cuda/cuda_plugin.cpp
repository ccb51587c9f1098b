// The CUDA plugin, device part: raw device memory, streams, events and copies
// through the CUDA runtime (linked statically; it loads libcuda itself). With no
// driver or no GPU, device_count reports zero devices and the runtime's reason.
// Kernels for CUDA tensors arrive in a later issue; until then only copies and
// views work on "cuda" tensors, and other ops report that no kernel exists.
#include <cuda_runtime_api.h>
#include <tessera/sdk/plugin.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

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
    std::snprintf(buf, size, "%s, %.1f GiB, compute capability %d.%d", p.name,
                  static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), p.major, p.minor);
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

TsrError* allocate(void*, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  return tessera::sdk::guard([&] {
    DeviceGuard g(index);
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

void deallocate(void*, int32_t index, void* ptr, size_t, TsrStream stream) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(index);
  if (cudaFreeAsync(ptr, as_stream(stream)) != cudaSuccess) cudaGetLastError();
  cudaSetDevice(previous);
}

TsrError* copy(void*, const TsrCopyRequest* r) {
  return tessera::sdk::guard([&] {
    const int index = r->kind == TSR_COPY_DEVICE_TO_HOST ? r->src_device_index : r->dst_device_index;
    DeviceGuard g(index);
    const cudaMemcpyKind kind = r->kind == TSR_COPY_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                                : r->kind == TSR_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                                     : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(r->dst, r->src, r->nbytes, kind, as_stream(r->stream)), "cudaMemcpyAsync");
    // Host memory is pageable: the source must not be reused before the copy is done.
    if (kind == cudaMemcpyHostToDevice) check(cudaStreamSynchronize(as_stream(r->stream)), "cudaStreamSynchronize");
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
  d.capabilities = TSR_DEVICE_CAP_ASYNC;
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
  host.register_device_type(d);
}

}  // namespace

TSR_SDK_PLUGIN("cuda", "0.1.0", "NVIDIA CUDA devices (memory, streams, events, copies; kernels pending)", init,
               nullptr)
