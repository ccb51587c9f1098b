/*
 * abi_manifest.h — every struct field, typedef and constant of <tessera/abi.h>,
 * as an X-macro list. Included (with the TSR_M_* macros defined) by
 *   - abi_layout_dump.c       (C99): prints sizeof/offsetof/type text of each entry,
 *                                    compared against abi_1_0_layout.txt;
 *   - abi_field_types_check.cpp (C++17): static_asserts that each field and
 *                                    typedef has exactly the type written here.
 *
 * When ABI 1.x appends a field to a struct, append a TSR_M_FIELD line at the end
 * of that struct's block here, then append the line the layout test prints to
 * abi_1_0_layout.txt and add a changelog entry to docs/abi.md. Never edit or
 * reorder existing lines: they describe ABI 1.0, which every 1.x core keeps.
 *
 * Macros the includer defines:
 *   TSR_M_STRUCT(S, kind)        start of struct S; kind is `growable` (starts with
 *                                struct_size, grows by appending) or `frozen`
 *                                (TsrVersion, TsrValue: never changes in 1.x)
 *   TSR_M_FIELD(S, path, T)      field S.path (nested paths allowed: as.int_list.data)
 *                                of C type T
 *   TSR_M_FIELD_UNTYPED(S, path, text)  a field whose type has no name (the
 *                                anonymous union/structs of TsrValue); `text` is printed
 *   TSR_M_END(S)                 end of struct S
 *   TSR_M_TYPEDEF(name, T)       typedef `name` is T
 *   TSR_M_CONST(name)            integer constant, frozen value
 *   TSR_M_CONST_MIN(name)        integer constant whose value may only grow
 *                                (TSR_ABI_VERSION_MINOR)
 *   TSR_M_CONST_EXPR(label, expr) integer constant expression (a macro applied)
 *   TSR_M_CONST_STR(name)        string constant
 *
 * The type text of function pointers is written without parameter names; in C++
 * `struct X*` and `X*` are the same type, so plain names are used.
 */

/* ---- frozen value types ------------------------------------------------- */
TSR_M_STRUCT(TsrVersion, frozen)
TSR_M_FIELD(TsrVersion, major, uint32_t)
TSR_M_FIELD(TsrVersion, minor, uint32_t)
TSR_M_END(TsrVersion)

TSR_M_STRUCT(TsrValue, frozen)
TSR_M_FIELD(TsrValue, tag, TsrValueTag)
TSR_M_FIELD(TsrValue, reserved, int32_t)
TSR_M_FIELD_UNTYPED(TsrValue, as, "union")
TSR_M_FIELD(TsrValue, as.tensor, const DLTensor*)
TSR_M_FIELD(TsrValue, as.i, int64_t)
TSR_M_FIELD(TsrValue, as.f, double)
TSR_M_FIELD(TsrValue, as.b, int32_t)
TSR_M_FIELD(TsrValue, as.dtype, TsrDType)
TSR_M_FIELD(TsrValue, as.string, const char*)
TSR_M_FIELD_UNTYPED(TsrValue, as.int_list, "struct")
TSR_M_FIELD(TsrValue, as.int_list.data, const int64_t*)
TSR_M_FIELD(TsrValue, as.int_list.size, size_t)
TSR_M_FIELD_UNTYPED(TsrValue, as.tensor_list, "struct")
TSR_M_FIELD(TsrValue, as.tensor_list.data, const DLTensor* const*)
TSR_M_FIELD(TsrValue, as.tensor_list.size, size_t)
TSR_M_END(TsrValue)

/* ---- growable structs (struct_size first) -------------------------------- */
TSR_M_STRUCT(TsrError, growable)
TSR_M_FIELD(TsrError, struct_size, size_t)
TSR_M_FIELD(TsrError, code, TsrErrorCode)
TSR_M_FIELD(TsrError, message, const char*)
TSR_M_FIELD(TsrError, destroy, void (*)(TsrError*))
TSR_M_END(TsrError)

