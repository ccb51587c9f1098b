/*
 * sdk_c_header_check_c99.c — compiled (not run) by the ctest
 * `abi.sdk_c_header_c99` with the flags of header_check_c99.c: the SDK's C
 * helper header <tessera/sdk/kernel_args.h> must be self-contained, C99 and
 * warning-free, including with only some of its helpers used.
 */
#define TSR_KERNEL_LABEL "check"
#include <tessera/sdk/kernel_args.h>

static TsrError* neg_kernel(const TsrKernelCall* call) {
  const DLTensor* self;
  DLTensor* out;
  int64_t i, n;
  TSR_TRY(tsr_tensor_arg(call, 0, "self", TSR_DTYPE_FLOAT32, &self));
  TSR_TRY(tsr_output(call, 0, TSR_DTYPE_FLOAT32, &out));
  TSR_TRY(tsr_check_same_shape(call, self, "self", out));
  n = tsr_numel(out);
  for (i = 0; i < n; ++i)
    ((float*)out->data)[tsr_offset(out, i)] = -((const float*)self->data)[tsr_offset(self, i)];
  return NULL;
}

TsrKernelFn check_kernel_fn(void);
TsrKernelFn check_kernel_fn(void) { return neg_kernel; }
