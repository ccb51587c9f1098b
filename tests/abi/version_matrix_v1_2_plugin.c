/*
 * version_matrix_v1_2_plugin.c — a Tessera device plugin written against ABI 1.2.
 *
 * ======================================================================
 *  FROZEN: NEVER EDIT THIS FILE. Not for style, not for a header change,
 *  not to add a feature, not to silence a new compiler warning.
 * ======================================================================
 *
 * It stands for a plugin someone built against ABI 1.2 and shipped. It is
 * compiled against the released 1.2 header, tests/abi/version_matrix_headers/
 * v1_2/tessera/abi.h (never today's), so every sizeof() below is 1.2's. If it
 * stops compiling or its tests fail (tests/abi/version_matrix_test.cpp, the
 * conformance kit), the core broke compatibility with 1.2 plugins: fix the
 * core, not this file.
 *
 * What 1.2 added and this plugin uses (docs/abi.md changelog 1.2):
 *  - TsrDeviceTypeDesc.memory_info (a fake 1 GiB device: total 1 GiB, free =
 *    total - what is allocated or mapped);
 *  - event_create_flags with TSR_EVENT_TIMING, event_elapsed_time (events
 *    keep a CLOCK_MONOTONIC time when recorded);
 *  - the five expandable-segment slots va_* (address space from mmap
 *    PROT_NONE, mapped with mprotect, 2 MiB granules);
 *  - the pinned-host pair host_allocate / host_deallocate (malloc);
 *  - TsrKernelCall.workspace: add gathers `other` into scratch memory from
 *    the host, and falls back to malloc when the call's struct_size does not
 *    cover the slot (an older host: P5, P7).
 *
 * Device type "vm12": ASYNC and CACHING_ALLOCATOR, not host-accessible, one
 * device. Its work is done before each function returns (legal for an ASYNC
 * device: it may return early, it need not); streams are tokens. float32
 * fill_ and add. describe_device reports how often each 1.2 slot ran.
 *
 * Threading: the counters are guarded by a mutex; all else is stateless or
 * owned by one handle.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <tessera/abi.h>

#if TSR_ABI_VERSION_MAJOR != 1 || TSR_ABI_VERSION_MINOR != 2
#error "the frozen 1.2 plugin must be built against the released ABI 1.2 header"
#endif

#define VM12_DEVICE "vm12"
#define VM12_TOTAL ((size_t)1 << 30)
#define VM12_GRANULE ((size_t)2 << 20)
#define VM12_HAS(s, type, field) ((s)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

static void vm12_error_destroy(TsrError* self) { free(self); }
static void vm12_static_error_destroy(TsrError* self) { (void)self; }
static TsrError vm12_oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, "vm12: out of memory", vm12_static_error_destroy};

static TsrError* vm12_error(TsrErrorCode code, const char* message) {
  size_t len = strlen(message);
  TsrError* err = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  if (err == NULL) return &vm12_oom;
  memcpy((char*)(err + 1), message, len + 1);
  err->struct_size = sizeof(TsrError);
  err->code = code;
  err->message = (const char*)(err + 1);
  err->destroy = vm12_error_destroy;
  return err;
}

/* ---- counters ---- */
enum { C_MEMORY_INFO, C_EVENT_FLAGS, C_ELAPSED, C_VA_RESERVE, C_VA_MAP, C_HOST_ALLOCATE, C_WORKSPACE, C_FALLBACK, C_N };
static pthread_mutex_t vm12_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned long vm12_count[C_N];
static size_t vm12_live; /* bytes allocated or mapped */

static void vm12_bump(int which, long long live_delta) {
  pthread_mutex_lock(&vm12_mutex);
  if (which >= 0) ++vm12_count[which];
  vm12_live = (size_t)((long long)vm12_live + live_delta);
  pthread_mutex_unlock(&vm12_mutex);
}

/* ---- device: the 1.0 slots ---- */
static TsrError* vm12_device_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}
static TsrError* vm12_describe_device(void* context, int32_t index, char* buf, size_t buf_size) {
  unsigned long c[C_N];
  (void)context;
  (void)index;
  pthread_mutex_lock(&vm12_mutex);
  memcpy(c, vm12_count, sizeof c);
  pthread_mutex_unlock(&vm12_mutex);
  snprintf(buf, buf_size,
           "vm12: memory_info=%lu event_create_flags=%lu event_elapsed_time=%lu va_reserve=%lu va_map=%lu "
           "host_allocate=%lu workspace=%lu fallback=%lu",
           c[C_MEMORY_INFO], c[C_EVENT_FLAGS], c[C_ELAPSED], c[C_VA_RESERVE], c[C_VA_MAP], c[C_HOST_ALLOCATE],
           c[C_WORKSPACE], c[C_FALLBACK]);
  return NULL;
}
static TsrError* vm12_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)stream;
  if (index != 0) return vm12_error(TSR_ERROR_OUT_OF_RANGE, "vm12: device index out of range");
  if (posix_memalign(ptr, 64, nbytes) != 0) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: out of memory");
  vm12_bump(-1, (long long)nbytes);
  return NULL;
}
static void vm12_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)stream;
  free(ptr);
  vm12_bump(-1, -(long long)nbytes);
}
static TsrError* vm12_copy(void* context, const TsrCopyRequest* r) {
  (void)context;
  if (r->kind < TSR_COPY_HOST_TO_DEVICE || r->kind > TSR_COPY_DEVICE_TO_DEVICE)
    return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: unknown copy kind");
  memcpy(r->dst, r->src, r->nbytes);
  return NULL;
}

