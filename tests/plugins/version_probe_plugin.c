/* A plain C99 plugin (abi.h only) that reports which error codes the host's
 * register_kernel answers, for the negotiation tests. Built once per ABI minor
 * version it claims (TSRTEST_MINOR: 0, 1, 2, 3 and 7, named vprobe_v1_<minor>). Its
 * initialize registers a device type of its own, then three kernels the host
 * must refuse — an unknown op, an unknown device type, a dtype mask with no
 * dtype the host knows — and fails on purpose with a message listing the codes
 * and the versions it was offered, which the test reads from the PluginError:
 *   "vprobe: offer 1.0-1.3 host 1.3 unknown_op=7 unknown_device_type=10 unknown_dtypes=7 old_desc=0 register_op=0,0,1"
 * old_desc is the code for a device type described with 1.1's struct_size
 * (168 bytes) followed by bytes that would be a partial 1.2 slot group: the
 * host must not read past struct_size, so it accepts (0). register_op (1.3)
 * is tried only by plugins claiming 1.3 or later: the codes of a valid op,
 * a kernel for it, and an op outside the plugin's namespace; "-" for older ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "vprobe: "
#include "c_host_memory_device.h"

#ifndef TSRTEST_MINOR
#error "TSRTEST_MINOR must be defined"
#endif
#define VPROBE_STR2(x) #x
#define VPROBE_STR(x) VPROBE_STR2(x)
#define VPROBE_NAME "vprobe_v1_" VPROBE_STR(TSRTEST_MINOR)

static TsrVersion vprobe_offer_min, vprobe_offer_max;

static TsrError* vprobe_kernel(const TsrKernelCall* call) {
  (void)call;
  return NULL;
}

/* The code register_kernel answers for (op, device type, mask); 0 for success. */
static int vprobe_code(const TsrHostApi* host, const char* op, const char* device_type, uint64_t mask) {
  TsrKernelDesc k;
  TsrError* err;
  int code;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = op;
  k.device_type = device_type;
  k.dtype_mask = mask;
  k.fn = vprobe_kernel;
  err = host->register_kernel(host->context, &k);
  if (err == NULL) return 0;
  code = err->code;
  err->destroy(err);
  return code;
}

/* "a,b,c": the codes of register_op for a valid op, register_kernel for it, and
 * register_op for an op outside the namespace; "-" for plugins before 1.3. */
static void vprobe_register_op(const TsrHostApi* host, char* out, size_t size) {
  int codes[3] = {-1, -1, -1};
  TsrOpDesc op;
  TsrError* err;
  int i;
  if (TSRTEST_MINOR < 3 || host->struct_size < offsetof(TsrHostApi, register_op) + sizeof(void*)) {
    snprintf(out, size, "-");
    return;
  }
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = VPROBE_NAME "::probe(Tensor self) -> Tensor";
  op.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  for (i = 0; i < 3; ++i) {
    if (i == 1) {
      codes[1] = vprobe_code(host, VPROBE_NAME "::probe", VPROBE_NAME, TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32));
      continue;
    }
    if (i == 2) op.schema = "elsewhere::probe(Tensor self) -> Tensor";
    err = host->register_op(host->context, &op);
    codes[i] = err == NULL ? 0 : err->code;
    if (err != NULL) err->destroy(err);
  }
  snprintf(out, size, "%d,%d,%d", codes[0], codes[1], codes[2]);
}

static TsrError* vprobe_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device;
  TsrError* err;
  char text[300];
  char ops[32];
  int old_desc;
  const uint64_t f32 = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  (void)state;
  tsrtest_host_memory_device(&device, VPROBE_NAME);
  err = host->register_device_type(host->context, &device);
  if (err != NULL) return err;
  {
    /* A 1.1-sized description inside a bigger buffer whose tail is garbage. */
    static union {
      TsrDeviceTypeDesc desc;
      unsigned char bytes[sizeof(TsrDeviceTypeDesc)];
    } old;
    tsrtest_host_memory_device(&old.desc, VPROBE_NAME "_old");
    memset(old.bytes + 168, 0, sizeof old.bytes - 168);
    memset(old.bytes + 192, 0xFF, 8); /* where 1.2 put va_granularity: one of five */
    old.desc.struct_size = 168;
    err = host->register_device_type(host->context, &old.desc);
    old_desc = err == NULL ? 0 : err->code;
    if (err != NULL) err->destroy(err);
  }
  vprobe_register_op(host, ops, sizeof ops);
  snprintf(text, sizeof text, "vprobe: offer %u.%u-%u.%u host %u.%u unknown_op=%d unknown_device_type=%d unknown_dtypes=%d old_desc=%d register_op=%s",
           (unsigned)vprobe_offer_min.major, (unsigned)vprobe_offer_min.minor, (unsigned)vprobe_offer_max.major,
           (unsigned)vprobe_offer_max.minor, (unsigned)host->host_version.major, (unsigned)host->host_version.minor,
           vprobe_code(host, "no_such_op", VPROBE_NAME, f32), vprobe_code(host, "add", "no_such_device", f32),
           vprobe_code(host, "add", VPROBE_NAME, ((uint64_t)1) << 40), old_desc, ops);
  return tsrtest_error(TSR_ERROR_INTERNAL, text);
}

static const TsrPluginInfo vprobe_info = {sizeof(TsrPluginInfo), {1, TSRTEST_MINOR}, VPROBE_NAME, "0.1",
                                          "reports register_kernel's error codes", vprobe_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  vprobe_offer_min = offer->min_version;
  vprobe_offer_max = offer->max_version;
  return &vprobe_info;
}
