/* tessera/sdk/kernel_args.h: checked access to a kernel's arguments and
 * outputs, and the helpers a kernel needs, for plugins written in C (C99,
 * header-only, over tessera/abi.h; the C++ twin is kernel_args.hpp).
 *
 * Errors: an accessor returns NULL on success and otherwise a TsrError the
 * kernel returns to the host (ownership passes with it; the host frees it
 * through its destroy slot). Its message names the call, the argument, its
 * index, and what was got and expected, e.g.
 *   "cdev kernel add(float32): argument 'other' (index 1) must be a tensor, got int".
 * TSR_TRY(expr) returns such an error from the calling kernel.
 *
 * Lifetime: the pointers an accessor stores point into the TsrKernelCall and
 * are valid until the kernel returns. Threading: stateless; any thread.
 * Label: define TSR_KERNEL_LABEL before including this header (default
 * "plugin") to name the device or plugin in messages. */
#ifndef TESSERA_SDK_KERNEL_ARGS_H
#define TESSERA_SDK_KERNEL_ARGS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#ifndef TSR_KERNEL_LABEL
#define TSR_KERNEL_LABEL "plugin"
#endif

/* Returns the error of `expr` (a TsrError*) from the calling function, if any. */
#define TSR_TRY(expr)                \
  do {                               \
    TsrError* tsr_try_err_ = (expr); \
    if (tsr_try_err_ != NULL) return tsr_try_err_; \
  } while (0)

/* ---- errors ----------------------------------------------------------------- */

static inline void tsr_error_destroy_(TsrError* self) { free(self); }
static inline void tsr_error_destroy_static_(TsrError* self) { (void)self; }

/* A heap error with a printf-formatted message; a static out-of-memory error
 * when malloc fails (its destroy does nothing). */
static inline TsrError* tsr_error(TsrErrorCode code, const char* format, ...) {
  static TsrError oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, "out of memory while reporting an error",
                         tsr_error_destroy_static_};
  char text[512];
  va_list ap;
  size_t len;
  TsrError* e;
  va_start(ap, format);
  vsnprintf(text, sizeof text, format, ap);
  va_end(ap);
  len = strlen(text);
  e = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  if (e == NULL) return &oom;
  memcpy((char*)(e + 1), text, len + 1);
  e->struct_size = sizeof(TsrError);
  e->code = code;
  e->message = (const char*)(e + 1);
  e->destroy = tsr_error_destroy_;
  return e;
}

/* ---- dtypes ----------------------------------------------------------------- */

static inline const char* tsr_dtype_name(TsrDType d) {
  static const char* const names[] = {"bool",    "uint8",    "int8",    "int16",  "int32",
                                      "int64",   "float16",  "bfloat16", "float32", "float64"};
  return d >= 0 && d < TSR_DTYPE_COUNT_1_0 ? names[d] : "unknown dtype";
}

/* Bytes per element; 0 for an unknown dtype. */
static inline size_t tsr_dtype_size(TsrDType d) {
  static const size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return d >= 0 && d < TSR_DTYPE_COUNT_1_0 ? sizes[d] : 0;
}

/* The DLPack encoding of a dtype (lanes 1); {0, 0, 0} for an unknown one. */
static inline DLDataType tsr_dlpack_dtype(TsrDType d) {
  static const DLDataType table[] = {{kDLBool, 8, 1},  {kDLUInt, 8, 1},   {kDLInt, 8, 1},     {kDLInt, 16, 1},
                                     {kDLInt, 32, 1},  {kDLInt, 64, 1},   {kDLFloat, 16, 1},  {kDLBfloat, 16, 1},
                                     {kDLFloat, 32, 1}, {kDLFloat, 64, 1}};
  DLDataType none = {0, 0, 0};
  return d >= 0 && d < TSR_DTYPE_COUNT_1_0 ? table[d] : none;
}

