/* A plain C99 plugin (abi.h only) that defines new operators through
 * register_op (ABI 1.3), one of each kind, for tests/core/plugin_ops_test.cpp
 * and tests/python/test_plugin_ops.py. Device type "opdef" (host memory);
 * every op has float32 and float64 kernels on "opdef" and on "cpu".
 *
 *   opdef::cube(Tensor self) -> Tensor             x^3; same shape as self; pointwise;
 *                                                  in-place variant; backward op cube_backward
 *   opdef::cube_backward(Tensor grad, Tensor self) -> Tensor
 *                                                  3 self^2 grad; broadcast; composite
 *                                                  derivative (so cube is twice differentiable)
 *   opdef::axpy(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor
 *                                                  x + alpha y; broadcast with promotion;
 *                                                  in-place variant; composite derivative
 *                                                  (binding add's keyword-only alpha);
 *                                                  also int64 kernels on cpu
 *   opdef::sumsq(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
 *                                                  sum of squares; reduction; not differentiable
 *   opdef::minmax(Tensor self) -> (Tensor, Tensor) min and max over the last dim; shape callback
 *   opdef::diagonal(Tensor self) -> Tensor         the main diagonal of a square matrix, a view
 *   opdef::positive(Tensor self) -> Tensor         self > 0 as bool: a fixed output dtype
 *   opdef::misshape(Tensor self, int how) -> Tensor a shape function that breaks the rules
 *                                                  its `how` names (the host's checks)
 *   opdef::overview(Tensor self) -> Tensor         a view reaching past self's storage
 *
 * Built twice: OPDEF_VARIANT=2 gives cube a different description (an int
 * argument), to test that a reload must describe its ops identically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "opdef: "
#include "c_host_memory_device.h"

#ifndef OPDEF_VARIANT
#define OPDEF_VARIANT 1
#endif

/* ---- element access: any strides, float32 or float64 (or int64 for axpy on cpu) ---- */

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

/* Element offset of the linear index i (row-major over t's shape) in t's strides. */
static int64_t offset_of(const DLTensor* t, int64_t i) {
  int64_t off = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    off += (i % t->shape[d]) * t->strides[d];
    i /= t->shape[d];
  }
  return off;
}

static double load(const DLTensor* t, int64_t off, TsrDType dt) {
  if (dt == TSR_DTYPE_FLOAT32) return ((const float*)t->data)[off];
  if (dt == TSR_DTYPE_INT64) return (double)((const int64_t*)t->data)[off];
  return ((const double*)t->data)[off];
}

static void store(const DLTensor* t, int64_t off, TsrDType dt, double v) {
  if (dt == TSR_DTYPE_FLOAT32) ((float*)t->data)[off] = (float)v;
  else if (dt == TSR_DTYPE_INT64) ((int64_t*)t->data)[off] = (int64_t)v;
  else ((double*)t->data)[off] = v;
}

static double number(const TsrValue* v) {
  if (v->tag == TSR_VALUE_FLOAT) return v->as.f;
  if (v->tag == TSR_VALUE_INT) return (double)v->as.i;
  if (v->tag == TSR_VALUE_BOOL) return v->as.b;
  return 0;
}

/* ---- kernels ---- */

static TsrError* cube_kernel(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const DLTensor* out = &call->outputs[0];
  int64_t i, n = numel(out);
  for (i = 0; i < n; ++i) {
    const double v = load(x, offset_of(x, i), call->dtype);
    store(out, offset_of(out, i), call->dtype, v * v * v);
  }
  return NULL;
}

static TsrError* cube_backward_kernel(const TsrKernelCall* call) {
  const DLTensor* g = call->args[0].as.tensor;
  const DLTensor* x = call->args[1].as.tensor;
  const DLTensor* out = &call->outputs[0];
  int64_t i, n = numel(out);
  for (i = 0; i < n; ++i) {
    const double xv = load(x, offset_of(x, i), call->dtype);
    store(out, offset_of(out, i), call->dtype, 3.0 * xv * xv * load(g, offset_of(g, i), call->dtype));
  }
  return NULL;
}

static TsrError* axpy_kernel(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const DLTensor* y = call->args[1].as.tensor;
  const DLTensor* out = &call->outputs[0];
  const double alpha = number(&call->args[2]);
  int64_t i, n = numel(out);
  if (call->args[2].tag != (call->dtype == TSR_DTYPE_INT64 ? TSR_VALUE_INT : TSR_VALUE_FLOAT))
    return tsrtest_error(TSR_ERROR_INTERNAL, "opdef: axpy: alpha arrived with the wrong tag for the dtype");
  for (i = 0; i < n; ++i) {
    const double v = load(x, offset_of(x, i), call->dtype) + alpha * load(y, offset_of(y, i), call->dtype);
    store(out, offset_of(out, i), call->dtype, v);
  }
  return NULL;
}

