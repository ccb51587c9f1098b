// tessera/dlpack.h — zero-copy exchange with other frameworks through DLPack 1.x.
//
// Export: the returned managed tensor shares the tensor's memory and keeps it
// alive (it holds a Tensor reference) until its deleter runs; the consumer calls
// the deleter exactly once. dl_tensor.data is the address of the first element
// and byte_offset is 0 (NULL data for a zero-size tensor); strides are always
// set; the device is the device type's registered DLPack type and the device
// index. Tensors of a device type without a DLPack type (meta) are refused with
// ValueError.
// Import: takes ownership of the managed tensor, also when it throws: every
// refusal calls the producer's deleter once, then throws. The returned tensor
// shares the producer's memory (data_ptr() == data + byte_offset, any strides,
// negative ones included; NULL strides mean row-major); the producer's deleter
// is called exactly once, when the last tensor (or view) using it goes.
// A read-only producer (DLPACK_FLAG_BITMASK_READ_ONLY) gives a read-only tensor:
// writes into it throw ValueError. A legacy DLManagedTensor cannot say whether
// its memory may be written, so it imports read-only unless the caller says
// otherwise (LegacyAccess::Writable). A producer whose DLPack major version
// differs from ours is refused after calling only its deleter. Every field is
// checked before the memory is wrapped (validate_dlpack): the first element
// must be aligned for the dtype, since the kernels load whole elements.
// Streams (asynchronous devices, TSR_DEVICE_CAP_ASYNC): the Python array
// API's __dlpack__(stream=...) rule. The consumer names the stream it will use
// the tensor on; the exporter makes that stream wait (an event, no host block)
// for the work queued on Tessera's current stream, and keeps the memory from
// being reused before the consumer's work passes. An imported tensor's
// producer deleter runs only after Tessera's streams that used it are done.
// docs/dlpack.md has the rules.
// Threading: any thread; the deleters may run on any thread.
#pragma once

#include <tessera/tensor.h>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>

namespace tessera {

/// A consumer's stream, encoded as the array API's __dlpack__(stream=...)
/// value: nullopt is None (the device's default stream: CUDA's legacy default
/// stream), kDLPackNoSync (-1) asks for no synchronization at all. Otherwise
/// per DLPack device type: kDLCUDA 1 = legacy default stream, 2 = per-thread
/// default stream, > 2 a cudaStream_t, 0 refused (ambiguous); kDLROCM 0 =
/// default stream, > 2 a hipStream_t, 1 and 2 refused; any other device type
/// takes the value as its plugin's TsrStream handle bits (0 = its default
/// stream). Values below -1 are refused everywhere.
using DLPackStream = std::optional<int64_t>;
inline constexpr int64_t kDLPackNoSync = -1;

/// Versioned export (DLPack >= 1.0), version DLPACK_MAJOR/MINOR_VERSION of the
/// header we build against. The read-only flag is set when `read_only` is true or
/// the tensor's storage is read-only. Throws ValueError for an undefined tensor
/// or a device type without a DLPack device type. Same as consumer_stream = None.
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only = false);
/// Versioned export for a consumer that will use the tensor on
/// `consumer_stream`. On an asynchronous device, unless the value is
/// kDLPackNoSync or names the calling thread's current stream of t's device:
/// the consumer's stream is made to wait (event recorded on the current
/// stream, stream_wait_event; the host does not block) for the work queued so
/// far, and the memory is recorded as used on that stream (Tensor::record_stream):
/// when it is freed (after the deleter ran), its reuse waits for the work the
/// consumer queued on that stream by then. The consumer keeps ownership of its stream, which must stay
/// valid until the storage is freed. On a synchronous device only nullopt and
/// kDLPackNoSync are accepted. Throws ValueError for a refused stream value
/// (naming it, the device and the plugin) and the plugin's error (naming the
/// device and the plugin) when an event call fails; nothing is exported then.
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only, DLPackStream consumer_stream);
/// Legacy export (DLManagedTensor, DLPack < 1.0 consumers). It cannot signal
/// read-only, so a read-only tensor is refused (ValueError), as NumPy does.
DLManagedTensor* to_dlpack(const Tensor& t);
/// Legacy export with the stream hand-off of to_dlpack_versioned.
DLManagedTensor* to_dlpack(const Tensor& t, DLPackStream consumer_stream);

