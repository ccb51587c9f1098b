// TsrKernelCall.workspace: scratch tensors held per thread while their kernel
// runs (kernel_workspace.h).
#include "kernel_workspace.h"

#include <tessera/error.h>
#include <tessera/tensor.h>

#include <utility>
#include <vector>

#include "abi_bridge.h"
#include "allocation.h"

namespace tessera {

constinit thread_local const HostKernelCall* g_running_call = nullptr;
constinit thread_local uint32_t g_workspace_blocks = 0;

namespace {
thread_local std::vector<std::pair<const TsrKernelCall*, Tensor>> t_workspaces;
}  // namespace

TsrError* kernel_workspace(const TsrKernelCall* call, size_t nbytes, void** ptr) {
  const HostKernelCall* running = g_running_call;
  if (call == nullptr || running == nullptr || call != &running->abi)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           "workspace: the call is not the kernel call running on this thread (only a kernel, "
                           "during its call, may ask for workspace)");
  if (ptr == nullptr) return make_host_error(TSR_ERROR_INVALID_ARGUMENT, "workspace: ptr is NULL");
  if (nbytes == 0 || nbytes > size_t(INT64_MAX))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           "workspace: " + std::to_string(nbytes) + " bytes asked (must be 1 to 2^63-1)");
  try {
    const Device device(running->device_type, call->device_index);
    Tensor block = empty_on({static_cast<int64_t>(nbytes)}, kByte, device);
    *ptr = block.data_ptr();
    t_workspaces.emplace_back(call, std::move(block));
    ++g_workspace_blocks;
    return nullptr;
  } catch (const OutOfMemoryError& e) {
    return make_host_error(TSR_ERROR_OUT_OF_MEMORY, std::string("workspace: ") + e.what());
  } catch (const std::exception& e) {
    return make_host_error(TSR_ERROR_INTERNAL, std::string("workspace: ") + e.what());
  }
}

void release_workspaces(const TsrKernelCall* call) noexcept {
  // The storages free their blocks on the stream they were allocated on: the call's.
  const size_t freed = std::erase_if(t_workspaces, [call](const auto& entry) { return entry.first == call; });
  g_workspace_blocks -= static_cast<uint32_t>(freed);
}

}  // namespace tessera