static TsrError* sumsq_kernel(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const DLTensor* out = &call->outputs[0];
  int reduce[64];
  int64_t out_stride[64];
  int32_t d;
  int64_t i, n = numel(x), m = numel(out), running = 1;
  for (d = 0; d < x->ndim; ++d) reduce[d] = call->args[1].tag == TSR_VALUE_NONE;
  if (call->args[1].tag == TSR_VALUE_INT_LIST) {
    size_t k;
    if (call->args[1].as.int_list.size == 0)
      for (d = 0; d < x->ndim; ++d) reduce[d] = 1;
    for (k = 0; k < call->args[1].as.int_list.size; ++k) {
      int64_t dim = call->args[1].as.int_list.data[k];
      if (dim < 0) dim += x->ndim;
      if (dim >= 0 && dim < x->ndim) reduce[dim] = 1;
    }
  }
  /* out is contiguous: the stride of each kept dim of x in out. */
  for (d = x->ndim - 1; d >= 0; --d) {
    out_stride[d] = reduce[d] ? 0 : running;
    if (!reduce[d]) running *= x->shape[d];
  }
  for (i = 0; i < m; ++i) store(out, i, call->dtype, 0.0);
  for (i = 0; i < n; ++i) {
    int64_t rest = i, o = 0;
    double v;
    for (d = x->ndim - 1; d >= 0; --d) {
      o += (rest % x->shape[d]) * out_stride[d];
      rest /= x->shape[d];
    }
    v = load(x, offset_of(x, i), call->dtype);
    store(out, o, call->dtype, load(out, o, call->dtype) + v * v);
  }
  return NULL;
}

static TsrError* positive_kernel(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const DLTensor* out = &call->outputs[0];
  int64_t i, n = numel(out);
  if (out->dtype.code != kDLBool && !(out->dtype.code == kDLUInt && out->dtype.bits == 8))
    return tsrtest_error(TSR_ERROR_INTERNAL, "opdef: positive: the output is not bool");
  for (i = 0; i < n; ++i) ((uint8_t*)out->data)[offset_of(out, i)] = load(x, offset_of(x, i), call->dtype) > 0;
  return NULL;
}

static TsrError* minmax_kernel(const TsrKernelCall* call) {
  const DLTensor* x = call->args[0].as.tensor;
  const int64_t last = x->shape[x->ndim - 1];
  const int64_t rows = numel(&call->outputs[0]);
  int64_t r, j;
  for (r = 0; r < rows; ++r) {
    double lo = INFINITY, hi = -INFINITY;
    for (j = 0; j < last; ++j) {
      const double v = load(x, offset_of(x, r * last + j), call->dtype);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    store(&call->outputs[0], r, call->dtype, lo);
    store(&call->outputs[1], r, call->dtype, hi);
  }
  return NULL;
}

/* ---- shape functions ---- */

static TsrError* minmax_shape(const TsrShapeQuery* q) {
  const DLTensor* x;
  TsrDType dt;
  TsrError* err;
  if (q->num_args != 1 || q->args[0].tag != TSR_VALUE_TENSOR || q->num_outputs != 2)
    return tsrtest_error(TSR_ERROR_INTERNAL, "opdef: minmax: the query does not match the schema");
  x = q->args[0].as.tensor;
  if (x->data != NULL) return tsrtest_error(TSR_ERROR_INTERNAL, "opdef: minmax: a shape query tensor has data");
  if (x->ndim == 0 || x->shape[x->ndim - 1] == 0)
    return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, "opdef: minmax needs a last dim of size >= 1");
  dt = x->dtype.bits == 32 ? TSR_DTYPE_FLOAT32 : TSR_DTYPE_FLOAT64;
  if ((err = q->set_output(q->handle, 0, dt, x->ndim - 1, x->shape)) != NULL) return err;
  return q->set_output(q->handle, 1, dt, x->ndim - 1, x->shape);
}

static TsrError* diagonal_shape(const TsrShapeQuery* q) {
  const DLTensor* x = q->args[0].as.tensor;
  int64_t n, stride;
  if (x->ndim != 2 || x->shape[0] != x->shape[1])
    return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, "opdef: diagonal needs a square matrix");
  n = x->shape[0];
  stride = x->strides[0] + x->strides[1];
  return q->set_view(q->handle, 1, &n, &stride, 0);
}

/* how: 0 sets nothing, 1 sets output 0 twice, 2 sets output 1 (there is one), 3 an
 * unknown dtype, 4 a negative size, 5 calls set_view (not a view op). */
