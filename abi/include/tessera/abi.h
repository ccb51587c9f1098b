/*
 * tessera/abi.h — the Tessera plugin C ABI, version 1.3.
 *
 * This header is the specification of the boundary between the Tessera core
 * (libtessera) and a device plugin (a shared library loaded at run time). It is
 * C99 and depends only on <dlpack/dlpack.h> (DLPack 1.x). docs/abi.md holds the
 * numbered rules and the changelog; where they and this header disagree, this
 * header wins and the disagreement is a bug.
 *
 * Conventions used in every declaration below:
 *  - Ownership: "borrowed" means the callee may use the object only until it
 *    returns; "owned by X" means X frees it; "static" means valid for as long as
 *    the library that produced it stays loaded.
 *  - Errors: a function returning TsrError* returns NULL on success. A non-NULL
 *    error is owned by the receiver, which must call err->destroy(err) exactly
 *    once. Out-parameters are unspecified when an error is returned.
 *  - NULL: pointer parameters are non-NULL unless the text says "nullable".
 *  - Threading: stated per function. "Any thread" means concurrently from
 *    several threads, with no external locking.
 *  - Growth: every struct starts with `size_t struct_size`, set by the producer
 *    to sizeof() of the struct as *it* was compiled. Structs only grow by
 *    appending fields (a minor version bump). A reader never reads a field that
 *    ends beyond struct_size; an absent or NULL function slot means
 *    TSR_ERROR_UNIMPLEMENTED. The two value types TsrVersion and TsrValue are
 *    the exception: they are frozen for all of ABI 1.x and carry no size.
 */
#ifndef TESSERA_ABI_H_
#define TESSERA_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "tessera/abi.h needs DLPack 1.x (dlpack/dlpack.h with DLPACK_MAJOR_VERSION >= 1)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

/** The ABI version this header describes. */
#define TSR_ABI_VERSION_MAJOR 1
#define TSR_ABI_VERSION_MINOR 3

/** An ABI version. Frozen value type (no struct_size). */
typedef struct TsrVersion {
  uint32_t major;
  uint32_t minor;
} TsrVersion;

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

/** Element types. Values are stable for all of ABI 1.x; new types are appended. */
typedef int32_t TsrDType;
#define TSR_DTYPE_BOOL 0     /* 1 byte, 0 or 1; DLPack kDLBool/8 */
#define TSR_DTYPE_UINT8 1    /* DLPack kDLUInt/8 */
#define TSR_DTYPE_INT8 2     /* DLPack kDLInt/8 */
#define TSR_DTYPE_INT16 3    /* DLPack kDLInt/16 */
#define TSR_DTYPE_INT32 4    /* DLPack kDLInt/32 */
#define TSR_DTYPE_INT64 5    /* DLPack kDLInt/64 */
#define TSR_DTYPE_FLOAT16 6  /* IEEE binary16; DLPack kDLFloat/16 */
#define TSR_DTYPE_BFLOAT16 7 /* bfloat16; DLPack kDLBfloat/16 */
#define TSR_DTYPE_FLOAT32 8  /* DLPack kDLFloat/32 */
#define TSR_DTYPE_FLOAT64 9  /* DLPack kDLFloat/64 */
/** Number of dtypes defined by ABI 1.0. */
#define TSR_DTYPE_COUNT_1_0 10
/** The bit of `dtype` in a dtype mask (TsrKernelDesc.dtype_mask). */
#define TSR_DTYPE_BIT(dtype) (((uint64_t)1) << (dtype))

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

typedef int32_t TsrErrorCode;
#define TSR_ERROR_INVALID_ARGUMENT 1 /* bad shapes, dtypes, values */
#define TSR_ERROR_OUT_OF_MEMORY 2    /* an allocation failed */
#define TSR_ERROR_UNIMPLEMENTED 3    /* not supported by this implementation */
#define TSR_ERROR_UNAVAILABLE 4      /* a runtime, driver or device is absent */
#define TSR_ERROR_INTERNAL 5         /* a bug or an unexpected failure */
#define TSR_ERROR_VERSION_MISMATCH 6 /* incompatible ABI versions */
#define TSR_ERROR_NOT_FOUND 7        /* a named thing does not exist */
#define TSR_ERROR_ALREADY_EXISTS 8   /* a name is already registered */
#define TSR_ERROR_OUT_OF_RANGE 9     /* an index or dimension out of range */
/**
 * (1.1) register_kernel named a device type that no loaded plugin registered.
 * Returned only to plugins that implement ABI >= 1.1; a 1.0 plugin gets
 * TSR_ERROR_NOT_FOUND, which in 1.1 means only "this core lacks the op (or
 * every dtype of the mask)" — something a plugin skips, while this is not.
 */
#define TSR_ERROR_UNKNOWN_DEVICE_TYPE 10

/**
 * An error object. Created by whichever side fails; owned by the receiver.
 * Immutable after creation, so it may be handed between threads.
 */