TSR_M_STRUCT(TsrCopyRequest, growable)
TSR_M_FIELD(TsrCopyRequest, struct_size, size_t)
TSR_M_FIELD(TsrCopyRequest, kind, TsrCopyKind)
TSR_M_FIELD(TsrCopyRequest, dst_device_index, int32_t)
TSR_M_FIELD(TsrCopyRequest, src_device_index, int32_t)
TSR_M_FIELD(TsrCopyRequest, reserved, int32_t)
TSR_M_FIELD(TsrCopyRequest, dst, void*)
TSR_M_FIELD(TsrCopyRequest, src, const void*)
TSR_M_FIELD(TsrCopyRequest, nbytes, size_t)
TSR_M_FIELD(TsrCopyRequest, stream, TsrStream)
TSR_M_END(TsrCopyRequest)

TSR_M_STRUCT(TsrDeviceTypeDesc, growable)
TSR_M_FIELD(TsrDeviceTypeDesc, struct_size, size_t)
TSR_M_FIELD(TsrDeviceTypeDesc, name, const char*)
TSR_M_FIELD(TsrDeviceTypeDesc, dlpack_device_type, int32_t)
TSR_M_FIELD(TsrDeviceTypeDesc, capabilities, uint64_t)
TSR_M_FIELD(TsrDeviceTypeDesc, memory_alignment, size_t)
TSR_M_FIELD(TsrDeviceTypeDesc, context, void*)
TSR_M_FIELD(TsrDeviceTypeDesc, device_count, TsrError* (*)(void*, int32_t*))
TSR_M_FIELD(TsrDeviceTypeDesc, describe_device, TsrError* (*)(void*, int32_t, char*, size_t))
TSR_M_FIELD(TsrDeviceTypeDesc, allocate, TsrError* (*)(void*, int32_t, size_t, TsrStream, void**))
TSR_M_FIELD(TsrDeviceTypeDesc, deallocate, void (*)(void*, int32_t, void*, size_t, TsrStream))
TSR_M_FIELD(TsrDeviceTypeDesc, copy, TsrError* (*)(void*, const TsrCopyRequest*))
TSR_M_FIELD(TsrDeviceTypeDesc, stream_create, TsrError* (*)(void*, int32_t, TsrStream*))
TSR_M_FIELD(TsrDeviceTypeDesc, stream_destroy, TsrError* (*)(void*, int32_t, TsrStream))
TSR_M_FIELD(TsrDeviceTypeDesc, stream_synchronize, TsrError* (*)(void*, int32_t, TsrStream))
TSR_M_FIELD(TsrDeviceTypeDesc, stream_wait_event, TsrError* (*)(void*, int32_t, TsrStream, TsrEvent))
TSR_M_FIELD(TsrDeviceTypeDesc, event_create, TsrError* (*)(void*, int32_t, TsrEvent*))
TSR_M_FIELD(TsrDeviceTypeDesc, event_destroy, TsrError* (*)(void*, int32_t, TsrEvent))
TSR_M_FIELD(TsrDeviceTypeDesc, event_record, TsrError* (*)(void*, int32_t, TsrEvent, TsrStream))
TSR_M_FIELD(TsrDeviceTypeDesc, event_query, TsrError* (*)(void*, int32_t, TsrEvent, int32_t*))
TSR_M_FIELD(TsrDeviceTypeDesc, event_synchronize, TsrError* (*)(void*, int32_t, TsrEvent))
TSR_M_FIELD(TsrDeviceTypeDesc, device_synchronize, TsrError* (*)(void*, int32_t))
/* 1.2 */
TSR_M_FIELD(TsrDeviceTypeDesc, memory_info, TsrError* (*)(void*, int32_t, size_t*, size_t*))
TSR_M_FIELD(TsrDeviceTypeDesc, event_create_flags, TsrError* (*)(void*, int32_t, uint32_t, TsrEvent*))
TSR_M_FIELD(TsrDeviceTypeDesc, event_elapsed_time, TsrError* (*)(void*, int32_t, TsrEvent, TsrEvent, float*))
TSR_M_FIELD(TsrDeviceTypeDesc, va_granularity, TsrError* (*)(void*, int32_t, size_t*))
TSR_M_FIELD(TsrDeviceTypeDesc, va_reserve, TsrError* (*)(void*, int32_t, size_t, void**))
TSR_M_FIELD(TsrDeviceTypeDesc, va_release, void (*)(void*, int32_t, void*, size_t))
TSR_M_FIELD(TsrDeviceTypeDesc, va_map, TsrError* (*)(void*, int32_t, void*, size_t))
TSR_M_FIELD(TsrDeviceTypeDesc, va_unmap, void (*)(void*, int32_t, void*, size_t))
TSR_M_FIELD(TsrDeviceTypeDesc, host_allocate, TsrError* (*)(void*, size_t, void**))
TSR_M_FIELD(TsrDeviceTypeDesc, host_deallocate, void (*)(void*, void*, size_t))
TSR_M_END(TsrDeviceTypeDesc)