static TsrError* misshape_shape(const TsrShapeQuery* q) {
  const DLTensor* x = q->args[0].as.tensor;
  const int64_t how = q->args[1].as.i, negative = -1;
  TsrError* err;
  switch (how) {
    case 0: return NULL;
    case 1:
      if ((err = q->set_output(q->handle, 0, TSR_DTYPE_FLOAT32, x->ndim, x->shape)) != NULL) return err;
      return q->set_output(q->handle, 0, TSR_DTYPE_FLOAT32, x->ndim, x->shape);
    case 2: return q->set_output(q->handle, 1, TSR_DTYPE_FLOAT32, x->ndim, x->shape);
    case 3: return q->set_output(q->handle, 0, 99, x->ndim, x->shape);
    case 4: return q->set_output(q->handle, 0, TSR_DTYPE_FLOAT32, 1, &negative);
    default: return q->set_view(q->handle, x->ndim, x->shape, x->strides, 0);
  }
}

static TsrError* overview_shape(const TsrShapeQuery* q) {
  const DLTensor* x = q->args[0].as.tensor;
  const int64_t n = x->shape[0] + 1, stride = 1;  /* one element past the end */
  return q->set_view(q->handle, 1, &n, &stride, 0);
}

/* ---- registration ---- */

#define OPDEF_FLOATS (TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64))

static TsrOpArg ref(TsrOpArgKind kind, int32_t index) {
  TsrOpArg a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.index = index;
  return a;
}

static TsrOpArg constant_float(double v) {
  TsrOpArg a = ref(TSR_OP_ARG_CONSTANT, 0);
  a.constant.tag = TSR_VALUE_FLOAT;
  a.constant.as.f = v;
  return a;
}

static TsrError* kernels(const TsrHostApi* host, const char* op, uint64_t cpu_extra, TsrKernelFn fn) {
  TsrKernelDesc k;
  TsrError* err;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = op;
  k.fn = fn;
  k.device_type = "opdef";
  k.dtype_mask = OPDEF_FLOATS;
  if ((err = host->register_kernel(host->context, &k)) != NULL) return err;
  k.device_type = "cpu";
  k.dtype_mask = OPDEF_FLOATS | cpu_extra;
  return host->register_kernel(host->context, &k);
}

