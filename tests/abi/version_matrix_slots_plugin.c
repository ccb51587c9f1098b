/* Short struct_size values, NULL optional slots and unknown bits in what a
 * plugin registers (docs/abi.md §1, H5, H8, H19, P12), for the version matrix.
 * Plain C99 against today's abi.h. Every slot that lies beyond a struct_size
 * holds a trap that aborts the process: the host may never call it.
 *
 *  - TsrPluginInfo.struct_size ends before `shutdown` (a trap): never called.
 *  - "vmshort": host memory, synchronous, struct_size ending after `copy`,
 *    describe_device NULL; stream, event, device_synchronize and every 1.2
 *    slot lie beyond it (traps).
 *  - "vmshort_async": the same bytes with TSR_DEVICE_CAP_ASYNC: its stream
 *    and event slots are absent, so the host must refuse it.
 *  - "vmcaps": host memory with capability bits no version defines (40, 63).
 *  - "vmnull": ASYNC and CACHING_ALLOCATOR, 1.2's full size, every 1.0 slot,
 *    every 1.2 slot NULL (no memory_info, timing, va_*, host_*).
 *  - kernels: fill_ on vmshort with a mask of float32 and two unknown dtype
 *    bits; TsrKernelDescs with struct_size 40 (before `context`) and 0.
 * vmcaps' describe_device reports the codes register_* answered:
 *   "vmslots: async_short=1 kernel_size40=1 kernel_size0=1 mixed_mask=0" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "vmslots: "
#include "c_host_memory_device.h"

static void vm_trap(void) {
  fprintf(stderr, "vmslots: the host called a slot that lies beyond struct_size\n");
  abort();
}
typedef void (*VmTrapFn)(void);

/* Every pointer-sized field from byte `from` to the end of the struct becomes a trap. */
static void vm_traps_from(void* desc, size_t from, size_t size) {
  const VmTrapFn trap = vm_trap;
  size_t off;
  for (off = from; off + sizeof trap <= size; off += sizeof trap) memcpy((char*)desc + off, &trap, sizeof trap);
}

static int vm_async_short = -1, vm_kernel_size40 = -1, vm_kernel_size0 = -1, vm_mixed_mask = -1;

static TsrError* vm_describe(void* context, int32_t index, char* buf, size_t buf_size) {
  (void)context;
  (void)index;
  snprintf(buf, buf_size, "vmslots: async_short=%d kernel_size40=%d kernel_size0=%d mixed_mask=%d", vm_async_short,
           vm_kernel_size40, vm_kernel_size0, vm_mixed_mask);
  return NULL;
}

/* vmnull's streams and events: tokens, all work done when its call returns. */
static TsrError* vm_token(void** out) {
  *out = malloc(1);
  return *out != NULL ? NULL : tsrtest_error(TSR_ERROR_OUT_OF_MEMORY, "vmslots: out of memory");
}
static TsrError* vm_stream_create(void* c, int32_t i, TsrStream* s) { (void)c; (void)i; return vm_token((void**)s); }
static TsrError* vm_stream_destroy(void* c, int32_t i, TsrStream s) { (void)c; (void)i; free(s); return NULL; }
static TsrError* vm_stream_sync(void* c, int32_t i, TsrStream s) { (void)c; (void)i; (void)s; return NULL; }
static TsrError* vm_stream_wait(void* c, int32_t i, TsrStream s, TsrEvent e) { (void)c; (void)i; (void)s; (void)e; return NULL; }
static TsrError* vm_event_create(void* c, int32_t i, TsrEvent* e) { (void)c; (void)i; return vm_token((void**)e); }
static TsrError* vm_event_destroy(void* c, int32_t i, TsrEvent e) { (void)c; (void)i; free(e); return NULL; }
static TsrError* vm_event_record(void* c, int32_t i, TsrEvent e, TsrStream s) { (void)c; (void)i; (void)e; (void)s; return NULL; }
static TsrError* vm_event_query(void* c, int32_t i, TsrEvent e, int32_t* done) { (void)c; (void)i; (void)e; *done = 1; return NULL; }
static TsrError* vm_event_sync(void* c, int32_t i, TsrEvent e) { (void)c; (void)i; (void)e; return NULL; }
static TsrError* vm_device_sync(void* c, int32_t i) { (void)c; (void)i; return NULL; }

