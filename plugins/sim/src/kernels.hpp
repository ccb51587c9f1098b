// sim's kernels: the CPU plugin's, run asynchronously. At load, the CPU
// plugin's family registrars (plugins/cpu/src/kernels.hpp) are called with an
// sdk::Host over a capturing TsrHostApi whose register_kernel records each
// (op, dtypes, fn, context) instead of registering it; sim then registers, for
// every captured kernel, one wrapper that deep-copies the TsrKernelCall into a
// work item on call->stream and returns at once. The stream's worker runs the
// CPU kernel on the copy.
#pragma once

#include "runtime.hpp"

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

#include <cstdint>
#include <deque>
#include <string>

namespace tessera::sim {

/// A captured CPU kernel; the kernel_context of its sim registration.
struct SimKernel {
  Sim* sim;
  std::string op;
  uint64_t dtype_mask;
  TsrKernelFn cpu_fn;
  void* cpu_context;
};

/// Captures the CPU kernels and registers a queuing wrapper for each on device
/// type "sim". `kernels` keeps them (a deque: their addresses are the
/// registered contexts and must not move) until the plugin's shutdown.
void register_kernels(const sdk::Host& host, Sim& sim, std::deque<SimKernel>& kernels);

}  // namespace tessera::sim
