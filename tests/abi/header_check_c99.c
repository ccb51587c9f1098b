/*
 * header_check_c99.c — compiled (not run) by the ctests `abi.header_c99*` with
 * -std=c99 -Wall -Wextra -Werror -pedantic (and -Wstrict-prototypes -Wundef):
 * <tessera/abi.h> must be self-contained, C99 and warning-free, because plugin
 * authors include it from plain C. It is the only include, on purpose.
 */
#include <tessera/abi.h>

static TsrError* demo_kernel(const TsrKernelCall* call) {
  const TsrValue* first = call->num_args > 0 ? &call->args[0] : NULL;
  if (first != NULL && first->tag == TSR_VALUE_TENSOR && first->as.tensor->ndim < 0) return NULL;
  return NULL;
}

static const TsrPluginInfo* demo_entry(const TsrHostOffer* offer) {
  static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR},
                                     "demo", "0", NULL, NULL, NULL};
  return offer->max_version.major == TSR_ABI_VERSION_MAJOR ? &info : NULL;
}

int tsr_header_check_c99(void);
int tsr_header_check_c99(void) {
  TsrKernelDesc k = {sizeof(TsrKernelDesc), "add", "cpu", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), demo_kernel, NULL};
  TsrDeviceTypeDesc d = {0};
  TsrCopyRequest r = {0};
  TsrPluginEntryFn entry = demo_entry;
  TsrHostOffer offer = {sizeof(TsrHostOffer), {1, 0}, {1, 0}};
  d.struct_size = sizeof d;
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE | TSR_DEVICE_CAP_ASYNC;
  r.kind = TSR_COPY_DEVICE_TO_HOST;
  return (int)(k.dtype_mask != 0) + (int)(d.capabilities != 0) + r.kind + (entry(&offer) != NULL) +
         (int)sizeof(TSR_PLUGIN_ENTRY_SYMBOL);
}