typedef struct TsrError {
  size_t struct_size;
  /** One of TSR_ERROR_*. Unknown codes are treated as TSR_ERROR_INTERNAL. */
  TsrErrorCode code;
  /** NUL-terminated UTF-8 text; owned by the error, valid until destroy. */
  const char* message;
  /**
   * Frees the error and its message. Called exactly once by the receiver.
   * Points into the library that created the error: the host destroys every
   * error a plugin returned before it could unload that plugin.
   */
  void (*destroy)(struct TsrError* self);
} TsrError;

/* ------------------------------------------------------------------------ */
/* Streams and events                                                        */
/* ------------------------------------------------------------------------ */

/**
 * Opaque stream handle, owned by the plugin that created it. NULL denotes the
 * default stream of a device (for synchronous devices, the only stream).
 */
typedef struct TsrStream_* TsrStream;
/** Opaque event handle, owned by the plugin that created it. */
typedef struct TsrEvent_* TsrEvent;

/* ------------------------------------------------------------------------ */
/* Device types                                                              */
/* ------------------------------------------------------------------------ */

/** Device capabilities (TsrDeviceTypeDesc.capabilities). */
/** The memory is ordinary host memory the host may read and write directly. */
#define TSR_DEVICE_CAP_HOST_ACCESSIBLE (((uint64_t)1) << 0)
/**
 * The device holds no bytes (like "meta"): tensors have shapes and dtypes only.
 * The host never calls allocate, copy or kernels for such a device; every op runs
 * its shape rule only. Kernels registered for it are refused.
 */
#define TSR_DEVICE_CAP_NO_STORAGE (((uint64_t)1) << 1)
/** Kernels and copies run asynchronously, ordered by streams. */
#define TSR_DEVICE_CAP_ASYNC (((uint64_t)1) << 2)
/**
 * The plugin lets the host cache its allocations (a caching allocator in the
 * core). The host MAY keep freed blocks and reuse them, on any thread, for
 * requests no larger than the block (it then passes the same, possibly rounded
 * up, size to allocate and deallocate); on an ASYNC device reuse is
 * stream-ordered and the plugin must provide the event functions.
 */
#define TSR_DEVICE_CAP_CACHING_ALLOCATOR (((uint64_t)1) << 3)

/** Direction of a TsrCopyRequest. "host" is memory of a HOST_ACCESSIBLE device. */
typedef int32_t TsrCopyKind;
#define TSR_COPY_HOST_TO_DEVICE 1
#define TSR_COPY_DEVICE_TO_HOST 2
#define TSR_COPY_DEVICE_TO_DEVICE 3 /* both on this device type */

/** A contiguous byte copy, borrowed by TsrDeviceTypeDesc.copy. */
typedef struct TsrCopyRequest {
  size_t struct_size;
  TsrCopyKind kind;
  int32_t dst_device_index; /* ignored for the host side of the copy */
  int32_t src_device_index; /* ignored for the host side of the copy */
  int32_t reserved;         /* 0 */
  void* dst;
  const void* src;
  size_t nbytes; /* > 0 */
  /**
   * Stream of the device side (of dst for DEVICE_TO_DEVICE). The copy is ordered
   * on it; the host synchronizes the stream before reading a DEVICE_TO_HOST
   * result unless it states otherwise.
   */
  TsrStream stream;
} TsrCopyRequest;

/**
 * A device type a plugin registers. Borrowed by register_device_type, which
 * copies what it needs; the function pointers and `context` must stay valid
 * until the plugin's shutdown returns.
 *
 * Every function receives `context` back as its first argument. Unless stated,
 * functions may be called from any thread. A NULL slot means UNIMPLEMENTED; a
 * device type without TSR_DEVICE_CAP_NO_STORAGE must provide allocate,
 * deallocate and copy.
 */