static TsrError* opdef_initialize(const TsrHostApi* host, void** state) {
  TsrDeviceTypeDesc device;
  TsrOpDesc op;
  TsrError* err;
  (void)state;
  if (host->struct_size < offsetof(TsrHostApi, register_op) + sizeof(void*) || host->register_op == NULL)
    return tsrtest_error(TSR_ERROR_VERSION_MISMATCH, "opdef: the host has no register_op (ABI < 1.3)");
  tsrtest_host_memory_device(&device, "opdef");
  if ((err = host->register_device_type(host->context, &device)) != NULL) return err;

  { /* cube_backward first: cube names it as its backward op */
    static const int32_t inputs[] = {0, 1};
    TsrOpArg a[6][2];
    TsrDerivativeStep steps[6];
    TsrOpArg grads[2];
    a[0][0] = ref(TSR_OP_ARG_INPUT, 1), a[0][1] = ref(TSR_OP_ARG_INPUT, 1);        /* s0 = self * self */
    a[1][0] = ref(TSR_OP_ARG_STEP, 0), a[1][1] = constant_float(3.0);              /* s1 = 3 s0 */
    a[2][0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0), a[2][1] = ref(TSR_OP_ARG_STEP, 1);   /* d/dgrad = gg s1 */
    a[3][0] = ref(TSR_OP_ARG_INPUT, 1), a[3][1] = ref(TSR_OP_ARG_INPUT, 0);        /* s3 = self * grad */
    a[4][0] = ref(TSR_OP_ARG_STEP, 3), a[4][1] = constant_float(6.0);              /* s4 = 6 s3 */
    a[5][0] = ref(TSR_OP_ARG_STEP, 4), a[5][1] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);   /* d/dself = s4 gg */
    {
      int k;
      for (k = 0; k < 6; ++k) {
        steps[k].op = "mul";
        steps[k].args = a[k];
        steps[k].num_args = 2;
      }
    }
    grads[0] = ref(TSR_OP_ARG_STEP, 2);
    grads[1] = ref(TSR_OP_ARG_STEP, 5);
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.schema = "opdef::cube_backward(Tensor grad, Tensor self) -> Tensor";
    op.flags = TSR_OP_POINTWISE;
    op.shape_rule = TSR_SHAPE_BROADCAST;
    op.derivative = TSR_DERIVATIVE_COMPOSITE;
    op.differentiable_inputs = inputs;
    op.num_differentiable_inputs = 2;
    op.steps = steps;
    op.num_steps = 6;
    op.input_grads = grads;
    if ((err = host->register_op(host->context, &op)) != NULL) return err;
  }
  { /* cube: backward op cube_backward(grad, self) */
    static const int32_t inputs[] = {0};
    TsrOpArg args[2];
    args[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
    args[1] = ref(TSR_OP_ARG_INPUT, 0);
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
#if OPDEF_VARIANT == 2
    op.schema = "opdef::cube(Tensor self, int unused=0) -> Tensor";
#else
    op.schema = "opdef::cube(Tensor self) -> Tensor";
#endif
    op.flags = TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT;
    op.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
    op.shape_input = 0;
    op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
    op.differentiable_inputs = inputs;
    op.num_differentiable_inputs = 1;
    op.backward_op = "opdef::cube_backward";
    op.backward_args = args;
    op.num_backward_args = 2;
    if ((err = host->register_op(host->context, &op)) != NULL) return err;
  }
  { /* axpy: grad x = grad, grad y = alpha grad, written as add(0, grad, alpha) to
     * bind add's keyword-only alpha by position (steps[0] = grad - grad = 0) */
    static const int32_t inputs[] = {0, 1};
    TsrOpArg a[2][3];
    TsrDerivativeStep step[2];
    TsrOpArg grads[2];
    a[0][0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
    a[0][1] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
    a[1][0] = ref(TSR_OP_ARG_STEP, 0);
    a[1][1] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
    a[1][2] = ref(TSR_OP_ARG_INPUT, 2);
    step[0].op = "sub";
    step[0].args = a[0];
    step[0].num_args = 2;
    step[1].op = "add";
    step[1].args = a[1];
    step[1].num_args = 3;
    grads[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
    grads[1] = ref(TSR_OP_ARG_STEP, 1);
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.schema = "opdef::axpy(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor";
    op.flags = TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT;
    op.shape_rule = TSR_SHAPE_BROADCAST;
    op.derivative = TSR_DERIVATIVE_COMPOSITE;
    op.differentiable_inputs = inputs;
    op.num_differentiable_inputs = 2;
    op.steps = step;
    op.num_steps = 2;
    op.input_grads = grads;
    if ((err = host->register_op(host->context, &op)) != NULL) return err;
  }
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::sumsq(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor";
  op.shape_rule = TSR_SHAPE_REDUCTION;
  op.shape_input = 0;
  op.dims_arg = 1;
  op.keepdim_arg = 2;
  op.derivative = TSR_DERIVATIVE_NONE;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::minmax(Tensor self) -> (Tensor, Tensor)";
  op.shape_rule = TSR_SHAPE_CALLBACK;
  op.shape_input = 0;
  op.shape_fn = &minmax_shape;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::diagonal(Tensor self) -> Tensor";
  op.flags = TSR_OP_VIEW;
  op.shape_rule = TSR_SHAPE_CALLBACK;
  op.shape_input = 0;
  op.shape_fn = &diagonal_shape;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::positive(Tensor self) -> Tensor";
  op.flags = TSR_OP_POINTWISE | TSR_OP_FIXED_OUTPUT_DTYPE;
  op.shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  op.output_dtype = TSR_DTYPE_BOOL;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::misshape(Tensor self, int how) -> Tensor";
  op.shape_rule = TSR_SHAPE_CALLBACK;
  op.shape_input = 0;
  op.shape_fn = &misshape_shape;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.schema = "opdef::overview(Tensor self) -> Tensor";
  op.flags = TSR_OP_VIEW;
  op.shape_rule = TSR_SHAPE_CALLBACK;
  op.shape_input = 0;
  op.shape_fn = &overview_shape;
  if ((err = host->register_op(host->context, &op)) != NULL) return err;

  if ((err = kernels(host, "opdef::misshape", 0, &cube_kernel)) != NULL) return err;
  if ((err = kernels(host, "opdef::positive", 0, &positive_kernel)) != NULL) return err;
  if ((err = kernels(host, "opdef::cube", 0, &cube_kernel)) != NULL) return err;
  if ((err = kernels(host, "opdef::cube_backward", 0, &cube_backward_kernel)) != NULL) return err;
  if ((err = kernels(host, "opdef::axpy", TSR_DTYPE_BIT(TSR_DTYPE_INT64), &axpy_kernel)) != NULL) return err;
  if ((err = kernels(host, "opdef::sumsq", 0, &sumsq_kernel)) != NULL) return err;
  return kernels(host, "opdef::minmax", 0, &minmax_kernel);
}

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {1, 3}, "opdef", "1.0",
                                     "defines new ops through register_op (a test)", &opdef_initialize, NULL};
  (void)offer;
  return &info;
}
