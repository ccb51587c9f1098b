/* cdev_plugin.c — a complete Tessera device plugin in C99, built out of tree
 * against the installed package (find_package(Tessera COMPONENTS sdk)): device
 * type "cdev", whose memory is host memory, and a dozen kernels written with
 * the SDK's C helpers (tessera/sdk/kernel_args.h). docs/plugin-guide.md walks
 * through it; `tessera-plugin-test libtessera-cdev.so` passes on it.
 *
 * Kernels (docs/ops.md gives each op's contract): add, sub, mul, neg, abs,
 * square, eq, lt, where, fill_ on int64, float32 and float64; exp and sqrt on
 * float32 and float64. Every operand arrives with the output's shape
 * (broadcast inputs have stride 0, any stride may be negative), so each
 * kernel walks the elements with tsr_offset.
 *
 * And a new op of its own (ABI 1.3, register_op), with kernels on "cdev" and
 * on the built-in "cpu" for float32 and float64:
 *   cdev::axpby(Tensor x, Tensor y, *, float alpha=1.0, float beta=1.0) -> Tensor
 * = alpha x + beta y, x and y broadcast together, dtypes promoted; its
 * derivative is a composite of the core's mul. sdk/example/cdev_demo.cpp
 * calls it and checks its gradients. */
#define TSR_KERNEL_LABEL "cdev"
#include <tessera/sdk/kernel_args.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the device: one device whose memory is the host's -------------------- */

static TsrError* cdev_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}

static TsrError* cdev_describe(void* context, int32_t index, char* buf, size_t size) {
  (void)context;
  (void)index;
  snprintf(buf, size, "cdev: a C99 example device (host memory)");
  return NULL;
}

static TsrError* cdev_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)index;
  (void)stream;
  *ptr = malloc(nbytes > 0 ? nbytes : 1);
  return *ptr != NULL ? NULL : tsr_error(TSR_ERROR_OUT_OF_MEMORY, "cdev: out of memory for %zu bytes", nbytes);
}

static void cdev_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)nbytes;
  (void)stream;
  free(ptr);
}

static TsrError* cdev_copy(void* context, const TsrCopyRequest* r) {
  (void)context;
  memmove(r->dst, r->src, r->nbytes); /* every side is host memory */
  return NULL;
}

/* ---- element access ---------------------------------------------------------- */

/* Element `flat` of t as a double / int64 / the right pointer, by the call's dtype. */
#define AT(T, t, flat) (((T*)(t)->data)[tsr_offset((t), (flat))])

/* int64 arithmetic that wraps instead of overflowing (as the cpu plugin's). */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int64_t wrap_neg(int64_t a) { return (int64_t)(0u - (uint64_t)a); }

/* ---- binary: add and sub (with alpha), mul, eq, lt ---------------------------- */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_EQ, OP_LT } BinaryOp;

static TsrError* binary(const TsrKernelCall* call, BinaryOp op) {
  const DLTensor *a, *b;
  DLTensor* out;
  double alpha = 1;
  int64_t alpha_i = 1, i, n;
  const int compare = op == OP_EQ || op == OP_LT;
  TSR_TRY(tsr_tensor_arg(call, 0, "self", call->dtype, &a));
  TSR_TRY(tsr_tensor_arg(call, 1, "other", call->dtype, &b));
  TSR_TRY(tsr_output(call, 0, compare ? TSR_DTYPE_BOOL : call->dtype, &out));
  TSR_TRY(tsr_check_same_shape(call, a, "self", out));
  TSR_TRY(tsr_check_same_shape(call, b, "other", out));
  if (op == OP_ADD || op == OP_SUB) TSR_TRY(tsr_scalar_arg(call, 2, "alpha", &alpha, &alpha_i));
  if (op == OP_SUB) alpha = -alpha, alpha_i = wrap_neg(alpha_i);
  n = tsr_numel(out);
  for (i = 0; i < n; ++i) {
    switch (call->dtype) {
      case TSR_DTYPE_INT64: {
        const int64_t x = AT(int64_t, a, i), y = AT(int64_t, b, i);
        if (compare) AT(uint8_t, out, i) = (uint8_t)(op == OP_EQ ? x == y : x < y);
        else AT(int64_t, out, i) = op == OP_MUL ? wrap_mul(x, y) : wrap_add(x, wrap_mul(alpha_i, y));
        break;
      }
      case TSR_DTYPE_FLOAT32: {
        const float x = AT(float, a, i), y = AT(float, b, i);
        if (compare) AT(uint8_t, out, i) = (uint8_t)(op == OP_EQ ? x == y : x < y);
        else AT(float, out, i) = op == OP_MUL ? x * y : x + (float)alpha * y;
        break;
      }
      case TSR_DTYPE_FLOAT64: {
        const double x = AT(double, a, i), y = AT(double, b, i);
        if (compare) AT(uint8_t, out, i) = (uint8_t)(op == OP_EQ ? x == y : x < y);
        else AT(double, out, i) = op == OP_MUL ? x * y : x + alpha * y;
        break;
      }
      default:
        return tsr_error(TSR_ERROR_UNIMPLEMENTED, "cdev kernel %s(%s): not registered for this dtype", call->op_name,
                         tsr_dtype_name(call->dtype));
    }
  }
  return NULL;
}