typedef struct TsrDeviceTypeDesc {
  size_t struct_size;
  /**
   * Unique lower-case name, [a-z][a-z0-9_]*, at most 64 characters, e.g. "toy".
   * Borrowed. The names of the built-in plugins' device types ("cpu", "cuda",
   * "meta", "sim") are reserved for them: any other plugin registering one is refused
   * with TSR_ERROR_ALREADY_EXISTS, whatever the load order.
   */
  const char* name;
  /**
   * The DLPack device type of this device's memory (a DLDeviceType value, >= 0),
   * unique among registered types; 0 if the device's tensors cannot be exchanged
   * through DLPack (e.g. "meta", which holds no bytes). Kernels of a device with
   * memory and type 0 see kDLExtDev in their DLTensors' device. kDLCPU, kDLCUDA,
   * kDLCUDAHost and kDLCUDAManaged are reserved for the built-in plugins (cpu,
   * cuda) and refused to others with TSR_ERROR_ALREADY_EXISTS: a device whose
   * memory is host memory registers 0 and TSR_DEVICE_CAP_HOST_ACCESSIBLE.
   */
  int32_t dlpack_device_type;
  /**
   * Bitwise OR of TSR_DEVICE_CAP_*. A host ignores bits it does not know, so a
   * capability added in a later minor version must be safe to ignore.
   */
  uint64_t capabilities;
  /** Guaranteed alignment in bytes of every allocation (a power of two >= 1). */
  size_t memory_alignment;
  /** Plugin-owned, nullable; passed back to every function below. */
  void* context;

  /**
   * Stores the number of devices in *count, 0 to 32768 (device indices are 0 to
   * 32767). If the device runtime is absent, returns TSR_ERROR_UNAVAILABLE whose
   * message says why (the host then lists the type with zero devices and that
   * reason). A negative or larger count is refused the same way: zero devices,
   * with the count as the reason. Called once, at registration; the host caches
   * the count.
   */
  TsrError* (*device_count)(void* context, int32_t* count);
  /**
   * Nullable. Writes a NUL-terminated human-readable description of device
   * `index` (e.g. the product name) into buf (capacity buf_size >= 1),
   * truncating if needed.
   */
  TsrError* (*describe_device)(void* context, int32_t index, char* buf, size_t buf_size);

  /**
   * Allocates nbytes > 0 bytes on device `index`, usable on `stream` (in stream
   * order on async devices). Stores the pointer in *ptr. Returns
   * TSR_ERROR_OUT_OF_MEMORY when the memory is exhausted.
   */
  TsrError* (*allocate)(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr);
  /**
   * Frees memory from allocate (same index and nbytes). On async devices the
   * free is ordered on `stream`. Cannot fail; must not throw.
   */
  void (*deallocate)(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream);
  /** Copies bytes between this device and host memory or within this device type. */
  TsrError* (*copy)(void* context, const TsrCopyRequest* request);

  /** Creates a stream on device index. Nullable for synchronous devices. */
  TsrError* (*stream_create)(void* context, int32_t index, TsrStream* stream);
  /** Destroys a stream from stream_create, after its pending work completes. */
  TsrError* (*stream_destroy)(void* context, int32_t index, TsrStream stream);
  /** Blocks the calling thread until all work queued on stream has finished. */
  TsrError* (*stream_synchronize)(void* context, int32_t index, TsrStream stream);
  /** Makes future work on stream wait until event has completed (no host block). */
  TsrError* (*stream_wait_event)(void* context, int32_t index, TsrStream stream, TsrEvent event);
  /** Creates an event on device index. */
  TsrError* (*event_create)(void* context, int32_t index, TsrEvent* event);
  /** Destroys an event from event_create. */
  TsrError* (*event_destroy)(void* context, int32_t index, TsrEvent event);
  /** Records event at the current end of stream. */
  TsrError* (*event_record)(void* context, int32_t index, TsrEvent event, TsrStream stream);
  /** Stores 1 in *completed if the event's work has finished, else 0. Never blocks. */
  TsrError* (*event_query)(void* context, int32_t index, TsrEvent event, int32_t* completed);
  /** Blocks the calling thread until the event has completed. */
  TsrError* (*event_synchronize)(void* context, int32_t index, TsrEvent event);
  /** Blocks until all work on device index has finished. */
  TsrError* (*device_synchronize)(void* context, int32_t index);

  /* ---- Appended in 1.2 (read only when struct_size covers them) ---- */

  /**
   * Nullable. Stores the bytes of memory free and in total on device index
   * (e.g. cudaMemGetInfo). The host's allocator uses `total` for a per-device
   * memory fraction and in out-of-memory messages. Any thread.
   */
  TsrError* (*memory_info)(void* context, int32_t index, size_t* free_bytes, size_t* total_bytes);
  /**
   * Nullable (then event_create serves every use). Creates an event like
   * event_create, with TSR_EVENT_* flags; unknown flag bits are refused with
   * TSR_ERROR_INVALID_ARGUMENT. Destroyed by event_destroy.
   */
  TsrError* (*event_create_flags)(void* context, int32_t index, uint32_t flags, TsrEvent* event);
  /**
   * Nullable (the device cannot time). Stores in *milliseconds the time from
   * `start` to `end`, both created with TSR_EVENT_TIMING, recorded and
   * completed; TSR_ERROR_INVALID_ARGUMENT otherwise. Any thread.
   */
  TsrError* (*event_elapsed_time)(void* context, int32_t index, TsrEvent start, TsrEvent end, float* milliseconds);

  /*
   * Expandable segments: the five va_* slots together, or none (then the host
   * allocates plain segments). The host reserves address space once per
   * segment and backs it with physical memory granule by granule as the
   * segment grows, so a segment can grow in place instead of a new one being
   * allocated. Sizes and addresses are multiples of the granularity. Any thread.
   */
  /** Stores the physical granule size of device index (a power of two) in *granularity. */
  TsrError* (*va_granularity)(void* context, int32_t index, size_t* granularity);
  /**
   * Reserves nbytes of device address space with no memory behind it and
   * stores its base in *base; TSR_ERROR_OUT_OF_MEMORY when no space is left.
   */
  TsrError* (*va_reserve)(void* context, int32_t index, size_t nbytes, void** base);
  /** Releases a whole reservation from va_reserve, every part of it unmapped. Cannot fail. */
  void (*va_release)(void* context, int32_t index, void* base, size_t nbytes);
  /**
   * Backs [addr, addr + nbytes), inside one reservation and not mapped, with
   * new physical memory readable and writable by the device's kernels and
   * copies; TSR_ERROR_OUT_OF_MEMORY when the device's memory is exhausted
   * (nothing is mapped then).
   */
  TsrError* (*va_map)(void* context, int32_t index, void* addr, size_t nbytes);
  /**
   * Unmaps [addr, addr + nbytes) and frees its physical memory; the range is
   * a union of whole earlier va_map ranges. The host calls it only once the
   * work that used the range has completed. Cannot fail.
   */
  void (*va_unmap)(void* context, int32_t index, void* addr, size_t nbytes);

  /*
   * Pinned host memory: both slots or neither. Page-locked host memory that
   * this device type's copies can read and write asynchronously; the host
   * caches it and hands it out as "cpu" tensors that report is_pinned(). Any
   * thread.
   */
  /** Allocates nbytes > 0 of pinned host memory; TSR_ERROR_OUT_OF_MEMORY when none is left. */
  TsrError* (*host_allocate)(void* context, size_t nbytes, void** ptr);
  /**
   * Frees memory from host_allocate (same nbytes), once no queued copy uses it
   * (the host waits for the events it recorded). Cannot fail.
   */
  void (*host_deallocate)(void* context, void* ptr, size_t nbytes);
} TsrDeviceTypeDesc;

