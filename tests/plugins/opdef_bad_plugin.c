/* A plain C99 plugin that makes one malformed register_op call, chosen by the
 * environment variable TSRTEST_OPDEF_BAD_CASE (1, 2, ...), after registering a
 * valid op "opdef_bad::good" with a cpu kernel; case 0 makes only the valid
 * registration. Initialize returns the host's refusal as "code=<code>: <host's
 * message>" (or a message saying the host accepted it), so the load fails and
 * tests/core/plugin_ops_test.cpp checks the message, and that nothing of the
 * plugin — not even the valid op — was kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#define TSRTEST_PREFIX "opdef_bad: "
#include "c_host_memory_device.h"

static TsrError* good_kernel(const TsrKernelCall* call) {
  (void)call;
  return NULL;
}

static TsrError* no_shape(const TsrShapeQuery* q) {
  (void)q;
  return NULL;
}

static TsrOpArg ref(TsrOpArgKind kind, int32_t index) {
  TsrOpArg a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.index = index;
  return a;
}

static void plain(TsrOpDesc* op, const char* schema) {
  memset(op, 0, sizeof *op);
  op->struct_size = sizeof *op;
  op->schema = schema;
  op->shape_rule = TSR_SHAPE_SAME_AS_INPUT;
  op->shape_input = 0;
}

static TsrError* opdef_bad_initialize(const TsrHostApi* host, void** state) {
  const char* which = getenv("TSRTEST_OPDEF_BAD_CASE");
  const int bad = which != NULL ? atoi(which) : 0;
  static const int32_t two_inputs[] = {0, 1};
  static const int32_t second[] = {1};
  TsrOpDesc op;
  TsrKernelDesc k;
  TsrOpArg args[2];
  TsrDerivativeStep step;
  TsrError* err;
  char text[1200];
  (void)state;
  (void)tsrtest_host_memory_device; /* the shared header's device: not needed here */

  plain(&op, "opdef_bad::good(Tensor self, int k=1) -> Tensor");
  if ((err = host->register_op(host->context, &op)) != NULL) return err;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = "opdef_bad::good";
  k.device_type = "cpu";
  k.dtype_mask = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  k.fn = &good_kernel;
  if ((err = host->register_kernel(host->context, &k)) != NULL) return err;

  switch (bad) {
    case 0: return NULL;
    case 1: plain(&op, "opdef_bad::x(Tensor self -> Tensor"); break;
    case 2: plain(&op, "opdef_bad::x(Tensor self, Widget w) -> Tensor"); break;
    case 3: plain(&op, "other::x(Tensor self) -> Tensor"); break;
    case 4: plain(&op, "x(Tensor self) -> Tensor"); break;
    case 5: /* mul returns one gradient; two inputs want one each */
      plain(&op, "opdef_bad::x(Tensor a, Tensor b) -> Tensor");
      op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
      op.differentiable_inputs = two_inputs;
      op.num_differentiable_inputs = 2;
      op.backward_op = "mul";
      args[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      args[1] = ref(TSR_OP_ARG_INPUT, 1);
      op.backward_args = args;
      op.num_backward_args = 2;
      break;
    case 6:
      plain(&op, "opdef_bad::x(Tensor a) -> Tensor");
      op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
      op.differentiable_inputs = two_inputs;
      op.num_differentiable_inputs = 1;
      op.backward_op = "opdef_bad::nope";
      break;
    case 7: /* a tensor for good's int argument */
      plain(&op, "opdef_bad::x(Tensor a) -> Tensor");
      op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
      op.differentiable_inputs = two_inputs;
      op.num_differentiable_inputs = 1;
      op.backward_op = "opdef_bad::good";
      args[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      args[1] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      op.backward_args = args;
      op.num_backward_args = 2;
      break;
    case 8: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.flags = 1u << 9; break;
    case 9: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.shape_input = 5; break;
    case 10: plain(&op, "opdef_bad::good(Tensor self) -> Tensor"); break;
    case 11: /* step 0 refers to itself */
      plain(&op, "opdef_bad::x(Tensor a) -> Tensor");
      op.derivative = TSR_DERIVATIVE_COMPOSITE;
      op.differentiable_inputs = two_inputs;
      op.num_differentiable_inputs = 1;
      args[0] = ref(TSR_OP_ARG_STEP, 0);
      args[1] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      step.op = "mul";
      step.args = args;
      step.num_args = 2;
      op.steps = &step;
      op.num_steps = 1;
      op.input_grads = args;
      break;
    case 12: plain(&op, "opdef_bad::x(int n) -> Tensor"); op.shape_rule = TSR_SHAPE_BROADCAST; break;
    case 13: plain(&op, "opdef_bad::x(Tensor a) -> int"); break;
    case 14: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.shape_rule = TSR_SHAPE_CALLBACK; break;
    case 15: /* argument 1 is an int */
      plain(&op, "opdef_bad::x(Tensor a, int n) -> Tensor");
      op.derivative = TSR_DERIVATIVE_COMPOSITE;
      op.differentiable_inputs = second;
      op.num_differentiable_inputs = 1;
      op.input_grads = args;
      args[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      break;
    case 16:
      plain(&op, "opdef_bad::x(Tensor a) -> Tensor");
      op.flags = TSR_OP_VIEW;
      op.shape_fn = &no_shape;
      op.derivative = TSR_DERIVATIVE_BACKWARD_OP;
      op.differentiable_inputs = two_inputs;
      op.num_differentiable_inputs = 1;
      op.backward_op = "neg";
      args[0] = ref(TSR_OP_ARG_GRAD_OUTPUT, 0);
      op.backward_args = args;
      op.num_backward_args = 1;
      break;
    case 17: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.struct_size = 64; break;
    case 18: /* a kernel for a view op */
      plain(&op, "opdef_bad::x(Tensor a) -> Tensor");
      op.flags = TSR_OP_VIEW;
      op.shape_rule = TSR_SHAPE_CALLBACK;
      op.shape_fn = &no_shape;
      if ((err = host->register_op(host->context, &op)) != NULL) return err;
      k.op_name = "opdef_bad::x";
      err = host->register_kernel(host->context, &k);
      goto report;
    case 19: plain(&op, "opdef_bad::x(Tensor a, float alpha=abc) -> Tensor"); break;
    case 20: plain(&op, "opdef_bad::x_(Tensor a) -> Tensor"); break;
    case 21: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.output_dtype = -1; break;
    case 22: plain(&op, "opdef_bad::x(Tensor a) -> Tensor"); op.flags = TSR_OP_FIXED_OUTPUT_DTYPE; op.output_dtype = 99; break;
    default: return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, "opdef_bad: unknown case");
  }
  err = host->register_op(host->context, &op);
report:
  if (err == NULL) {
    snprintf(text, sizeof text, "opdef_bad: the host accepted malformed case %d", bad);
    return tsrtest_error(TSR_ERROR_INTERNAL, text);
  }
  snprintf(text, sizeof text, "code=%d: %s", (int)err->code, err->message ? err->message : "(null)");
  err->destroy(err);
  return tsrtest_error(TSR_ERROR_INVALID_ARGUMENT, text);
}

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {1, 3}, "opdef_bad", "1.0",
                                     "malformed register_op calls (a test)", &opdef_bad_initialize, NULL};
  (void)offer;
  return &info;
}
