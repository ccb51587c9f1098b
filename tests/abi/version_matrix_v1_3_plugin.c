/*
 * version_matrix_v1_3_plugin.c — a Tessera device plugin written against ABI 1.3.
 *
 * ======================================================================
 *  FROZEN: NEVER EDIT THIS FILE. Not for style, not for a header change,
 *  not to add a feature, not to silence a new compiler warning.
 * ======================================================================
 *
 * It stands for a plugin someone built against ABI 1.3 and shipped. It is
 * compiled against the released 1.3 header, tests/abi/version_matrix_headers/
 * v1_3/tessera/abi.h (never today's). If it stops compiling or its tests fail
 * (tests/abi/version_matrix_test.cpp, the conformance kit), the core broke
 * compatibility with 1.3 plugins: fix the core, not this file.
 *
 * What 1.3 added and this plugin uses (docs/abi.md changelog 1.3):
 *  - TsrHostApi.register_op: the op
 *      vm_frozen_v1_3::scale(Tensor self, float factor=2.0) -> Tensor
 *    (self * factor; same shape as self; pointwise, with an in-place variant;
 *    a composite derivative: grad * factor through the core's mul, the float
 *    argument passed where mul wants a Tensor), with float32 kernels on its
 *    own device and on cpu. In a host older than 1.3 (TsrHostApi.struct_size
 *    short of register_op) it skips the op and its kernels and loads anyway.
 *
 * Device type "vm13": host memory, synchronous, one device; float32 add.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

static void vm13_error_destroy(TsrError* self) { free(self); }
static void vm13_static_error_destroy(TsrError* self) { (void)self; }

static TsrError* vm13_error(TsrErrorCode code, const char* message) {
  static TsrError oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, "vm13: out of memory", vm13_static_error_destroy};
  const size_t len = strlen(message);
  TsrError* e = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  if (e == NULL) return &oom;
  memcpy((char*)(e + 1), message, len + 1);
  e->struct_size = sizeof(TsrError);
  e->code = code;
  e->message = (const char*)(e + 1);
  e->destroy = vm13_error_destroy;
  return e;
}

static TsrError* vm13_device_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}
static TsrError* vm13_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)stream;
  if (index != 0) return vm13_error(TSR_ERROR_OUT_OF_RANGE, "vm13: device index out of range");
  *ptr = malloc(nbytes);
  return *ptr != NULL ? NULL : vm13_error(TSR_ERROR_OUT_OF_MEMORY, "vm13: out of memory");
}
static void vm13_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)nbytes;
  (void)stream;
  free(ptr);
}
static TsrError* vm13_copy(void* context, const TsrCopyRequest* r) {
  (void)context;
  memcpy(r->dst, r->src, r->nbytes);
  return NULL;
}

/* Element offset of row-major index i in t's strides. */
static int64_t vm13_offset(const DLTensor* t, int64_t i) {
  int64_t off = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    off += (i % t->shape[d]) * t->strides[d];
    i /= t->shape[d];
  }
  return off;
}
static int64_t vm13_numel(const DLTensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}
static double vm13_number(const TsrValue* v) {
  return v->tag == TSR_VALUE_FLOAT ? v->as.f : v->tag == TSR_VALUE_INT ? (double)v->as.i : (double)v->as.b;
}

/* add(Tensor self, Tensor other, *, Scalar alpha=1): operands arrive at out's shape. */
static TsrError* vm13_add(const TsrKernelCall* call) {
  const DLTensor* a = call->args[0].as.tensor;
  const DLTensor* b = call->args[1].as.tensor;
  const DLTensor* out = &call->outputs[0];
  const float alpha = (float)vm13_number(&call->args[2]);
  int64_t i, n = vm13_numel(out);
  for (i = 0; i < n; ++i)
    ((float*)out->data)[vm13_offset(out, i)] =
        ((const float*)a->data)[vm13_offset(a, i)] + alpha * ((const float*)b->data)[vm13_offset(b, i)];
  return NULL;
}

/* scale(Tensor self, float factor=2.0) */
static TsrError* vm13_scale(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const DLTensor* out = &call->outputs[0];
  const float factor = (float)vm13_number(&call->args[1]);
  int64_t i, n = vm13_numel(out);
  for (i = 0; i < n; ++i) ((float*)out->data)[vm13_offset(out, i)] = factor * ((const float*)x->data)[vm13_offset(x, i)];
  return NULL;
}

static TsrError* vm13_kernel(const TsrHostApi* host, const char* op, const char* device, TsrKernelFn fn) {
  TsrKernelDesc k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = op;
  k.device_type = device;
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  k.fn = fn;
  return host->register_kernel(host->context, &k);
}

static TsrError* vm13_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc d;
  TsrOpDesc op;
  TsrOpArg args[2];
  TsrDerivativeStep step;
  TsrOpArg grad;
  static const int32_t inputs[1] = {0};
  TsrError* err;
  (void)state;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = "vm13";
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 16;
  d.device_count = vm13_device_count;
  d.allocate = vm13_allocate;
  d.deallocate = vm13_deallocate;
  d.copy = vm13_copy;
  if ((err = host->register_device_type(host->context, &d)) != NULL) return err;
  if ((err = vm13_kernel(host, "add", "vm13", vm13_add)) != NULL) return err;

  /* 1.3: the op, only where the host has register_op (P5). */
  if (host->struct_size < offsetof(TsrHostApi, register_op) + sizeof(void*) || host->register_op == NULL) return NULL;
  memset(args, 0, sizeof args);
  args[0].kind = TSR_OP_ARG_GRAD_OUTPUT;
  args[1].kind = TSR_OP_ARG_INPUT;
  args[1].index = 1;
  step.op = "mul";
  step.args = args;
  step.num_args = 2;
  memset(&grad, 0, sizeof grad);
  grad.kind = TSR_OP_ARG_STEP;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "vm_frozen_v1_3::scale(Tensor self, float factor=2.0) -> Tensor";
  op.flags = TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT;
  op.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  op.shape_input = 0;
  op.dims_arg = -1;
  op.keepdim_arg = -1;
  op.derivative = TSR_DERIVATIVE_COMPOSITE;
  op.differentiable_inputs = inputs;
  op.num_differentiable_inputs = 1;
  op.steps = &step;
  op.num_steps = 1;
  op.input_grads = &grad;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;
  if ((err = vm13_kernel(host, "vm_frozen_v1_3::scale", "vm13", vm13_scale)) != NULL) return err;
  return vm13_kernel(host, "vm_frozen_v1_3::scale", "cpu", vm13_scale);
}

static const TsrPluginInfo vm13_info = {sizeof(TsrPluginInfo), {1, 3}, "vm_frozen_v1_3", "1.3.0",
                                        "a plugin frozen at ABI 1.3 (defines an op)", vm13_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &vm13_info;
}