/* Streams are tokens: every piece of work is finished when its call returns. */
static TsrError* vm12_stream_create(void* context, int32_t index, TsrStream* stream) {
  (void)context;
  (void)index;
  *stream = (TsrStream)malloc(1);
  return *stream != NULL ? NULL : vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: out of memory");
}
static TsrError* vm12_stream_destroy(void* context, int32_t index, TsrStream stream) {
  (void)context;
  (void)index;
  free(stream);
  return NULL;
}
static TsrError* vm12_stream_synchronize(void* context, int32_t index, TsrStream stream) {
  (void)context;
  (void)index;
  (void)stream;
  return NULL;
}
static TsrError* vm12_stream_wait_event(void* context, int32_t index, TsrStream stream, TsrEvent event) {
  (void)context;
  (void)index;
  (void)stream;
  (void)event;
  return NULL;
}

typedef struct Vm12Event {
  uint32_t flags;
  int recorded;
  struct timespec when;
} Vm12Event;

static TsrError* vm12_new_event(uint32_t flags, TsrEvent* event) {
  Vm12Event* e = (Vm12Event*)calloc(1, sizeof(Vm12Event));
  if (e == NULL) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: out of memory");
  e->flags = flags;
  *event = (TsrEvent)(void*)e;
  return NULL;
}
static TsrError* vm12_event_create(void* context, int32_t index, TsrEvent* event) {
  (void)context;
  (void)index;
  return vm12_new_event(0, event);
}
static TsrError* vm12_event_destroy(void* context, int32_t index, TsrEvent event) {
  (void)context;
  (void)index;
  free(event);
  return NULL;
}
static TsrError* vm12_event_record(void* context, int32_t index, TsrEvent event, TsrStream stream) {
  Vm12Event* e = (Vm12Event*)(void*)event;
  (void)context;
  (void)index;
  (void)stream;
  clock_gettime(CLOCK_MONOTONIC, &e->when);
  e->recorded = 1;
  return NULL;
}
static TsrError* vm12_event_query(void* context, int32_t index, TsrEvent event, int32_t* completed) {
  (void)context;
  (void)index;
  (void)event;
  *completed = 1;
  return NULL;
}
static TsrError* vm12_event_synchronize(void* context, int32_t index, TsrEvent event) {
  (void)context;
  (void)index;
  (void)event;
  return NULL;
}
static TsrError* vm12_device_synchronize(void* context, int32_t index) {
  (void)context;
  (void)index;
  return NULL;
}