TSR_M_STRUCT(TsrKernelCall, growable)
TSR_M_FIELD(TsrKernelCall, struct_size, size_t)
TSR_M_FIELD(TsrKernelCall, op_name, const char*)
TSR_M_FIELD(TsrKernelCall, kernel_context, void*)
TSR_M_FIELD(TsrKernelCall, device_index, int32_t)
TSR_M_FIELD(TsrKernelCall, dtype, TsrDType)
TSR_M_FIELD(TsrKernelCall, stream, TsrStream)
TSR_M_FIELD(TsrKernelCall, args, const TsrValue*)
TSR_M_FIELD(TsrKernelCall, num_args, size_t)
TSR_M_FIELD(TsrKernelCall, outputs, DLTensor*)
TSR_M_FIELD(TsrKernelCall, num_outputs, size_t)
TSR_M_FIELD(TsrKernelCall, handle, TsrCallHandle)
TSR_M_FIELD(TsrKernelCall, allocate_output,
            TsrError* (*)(TsrCallHandle, size_t, TsrDType, int32_t, const int64_t*, DLTensor**))
TSR_M_FIELD(TsrKernelCall, workspace, TsrError* (*)(const TsrKernelCall*, size_t, void**)) /* 1.2 */
TSR_M_END(TsrKernelCall)

TSR_M_STRUCT(TsrKernelDesc, growable)
TSR_M_FIELD(TsrKernelDesc, struct_size, size_t)
TSR_M_FIELD(TsrKernelDesc, op_name, const char*)
TSR_M_FIELD(TsrKernelDesc, device_type, const char*)
TSR_M_FIELD(TsrKernelDesc, dtype_mask, uint64_t)
TSR_M_FIELD(TsrKernelDesc, fn, TsrKernelFn)
TSR_M_FIELD(TsrKernelDesc, context, void*)
TSR_M_END(TsrKernelDesc)

TSR_M_STRUCT(TsrHostApi, growable)
TSR_M_FIELD(TsrHostApi, struct_size, size_t)
TSR_M_FIELD(TsrHostApi, host_version, TsrVersion)
TSR_M_FIELD(TsrHostApi, context, TsrHostContext)
TSR_M_FIELD(TsrHostApi, register_device_type, TsrError* (*)(TsrHostContext, const TsrDeviceTypeDesc*))
TSR_M_FIELD(TsrHostApi, register_kernel, TsrError* (*)(TsrHostContext, const TsrKernelDesc*))
TSR_M_FIELD(TsrHostApi, log, void (*)(TsrHostContext, int32_t, const char*))
TSR_M_FIELD(TsrHostApi, register_op, TsrError* (*)(TsrHostContext, const TsrOpDesc*)) /* 1.3 */
TSR_M_END(TsrHostApi)

TSR_M_STRUCT(TsrHostOffer, growable)
TSR_M_FIELD(TsrHostOffer, struct_size, size_t)
TSR_M_FIELD(TsrHostOffer, min_version, TsrVersion)
TSR_M_FIELD(TsrHostOffer, max_version, TsrVersion)
TSR_M_END(TsrHostOffer)

