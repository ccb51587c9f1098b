/*
 * version_matrix_v1_1_plugin.c — a Tessera device plugin written against ABI 1.1.
 *
 * ======================================================================
 *  FROZEN: NEVER EDIT THIS FILE. Not for style, not for a header change,
 *  not to add a feature, not to silence a new compiler warning.
 * ======================================================================
 *
 * It stands for a plugin someone built against ABI 1.1 and shipped. It is
 * compiled against the released 1.1 header, tests/abi/version_matrix_headers/
 * v1_1/tessera/abi.h (never today's), so every sizeof() below is 1.1's. If it
 * stops compiling or its tests fail (tests/abi/version_matrix_test.cpp, the
 * conformance kit), the core broke compatibility with 1.1 plugins: fix the
 * core, not this file.
 *
 * What 1.1 added and this plugin relies on: register_kernel answers
 * TSR_ERROR_UNKNOWN_DEVICE_TYPE (not NOT_FOUND) for a device type no loaded
 * plugin registered, so a 1.1 plugin can tell "the partner plugin is absent"
 * (skip those kernels) from "the core lacks the op" (skip too) and from a
 * host that broke its promise (fail).
 *
 * Device type "vm11": host memory from malloc, one device, synchronous,
 * float32 fill_ and add. When the frozen 1.0 plugin (device type "frozen10")
 * is loaded before it, it adds float64 fill_ and add kernels to frozen10,
 * whose own kernels are float32 only. describe_device of vm11 reports what
 * initialize saw: "vm11: host 1.<n> unknown_op=<code> partner=<code>".
 *
 * Threading: the codes are written once during initialize, before any other
 * function runs; everything else is stateless.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera/abi.h>

#if TSR_ABI_VERSION_MAJOR != 1 || TSR_ABI_VERSION_MINOR != 1
#error "the frozen 1.1 plugin must be built against the released ABI 1.1 header"
#endif

#define VM11_DEVICE "vm11"
#define VM11_PARTNER "frozen10"

static void vm11_error_destroy(TsrError* self) { free(self); }
static void vm11_static_error_destroy(TsrError* self) { (void)self; }
static TsrError vm11_oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, "vm11: out of memory", vm11_static_error_destroy};

static TsrError* vm11_error(TsrErrorCode code, const char* message) {
  size_t len = strlen(message);
  TsrError* err = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  if (err == NULL) return &vm11_oom;
  memcpy((char*)(err + 1), message, len + 1);
  err->struct_size = sizeof(TsrError);
  err->code = code;
  err->message = (const char*)(err + 1);
  err->destroy = vm11_error_destroy;
  return err;
}

/* ---- what initialize saw ---- */
static int vm11_unknown_op_code = -1, vm11_partner_code = -1;
static uint32_t vm11_host_minor;

/* ---- device ---- */
static TsrError* vm11_device_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}
static TsrError* vm11_describe_device(void* context, int32_t index, char* buf, size_t buf_size) {
  (void)context;
  (void)index;
  snprintf(buf, buf_size, "vm11: host 1.%u unknown_op=%d partner=%d", (unsigned)vm11_host_minor,
           vm11_unknown_op_code, vm11_partner_code);
  return NULL;
}
static TsrError* vm11_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)stream;
  if (index != 0) return vm11_error(TSR_ERROR_OUT_OF_RANGE, "vm11: device index out of range");
  *ptr = malloc(nbytes);
  return *ptr != NULL ? NULL : vm11_error(TSR_ERROR_OUT_OF_MEMORY, "vm11: malloc failed");
}
static void vm11_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)nbytes;
  (void)stream;
  free(ptr);
}
static TsrError* vm11_copy(void* context, const TsrCopyRequest* r) {
  (void)context;
  if (r->kind < TSR_COPY_HOST_TO_DEVICE || r->kind > TSR_COPY_DEVICE_TO_DEVICE)
    return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: unknown copy kind");
  memcpy(r->dst, r->src, r->nbytes);
  return NULL;
}

