/* A plain C99 plugin (abi.h only) that calls every host function wrongly before
 * calling it rightly, for the tests of the host's argument checks. In
 * initialize: log with a NULL and a foreign context (the host must not crash);
 * register_device_type and register_kernel with a NULL and a foreign context,
 * a NULL or too-small description, NULL names, and from another thread — each
 * must come back as TSR_ERROR_INVALID_ARGUMENT. Then it registers device type
 * "badcalls" (host memory) with fill_ and nonzero for float32; the nonzero
 * kernel first calls allocate_output with a NULL handle, a foreign pointer and
 * the right handle from another thread (each must be refused), then rightly.
 * Anything the host accepts that it must refuse fails the load or the kernel
 * with a message saying which call it was. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "badcalls: "
#include "c_host_memory_device.h"


/* NULL when `err` is the refusal expected of call `what`; else the error to fail with. */
static TsrError* bad_expect_refusal(TsrError* err, const char* what) {
  char text[200];
  int code;
  if (err == NULL) {
    snprintf(text, sizeof text, "badcalls: the host accepted %s", what);
    return tsrtest_error(TSR_ERROR_INTERNAL, text);
  }
  code = err->code;
  err->destroy(err);
  if (code != TSR_ERROR_INVALID_ARGUMENT) {
    snprintf(text, sizeof text, "badcalls: %s was refused with code %d, not INVALID_ARGUMENT", what, code);
    return tsrtest_error(TSR_ERROR_INTERNAL, text);
  }
  return NULL;
}


static TsrError* bad_fill(const TsrKernelCall* call) {
  const DLTensor* t = &call->outputs[0];
  float value = call->args[1].tag == TSR_VALUE_FLOAT ? (float)call->args[1].as.f
                : call->args[1].tag == TSR_VALUE_INT ? (float)call->args[1].as.i
                                                     : (float)call->args[1].as.b;
  int64_t i, n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  for (i = 0; i < n; ++i) { /* contiguous: the test fills fresh tensors only */
    ((float*)t->data)[i] = value;
  }
  return NULL;
}

struct tsrtest_allocate_args {
  const TsrKernelCall* call;
  TsrError* err;
};
static void* tsrtest_allocate_elsewhere(void* p) {
  struct tsrtest_allocate_args* a = (struct tsrtest_allocate_args*)p;
  const int64_t shape[2] = {0, 1};
  DLTensor* out = NULL;
  a->err = a->call->allocate_output(a->call->handle, 0, TSR_DTYPE_INT64, 2, shape, &out);
  return NULL;
}

/* nonzero of a contiguous 1-d float32 tensor, after three wrong allocate_output calls. */
static TsrError* bad_nonzero(const TsrKernelCall* call) {
  const DLTensor* self = call->args[0].as.tensor;
  DLTensor* out = NULL;
  int64_t shape[2], i, k = 0;
  struct tsrtest_allocate_args elsewhere;
  pthread_t thread;
  TsrError* err;
  const float* x = (const float*)self->data;
  if (self->ndim != 1 || self->strides[0] != 1) return tsrtest_error(TSR_ERROR_UNIMPLEMENTED, "badcalls: 1-d contiguous only");
  for (i = 0; i < self->shape[0]; ++i) k += x[i] != 0.0f;
  shape[0] = k;
  shape[1] = 1;
  err = bad_expect_refusal(call->allocate_output(NULL, 0, TSR_DTYPE_INT64, 2, shape, &out), "allocate_output(NULL handle)");
  if (err != NULL) return err;
  err = bad_expect_refusal(call->allocate_output((TsrCallHandle)(void*)call, 0, TSR_DTYPE_INT64, 2, shape, &out),
                           "allocate_output(a pointer that is not a handle)");
  if (err != NULL) return err;
  elsewhere.call = call;
  elsewhere.err = NULL;
  if (pthread_create(&thread, NULL, tsrtest_allocate_elsewhere, &elsewhere) != 0)
    return tsrtest_error(TSR_ERROR_INTERNAL, "badcalls: pthread_create failed");
  pthread_join(thread, NULL);
  err = bad_expect_refusal(elsewhere.err, "allocate_output from another thread");
  if (err != NULL) return err;
  err = call->allocate_output(call->handle, 0, TSR_DTYPE_INT64, 2, shape, &out);
  if (err != NULL) return err;
  for (i = 0, k = 0; i < self->shape[0]; ++i)
    if (x[i] != 0.0f) ((int64_t*)out->data)[k++] = i;
  return NULL;
}