/** Flags of event_create_flags (1.2). */
/** The event records a timestamp usable with event_elapsed_time. */
#define TSR_EVENT_TIMING (((uint32_t)1) << 0)

/* ------------------------------------------------------------------------ */
/* Kernel arguments                                                          */
/* ------------------------------------------------------------------------ */

/** Tags of TsrValue. Values are stable; new tags are appended. */
typedef int32_t TsrValueTag;
#define TSR_VALUE_NONE 0        /* an omitted optional argument */
#define TSR_VALUE_TENSOR 1      /* as.tensor */
#define TSR_VALUE_INT 2         /* as.i */
#define TSR_VALUE_FLOAT 3       /* as.f */
#define TSR_VALUE_BOOL 4        /* as.b (0 or 1) */
#define TSR_VALUE_INT_LIST 5    /* as.int_list */
#define TSR_VALUE_DTYPE 6       /* as.dtype */
#define TSR_VALUE_STRING 7      /* as.string */
#define TSR_VALUE_TENSOR_LIST 8 /* as.tensor_list */

/**
 * One boxed kernel argument. Frozen value type for ABI 1.x (no struct_size):
 * kernels index arrays of it directly. Everything it points to is borrowed for
 * the duration of the kernel call.
 *
 * A tensor argument is a DLTensor whose `data` points at the first element
 * (byte_offset is always 0), whose `strides` are never NULL (in elements, any
 * value including 0 and negative), and whose `device` is the kernel's device.
 */
typedef struct TsrValue {
  TsrValueTag tag;
  int32_t reserved; /* 0 */
  union {
    const DLTensor* tensor;
    int64_t i;
    double f;
    int32_t b;
    TsrDType dtype;
    const char* string; /* NUL-terminated */
    struct {
      const int64_t* data;
      size_t size;
    } int_list;
    struct {
      const DLTensor* const* data;
      size_t size;
    } tensor_list;
  } as;
} TsrValue;

/** Opaque per-call handle used by the callbacks in TsrKernelCall. */
typedef struct TsrCallHandle_* TsrCallHandle;

/**
 * What a kernel receives. Built by the host on its stack for one call; borrowed
 * by the kernel until it returns. The kernel runs on the calling thread; it may
 * be called concurrently from several threads with different TsrKernelCalls.
 */
typedef struct TsrKernelCall {
  size_t struct_size;
  /** The operator's name, e.g. "add" (static). */
  const char* op_name;
  /** TsrKernelDesc.context of the selected kernel (plugin-owned, nullable). */
  void* kernel_context;
  /** Index of the device the call runs on. */
  int32_t device_index;
  /** The dtype the kernel was selected by (the op's dispatch dtype). */
  TsrDType dtype;
  /** Stream to order the work on (NULL: the default stream). */
  TsrStream stream;
  /** The op's arguments in schema order (see docs/ops.md). */
  const TsrValue* args;
  size_t num_args;
  /**
   * The op's outputs, allocated by the host on this device with the shapes and
   * dtypes of the op's shape rule; the kernel writes them. For an in-place op,
   * outputs[0] aliases the tensor argument being modified. For an op whose
   * output shape depends on data, an output has data == NULL and ndim == 0
   * until the kernel calls allocate_output for it.
   */
  DLTensor* outputs;
  size_t num_outputs;
  /** Opaque, possibly NULL (a call with no data-dependent output); pass to allocate_output. */
  TsrCallHandle handle;
  /**
   * Allocates output `index` (< num_outputs) with the given dtype and shape
   * (ndim >= 0 values, each >= 0; shape borrowed) on the call's device, and
   * stores in *out a pointer to outputs[index], now filled in (contiguous).
   * Valid only during this call, on the calling thread; at most once per index.
   * Any other handle than this call's `handle` (NULL, one from another call or
   * thread, any other pointer) gets TSR_ERROR_INVALID_ARGUMENT; the host never
   * dereferences it.
   */
  TsrError* (*allocate_output)(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim,
                               const int64_t* shape, DLTensor** out);

  /* ---- Appended in 1.2 (check struct_size before reading) ---- */

  /**
   * Allocates nbytes > 0 of scratch memory on the call's device, usable on the
   * call's stream (a reduction's partial results, a BLAS library's workspace),
   * and stores it in *ptr, aligned like the device's allocations. The host
   * frees it when the kernel returns, in stream order: work the kernel queued
   * on `stream` may still use it; work on other streams may not. Any number
   * per call; only during this call and on the calling thread, and `call`
   * must be this very call (else TSR_ERROR_INVALID_ARGUMENT, never
   * dereferenced). TSR_ERROR_OUT_OF_MEMORY when the device is out of memory.
   */
  TsrError* (*workspace)(const struct TsrKernelCall* call, size_t nbytes, void** ptr);
} TsrKernelCall;