static TsrError* cdev_add(const TsrKernelCall* call) { return binary(call, OP_ADD); }
static TsrError* cdev_sub(const TsrKernelCall* call) { return binary(call, OP_SUB); }
static TsrError* cdev_mul(const TsrKernelCall* call) { return binary(call, OP_MUL); }
static TsrError* cdev_eq(const TsrKernelCall* call) { return binary(call, OP_EQ); }
static TsrError* cdev_lt(const TsrKernelCall* call) { return binary(call, OP_LT); }

/* ---- unary: neg, abs, square, exp, sqrt ------------------------------------------ */

typedef enum { OP_NEG, OP_ABS, OP_SQUARE, OP_EXP, OP_SQRT } UnaryOp;

static double unary_double(UnaryOp op, double x) {
  switch (op) {
    case OP_NEG: return -x;
    case OP_ABS: return fabs(x);
    case OP_SQUARE: return x * x;
    case OP_EXP: return exp(x);
    default: return sqrt(x);
  }
}
static float unary_float(UnaryOp op, float x) {
  switch (op) {
    case OP_NEG: return -x;
    case OP_ABS: return fabsf(x);
    case OP_SQUARE: return x * x;
    case OP_EXP: return expf(x);
    default: return sqrtf(x);
  }
}
static int64_t unary_int(UnaryOp op, int64_t x) {
  switch (op) {
    case OP_NEG: return wrap_neg(x);
    case OP_ABS: return x < 0 ? wrap_neg(x) : x;
    default: return wrap_mul(x, x);
  }
}

static TsrError* unary(const TsrKernelCall* call, UnaryOp op) {
  const DLTensor* a;
  DLTensor* out;
  int64_t i, n;
  TSR_TRY(tsr_tensor_arg(call, 0, "self", call->dtype, &a));
  TSR_TRY(tsr_output(call, 0, call->dtype, &out));
  TSR_TRY(tsr_check_same_shape(call, a, "self", out));
  n = tsr_numel(out);
  for (i = 0; i < n; ++i) {
    if (call->dtype == TSR_DTYPE_FLOAT32) AT(float, out, i) = unary_float(op, AT(float, a, i));
    else if (call->dtype == TSR_DTYPE_FLOAT64) AT(double, out, i) = unary_double(op, AT(double, a, i));
    else AT(int64_t, out, i) = unary_int(op, AT(int64_t, a, i));
  }
  return NULL;
}

static TsrError* cdev_neg(const TsrKernelCall* call) { return unary(call, OP_NEG); }
static TsrError* cdev_abs(const TsrKernelCall* call) { return unary(call, OP_ABS); }
static TsrError* cdev_square(const TsrKernelCall* call) { return unary(call, OP_SQUARE); }
static TsrError* cdev_exp(const TsrKernelCall* call) { return unary(call, OP_EXP); }
static TsrError* cdev_sqrt(const TsrKernelCall* call) { return unary(call, OP_SQRT); }

/* ---- where(condition, self, other) and fill_(self, value) -------------------------- */

