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
// writes into it throw ValueError. A producer whose DLPack major version differs
// from ours is refused after calling only its deleter.
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
/// ValueError (NULL pointer, major version mismatch, a DLPack device type no
/// plugin registered or a missing device index, malformed shape/data) or
/// TypeError (a dtype Tessera lacks).
Tensor from_dlpack(DLManagedTensorVersioned* managed);
/// Legacy import; takes ownership of `managed` (also when it throws). Legacy
/// producers cannot say read-only: the tensor is writable.
Tensor from_dlpack(DLManagedTensor* managed);

/// The DLPack dtype of a ScalarType, and back (TypeError if none; lanes must be
/// 1; bool is kDLBool with 8 bits, bfloat16 is kDLBfloat with 16).
DLDataType to_dlpack_dtype(ScalarType t);
ScalarType from_dlpack_dtype(DLDataType t);

}  // namespace tessera