struct bad_register_args {
  const TsrHostApi* host;
  const TsrDeviceTypeDesc* desc;
  TsrError* err;
};
static void* bad_register_elsewhere(void* p) {
  struct bad_register_args* a = (struct bad_register_args*)p;
  a->err = a->host->register_device_type(a->host->context, a->desc);
  return NULL;
}

static int bad_foreign_object; /* a valid address that is no host context */

static TsrError* bad_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device, small;
  TsrKernelDesc kernel;
  TsrError* err;
  struct bad_register_args elsewhere;
  pthread_t thread;
  TsrHostContext foreign = (TsrHostContext)(void*)&bad_foreign_object;
  (void)state;

  /* log: void, so the host can only survive and say so. */
  host->log(NULL, TSR_LOG_WARNING, "badcalls: log with a NULL context");
  host->log((TsrHostContext)(void*)host, TSR_LOG_WARNING, "badcalls: log with the TsrHostApi as context");
  host->log(host->context, 99, "badcalls: log with level 99");
  host->log(host->context, TSR_LOG_WARNING, NULL);

  tsrtest_host_memory_device(&device, "badcalls");
  memset(&kernel, 0, sizeof kernel);
  kernel.struct_size = sizeof kernel;
  kernel.op_name = "fill_";
  kernel.device_type = "badcalls";
  kernel.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  kernel.fn = bad_fill;

#define BAD_EXPECT(call, what)                        \
  do {                                                \
    err = bad_expect_refusal((call), (what));         \
    if (err != NULL) return err;                      \
  } while (0)
  BAD_EXPECT(host->register_device_type(NULL, &device), "register_device_type(NULL context)");
  BAD_EXPECT(host->register_device_type(foreign, &device), "register_device_type(a foreign context)");
  BAD_EXPECT(host->register_device_type((TsrHostContext)(void*)host, &device), "register_device_type(the TsrHostApi as context)");
  BAD_EXPECT(host->register_device_type(host->context, NULL), "register_device_type(NULL description)");
  small = device;
  small.struct_size = sizeof(size_t);
  BAD_EXPECT(host->register_device_type(host->context, &small), "register_device_type(struct_size 8)");
  small = device;
  small.name = NULL;
  BAD_EXPECT(host->register_device_type(host->context, &small), "register_device_type(NULL name)");
  BAD_EXPECT(host->register_kernel(NULL, &kernel), "register_kernel(NULL context)");
  BAD_EXPECT(host->register_kernel(foreign, &kernel), "register_kernel(a foreign context)");
  BAD_EXPECT(host->register_kernel(host->context, NULL), "register_kernel(NULL description)");

  elsewhere.host = host;
  elsewhere.desc = &device;
  elsewhere.err = NULL;
  if (pthread_create(&thread, NULL, bad_register_elsewhere, &elsewhere) != 0)
    return tsrtest_error(TSR_ERROR_INTERNAL, "badcalls: pthread_create failed");
  pthread_join(thread, NULL);
  BAD_EXPECT(elsewhere.err, "register_device_type from another thread");

  /* And rightly. */
  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err;
  kernel.op_name = NULL;
  BAD_EXPECT(host->register_kernel(host->context, &kernel), "register_kernel(NULL op_name)");
  kernel.op_name = "fill_";
  kernel.device_type = NULL;
  BAD_EXPECT(host->register_kernel(host->context, &kernel), "register_kernel(NULL device_type)");
  kernel.device_type = "badcalls";
  err = host->register_kernel(host->context, &kernel);
  if (err != NULL) return err;
  kernel.op_name = "nonzero";
  kernel.fn = bad_nonzero;
  return host->register_kernel(host->context, &kernel);
#undef BAD_EXPECT
}

static const TsrPluginInfo bad_info = {sizeof(TsrPluginInfo), {1, 0}, "bad_host_calls", "0.1",
                                       "calls host functions wrongly, then rightly", bad_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &bad_info;
}