static TsrError* cdev_where(const TsrKernelCall* call) {
  const DLTensor *c, *a, *b;
  DLTensor* out;
  int64_t i, n;
  const size_t size = tsr_dtype_size(call->dtype);
  TSR_TRY(tsr_tensor_arg(call, 0, "condition", TSR_DTYPE_BOOL, &c));
  TSR_TRY(tsr_tensor_arg(call, 1, "self", call->dtype, &a));
  TSR_TRY(tsr_tensor_arg(call, 2, "other", call->dtype, &b));
  TSR_TRY(tsr_output(call, 0, call->dtype, &out));
  TSR_TRY(tsr_check_same_shape(call, c, "condition", out));
  n = tsr_numel(out);
  for (i = 0; i < n; ++i) {
    const DLTensor* from = AT(uint8_t, c, i) != 0 ? a : b;
    memcpy((char*)out->data + tsr_offset(out, i) * (int64_t)size,
           (const char*)from->data + tsr_offset(from, i) * (int64_t)size, size);
  }
  return NULL;
}

/* The value as copy_ converts it (docs/ops/shape.md): to an integer by
 * truncation; the core refuses values the dtype cannot hold first. */
static TsrError* cdev_fill(const TsrKernelCall* call) {
  DLTensor* out;
  double v;
  int64_t v_int, i, n;
  TSR_TRY(tsr_output(call, 0, call->dtype, &out));
  TSR_TRY(tsr_scalar_arg(call, 1, "value", &v, &v_int));
  n = tsr_numel(out);
  for (i = 0; i < n; ++i) {
    if (call->dtype == TSR_DTYPE_FLOAT32) AT(float, out, i) = (float)v;
    else if (call->dtype == TSR_DTYPE_FLOAT64) AT(double, out, i) = v;
    else AT(int64_t, out, i) = v_int;
  }
  return NULL;
}

/* ---- a new op: cdev::axpby(x, y, *, alpha, beta) = alpha x + beta y ------------- */

/* The shape rule (TSR_SHAPE_BROADCAST) hands x and y over in the promoted dtype
 * (call->dtype), expanded to out's shape; alpha and beta are FLOAT values. */
static TsrError* cdev_axpby(const TsrKernelCall* call) {
  const DLTensor *x, *y;
  DLTensor* out;
  double alpha, beta;
  int64_t i, n;
  TSR_TRY(tsr_tensor_arg(call, 0, "x", call->dtype, &x));
  TSR_TRY(tsr_tensor_arg(call, 1, "y", call->dtype, &y));
  TSR_TRY(tsr_float_arg(call, 2, "alpha", &alpha));
  TSR_TRY(tsr_float_arg(call, 3, "beta", &beta));
  TSR_TRY(tsr_output(call, 0, call->dtype, &out));
  TSR_TRY(tsr_check_same_shape(call, x, "x", out));
  TSR_TRY(tsr_check_same_shape(call, y, "y", out));
  n = tsr_numel(out);
  for (i = 0; i < n; ++i) {
    if (call->dtype == TSR_DTYPE_FLOAT32) AT(float, out, i) = (float)alpha * AT(float, x, i) + (float)beta * AT(float, y, i);
    else AT(double, out, i) = alpha * AT(double, x, i) + beta * AT(double, y, i);
  }
  return NULL;
}

/* ---- registration --------------------------------------------------------------- */

static TsrError* register_kernel_on(const TsrHostApi* host, const char* op, const char* device, uint64_t mask,
                                    TsrKernelFn fn) {
  TsrKernelDesc k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op_name = op;
  k.device_type = device;
  k.dtype_mask = mask;
  k.fn = fn;
  return host->register_kernel(host->context, &k);
}

static TsrError* register_kernel(const TsrHostApi* host, const char* op, uint64_t mask, TsrKernelFn fn) {
  return register_kernel_on(host, op, "cdev", mask, fn);
}

/* One TsrOpArg of a derivative: `kind` (TSR_OP_ARG_*) and its index. */
static TsrOpArg op_arg(TsrOpArgKind kind, int32_t index) {
  TsrOpArg a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.index = index;
  return a;
}