TSR_M_STRUCT(TsrPluginInfo, growable)
TSR_M_FIELD(TsrPluginInfo, struct_size, size_t)
TSR_M_FIELD(TsrPluginInfo, abi_version, TsrVersion)
TSR_M_FIELD(TsrPluginInfo, name, const char*)
TSR_M_FIELD(TsrPluginInfo, version, const char*)
TSR_M_FIELD(TsrPluginInfo, description, const char*)
TSR_M_FIELD(TsrPluginInfo, initialize, TsrError* (*)(const TsrHostApi*, void**))
TSR_M_FIELD(TsrPluginInfo, shutdown, void (*)(void*))
TSR_M_END(TsrPluginInfo)

/* ---- 1.3: plugin-defined operators ---- */
TSR_M_STRUCT(TsrShapeQuery, growable)
TSR_M_FIELD(TsrShapeQuery, struct_size, size_t)
TSR_M_FIELD(TsrShapeQuery, op_name, const char*)
TSR_M_FIELD(TsrShapeQuery, context, void*)
TSR_M_FIELD(TsrShapeQuery, device_type, const char*)
TSR_M_FIELD(TsrShapeQuery, device_index, int32_t)
TSR_M_FIELD(TsrShapeQuery, reserved, int32_t)
TSR_M_FIELD(TsrShapeQuery, args, const TsrValue*)
TSR_M_FIELD(TsrShapeQuery, num_args, size_t)
TSR_M_FIELD(TsrShapeQuery, num_outputs, size_t)
TSR_M_FIELD(TsrShapeQuery, handle, TsrCallHandle)
TSR_M_FIELD(TsrShapeQuery, set_output, TsrError* (*)(TsrCallHandle, size_t, TsrDType, int32_t, const int64_t*))
TSR_M_FIELD(TsrShapeQuery, set_view, TsrError* (*)(TsrCallHandle, int32_t, const int64_t*, const int64_t*, int64_t))
TSR_M_END(TsrShapeQuery)

TSR_M_STRUCT(TsrOpArg, frozen)
TSR_M_FIELD(TsrOpArg, kind, TsrOpArgKind)
TSR_M_FIELD(TsrOpArg, index, int32_t)
TSR_M_FIELD(TsrOpArg, output, int32_t)
TSR_M_FIELD(TsrOpArg, reserved, int32_t)
TSR_M_FIELD(TsrOpArg, constant, TsrValue)
TSR_M_END(TsrOpArg)

TSR_M_STRUCT(TsrDerivativeStep, frozen)
TSR_M_FIELD(TsrDerivativeStep, op, const char*)
TSR_M_FIELD(TsrDerivativeStep, args, const TsrOpArg*)
TSR_M_FIELD(TsrDerivativeStep, num_args, size_t)
TSR_M_END(TsrDerivativeStep)

TSR_M_STRUCT(TsrOpDesc, growable)
TSR_M_FIELD(TsrOpDesc, struct_size, size_t)
TSR_M_FIELD(TsrOpDesc, schema, const char*)
TSR_M_FIELD(TsrOpDesc, flags, uint32_t)
TSR_M_FIELD(TsrOpDesc, shape_rule, TsrShapeRule)
TSR_M_FIELD(TsrOpDesc, shape_input, int32_t)
TSR_M_FIELD(TsrOpDesc, dims_arg, int32_t)
TSR_M_FIELD(TsrOpDesc, keepdim_arg, int32_t)
TSR_M_FIELD(TsrOpDesc, output_dtype, TsrDType)
TSR_M_FIELD(TsrOpDesc, shape_fn, TsrShapeFn)
TSR_M_FIELD(TsrOpDesc, shape_context, void*)
TSR_M_FIELD(TsrOpDesc, derivative, TsrDerivativeKind)
TSR_M_FIELD(TsrOpDesc, reserved, int32_t)
TSR_M_FIELD(TsrOpDesc, differentiable_inputs, const int32_t*)
TSR_M_FIELD(TsrOpDesc, num_differentiable_inputs, size_t)
TSR_M_FIELD(TsrOpDesc, backward_op, const char*)
TSR_M_FIELD(TsrOpDesc, backward_args, const TsrOpArg*)
TSR_M_FIELD(TsrOpDesc, num_backward_args, size_t)
TSR_M_FIELD(TsrOpDesc, steps, const TsrDerivativeStep*)
TSR_M_FIELD(TsrOpDesc, num_steps, size_t)
TSR_M_FIELD(TsrOpDesc, input_grads, const TsrOpArg*)
TSR_M_END(TsrOpDesc)

