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
// Streams: not handled yet (no asynchronous device has kernels yet);
// docs/dlpack.md specifies the hand-off for asynchronous devices.
// Threading: any thread; the deleters may run on any thread.
#pragma once

#include <tessera/tensor.h>

#include <dlpack/dlpack.h>

namespace tessera {

/// Versioned export (DLPack >= 1.0), version DLPACK_MAJOR/MINOR_VERSION of the
/// header we build against. The read-only flag is set when `read_only` is true or
/// the tensor's storage is read-only. Throws ValueError for an undefined tensor
/// or a device type without a DLPack device type.
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only = false);
/// Legacy export (DLManagedTensor, DLPack < 1.0 consumers). It cannot signal
/// read-only, so a read-only tensor is refused (ValueError), as NumPy does.
DLManagedTensor* to_dlpack(const Tensor& t);
/// Versioned import; takes ownership of `managed` (also when it throws). Throws
/// ValueError (NULL pointer, major version mismatch, or any refusal of
/// validate_dlpack) or TypeError (a dtype Tessera lacks). Read-only exactly when
/// the producer sets DLPACK_FLAG_BITMASK_READ_ONLY.
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