static TsrError* register_axpby(const TsrHostApi* host) {
  const uint64_t f = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  const int32_t differentiable[2] = {0, 1}; /* x, y */
  TsrOpArg dx_args[2], dy_args[2], grads[2];
  TsrDerivativeStep steps[2];
  TsrOpDesc d;
  /* register_op is ABI 1.3: in an older core the slot is absent (or NULL).
   * Skip the op then; the rest of the plugin works as before. */
  if (host->struct_size < offsetof(TsrHostApi, register_op) + sizeof(host->register_op) || host->register_op == NULL) {
    host->log(host->context, TSR_LOG_INFO, "cdev: this core cannot define operators (ABI < 1.3): cdev::axpby skipped");
    return NULL;
  }
  /* The derivative, a composite of the core op mul(Tensor self, Tensor other):
   *   step 0 = mul(grad, alpha)    (the float alpha becomes a 0-d tensor)
   *   step 1 = mul(grad, beta)
   *   grad of x = step 0, grad of y = step 1.
   * Steps run as ordinary ops, so this is differentiable again (double
   * backward). register_op copies all of it: locals are fine. */
  dx_args[0] = op_arg(TSR_OP_ARG_GRAD_OUTPUT, 0); /* the gradient of output 0 */
  dx_args[1] = op_arg(TSR_OP_ARG_INPUT, 2);       /* forward argument 2: alpha */
  dy_args[0] = op_arg(TSR_OP_ARG_GRAD_OUTPUT, 0);
  dy_args[1] = op_arg(TSR_OP_ARG_INPUT, 3); /* beta */
  steps[0].op = "mul";
  steps[0].args = dx_args;
  steps[0].num_args = 2;
  steps[1].op = "mul";
  steps[1].args = dy_args;
  steps[1].num_args = 2;
  grads[0] = op_arg(TSR_OP_ARG_STEP, 0); /* grad of x: step 0's result */
  grads[1] = op_arg(TSR_OP_ARG_STEP, 1); /* grad of y: step 1's result */

  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.schema = "cdev::axpby(Tensor x, Tensor y, *, float alpha=1.0, float beta=1.0) -> Tensor";
  d.flags = TSR_OP_POINTWISE;
  d.shape_rule = TSR_SHAPE_BROADCAST;
  d.shape_input = -1; /* not used by BROADCAST */
  d.dims_arg = -1;
  d.keepdim_arg = -1;
  d.derivative = TSR_DERIVATIVE_COMPOSITE;
  d.differentiable_inputs = differentiable;
  d.num_differentiable_inputs = 2;
  d.steps = steps;
  d.num_steps = 2;
  d.input_grads = grads;
  TSR_TRY(host->register_op(host->context, &d));
  /* Kernels for the new op, on this plugin's device and on the built-in cpu. */
  TSR_TRY(register_kernel_on(host, "cdev::axpby", "cdev", f, cdev_axpby));
  return register_kernel_on(host, "cdev::axpby", "cpu", f, cdev_axpby);
}

static TsrError* cdev_initialize(const TsrHostApi* host, void** state) {
  const uint64_t f = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  const uint64_t all = f | TSR_DTYPE_BIT(TSR_DTYPE_INT64);
  TsrDeviceTypeDesc d;
  (void)state;
  memset(&d, 0, sizeof d); /* every slot not set is NULL: not provided */
  d.struct_size = sizeof d;
  d.name = "cdev";
  d.dlpack_device_type = 0; /* host memory: 0 and HOST_ACCESSIBLE (abi.h) */
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 16;
  d.device_count = cdev_count;
  d.describe_device = cdev_describe;
  d.allocate = cdev_allocate;
  d.deallocate = cdev_deallocate;
  d.copy = cdev_copy;
  TSR_TRY(host->register_device_type(host->context, &d));
  TSR_TRY(register_kernel(host, "add", all, cdev_add));
  TSR_TRY(register_kernel(host, "sub", all, cdev_sub));
  TSR_TRY(register_kernel(host, "mul", all, cdev_mul));
  TSR_TRY(register_kernel(host, "eq", all, cdev_eq));
  TSR_TRY(register_kernel(host, "lt", all, cdev_lt));
  TSR_TRY(register_kernel(host, "neg", all, cdev_neg));
  TSR_TRY(register_kernel(host, "abs", all, cdev_abs));
  TSR_TRY(register_kernel(host, "square", all, cdev_square));
  TSR_TRY(register_kernel(host, "exp", f, cdev_exp));
  TSR_TRY(register_kernel(host, "sqrt", f, cdev_sqrt));
  TSR_TRY(register_kernel(host, "where", all, cdev_where));
  TSR_TRY(register_kernel(host, "fill_", all, cdev_fill));
  return register_axpby(host);
}

static const TsrPluginInfo cdev_info = {sizeof(TsrPluginInfo), {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR}, "cdev",
                                        "0.1.0", "A C99 example device: host memory, a dozen kernels and the op cdev::axpby",
                                        cdev_initialize, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer; /* the host checks the version and refuses a major it lacks */
  return &cdev_info;
}