/* ---- DLPack types that cross the boundary inside kernel calls ------------
 * Owned by DLPack (whose 1.x keeps them stable); listed so that building
 * against a different dlpack.h that changed them is caught. */
TSR_M_STRUCT(DLDevice, frozen)
TSR_M_FIELD(DLDevice, device_type, DLDeviceType)
TSR_M_FIELD(DLDevice, device_id, int32_t)
TSR_M_END(DLDevice)

TSR_M_STRUCT(DLDataType, frozen)
TSR_M_FIELD(DLDataType, code, uint8_t)
TSR_M_FIELD(DLDataType, bits, uint8_t)
TSR_M_FIELD(DLDataType, lanes, uint16_t)
TSR_M_END(DLDataType)

TSR_M_STRUCT(DLTensor, frozen)
TSR_M_FIELD(DLTensor, data, void*)
TSR_M_FIELD(DLTensor, device, DLDevice)
TSR_M_FIELD(DLTensor, ndim, int32_t)
TSR_M_FIELD(DLTensor, dtype, DLDataType)
TSR_M_FIELD(DLTensor, shape, int64_t*)
TSR_M_FIELD(DLTensor, strides, int64_t*)
TSR_M_FIELD(DLTensor, byte_offset, uint64_t)
TSR_M_END(DLTensor)

/* ---- typedefs ------------------------------------------------------------ */
TSR_M_TYPEDEF(TsrDType, int32_t)
TSR_M_TYPEDEF(TsrErrorCode, int32_t)
TSR_M_TYPEDEF(TsrCopyKind, int32_t)
TSR_M_TYPEDEF(TsrValueTag, int32_t)
TSR_M_TYPEDEF(TsrStream, struct TsrStream_*)
TSR_M_TYPEDEF(TsrEvent, struct TsrEvent_*)
TSR_M_TYPEDEF(TsrCallHandle, struct TsrCallHandle_*)
TSR_M_TYPEDEF(TsrHostContext, struct TsrHostContext_*)
TSR_M_TYPEDEF(TsrKernelFn, TsrError* (*)(const TsrKernelCall*))
TSR_M_TYPEDEF(TsrPluginEntryFn, const TsrPluginInfo* (*)(const TsrHostOffer*))
TSR_M_TYPEDEF(TsrShapeRule, int32_t)       /* 1.3 */
TSR_M_TYPEDEF(TsrOpArgKind, int32_t)       /* 1.3 */
TSR_M_TYPEDEF(TsrDerivativeKind, int32_t)  /* 1.3 */
TSR_M_TYPEDEF(TsrShapeFn, TsrError* (*)(const TsrShapeQuery*)) /* 1.3 */

/* ---- constants ----------------------------------------------------------- */
TSR_M_CONST(TSR_ABI_VERSION_MAJOR)
TSR_M_CONST_MIN(TSR_ABI_VERSION_MINOR)

TSR_M_CONST(TSR_DTYPE_BOOL)
TSR_M_CONST(TSR_DTYPE_UINT8)
TSR_M_CONST(TSR_DTYPE_INT8)
TSR_M_CONST(TSR_DTYPE_INT16)
TSR_M_CONST(TSR_DTYPE_INT32)
TSR_M_CONST(TSR_DTYPE_INT64)
TSR_M_CONST(TSR_DTYPE_FLOAT16)
TSR_M_CONST(TSR_DTYPE_BFLOAT16)
TSR_M_CONST(TSR_DTYPE_FLOAT32)
TSR_M_CONST(TSR_DTYPE_FLOAT64)
TSR_M_CONST(TSR_DTYPE_COUNT_1_0)
TSR_M_CONST_EXPR(TSR_DTYPE_BIT(TSR_DTYPE_BOOL), TSR_DTYPE_BIT(TSR_DTYPE_BOOL))
TSR_M_CONST_EXPR(TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64), TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64))

