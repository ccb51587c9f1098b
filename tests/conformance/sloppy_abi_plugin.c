/* A plugin that works but breaks the ABI rules the kit checks: it exports a
 * second symbol, links libtessera, and registers its device type with a
 * TsrDeviceTypeDesc.struct_size that ends before the memory_info slot (1.2's)
 * while claiming the current minor version.
 * Its one kernel (neg, float32) is right. */
#define TSRTEST_PREFIX "sloppy_abi: "
#include "../plugins/c_host_memory_device.h"

#include <stddef.h>
#include <stdint.h>

/* The second exported symbol. */
TSR_PLUGIN_EXPORT int sloppy_abi_helper(void);
TSR_PLUGIN_EXPORT int sloppy_abi_helper(void) { return 42; }

static TsrError* neg(const TsrKernelCall* call) {
  const DLTensor* in = call->args[0].as.tensor;
  const DLTensor* out = &call->outputs[0];
  int64_t n = 1, i;
  int32_t d;
  for (d = 0; d < out->ndim; ++d) n *= out->shape[d];
  for (i = 0; i < n; ++i) {
    int64_t rest = i, off_in = 0, off_out = 0;
    for (d = out->ndim - 1; d >= 0; --d) {
      off_in += (rest % out->shape[d]) * in->strides[d];
      off_out += (rest % out->shape[d]) * out->strides[d];
      rest /= out->shape[d];
    }
    ((float*)out->data)[off_out] = -((const float*)in->data)[off_in];
  }
  return NULL;
}

static TsrError* initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc d;
  TsrKernelDesc k;
  TsrError* err;
  (void)state;
  tsrtest_host_memory_device(&d, "sloppy");
  d.struct_size = offsetof(TsrDeviceTypeDesc, memory_info); /* short of the header's, for the current minor */
  err = host->register_device_type(host->context, &d);
  if (err != NULL) return err;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = "neg";
  k.device_type = "sloppy";
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  k.fn = neg;
  return host->register_kernel(host->context, &k);
}

static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR},
                                   "sloppy_abi", "0.1", "breaks the ABI rules the kit checks", initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &info;
}
