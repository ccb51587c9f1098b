// tessera/testing.h — hooks for conformance testing (tessera-plugin-test,
// docs/conformance.md). Not for production use: they slow ops down.
#pragma once

#include <tessera/tensor.h>

#include <cstddef>
#include <cstdint>

namespace tessera::testing {

/// Guard bytes around op outputs. While the size is not 0, every output a
/// structured op allocates for its plugin kernel (also those a kernel
/// allocates with allocate_output) is a view into a buffer with `bytes` guard
/// bytes before and after its data; the buffer holds guard_byte(i) (i = the
/// byte's position in it) before the kernel runs, so a kernel that writes
/// nothing leaves that pattern rather than an old result. The buffer is
/// made by a transfer from the host (the device's copy slot, no kernel). The
/// pointwise fast path is off. A kernel that
/// writes outside its output changes them, which check_output_guard reports.
/// `bytes` must be a multiple of 64 (keeps every dtype's alignment) and at most
/// 1 MiB: ValueError otherwise. Process-wide: applies to ops on every thread
/// until set back to 0. Not synchronized with ops running on other threads:
/// set it while no op runs.
void set_output_guard(size_t bytes);
size_t output_guard();

/// The guard pattern: distinct neighbouring values, so a kernel writing a
/// constant or copying a neighbour is seen.
inline uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xA5u ^ ((i * 0x3Du) >> 1)); }

/// What check_output_guard found.
struct GuardCheck {
  bool guarded = false;     // t was made with guard bytes around it
  bool intact = true;       // every guard byte still holds its value
  int64_t first_bad = -1;   // offset of the first changed guard byte from t's first data byte (negative: before)
  int64_t bad_bytes = 0;    // how many guard bytes changed
};

/// Reads the guard bytes around t (copied to the host; on an asynchronous
/// device after t's stream is done). guarded = false for a tensor not made
/// under set_output_guard (then nothing else is checked). Throws what the copy
/// throws.
GuardCheck check_output_guard(const Tensor& t);

/// Called with every plugin kernel a structured op runs (the op whose kernel
/// it is, e.g. "add" for add_; the device type; the dispatch dtype), on the
/// thread that runs it; also for kernels the core runs for its own needs
/// (copies, fills). While set, the pointwise fast path is off. Null: off (the
/// default). Process-wide; set while no op runs. For tools that ask which
/// kernels a computation needs (tessera-plugin-test --mode coverage).
using KernelRecorder = void (*)(void* context, const char* op, const char* device_type, ScalarType dtype);
void set_kernel_recorder(KernelRecorder recorder, void* context);

}  // namespace tessera::testing