/**
 * A boxed kernel. Returns NULL on success or an error owned by the host. It must
 * not throw (C++ plugins: the SDK wraps kernels so exceptions become errors).
 */
typedef TsrError* (*TsrKernelFn)(const TsrKernelCall* call);

/**
 * A kernel registration. Borrowed by register_kernel, which copies it; `fn` and
 * `context` must stay valid until the plugin's shutdown returns.
 */
typedef struct TsrKernelDesc {
  size_t struct_size;
  /**
   * Operator name, e.g. "add" (see docs/ops.md for the operators of 1.0). An op
   * this core does not know gets TSR_ERROR_NOT_FOUND: a newer plugin in an older
   * core skips that kernel and goes on.
   */
  const char* op_name;
  /**
   * Device type name; registered earlier in this initialize or by a plugin
   * loaded before (the built-in plugins load before all others). An unknown one
   * is a failure, not something to skip: TSR_ERROR_UNKNOWN_DEVICE_TYPE for a
   * plugin implementing ABI >= 1.1, TSR_ERROR_NOT_FOUND for a 1.0 plugin.
   */
  const char* device_type;
  /**
   * Set of dispatch dtypes this kernel handles (TSR_DTYPE_BIT(...) OR-ed). Bits
   * of dtypes the host does not know (from a newer minor version) are ignored;
   * if none is known the registration answers TSR_ERROR_NOT_FOUND. A later
   * registration for the same (op, device type, dtype) is refused with
   * TSR_ERROR_ALREADY_EXISTS. A dtype the host never dispatches the op with
   * (the core converts such inputs first, e.g. exp of int64 runs in float32)
   * is accepted, never called, and reported as a warning.
   */
  uint64_t dtype_mask;
  TsrKernelFn fn;
  /** Plugin-owned, nullable; passed as TsrKernelCall.kernel_context. */
  void* context;
} TsrKernelDesc;

/* ------------------------------------------------------------------------ */
/* Plugin-defined operators (1.3)                                            */
/* ------------------------------------------------------------------------ */

/** Flags of TsrOpDesc (1.3). A host refuses bits it does not know. */
/** Elementwise: output element i depends on input elements i only (after broadcasting). */
#define TSR_OP_POINTWISE (((uint32_t)1) << 0)
/**
 * The host also declares the in-place variant "<name>_" (first argument
 * "Tensor(a!) self", returning it), which runs the same kernels with
 * outputs[0] aliasing self. Needs one Tensor result and a first Tensor argument.
 */
#define TSR_OP_INPLACE_VARIANT (((uint32_t)1) << 1)
/**
 * The result is a view of the tensor argument `shape_input` (no kernel runs):
 * shape_fn calls set_view with the view's shape, strides and offset. Gradients
 * flow through the view; `derivative` must be TSR_DERIVATIVE_NONE.
 */
#define TSR_OP_VIEW (((uint32_t)1) << 2)
/** Results may differ between runs with equal inputs (atomics, randomness). */
#define TSR_OP_NONDETERMINISTIC (((uint32_t)1) << 3)
/**
 * Every output has dtype `output_dtype` (e.g. TSR_DTYPE_BOOL for a predicate)
 * instead of the rule's. Without this flag `output_dtype` must be 0, so a
 * zero-initialized TsrOpDesc means "the rule's dtype". Not with CALLBACK or VIEW.
 */
#define TSR_OP_FIXED_OUTPUT_DTYPE (((uint32_t)1) << 4)

/** How the host decides an op's output shapes and dtypes (TsrOpDesc.shape_rule). */
typedef int32_t TsrShapeRule;
/** Each output has the shape and dtype of tensor argument `shape_input`. */
#define TSR_SHAPE_SAME_AS_INPUT 1
/**
 * The tensor arguments broadcast together; their dtypes promote (PyTorch's
 * rules) to the dispatch dtype, and the kernel receives them converted to it
 * and expanded to the output shape (stride 0 where broadcast).
 */
#define TSR_SHAPE_BROADCAST 2
/**
 * Reduction of tensor argument `shape_input` over the dims in argument
 * `dims_arg` (an int[] or int[]? argument; -1, None or [] mean every dim),
 * keeping them as size 1 when the bool argument `keepdim_arg` is true (-1: never).
 */
#define TSR_SHAPE_REDUCTION 3
/** shape_fn decides (TsrShapeQuery). */
#define TSR_SHAPE_CALLBACK 4