/* ---- kernels: float32 and float64, any strides ---- */
static int vm11_scalar(const TsrValue* v, double* out) {
  switch (v->tag) {
    case TSR_VALUE_INT: *out = (double)v->as.i; return 1;
    case TSR_VALUE_FLOAT: *out = v->as.f; return 1;
    case TSR_VALUE_BOOL: *out = v->as.b ? 1.0 : 0.0; return 1;
    default: return 0;
  }
}

static int vm11_is(const DLTensor* t, TsrDType dtype) {
  const unsigned bits = dtype == TSR_DTYPE_FLOAT64 ? 64u : 32u;
  return t->dtype.code == kDLFloat && t->dtype.bits == bits && t->dtype.lanes == 1;
}

static double vm11_get(const DLTensor* t, int64_t off, TsrDType dt) {
  return dt == TSR_DTYPE_FLOAT64 ? ((const double*)t->data)[off] : (double)((const float*)t->data)[off];
}
static void vm11_set(const DLTensor* t, int64_t off, TsrDType dt, double v) {
  if (dt == TSR_DTYPE_FLOAT64) ((double*)t->data)[off] = v;
  else ((float*)t->data)[off] = (float)v;
}

/* out = a + alpha * b (b NULL: out = alpha), element by element in row-major order. */
static TsrError* vm11_loop(const DLTensor* out, const DLTensor* a, const DLTensor* b, double alpha, TsrDType dt) {
  int64_t index[32] = {0}, total = 1, e, oo = 0, oa = 0, ob = 0;
  int32_t d;
  if (out->ndim > 32) return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: more than 32 dimensions");
  for (d = 0; d < out->ndim; ++d) total *= out->shape[d];
  for (e = 0; e < total; ++e) {
    vm11_set(out, oo, dt, b == NULL ? alpha : vm11_get(a, oa, dt) + alpha * vm11_get(b, ob, dt));
    for (d = out->ndim - 1; d >= 0; --d) {
      if (++index[d] < out->shape[d]) {
        oo += out->strides[d];
        if (b != NULL) oa += a->strides[d], ob += b->strides[d];
        break;
      }
      oo -= (out->shape[d] - 1) * out->strides[d];
      if (b != NULL) oa -= (out->shape[d] - 1) * a->strides[d], ob -= (out->shape[d] - 1) * b->strides[d];
      index[d] = 0;
    }
  }
  return NULL;
}

static TsrError* vm11_fill(const TsrKernelCall* call) {
  double value;
  if (call->num_args < 2 || call->num_outputs < 1 || !vm11_scalar(&call->args[1], &value) ||
      !vm11_is(&call->outputs[0], call->dtype))
    return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: fill_ expects (self, scalar) of the kernel's dtype");
  return vm11_loop(&call->outputs[0], NULL, NULL, value, call->dtype);
}

static TsrError* vm11_add(const TsrKernelCall* call) {
  const DLTensor *out, *a, *b;
  double alpha;
  int32_t d;
  if (call->num_args < 3 || call->num_outputs < 1 || call->args[0].tag != TSR_VALUE_TENSOR ||
      call->args[1].tag != TSR_VALUE_TENSOR || !vm11_scalar(&call->args[2], &alpha))
    return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: add expects (self, other, alpha)");
  out = &call->outputs[0];
  a = call->args[0].as.tensor;
  b = call->args[1].as.tensor;
  if (!vm11_is(out, call->dtype) || !vm11_is(a, call->dtype) || !vm11_is(b, call->dtype) || a->ndim != out->ndim ||
      b->ndim != out->ndim)
    return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: add operands must have the output's dtype and rank");
  for (d = 0; d < out->ndim; ++d)
    if (a->shape[d] != out->shape[d] || b->shape[d] != out->shape[d])
      return vm11_error(TSR_ERROR_INVALID_ARGUMENT, "vm11: add operands must have the output's shape");
  return vm11_loop(out, a, b, alpha, call->dtype);
}