/* ---- device: the 1.2 slots ---- */
static TsrError* vm12_memory_info(void* context, int32_t index, size_t* free_bytes, size_t* total_bytes) {
  (void)context;
  (void)index;
  pthread_mutex_lock(&vm12_mutex);
  ++vm12_count[C_MEMORY_INFO];
  *total_bytes = VM12_TOTAL;
  *free_bytes = vm12_live < VM12_TOTAL ? VM12_TOTAL - vm12_live : 0;
  pthread_mutex_unlock(&vm12_mutex);
  return NULL;
}
static TsrError* vm12_event_create_flags(void* context, int32_t index, uint32_t flags, TsrEvent* event) {
  (void)context;
  (void)index;
  if ((flags & ~TSR_EVENT_TIMING) != 0) return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: unknown event flags");
  vm12_bump(C_EVENT_FLAGS, 0);
  return vm12_new_event(flags, event);
}
static TsrError* vm12_event_elapsed_time(void* context, int32_t index, TsrEvent start, TsrEvent end, float* ms) {
  const Vm12Event* a = (const Vm12Event*)(const void*)start;
  const Vm12Event* b = (const Vm12Event*)(const void*)end;
  (void)context;
  (void)index;
  if (!(a->flags & TSR_EVENT_TIMING) || !(b->flags & TSR_EVENT_TIMING) || !a->recorded || !b->recorded)
    return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: elapsed time needs two recorded timing events");
  vm12_bump(C_ELAPSED, 0);
  *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 + (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
  return NULL;
}
static TsrError* vm12_va_granularity(void* context, int32_t index, size_t* granularity) {
  (void)context;
  (void)index;
  *granularity = VM12_GRANULE;
  return NULL;
}
static TsrError* vm12_va_reserve(void* context, int32_t index, size_t nbytes, void** base) {
  void* p;
  (void)context;
  (void)index;
  p = mmap(NULL, nbytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: no address space left");
  vm12_bump(C_VA_RESERVE, 0);
  *base = p;
  return NULL;
}
static void vm12_va_release(void* context, int32_t index, void* base, size_t nbytes) {
  (void)context;
  (void)index;
  munmap(base, nbytes);
}
static TsrError* vm12_va_map(void* context, int32_t index, void* addr, size_t nbytes) {
  (void)context;
  (void)index;
  if (mprotect(addr, nbytes, PROT_READ | PROT_WRITE) != 0) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: va_map failed");
  vm12_bump(C_VA_MAP, (long long)nbytes);
  return NULL;
}
static void vm12_va_unmap(void* context, int32_t index, void* addr, size_t nbytes) {
  (void)context;
  (void)index;
  madvise(addr, nbytes, MADV_DONTNEED); /* gives the pages back */
  mprotect(addr, nbytes, PROT_NONE);
  vm12_bump(-1, -(long long)nbytes);
}
static TsrError* vm12_host_allocate(void* context, size_t nbytes, void** ptr) {
  (void)context;
  *ptr = malloc(nbytes);
  if (*ptr == NULL) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: out of pinned memory");
  vm12_bump(C_HOST_ALLOCATE, 0);
  return NULL;
}
static void vm12_host_deallocate(void* context, void* ptr, size_t nbytes) {
  (void)context;
  (void)nbytes;
  free(ptr);
}

/* ---- kernels: float32, any strides ---- */
static int vm12_scalar(const TsrValue* v, float* out) {
  switch (v->tag) {
    case TSR_VALUE_INT: *out = (float)v->as.i; return 1;
    case TSR_VALUE_FLOAT: *out = (float)v->as.f; return 1;
    case TSR_VALUE_BOOL: *out = v->as.b ? 1.0f : 0.0f; return 1;
    default: return 0;
  }
}
static int vm12_is_f32(const DLTensor* t) { return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1; }

/* Calls back with the element offset of each of n tensors sharing t[0]'s shape, in row-major order. */
typedef void (*Vm12Fn)(const DLTensor* const* t, const int64_t* off, int64_t linear, void* data);
static TsrError* vm12_walk(const DLTensor* const* t, int n, Vm12Fn fn, void* data) {
  int64_t index[32] = {0}, off[3] = {0, 0, 0}, total = 1, e;
  int32_t d;
  int k;
  if (t[0]->ndim > 32) return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: more than 32 dimensions");
  for (d = 0; d < t[0]->ndim; ++d) total *= t[0]->shape[d];
  for (e = 0; e < total; ++e) {
    fn(t, off, e, data);
    for (d = t[0]->ndim - 1; d >= 0; --d) {
      if (++index[d] < t[0]->shape[d]) {
        for (k = 0; k < n; ++k) off[k] += t[k]->strides[d];
        break;
      }
      for (k = 0; k < n; ++k) off[k] -= (t[0]->shape[d] - 1) * t[k]->strides[d];
      index[d] = 0;
    }
  }
  return NULL;
}

static void vm12_fill_at(const DLTensor* const* t, const int64_t* off, int64_t linear, void* data) {
  (void)linear;
  ((float*)t[0]->data)[off[0]] = *(const float*)data;
}
static TsrError* vm12_fill(const TsrKernelCall* call) {
  const DLTensor* t[1];
  float value;
  if (call->num_args < 2 || call->num_outputs < 1 || !vm12_scalar(&call->args[1], &value) ||
      !vm12_is_f32(&call->outputs[0]))
    return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: fill_ expects float32 self and a scalar");
  t[0] = &call->outputs[0];
  return vm12_walk(t, 1, vm12_fill_at, &value);
}

typedef struct Vm12Add {
  float* scratch;
  float alpha;
} Vm12Add;
static void vm12_gather_at(const DLTensor* const* t, const int64_t* off, int64_t linear, void* data) {
  ((Vm12Add*)data)->scratch[linear] = ((const float*)t[0]->data)[off[0]];
}
static void vm12_add_at(const DLTensor* const* t, const int64_t* off, int64_t linear, void* data) {
  const Vm12Add* a = (const Vm12Add*)data;
  ((float*)t[0]->data)[off[0]] = ((const float*)t[1]->data)[off[1]] + a->alpha * a->scratch[linear];
}
/* add(self, other, alpha): `other` goes through scratch memory first, from the
 * host's workspace when the call has the slot, else from malloc. */
static TsrError* vm12_add(const TsrKernelCall* call) {
  const DLTensor *t[2], *other;
  Vm12Add a;
  TsrError* err;
  int64_t n = 1;
  int32_t d;
  int own = 0;
  if (call->num_args < 3 || call->num_outputs < 1 || call->args[0].tag != TSR_VALUE_TENSOR ||
      call->args[1].tag != TSR_VALUE_TENSOR || !vm12_scalar(&call->args[2], &a.alpha))
    return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: add expects (self, other, alpha)");
  t[0] = &call->outputs[0];
  t[1] = call->args[0].as.tensor;
  other = call->args[1].as.tensor;
  if (!vm12_is_f32(t[0]) || !vm12_is_f32(t[1]) || !vm12_is_f32(other) || t[1]->ndim != t[0]->ndim ||
      other->ndim != t[0]->ndim)
    return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: add operands must be float32 of the output's rank");
  for (d = 0; d < t[0]->ndim; ++d) {
    if (t[1]->shape[d] != t[0]->shape[d] || other->shape[d] != t[0]->shape[d])
      return vm12_error(TSR_ERROR_INVALID_ARGUMENT, "vm12: add operands must have the output's shape");
    n *= t[0]->shape[d];
  }
  if (n == 0) return NULL;
  if (VM12_HAS(call, TsrKernelCall, workspace) && call->workspace != NULL) {
    err = call->workspace(call, (size_t)n * sizeof(float), (void**)&a.scratch);
    if (err != NULL) return err;
    vm12_bump(C_WORKSPACE, 0);
  } else {
    a.scratch = (float*)malloc((size_t)n * sizeof(float));
    if (a.scratch == NULL) return vm12_error(TSR_ERROR_OUT_OF_MEMORY, "vm12: out of memory");
    own = 1;
    vm12_bump(C_FALLBACK, 0);
  }
  vm12_walk(&other, 1, vm12_gather_at, &a);
  vm12_walk(t, 2, vm12_add_at, &a);
  if (own) free(a.scratch);
  return NULL;
}

/* ---- registration ---- */
static TsrError* vm12_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device;
  TsrKernelDesc k;
  TsrError* err;
  (void)state;
  if (host->struct_size < offsetof(TsrHostApi, log) + sizeof(host->log) || host->host_version.major != 1)
    return vm12_error(TSR_ERROR_VERSION_MISMATCH, "vm12: not an ABI 1.x host");

  memset(&device, 0, sizeof device);
  device.struct_size = sizeof device; /* 248: 1.2's TsrDeviceTypeDesc */
  device.name = VM12_DEVICE;
  device.capabilities = TSR_DEVICE_CAP_ASYNC | TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  device.memory_alignment = 64;
  device.device_count = vm12_device_count;
  device.describe_device = vm12_describe_device;
  device.allocate = vm12_allocate;
  device.deallocate = vm12_deallocate;
  device.copy = vm12_copy;
  device.stream_create = vm12_stream_create;
  device.stream_destroy = vm12_stream_destroy;
  device.stream_synchronize = vm12_stream_synchronize;
  device.stream_wait_event = vm12_stream_wait_event;
  device.event_create = vm12_event_create;
  device.event_destroy = vm12_event_destroy;
  device.event_record = vm12_event_record;
  device.event_query = vm12_event_query;
  device.event_synchronize = vm12_event_synchronize;
  device.device_synchronize = vm12_device_synchronize;
  device.memory_info = vm12_memory_info;
  device.event_create_flags = vm12_event_create_flags;
  device.event_elapsed_time = vm12_event_elapsed_time;
  device.va_granularity = vm12_va_granularity;
  device.va_reserve = vm12_va_reserve;
  device.va_release = vm12_va_release;
  device.va_map = vm12_va_map;
  device.va_unmap = vm12_va_unmap;
  device.host_allocate = vm12_host_allocate;
  device.host_deallocate = vm12_host_deallocate;
  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err;

  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = "fill_";
  k.device_type = VM12_DEVICE;
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  k.fn = vm12_fill;
  err = host->register_kernel(host->context, &k);
  if (err != NULL) return err;
  k.op_name = "add";
  k.fn = vm12_add;
  return host->register_kernel(host->context, &k);
}

static const TsrPluginInfo vm12_info = {sizeof(TsrPluginInfo), {1, 2}, "vm_frozen_v1_2", "1.2.0",
                                        "Frozen ABI 1.2 plugin (tests/abi version matrix)", vm12_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer; /* one version: returned even outside the offer (P3) */
  return &vm12_info;
}
