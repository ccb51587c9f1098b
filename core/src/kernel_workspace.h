// Internal: TsrKernelCall.workspace (ABI 1.2) — scratch memory a kernel asks
// for during its call, on the call's device and stream, freed when the kernel
// returns (in stream order: the block goes back through its storage's deleter).
// Thread-safe: everything here is per thread.
#pragma once

#include <tessera/abi.h>
#include <tessera/device.h>

#include <cstdint>

namespace tessera {

/// The kernel call running on this thread (the only one `workspace` accepts)
/// and its device; how many workspace blocks this thread holds.
struct RunningKernelCall {
  const TsrKernelCall* call;
  DeviceTypeId device_type;
  uint32_t workspaces;
};
extern constinit thread_local RunningKernelCall g_running_call __attribute__((tls_model("initial-exec")));

/// The host's TsrKernelCall.workspace.
TsrError* kernel_workspace(const TsrKernelCall* call, size_t nbytes, void** ptr);
/// Frees the workspace blocks of `call` (after it returned).
[[gnu::cold, gnu::noinline]] void release_workspaces(const TsrKernelCall* call) noexcept;

}  // namespace tessera
