/*
 * frozen_v1_0_plugin.c — a Tessera device plugin written against ABI 1.0.
 *
 * ======================================================================
 *  NEVER EDIT THIS FILE. Not for style, not for a header change, not to
 *  add a feature, not to silence a new compiler warning.
 * ======================================================================
 *
 * It stands for a plugin that someone built against ABI 1.0 and shipped.
 * DESIGN.md §2 rule 10 and docs/abi.md promise that such a plugin loads into
 * every later 1.x core; tests/abi/frozen_plugin_test.cpp proves it in every
 * build by loading this plugin (built from this unchanged source) and running
 * tensors through it. If this file stops compiling, or that test fails, then
 * the ABI or the core broke compatibility with 1.0 plugins: fix that, not
 * this file. A later ABI version that wants the same guarantee gets its own
 * frozen plugin in a new folder (frozen_v1_1_plugin/, ...).
 *
 * To behave like a binary built against 1.0 even when compiled against a newer
 * 1.x header, it:
 *   - includes only <tessera/abi.h> (no SDK, no C++: plain C99), and names only
 *     what ABI 1.0 declares;
 *   - states ABI version 1.0 literally, not TSR_ABI_VERSION_MINOR;
 *   - sets every struct_size to the 1.0 size of the struct (the end of its
 *     last 1.0 field), not sizeof() of a possibly larger newer struct;
 *   - reads only 1.0 fields of what the host gives it, after checking the
 *     host's struct_size covers them;
 *   - uses designated initializers, so fields appended later stay zero.
 *
 * What it provides: device type "frozen10" (DLPack kDLExtDev = 12,
 * TSR_DEVICE_CAP_HOST_ACCESSIBLE, one device, memory from malloc, copies with
 * memcpy, synchronous) and float32 kernels for the 1.0 ops "fill_" and "add"
 * following docs/ops.md: same-shape operands with arbitrary strides (in
 * elements, possibly 0 or negative), data at the first element.
 *
 * Threading: no mutable state; every function may run on any thread.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera/abi.h>

/* The size of `type` as ABI 1.0 defines it: the end of its last 1.0 field. */
#define FROZEN_SIZE_1_0(type, last_field) (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

#define FROZEN_DEVICE_TYPE "frozen10"

/* ------------------------------------------------------------------------ */
/* Errors: one malloc block holding the struct and its message.             */
/* ------------------------------------------------------------------------ */

static void frozen_error_destroy(TsrError* self) { free(self); }
static void frozen_static_error_destroy(TsrError* self) { (void)self; }

static TsrError frozen_oom_error = {FROZEN_SIZE_1_0(TsrError, destroy), TSR_ERROR_OUT_OF_MEMORY,
                                    "frozen_v1_0: out of memory while reporting an error",
                                    frozen_static_error_destroy};

static TsrError* frozen_error(TsrErrorCode code, const char* message) {
  size_t len = strlen(message);
  TsrError* err = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  char* text;
  if (err == NULL) return &frozen_oom_error;
  text = (char*)(err + 1);
  memcpy(text, message, len + 1);
  err->struct_size = FROZEN_SIZE_1_0(TsrError, destroy);
  err->code = code;
  err->message = text;
  err->destroy = frozen_error_destroy;
  return err;
}

/* ------------------------------------------------------------------------ */
/* Device type                                                               */
/* ------------------------------------------------------------------------ */

static TsrError* frozen_device_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}

static TsrError* frozen_describe_device(void* context, int32_t index, char* buf, size_t buf_size) {
  (void)context;
  if (index != 0) return frozen_error(TSR_ERROR_OUT_OF_RANGE, "frozen_v1_0: device index out of range (1 device)");
  snprintf(buf, buf_size, "host memory from malloc (frozen ABI 1.0 test plugin)");
  return NULL;
}

static TsrError* frozen_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)stream;
  if (index != 0) return frozen_error(TSR_ERROR_OUT_OF_RANGE, "frozen_v1_0: allocate: device index out of range");
  *ptr = malloc(nbytes > 0 ? nbytes : 1);
  if (*ptr == NULL) return frozen_error(TSR_ERROR_OUT_OF_MEMORY, "frozen_v1_0: malloc failed");
  return NULL;
}