/// The checks to_dlpack* make on `consumer_stream` for a tensor on `d`,
/// alone (for bindings that report other export refusals differently, as
/// Python's BufferError): ValueError naming the value, the device and its
/// plugin for a value refused on that device (see DLPackStream; on a
/// synchronous device anything but nullopt and kDLPackNoSync); the message
/// starts with `who`. Thread-safe.
void check_dlpack_stream(Device d, DLPackStream consumer_stream, const char* who = "check_dlpack_stream");

/// The array API stream value of the calling thread's current stream on `d`,
/// for a consumer to pass to a producer's __dlpack__(stream=...) before
/// from_dlpack; nullopt on a synchronous device and for the default stream of
/// a device type without a stream encoding of its own (None means it).
/// kDLCUDA's default stream gives 1 (legacy default), kDLROCM's 0. Throws
/// ValueError for a device that does not exist. Threading: reads this thread's
/// current stream.
DLPackStream dlpack_consumer_stream(Device d);
/// The same for the device a producer reports through __dlpack_device__:
/// nullopt also when no loaded device type has that DLPack type (the import
/// will refuse it) or the index does not exist. Never throws for such input.
DLPackStream dlpack_consumer_stream(DLDevice d);
/// Whether any loaded device type is asynchronous, has a DLPack type and at
/// least one device. When false, dlpack_consumer_stream(DLDevice) is nullopt
/// for every device, so a binding may skip asking the producer for its device
/// (a few lock-free loads; any thread).
bool dlpack_has_async_devices() noexcept;

/// Versioned import; takes ownership of `managed` (also when it throws). Throws
/// ValueError (NULL pointer, major version mismatch, or any refusal of
/// validate_dlpack) or TypeError (a dtype Tessera lacks). Read-only exactly when
/// the producer sets DLPACK_FLAG_BITMASK_READ_ONLY. The producer must already
/// have ordered its work before the calling thread's current stream of the
/// device (pass dlpack_consumer_stream to it). On an asynchronous device the
/// tensor's memory belongs to that stream: when the last tensor goes, that
/// stream and every stream given to record_stream are synchronized (the host
/// waits) before the producer's deleter runs, so the producer never frees
/// memory Tessera's queued work still uses.
Tensor from_dlpack(DLManagedTensorVersioned* managed);

/// Whether a legacy import may be written through.
enum class LegacyAccess {
  ReadOnly,  ///< the default: DLManagedTensor cannot say, so writes are refused (as NumPy 2 does)
  Writable,  ///< the caller knows the producer allows writes (e.g. it made the tensor itself)
};
/// Legacy import; takes ownership of `managed` (also when it throws), with the
/// refusals of the versioned import. DLManagedTensor has no flags, so the tensor
/// is read-only unless `access` is LegacyAccess::Writable: a producer whose
/// memory is immutable (JAX answers even a versioned request with a legacy
/// capsule) is never written through by accident.
Tensor from_dlpack(DLManagedTensor* managed, LegacyAccess access = LegacyAccess::ReadOnly);

/// The most dims an imported tensor may have (NumPy's NPY_MAXDIMS): a larger
/// ndim is refused before `shape` is read.
inline constexpr int32_t kDLPackMaxDims = 64;

/// Every check from_dlpack makes on `t` before it wraps the memory, in one
/// function (for other importers and fuzzers); never reads `t.data`'s bytes,
/// takes no ownership and calls no deleter. Loads the default plugins if no
/// loaded device type has t's DLPack device type. Throws ValueError for: a DLPack
/// device type no plugin provides or a device index that does not exist; ndim < 0
/// or > kDLPackMaxDims; shape NULL with ndim > 0; a negative size or an element
/// count that overflows int64; data NULL for a non-empty tensor; data +
/// byte_offset that overflows or is not a multiple of the dtype's alignment
/// (its element size, at most 16) for a non-empty tensor; shape and strides
/// whose extent overflows or wraps the address space. TypeError for a dtype
/// Tessera lacks (from_dlpack_dtype). `shape` and `strides` must point to ndim
/// readable int64s when not NULL (DLPack's contract; not checkable).
/// Thread-safe.
void validate_dlpack(const DLTensor& t);

/// The DLPack dtype of a ScalarType, and back (TypeError if none; lanes must be
/// 1; bool is kDLBool with 8 bits, bfloat16 is kDLBfloat with 16).
DLDataType to_dlpack_dtype(ScalarType t);
ScalarType from_dlpack_dtype(DLDataType t);

}  // namespace tessera