static inline const char* tsr_tag_name(TsrValueTag tag) {
  switch (tag) {
    case TSR_VALUE_NONE: return "none";
    case TSR_VALUE_TENSOR: return "tensor";
    case TSR_VALUE_INT: return "int";
    case TSR_VALUE_FLOAT: return "float";
    case TSR_VALUE_BOOL: return "bool";
    case TSR_VALUE_INT_LIST: return "int list";
    case TSR_VALUE_DTYPE: return "dtype";
    case TSR_VALUE_STRING: return "string";
    case TSR_VALUE_TENSOR_LIST: return "tensor list";
    default: return "unknown";
  }
}

/* ---- tensors ---------------------------------------------------------------- */

/* Elements of t (1 for a 0-d tensor). */
static inline int64_t tsr_numel(const DLTensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

/* Whether t is row-major contiguous (dims of size 1 may have any stride). */
static inline int tsr_is_contiguous(const DLTensor* t) {
  int64_t expected = 1;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expected) return 0;
    expected *= t->shape[d];
  }
  return 1;
}

/* The element offset (in elements, from t->data) of row-major element `flat`
 * of t's shape: the strided walk every kernel needs (strides may be 0 for
 * broadcast inputs, or negative). */
static inline int64_t tsr_offset(const DLTensor* t, int64_t flat) {
  int64_t off = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] > 1) off += (flat % t->shape[d]) * t->strides[d];
    if (t->shape[d] > 0) flat /= t->shape[d];
  }
  return off;
}

/* ---- arguments -------------------------------------------------------------- */

static inline TsrError* tsr_arg_error_(const TsrKernelCall* call, size_t index, const char* name, const char* want,
                                const TsrValue* got) {
  return tsr_error(TSR_ERROR_INVALID_ARGUMENT, "%s kernel %s(%s): argument '%s' (index %zu) must be %s, got %s",
                   TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), name, index,
                   want, got ? tsr_tag_name(got->tag) : "nothing");
}

/* Argument `index`, or the error naming it when the call has fewer arguments. */
static inline TsrError* tsr_arg(const TsrKernelCall* call, size_t index, const char* name, const TsrValue** out) {
  if (call->args == NULL || index >= call->num_args)
    return tsr_error(TSR_ERROR_INVALID_ARGUMENT, "%s kernel %s(%s): missing argument '%s' (index %zu, got %zu arguments)",
                     TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), name, index,
                     call->num_args);
  *out = &call->args[index]; /* checked: index < num_args */
  return NULL;
}

static inline TsrError* tsr_check_tensor_(const TsrKernelCall* call, const DLTensor* t, const char* name, TsrDType dtype) {
  if (t == NULL || t->ndim < 0 || (t->ndim > 0 && (t->shape == NULL || t->strides == NULL)) ||
      (t->data == NULL && tsr_numel(t) != 0))
    return tsr_error(TSR_ERROR_INVALID_ARGUMENT,
                     "%s kernel %s(%s): tensor '%s' is malformed (NULL data, shape or strides, or negative ndim)",
                     TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), name);
  if (dtype >= 0) {
    DLDataType want = tsr_dlpack_dtype(dtype);
    if (t->dtype.code != want.code || t->dtype.bits != want.bits || t->dtype.lanes != want.lanes)
      return tsr_error(TSR_ERROR_INVALID_ARGUMENT, "%s kernel %s(%s): tensor '%s' has DLPack dtype (%u, %u), expected %s",
                       TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), name,
                       (unsigned)t->dtype.code, (unsigned)t->dtype.bits, tsr_dtype_name(dtype));
  }
  return NULL;
}

/* Tensor argument `index`; when dtype >= 0 its dtype must be that one. */
static inline TsrError* tsr_tensor_arg(const TsrKernelCall* call, size_t index, const char* name, TsrDType dtype,
                                const DLTensor** out) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag != TSR_VALUE_TENSOR) return tsr_arg_error_(call, index, name, "a tensor", v);
  TSR_TRY(tsr_check_tensor_(call, v->as.tensor, name, dtype));
  *out = v->as.tensor;
  return NULL;
}

