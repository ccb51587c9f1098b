// Internal: outputs with guard bytes (tessera/testing.h's set_output_guard).
#pragma once

#include <tessera/tensor.h>

#include <cstddef>

namespace tessera {

/// testing::output_guard(); read inline where outputs are allocated.
extern size_t g_output_guard_bytes;

/// An output of `sizes` inside a buffer with g_output_guard_bytes guard bytes
/// before and after, the whole buffer filled with testing::guard_byte — only
/// the guard bytes when `during_kernel` (allocate_output: the kernel may be
/// writing the data already). Throws as empty_on.
Tensor guarded_empty(IntArrayRef sizes, ScalarType dtype, Device device, bool during_kernel);

}  // namespace tessera