static TsrError* vm_fill(const TsrKernelCall* call) {
  const DLTensor* t = &call->outputs[0];
  int64_t n = 1, k;
  int32_t d;
  float v;
  if (call->num_args < 2 || call->args[1].tag != TSR_VALUE_FLOAT)
    return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, "vmslots: fill_ takes a float value here");
  v = (float)call->args[1].as.f;
  for (d = 0; d < t->ndim; ++d) {
    if (t->strides[d] != (d + 1 < t->ndim ? t->shape[d + 1] * t->strides[d + 1] : 1) && t->shape[d] > 1)
      return tsrtest_error(TSR_ERROR_UNIMPLEMENTED, "vmslots: fill_ of contiguous tensors only");
    n *= t->shape[d];
  }
  for (k = 0; k < n; ++k) ((float*)t->data)[k] = v;
  return NULL;
}

static int vm_code(TsrError* err) {
  int code;
  if (err == NULL) return 0;
  code = err->code;
  err->destroy(err);
  return code;
}

static TsrError* vm_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc d;
  TsrKernelDesc k;
  TsrError* err;
  const size_t upto_copy = offsetof(TsrDeviceTypeDesc, copy) + sizeof(d.copy);
  (void)state;

  tsrtest_host_memory_device(&d, "vmshort");
  vm_traps_from(&d, upto_copy, sizeof d);
  d.struct_size = upto_copy;
  if ((err = host->register_device_type(host->context, &d)) != NULL) return err;
  d.name = "vmshort_async";
  d.capabilities = TSR_DEVICE_CAP_ASYNC;
  vm_async_short = vm_code(host->register_device_type(host->context, &d));

  tsrtest_host_memory_device(&d, "vmcaps");
  d.capabilities |= ((uint64_t)1 << 40) | ((uint64_t)1 << 63);
  d.describe_device = vm_describe;
  if ((err = host->register_device_type(host->context, &d)) != NULL) return err;

  tsrtest_host_memory_device(&d, "vmnull");
  d.capabilities = TSR_DEVICE_CAP_ASYNC | TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  d.stream_create = vm_stream_create;
  d.stream_destroy = vm_stream_destroy;
  d.stream_synchronize = vm_stream_sync;
  d.stream_wait_event = vm_stream_wait;
  d.event_create = vm_event_create;
  d.event_destroy = vm_event_destroy;
  d.event_record = vm_event_record;
  d.event_query = vm_event_query;
  d.event_synchronize = vm_event_sync;
  d.device_synchronize = vm_device_sync;
  if ((err = host->register_device_type(host->context, &d)) != NULL) return err;

  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = "fill_";
  k.device_type = "vmshort";
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | ((uint64_t)1 << 40) | ((uint64_t)1 << 63);
  k.fn = vm_fill;
  vm_mixed_mask = vm_code(host->register_kernel(host->context, &k));
  k.op_name = "add";
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  k.struct_size = offsetof(TsrKernelDesc, context);
  vm_kernel_size40 = vm_code(host->register_kernel(host->context, &k));
  k.struct_size = 0;
  vm_kernel_size0 = vm_code(host->register_kernel(host->context, &k));
  return NULL;
}

static const TsrPluginInfo vm_info = {offsetof(TsrPluginInfo, shutdown), {1, TSR_ABI_VERSION_MINOR}, "vm_slots", "0.1",
                                      "short struct sizes and NULL slots", vm_initialize, (void (*)(void*))vm_trap};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &vm_info;
}