/**
 * What a shape function receives. Built by the host for one call; borrowed
 * until shape_fn returns. Runs on the calling thread of the op, possibly
 * concurrently on several threads with different queries.
 */
typedef struct TsrShapeQuery {
  size_t struct_size;
  /** The op's name, e.g. "myplugin::fused_gelu" (static while the op exists). */
  const char* op_name;
  /** TsrOpDesc.shape_context (plugin-owned, nullable). */
  void* context;
  /** The call's device type name (e.g. "cpu", "meta") and device index. */
  const char* device_type;
  int32_t device_index;
  int32_t reserved; /* 0 */
  /**
   * The op's arguments in schema order, as kernels see them (TsrValue), except
   * that a tensor's `data` is NULL: only its metadata (ndim, shape, strides,
   * dtype, device) may be read. Scalars are FLOAT, INT or BOOL values.
   */
  const TsrValue* args;
  size_t num_args;
  /** The number of outputs the schema returns. */
  size_t num_outputs;
  /** Opaque; pass to set_output / set_view. */
  TsrCallHandle handle;
  /**
   * Declares output `index` (< num_outputs): its dtype and shape (ndim >= 0
   * values, each >= 0; borrowed). Every output must be declared exactly once
   * (else the host refuses the call with TSR_ERROR_INVALID_ARGUMENT naming
   * the op). Only during this query, on its thread, with its handle.
   */
  TsrError* (*set_output)(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim, const int64_t* shape);
  /**
   * TSR_OP_VIEW ops only: the one output is a view of argument `shape_input`
   * with this shape, strides (in elements, >= 0) and offset (in elements, >=
   * 0, from that tensor's first element); the host checks that the view stays
   * inside the tensor's storage. Exactly once per query.
   */
  TsrError* (*set_view)(TsrCallHandle handle, int32_t ndim, const int64_t* shape, const int64_t* strides,
                        int64_t offset);
} TsrShapeQuery;

/** A shape function (TSR_SHAPE_CALLBACK, TSR_OP_VIEW). Returns NULL or an error owned by the host. */
typedef TsrError* (*TsrShapeFn)(const TsrShapeQuery* query);

/** What a TsrOpArg refers to. */
typedef int32_t TsrOpArgKind;
/** Nothing: an omitted (None) argument, or "no gradient" in input_grads. */
#define TSR_OP_ARG_NONE 0
/** The gradient of forward output `index` (zeros when none arrived). */
#define TSR_OP_ARG_GRAD_OUTPUT 1
/** Forward argument `index` (schema order). A Tensor argument is saved for backward. */
#define TSR_OP_ARG_INPUT 2
/** Forward output `index`, saved for backward. */
#define TSR_OP_ARG_OUTPUT 3
/** Output `output` of derivative step `index` (an earlier step). */
#define TSR_OP_ARG_STEP 4
/** The value `constant`: a NONE, INT, FLOAT, BOOL, INT_LIST, DTYPE or STRING TsrValue (copied). */
#define TSR_OP_ARG_CONSTANT 5

/**
 * One argument of a derivative step or backward op, or one input's gradient.
 * Frozen value type for ABI 1.x (no struct_size): used in arrays.
 */
typedef struct TsrOpArg {
  TsrOpArgKind kind;
  int32_t index;
  int32_t output;   /* TSR_OP_ARG_STEP: which output of the step; else 0 */
  int32_t reserved; /* 0 */
  TsrValue constant;
} TsrOpArg;

/**
 * One op call of a composite derivative: `op` (any op of the core or of a
 * plugin, by name, e.g. "mul" or "myplugin::fused_gelu_backward") with `args`
 * bound to its schema's arguments in order (trailing ones left out take their
 * defaults). Frozen value type for ABI 1.x.
 */
typedef struct TsrDerivativeStep {
  const char* op;
  const TsrOpArg* args;
  size_t num_args;
} TsrDerivativeStep;

/** How an op is differentiated (TsrOpDesc.derivative). */
typedef int32_t TsrDerivativeKind;
/** Not differentiable: its results never require grad. */
#define TSR_DERIVATIVE_NONE 0
/**
 * Backward is one op `backward_op` called with `backward_args`; it returns one
 * Tensor per entry of `differentiable_inputs`, in order (the host checks its
 * schema: the arguments' kinds and the number of Tensor results).
 */
#define TSR_DERIVATIVE_BACKWARD_OP 1
/**
 * Backward is `steps`, run in order with ordinary (differentiable) ops; the
 * gradient of differentiable_inputs[i] is input_grads[i] (a STEP, GRAD_OUTPUT
 * or NONE reference).
 */
#define TSR_DERIVATIVE_COMPOSITE 2

/**
 * An operator a plugin defines. Borrowed by register_op, which copies
 * everything it points to except the functions; shape_fn and shape_context
 * must stay valid until the plugin's shutdown returns.
 */