/* Output `index`; when dtype >= 0 its dtype must be that one. */
static inline TsrError* tsr_output(const TsrKernelCall* call, size_t index, TsrDType dtype, DLTensor** out) {
  if (call->outputs == NULL || index >= call->num_outputs)
    return tsr_error(TSR_ERROR_INVALID_ARGUMENT, "%s kernel %s(%s): missing output %zu (got %zu outputs)",
                     TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), index,
                     call->num_outputs);
  TSR_TRY(tsr_check_tensor_(call, &call->outputs[index], "out", dtype)); /* checked: index < num_outputs */
  *out = &call->outputs[index];                                          /* checked: index < num_outputs */
  return NULL;
}

static inline TsrError* tsr_int_arg(const TsrKernelCall* call, size_t index, const char* name, int64_t* out) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag != TSR_VALUE_INT) return tsr_arg_error_(call, index, name, "an int", v);
  *out = v->as.i;
  return NULL;
}

/* A float, or an int converted. */
static inline TsrError* tsr_float_arg(const TsrKernelCall* call, size_t index, const char* name, double* out) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag == TSR_VALUE_FLOAT) *out = v->as.f;
  else if (v->tag == TSR_VALUE_INT) *out = (double)v->as.i;
  else return tsr_arg_error_(call, index, name, "a float", v);
  return NULL;
}

static inline TsrError* tsr_bool_arg(const TsrKernelCall* call, size_t index, const char* name, int* out) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag != TSR_VALUE_BOOL) return tsr_arg_error_(call, index, name, "a bool", v);
  *out = v->as.b != 0;
  return NULL;
}

/* A scalar (INT, FLOAT or BOOL) as a double, and as an int64 (exact for INT and BOOL). */
static inline TsrError* tsr_scalar_arg(const TsrKernelCall* call, size_t index, const char* name, double* as_double,
                                int64_t* as_int) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  switch (v->tag) {
    case TSR_VALUE_INT: *as_double = (double)v->as.i, *as_int = v->as.i; return NULL;
    case TSR_VALUE_BOOL: *as_double = v->as.b != 0, *as_int = v->as.b != 0; return NULL;
    case TSR_VALUE_FLOAT: *as_double = v->as.f, *as_int = (int64_t)v->as.f; return NULL;
    default: return tsr_arg_error_(call, index, name, "a scalar (int, float or bool)", v);
  }
}

static inline TsrError* tsr_int_list_arg(const TsrKernelCall* call, size_t index, const char* name, const int64_t** data,
                                  size_t* size) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag != TSR_VALUE_INT_LIST) return tsr_arg_error_(call, index, name, "an int list", v);
  *data = v->as.int_list.data;
  *size = v->as.int_list.size;
  return NULL;
}

static inline TsrError* tsr_string_arg(const TsrKernelCall* call, size_t index, const char* name, const char** out) {
  const TsrValue* v;
  TSR_TRY(tsr_arg(call, index, name, &v));
  if (v->tag != TSR_VALUE_STRING || v->as.string == NULL) return tsr_arg_error_(call, index, name, "a string", v);
  *out = v->as.string;
  return NULL;
}

/* Whether argument `index` was omitted (NONE); 0 when present or absent from the call. */
static inline int tsr_is_none(const TsrKernelCall* call, size_t index) {
  return call->args != NULL && index < call->num_args && call->args[index].tag == TSR_VALUE_NONE; /* checked: index < num_args */
}

/* Every operand has out's shape (the pointwise kernel contract, docs/ops.md). */
static inline TsrError* tsr_check_same_shape(const TsrKernelCall* call, const DLTensor* t, const char* name,
                                      const DLTensor* out) {
  int32_t d;
  int same = t->ndim == out->ndim;
  for (d = 0; same && d < t->ndim; ++d) same = t->shape[d] == out->shape[d];
  if (same) return NULL;
  return tsr_error(TSR_ERROR_INVALID_ARGUMENT, "%s kernel %s(%s): '%s' has %d dims and another shape than the output",
                   TSR_KERNEL_LABEL, call->op_name ? call->op_name : "?", tsr_dtype_name(call->dtype), name,
                   (int)t->ndim);
}

#endif /* TESSERA_SDK_KERNEL_ARGS_H */