/* ---- registration ---- */
static int vm11_register(const TsrHostApi* host, const char* op, const char* device, TsrDType dt, TsrKernelFn fn) {
  TsrKernelDesc k;
  TsrError* err;
  int code;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = op;
  k.device_type = device;
  k.dtype_mask = TSR_DTYPE_BIT(dt);
  k.fn = fn;
  err = host->register_kernel(host->context, &k);
  if (err == NULL) return 0;
  code = err->code;
  err->destroy(err);
  return code;
}

static TsrError* vm11_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device;
  TsrError* err;
  char text[200];
  (void)state;
  if (host->struct_size < offsetof(TsrHostApi, log) + sizeof(host->log) || host->host_version.major != 1)
    return vm11_error(TSR_ERROR_VERSION_MISMATCH, "vm11: not an ABI 1.x host");
  vm11_host_minor = host->host_version.minor;

  memset(&device, 0, sizeof device);
  device.struct_size = sizeof device; /* 168: 1.1's TsrDeviceTypeDesc */
  device.name = VM11_DEVICE;
  device.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  device.memory_alignment = 8;
  device.device_count = vm11_device_count;
  device.describe_device = vm11_describe_device;
  device.allocate = vm11_allocate;
  device.deallocate = vm11_deallocate;
  device.copy = vm11_copy;
  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err;
  if (vm11_register(host, "fill_", VM11_DEVICE, TSR_DTYPE_FLOAT32, vm11_fill) != 0 ||
      vm11_register(host, "add", VM11_DEVICE, TSR_DTYPE_FLOAT32, vm11_add) != 0)
    return vm11_error(TSR_ERROR_INTERNAL, "vm11: the host refused a kernel for vm11's own device type");

  /* An op of a later core: NOT_FOUND, skipped (P12); a core that knows it may take it. */
  vm11_unknown_op_code = vm11_register(host, "vm11_op_of_a_later_core", VM11_DEVICE, TSR_DTYPE_FLOAT32, vm11_add);
  if (vm11_unknown_op_code != TSR_ERROR_NOT_FOUND && vm11_unknown_op_code != 0) {
    snprintf(text, sizeof text, "vm11: an unknown op got code %d, ABI 1.1 says NOT_FOUND (7)", vm11_unknown_op_code);
    return vm11_error(TSR_ERROR_INTERNAL, text);
  }
  /* The optional partner: absent is UNKNOWN_DEVICE_TYPE in 1.1 (skip), present is 0. */
  vm11_partner_code = vm11_register(host, "fill_", VM11_PARTNER, TSR_DTYPE_FLOAT64, vm11_fill);
  if (vm11_partner_code == 0) {
    vm11_partner_code = vm11_register(host, "add", VM11_PARTNER, TSR_DTYPE_FLOAT64, vm11_add);
    if (vm11_partner_code != 0) return vm11_error(TSR_ERROR_INTERNAL, "vm11: add on frozen10 refused after fill_ was taken");
  } else if (vm11_partner_code != TSR_ERROR_UNKNOWN_DEVICE_TYPE &&
             !(vm11_host_minor == 0 && vm11_partner_code == TSR_ERROR_NOT_FOUND)) { /* a 1.0 host cannot tell (P5) */
    snprintf(text, sizeof text, "vm11: a kernel for the absent device type '" VM11_PARTNER
             "' got code %d, ABI 1.1 says UNKNOWN_DEVICE_TYPE (10)", vm11_partner_code);
    return vm11_error(TSR_ERROR_INTERNAL, text);
  }
  return NULL;
}

static const TsrPluginInfo vm11_info = {sizeof(TsrPluginInfo), {1, 1}, "vm_frozen_v1_1", "1.1.0",
                                        "Frozen ABI 1.1 plugin (tests/abi version matrix)", vm11_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer; /* one version: returned even outside the offer (P3) */
  return &vm11_info;
}