static void frozen_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)nbytes;
  (void)stream;
  free(ptr);
}

static TsrError* frozen_copy(void* context, const TsrCopyRequest* request) {
  (void)context;
  if (request->struct_size < FROZEN_SIZE_1_0(TsrCopyRequest, stream))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: copy request smaller than ABI 1.0's");
  switch (request->kind) {
    case TSR_COPY_HOST_TO_DEVICE:
    case TSR_COPY_DEVICE_TO_HOST:
    case TSR_COPY_DEVICE_TO_DEVICE:
      memcpy(request->dst, request->src, request->nbytes);
      return NULL;
    default:
      return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: unknown copy kind");
  }
}

static TsrError* frozen_device_synchronize(void* context, int32_t index) {
  (void)context;
  (void)index;
  return NULL; /* synchronous device: nothing is ever pending */
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

#define FROZEN_MAX_OPERANDS 3

static int frozen_is_float32(const DLTensor* t) {
  return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static int frozen_same_shape(const DLTensor* a, const DLTensor* b) {
  int32_t d;
  if (a->ndim != b->ndim) return 0;
  for (d = 0; d < a->ndim; ++d)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* Reads a scalar argument (INT, FLOAT or BOOL) as float; 0 if it is none of them. */
static int frozen_scalar(const TsrValue* v, float* out) {
  switch (v->tag) {
    case TSR_VALUE_INT: *out = (float)v->as.i; return 1;
    case TSR_VALUE_FLOAT: *out = (float)v->as.f; return 1;
    case TSR_VALUE_BOOL: *out = v->as.b ? 1.0f : 0.0f; return 1;
    default: return 0;
  }
}

typedef void (*FrozenElementFn)(float* const* elements, float scalar);

/*
 * Calls fn once per element of `count` float32 tensors sharing t[0]'s shape,
 * in row-major order, with pointers to the element of each. Offsets are kept
 * in elements (strides may be 0 or negative), so no pointer ever leaves a
 * tensor's memory.
 */
static TsrError* frozen_for_each(const DLTensor* const* t, int count, FrozenElementFn fn, float scalar) {
  const int32_t ndim = t[0]->ndim;
  const int64_t* shape = t[0]->shape;
  int64_t index_small[16];
  int64_t* index = index_small;
  int64_t offset[FROZEN_MAX_OPERANDS] = {0, 0, 0};
  float* element[FROZEN_MAX_OPERANDS];
  int64_t total = 1, e;
  int32_t d;
  int k;
  for (d = 0; d < ndim; ++d) total *= shape[d];
  if (total == 0) return NULL;
  if (ndim > 16) {
    index = (int64_t*)calloc((size_t)ndim, sizeof(int64_t));
    if (index == NULL) return frozen_error(TSR_ERROR_OUT_OF_MEMORY, "frozen_v1_0: out of memory");
  } else {
    memset(index_small, 0, sizeof index_small);
  }
  for (e = 0; e < total; ++e) {
    for (k = 0; k < count; ++k) element[k] = (float*)t[k]->data + offset[k];
    fn(element, scalar);
    for (d = ndim - 1; d >= 0; --d) { /* odometer: step the last dimension, carry left */
      if (++index[d] < shape[d]) {
        for (k = 0; k < count; ++k) offset[k] += t[k]->strides[d];
        break;
      }
      for (k = 0; k < count; ++k) offset[k] -= (shape[d] - 1) * t[k]->strides[d];
      index[d] = 0;
    }
  }
  if (index != index_small) free(index);
  return NULL;
}

static void frozen_fill_element(float* const* el, float value) { *el[0] = value; }

/* fill_(Tensor(a!) self, Scalar value): outputs[0] is self. */
static TsrError* frozen_fill_kernel(const TsrKernelCall* call) {
  const DLTensor* operands[1];
  float value;
  if (call->dtype != TSR_DTYPE_FLOAT32 || call->num_args < 2 || call->num_outputs < 1)
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: fill_ expects float32 self and a scalar value");
  if (!frozen_scalar(&call->args[1], &value))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: fill_ value must be an int, float or bool");
  operands[0] = &call->outputs[0];
  if (!frozen_is_float32(operands[0]))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: fill_ output is not float32");
  return frozen_for_each(operands, 1, frozen_fill_element, value);
}

static void frozen_add_element(float* const* el, float alpha) { *el[0] = *el[1] + alpha * *el[2]; }

/* add(Tensor self, Tensor other, *, Scalar alpha=1): out = self + alpha * other. */
static TsrError* frozen_add_kernel(const TsrKernelCall* call) {
  const DLTensor* operands[3];
  float alpha;
  if (call->dtype != TSR_DTYPE_FLOAT32 || call->num_args < 3 || call->num_outputs < 1 ||
      call->args[0].tag != TSR_VALUE_TENSOR || call->args[1].tag != TSR_VALUE_TENSOR)
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: add expects float32 (self, other, alpha)");
  if (!frozen_scalar(&call->args[2], &alpha))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: add alpha must be an int, float or bool");
  operands[0] = &call->outputs[0];
  operands[1] = call->args[0].as.tensor;
  operands[2] = call->args[1].as.tensor;
  if (!frozen_is_float32(operands[0]) || !frozen_is_float32(operands[1]) || !frozen_is_float32(operands[2]))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: add operands must be float32");
  if (!frozen_same_shape(operands[0], operands[1]) || !frozen_same_shape(operands[0], operands[2]))
    return frozen_error(TSR_ERROR_INVALID_ARGUMENT, "frozen_v1_0: add operands must have the output's shape");
  return frozen_for_each(operands, 3, frozen_add_element, alpha);
}

/* ------------------------------------------------------------------------ */
/* Registration and the entry point                                          */
/* ------------------------------------------------------------------------ */

static int frozen_state_marker;

static TsrError* frozen_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device = {
      .struct_size = FROZEN_SIZE_1_0(TsrDeviceTypeDesc, device_synchronize),
      .name = FROZEN_DEVICE_TYPE,
      .dlpack_device_type = kDLExtDev,
      .capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE,
      .memory_alignment = 8, /* what C99 malloc guarantees for every LP64 scalar type we store */
      .context = NULL,
      .device_count = frozen_device_count,
      .describe_device = frozen_describe_device,
      .allocate = frozen_allocate,
      .deallocate = frozen_deallocate,
      .copy = frozen_copy,
      .device_synchronize = frozen_device_synchronize,
  };
  TsrKernelDesc fill = {
      .struct_size = FROZEN_SIZE_1_0(TsrKernelDesc, context),
      .op_name = "fill_",
      .device_type = FROZEN_DEVICE_TYPE,
      .dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32),
      .fn = frozen_fill_kernel,
      .context = NULL,
  };
  TsrKernelDesc add = {
      .struct_size = FROZEN_SIZE_1_0(TsrKernelDesc, context),
      .op_name = "add",
      .device_type = FROZEN_DEVICE_TYPE,
      .dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32),
      .fn = frozen_add_kernel,
      .context = NULL,
  };
  TsrError* err;

  if (host->struct_size < FROZEN_SIZE_1_0(TsrHostApi, log))
    return frozen_error(TSR_ERROR_VERSION_MISMATCH, "frozen_v1_0: the host's TsrHostApi is smaller than ABI 1.0's");
  if (host->host_version.major != 1)
    return frozen_error(TSR_ERROR_VERSION_MISMATCH, "frozen_v1_0: host is not ABI 1.x");

  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err; /* the host's error, handed back to the host that owns it */
  err = host->register_kernel(host->context, &fill);
  if (err != NULL) return err;
  err = host->register_kernel(host->context, &add);
  if (err != NULL) return err;
  if (host->log != NULL) host->log(host->context, TSR_LOG_INFO, "frozen_v1_0: registered frozen10, fill_ and add");
  *state = &frozen_state_marker;
  return NULL;
}

static void frozen_shutdown(void* state) { (void)state; }

static const TsrPluginInfo frozen_info = {
    .struct_size = FROZEN_SIZE_1_0(TsrPluginInfo, shutdown),
    .abi_version = {1, 0},
    .name = "frozen_v1_0",
    .version = "1.0.0",
    .description = "Frozen ABI 1.0 plugin (tests/abi): proves 1.0 binaries load into every 1.x core",
    .initialize = frozen_initialize,
    .shutdown = frozen_shutdown,
};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer; /* one version only: returned even outside the offer, so the host can name both */
  return &frozen_info;
}