typedef struct TsrOpDesc {
  size_t struct_size;
  /**
   * The schema in the core's grammar (docs/ops.md), the name in the plugin's
   * namespace: "myplugin::fused_gelu(Tensor self, *, float alpha=1.0) -> Tensor".
   * Argument types: Tensor, Tensor?, int, int?, float, float?, bool, bool?,
   * int[], int[]?, Scalar, Scalar?, ScalarType, ScalarType?, str, str?; at most
   * 8 arguments, at least one Tensor, 1 to 4 Tensor results.
   */
  const char* schema;
  /** TSR_OP_* flags. */
  uint32_t flags;
  /** TSR_SHAPE_*. */
  TsrShapeRule shape_rule;
  /** SAME_AS_INPUT, REDUCTION, VIEW: the tensor argument's index. */
  int32_t shape_input;
  /** REDUCTION: index of the dims argument, or -1 (every dim). */
  int32_t dims_arg;
  /** REDUCTION: index of the keepdim argument, or -1 (false). */
  int32_t keepdim_arg;
  /**
   * With TSR_OP_FIXED_OUTPUT_DTYPE: every output's dtype. Otherwise 0, and the
   * outputs have the rule's dtype (SAME_AS_INPUT, REDUCTION: the input's;
   * BROADCAST: the promoted dtype; CALLBACK: what set_output says).
   */
  TsrDType output_dtype;
  /** CALLBACK and VIEW: the shape function; else NULL. */
  TsrShapeFn shape_fn;
  /** Plugin-owned, nullable; passed as TsrShapeQuery.context. */
  void* shape_context;
  /** TSR_DERIVATIVE_*. */
  TsrDerivativeKind derivative;
  int32_t reserved; /* 0 */
  /** The Tensor arguments (schema indices) that get gradients; borrowed. */
  const int32_t* differentiable_inputs;
  size_t num_differentiable_inputs;
  /** BACKWARD_OP: the backward op's name and its arguments. */
  const char* backward_op;
  const TsrOpArg* backward_args;
  size_t num_backward_args;
  /** COMPOSITE: the steps and, per differentiable input, its gradient. */
  const TsrDerivativeStep* steps;
  size_t num_steps;
  const TsrOpArg* input_grads;
} TsrOpDesc;

/* ------------------------------------------------------------------------ */
/* Host interface and the plugin entry point                                 */

/* ------------------------------------------------------------------------ */

typedef struct TsrHostContext_* TsrHostContext;

/** Log levels for TsrHostApi.log. */
#define TSR_LOG_DEBUG 0
#define TSR_LOG_INFO 1
#define TSR_LOG_WARNING 2
#define TSR_LOG_ERROR 3

/**
 * The host's functions, given to a plugin's initialize. The struct is owned by
 * the host and valid until the plugin's shutdown returns (if initialize fails,
 * only until initialize returns).
 *
 * Every function checks its `context` against the contexts of live plugins
 * without dereferencing it: NULL or any other pointer than `context` is
 * refused with TSR_ERROR_INVALID_ARGUMENT (log writes a warning naming the bad
 * context, and the message, to the host's log instead).
 */
typedef struct TsrHostApi {
  size_t struct_size;
  /** Highest ABI version the host implements. */
  TsrVersion host_version;
  /** Opaque; pass to every function below. */
  TsrHostContext context;
  /**
   * Registers a device type. Only during initialize, on its thread (else
   * TSR_ERROR_INVALID_ARGUMENT). Fails with TSR_ERROR_ALREADY_EXISTS if the name
   * or the DLPack device type is taken or reserved, and
   * TSR_ERROR_INVALID_ARGUMENT for a malformed description.
   */
  TsrError* (*register_device_type)(TsrHostContext context, const TsrDeviceTypeDesc* desc);
  /**
   * Registers a kernel. Only during initialize, on its thread (else
   * TSR_ERROR_INVALID_ARGUMENT). Errors: see TsrKernelDesc.
   */
  TsrError* (*register_kernel)(TsrHostContext context, const TsrKernelDesc* desc);
  /** Writes a NUL-terminated message to the host's log. Any thread, any time. */
  void (*log)(TsrHostContext context, int32_t level, const char* message);

  /* ---- Appended in 1.3 (check struct_size before reading) ---- */

  /**
   * Defines a new operator in the plugin's namespace ("<plugin name>::op").
   * Only during initialize, on its thread. Register an op before its kernels
   * and before any op naming it as backward; kernels for it then register with
   * register_kernel on any device type. Errors: TSR_ERROR_INVALID_ARGUMENT for
   * a malformed description (the message names the field: a schema the
   * grammar refuses, an unknown type, a name outside the namespace, a rule or
   * derivative that does not fit the schema, a backward op whose schema does
   * not match), TSR_ERROR_NOT_FOUND for a step or backward op this core lacks,
   * TSR_ERROR_ALREADY_EXISTS for a name taken (a reload may redefine its own
   * ops with the identical description). A refused op leaves nothing behind.
   */
  TsrError* (*register_op)(TsrHostContext context, const TsrOpDesc* desc);
} TsrHostApi;

/** What the host offers: the range of ABI versions it speaks. */
typedef struct TsrHostOffer {
  size_t struct_size;
  TsrVersion min_version;
  TsrVersion max_version;
} TsrHostOffer;

/**
 * What a plugin is. Returned by the entry point; static storage in the plugin.
 */
