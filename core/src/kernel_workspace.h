// Internal: TsrKernelCall.workspace (ABI 1.2) — scratch memory a kernel asks
// for during its call, on the call's device and stream, freed when the kernel
// returns (in stream order: the block goes back through its storage's deleter).
// Thread-safe: everything here is per thread.
#pragma once

#include <tessera/abi.h>
#include <tessera/device.h>

#include <cstdint>

namespace tessera {

/// A kernel call as the host builds it: the ABI struct first (the kernel sees
/// only that), then what the host needs to serve `workspace`.
struct HostKernelCall {
  TsrKernelCall abi;
  DeviceTypeId device_type;
};
/// The kernel call running on this thread, the only one `workspace` accepts.
extern constinit thread_local const HostKernelCall* g_running_call __attribute__((tls_model("initial-exec")));
/// How many workspace blocks this thread holds.
extern constinit thread_local uint32_t g_workspace_blocks __attribute__((tls_model("initial-exec")));

/// The host's TsrKernelCall.workspace.
TsrError* kernel_workspace(const TsrKernelCall* call, size_t nbytes, void** ptr);
/// Frees the workspace blocks of `call` (after it returned).
[[gnu::cold, gnu::noinline]] void release_workspaces(const TsrKernelCall* call) noexcept;

}  // namespace tessera
