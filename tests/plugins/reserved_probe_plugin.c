/* A plugin in plain C99 (abi.h only) that checks what the host hands it against
 * abi.h, for the reserved-field tests: device type "probe" (host memory), and
 * kernels fill_, add, sum (over every dim) and nonzero for float32. Every kernel
 * first checks that each TsrValue's `reserved` is 0 and the call's struct_size
 * covers ABI 1.0's TsrKernelCall; copy checks TsrCopyRequest.reserved; the
 * entry point and initialize check the offer's and the host API's sizes. A
 * violation becomes an error naming the field and the value received, so the
 * test sees it as the op's failure. The kernels compute correct results (the
 * test compares them) so that they provably ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "probe: "
#include "c_host_memory_device.h"


/* Set by the entry point when the offer looks wrong; initialize reports it. */
static char probe_offer_problem[160];

/* Every reserved field and size of a kernel call, or NULL when all is as abi.h says. */
static TsrError* probe_check_call(const TsrKernelCall* call) {
  char text[200];
  size_t i;
  if (call->struct_size < offsetof(TsrKernelCall, allocate_output) + sizeof(call->allocate_output)) {
    snprintf(text, sizeof text, "probe: %s: TsrKernelCall.struct_size is %lu, smaller than ABI 1.0's", call->op_name,
             (unsigned long)call->struct_size);
    return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, text);
  }
  for (i = 0; i < call->num_args; ++i) {
    if (call->args[i].reserved != 0) {
      snprintf(text, sizeof text, "probe: %s: args[%lu].reserved is 0x%x (tag %d), abi.h says 0", call->op_name,
               (unsigned long)i, (unsigned)call->args[i].reserved, (int)call->args[i].tag);
      return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, text);
    }
  }
  return NULL;
}

static int64_t probe_numel(const DLTensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

/* The element `linear` (row-major) of a strided float32 tensor. */
static float* probe_at(const DLTensor* t, int64_t linear) {
  int64_t offset = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    offset += (linear % t->shape[d]) * t->strides[d];
    linear /= t->shape[d];
  }
  return (float*)t->data + offset;
}

static double probe_number(const TsrValue* v) {
  switch (v->tag) {
    case TSR_VALUE_INT: return (double)v->as.i;
    case TSR_VALUE_FLOAT: return v->as.f;
    case TSR_VALUE_BOOL: return (double)v->as.b;
    default: return 0.0;
  }
}

static TsrError* probe_fill(const TsrKernelCall* call) {
  TsrError* err = probe_check_call(call);
  int64_t i, n;
  float value;
  if (err != NULL) return err;
  value = (float)probe_number(&call->args[1]);
  n = probe_numel(&call->outputs[0]);
  for (i = 0; i < n; ++i) *probe_at(&call->outputs[0], i) = value;
  return NULL;
}

static TsrError* probe_add(const TsrKernelCall* call) {
  TsrError* err = probe_check_call(call);
  int64_t i, n;
  float alpha;
  if (err != NULL) return err;
  alpha = (float)probe_number(&call->args[2]);
  n = probe_numel(&call->outputs[0]);
  for (i = 0; i < n; ++i)
    *probe_at(&call->outputs[0], i) = *probe_at(call->args[0].as.tensor, i) + alpha * *probe_at(call->args[1].as.tensor, i);
  return NULL;
}

/* sum over every dim (the test asks for nothing else). */
static TsrError* probe_sum(const TsrKernelCall* call) {
  TsrError* err = probe_check_call(call);
  const DLTensor* self;
  int64_t i, n;
  double total = 0.0;
  if (err != NULL) return err;
  self = call->args[0].as.tensor;
  if (call->args[1].tag != TSR_VALUE_INT_LIST || (int64_t)call->args[1].as.int_list.size != self->ndim)
    return tsrtest_error(TSR_ERROR_UNIMPLEMENTED, "probe: sum reduces over every dim only");
  n = probe_numel(self);
  for (i = 0; i < n; ++i) total += *probe_at(self, i);
  *(float*)call->outputs[0].data = (float)total;
  return NULL;
}

/* nonzero of a 1-d float32 tensor: an [k, 1] int64 output through allocate_output. */
static TsrError* probe_nonzero(const TsrKernelCall* call) {
  TsrError* err = probe_check_call(call);
  const DLTensor* self;
  DLTensor* out = NULL;
  int64_t i, n, k = 0, shape[2];
  if (err != NULL) return err;
  self = call->args[0].as.tensor;
  if (self->ndim != 1) return tsrtest_error(TSR_ERROR_UNIMPLEMENTED, "probe: nonzero of 1-d tensors only");
  n = probe_numel(self);
  for (i = 0; i < n; ++i) k += *probe_at(self, i) != 0.0f;
  shape[0] = k;
  shape[1] = 1;
  err = call->allocate_output(call->handle, 0, TSR_DTYPE_INT64, 2, shape, &out);
  if (err != NULL) return err;
  for (i = 0, k = 0; i < n; ++i)
    if (*probe_at(self, i) != 0.0f) ((int64_t*)out->data)[k++] = i;
  return NULL;
}

static TsrError* probe_copy(void* context, const TsrCopyRequest* r) {
  char text[120];
  if (r->struct_size < offsetof(TsrCopyRequest, stream) + sizeof(r->stream) || r->reserved != 0) {
    snprintf(text, sizeof text, "probe: copy: TsrCopyRequest.reserved is 0x%x (struct_size %lu), abi.h says 0",
             (unsigned)r->reserved, (unsigned long)r->struct_size);
    return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, text);
  }
  return tsrtest_copy(context, r);
}

static TsrError* probe_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device;
  TsrKernelDesc kernel;
  static const char* const ops[] = {"fill_", "add", "sum", "nonzero"};
  TsrKernelFn fns[4];
  TsrError* err;
  size_t i;
  (void)state;
  fns[0] = probe_fill;
  fns[1] = probe_add;
  fns[2] = probe_sum;
  fns[3] = probe_nonzero;
  if (probe_offer_problem[0] != '\0') return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, probe_offer_problem);
  if (host->struct_size < offsetof(TsrHostApi, log) + sizeof(host->log))
    return tsrtest_error(TSR_ERROR_VERSION_MISMATCH, "probe: TsrHostApi.struct_size is smaller than ABI 1.0's");
  tsrtest_host_memory_device(&device, "probe");
  device.copy = probe_copy;
  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err;
  for (i = 0; i < 4; ++i) {
    memset(&kernel, 0, sizeof kernel);
    kernel.struct_size = sizeof kernel;
    kernel.op_name = ops[i];
    kernel.device_type = "probe";
    kernel.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
    kernel.fn = fns[i];
    err = host->register_kernel(host->context, &kernel);
    if (err != NULL) return err;
  }
  return NULL;
}

static const TsrPluginInfo probe_info = {sizeof(TsrPluginInfo), {1, 0}, "reserved_probe", "0.1",
                                         "checks the reserved fields the host writes", probe_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  if (offer->struct_size < sizeof(TsrHostOffer) || offer->min_version.major != 1 || offer->max_version.major != 1)
    snprintf(probe_offer_problem, sizeof probe_offer_problem, "probe: unexpected offer (struct_size %lu)",
             (unsigned long)offer->struct_size);
  return &probe_info;
}