typedef struct TsrPluginInfo {
  size_t struct_size;
  /** The ABI version the plugin implements. The host refuses a major it lacks. */
  TsrVersion abi_version;
  /** Unique name, [a-z][a-z0-9_]*, at most 64 characters (static). */
  const char* name;
  /** The plugin's own version, free text (static). */
  const char* version;
  /** One line describing the plugin (static, nullable). */
  const char* description;
  /**
   * Called once, after version negotiation succeeded, on the loading thread.
   * Registers device types and kernels through host. May store plugin state
   * in *state (nullable), passed to shutdown. On error nothing it registered is
   * kept, shutdown is not called, the plugin is unloaded, and `host` is invalid
   * from the moment initialize returns (no thread of the plugin may use it).
   */
  TsrError* (*initialize)(const TsrHostApi* host, void** state);
  /**
   * Nullable. Called once when the plugin is unloaded: after the host let go of
   * it and the last tensor, stream or event it produced is gone — on whichever
   * thread freed that last object. Not called at process exit (plugins stay
   * loaded until the process ends). Must not fail or throw.
   */
  void (*shutdown)(void* state);
} TsrPluginInfo;

/** Name of the one symbol a plugin exports. */
#define TSR_PLUGIN_ENTRY_SYMBOL "tessera_plugin_entry"

/**
 * The entry point's type. Its signature is frozen forever (across majors) so
 * that any host can ask any plugin what it is. It only describes the plugin (no
 * side effects) and may be called more than once, from any thread. A plugin
 * able to implement several ABI versions returns the description of the highest
 * one within the offer; otherwise it returns its only description even when
 * outside the offer, so that the host can refuse it with a message naming both
 * versions. NULL means the plugin declines to load. The offer is borrowed.
 */
typedef const TsrPluginInfo* (*TsrPluginEntryFn)(const TsrHostOffer* offer);

/** Marks the entry point exported (plugins are built with hidden visibility). */
#if defined(_WIN32)
#define TSR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TSR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Layout checks (x86-64 / AArch64 LP64). Any change here is an ABI break.  */
/* ------------------------------------------------------------------------ */

#if defined(__cplusplus)
#define TSR_STATIC_ASSERT(name, cond) static_assert(cond, #name)
#else
/* Works in pedantic C99, which lacks _Static_assert. */
#define TSR_STATIC_ASSERT(name, cond) typedef char tsr_layout_check_##name[(cond) ? 1 : -1]
#endif

#if defined(__LP64__) || defined(_WIN64)
TSR_STATIC_ASSERT(TsrVersion, sizeof(TsrVersion) == 8);
TSR_STATIC_ASSERT(TsrError, sizeof(TsrError) == 32 && offsetof(TsrError, destroy) == 24);
TSR_STATIC_ASSERT(TsrCopyRequest,
                  sizeof(TsrCopyRequest) == 56 && offsetof(TsrCopyRequest, stream) == 48);
TSR_STATIC_ASSERT(TsrDeviceTypeDesc, sizeof(TsrDeviceTypeDesc) == 248 &&
                                         offsetof(TsrDeviceTypeDesc, device_count) == 48 &&
                                         offsetof(TsrDeviceTypeDesc, device_synchronize) == 160 &&
                                         offsetof(TsrDeviceTypeDesc, host_deallocate) == 240);
TSR_STATIC_ASSERT(TsrValue, sizeof(TsrValue) == 24 && offsetof(TsrValue, as) == 8);
TSR_STATIC_ASSERT(TsrKernelCall, sizeof(TsrKernelCall) == 96 &&
                                     offsetof(TsrKernelCall, allocate_output) == 80 &&
                                     offsetof(TsrKernelCall, workspace) == 88);
TSR_STATIC_ASSERT(TsrKernelDesc,
                  sizeof(TsrKernelDesc) == 48 && offsetof(TsrKernelDesc, context) == 40);
TSR_STATIC_ASSERT(TsrHostApi, sizeof(TsrHostApi) == 56 && offsetof(TsrHostApi, log) == 40 &&
                                  offsetof(TsrHostApi, register_op) == 48);
TSR_STATIC_ASSERT(TsrShapeQuery, sizeof(TsrShapeQuery) == 88 && offsetof(TsrShapeQuery, args) == 40 &&
                                     offsetof(TsrShapeQuery, set_view) == 80);
TSR_STATIC_ASSERT(TsrOpArg, sizeof(TsrOpArg) == 40 && offsetof(TsrOpArg, constant) == 16);
TSR_STATIC_ASSERT(TsrDerivativeStep, sizeof(TsrDerivativeStep) == 24);
TSR_STATIC_ASSERT(TsrOpDesc, sizeof(TsrOpDesc) == 128 && offsetof(TsrOpDesc, shape_fn) == 40 &&
                                 offsetof(TsrOpDesc, differentiable_inputs) == 64 &&
                                 offsetof(TsrOpDesc, input_grads) == 120);
TSR_STATIC_ASSERT(TsrHostOffer, sizeof(TsrHostOffer) == 24);
TSR_STATIC_ASSERT(TsrPluginInfo,
                  sizeof(TsrPluginInfo) == 56 && offsetof(TsrPluginInfo, shutdown) == 48);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_ABI_H_ */