TSR_M_CONST(TSR_ERROR_INVALID_ARGUMENT)
TSR_M_CONST(TSR_ERROR_OUT_OF_MEMORY)
TSR_M_CONST(TSR_ERROR_UNIMPLEMENTED)
TSR_M_CONST(TSR_ERROR_UNAVAILABLE)
TSR_M_CONST(TSR_ERROR_INTERNAL)
TSR_M_CONST(TSR_ERROR_VERSION_MISMATCH)
TSR_M_CONST(TSR_ERROR_NOT_FOUND)
TSR_M_CONST(TSR_ERROR_ALREADY_EXISTS)
TSR_M_CONST(TSR_ERROR_OUT_OF_RANGE)
TSR_M_CONST(TSR_ERROR_UNKNOWN_DEVICE_TYPE) /* 1.1 */

TSR_M_CONST(TSR_DEVICE_CAP_HOST_ACCESSIBLE)
TSR_M_CONST(TSR_DEVICE_CAP_NO_STORAGE)
TSR_M_CONST(TSR_DEVICE_CAP_ASYNC)
TSR_M_CONST(TSR_DEVICE_CAP_CACHING_ALLOCATOR)
TSR_M_CONST(TSR_EVENT_TIMING) /* 1.2 */

TSR_M_CONST(TSR_COPY_HOST_TO_DEVICE)
TSR_M_CONST(TSR_COPY_DEVICE_TO_HOST)
TSR_M_CONST(TSR_COPY_DEVICE_TO_DEVICE)

TSR_M_CONST(TSR_VALUE_NONE)
TSR_M_CONST(TSR_VALUE_TENSOR)
TSR_M_CONST(TSR_VALUE_INT)
TSR_M_CONST(TSR_VALUE_FLOAT)
TSR_M_CONST(TSR_VALUE_BOOL)
TSR_M_CONST(TSR_VALUE_INT_LIST)
TSR_M_CONST(TSR_VALUE_DTYPE)
TSR_M_CONST(TSR_VALUE_STRING)
TSR_M_CONST(TSR_VALUE_TENSOR_LIST)

TSR_M_CONST(TSR_LOG_DEBUG)
TSR_M_CONST(TSR_LOG_INFO)
TSR_M_CONST(TSR_LOG_WARNING)
TSR_M_CONST(TSR_LOG_ERROR)

TSR_M_CONST_STR(TSR_PLUGIN_ENTRY_SYMBOL)

/* 1.3 */
TSR_M_CONST(TSR_OP_POINTWISE)
TSR_M_CONST(TSR_OP_INPLACE_VARIANT)
TSR_M_CONST(TSR_OP_VIEW)
TSR_M_CONST(TSR_OP_NONDETERMINISTIC)
TSR_M_CONST(TSR_OP_FIXED_OUTPUT_DTYPE)
TSR_M_CONST(TSR_SHAPE_SAME_AS_INPUT)
TSR_M_CONST(TSR_SHAPE_BROADCAST)
TSR_M_CONST(TSR_SHAPE_REDUCTION)
TSR_M_CONST(TSR_SHAPE_CALLBACK)
TSR_M_CONST(TSR_OP_ARG_NONE)
TSR_M_CONST(TSR_OP_ARG_GRAD_OUTPUT)
TSR_M_CONST(TSR_OP_ARG_INPUT)
TSR_M_CONST(TSR_OP_ARG_OUTPUT)
TSR_M_CONST(TSR_OP_ARG_STEP)
TSR_M_CONST(TSR_OP_ARG_CONSTANT)
TSR_M_CONST(TSR_DERIVATIVE_NONE)
TSR_M_CONST(TSR_DERIVATIVE_BACKWARD_OP)
TSR_M_CONST(TSR_DERIVATIVE_COMPOSITE)
