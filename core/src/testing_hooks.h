// Internal: the testing hooks (tessera/testing.h): guard bytes around outputs, the kernel recorder.
#pragma once

#include <tessera/tensor.h>
#include <tessera/testing.h>

#include <cstddef>

namespace tessera {

/// testing::output_guard(); read inline where outputs are allocated.
extern size_t g_output_guard_bytes;
/// testing::set_kernel_recorder's; null when off.
extern testing::KernelRecorder g_kernel_recorder;
extern void* g_kernel_recorder_context;

/// An output of `sizes` inside a buffer with g_output_guard_bytes guard bytes
/// before and after, the whole buffer filled with testing::guard_byte by a
/// transfer from the host (no kernel of the device runs): queued on the current
/// stream where the device allows, synchronous when `during_kernel`
/// (allocate_output). Throws as empty_on.
Tensor guarded_empty(IntArrayRef sizes, ScalarType dtype, Device device, bool during_kernel);

}  // namespace tessera
