// tessera/dlpack.h — zero-copy exchange with other frameworks through DLPack 1.x.
//
// Export: the returned managed tensor shares the tensor's memory and keeps it
// alive until its deleter runs; the consumer calls the deleter exactly once.
// Import: the returned tensor shares the producer's memory; the producer's
// deleter is called exactly once, when the last tensor (or view) using it goes.
// A read-only producer (DLPACK_FLAG_BITMASK_READ_ONLY) gives a read-only tensor:
// writes into it throw ValueError. A producer whose DLPack major version differs
// from ours is refused after calling only its deleter.
// Threading: any thread; the deleter may run on any thread.
#pragma once

#include <tessera/tensor.h>

#include <dlpack/dlpack.h>

namespace tessera {

/// Versioned export (DLPack >= 1.0). `read_only` sets the read-only flag.
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only = false);
/// Legacy export (DLManagedTensor, DLPack < 1.0 consumers).
DLManagedTensor* to_dlpack(const Tensor& t);
/// Versioned import; takes ownership of `managed` (also when it throws).
Tensor from_dlpack(DLManagedTensorVersioned* managed);
/// Legacy import; takes ownership of `managed` (also when it throws).
Tensor from_dlpack(DLManagedTensor* managed);

/// The DLPack dtype of a ScalarType, and back (TypeError if none).
DLDataType to_dlpack_dtype(ScalarType t);
ScalarType from_dlpack_dtype(DLDataType t);

}  // namespace tessera
