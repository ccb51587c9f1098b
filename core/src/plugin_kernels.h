// Internal: the plugin kernels of an op, per device type and dtype.
//
// OperatorSlots::backend_kernels(op, t) points at an immutable BackendKernels; adding a
// kernel publishes a new copy (copy-on-write), so readers never lock. Old copies
// are kept (never freed), which is bounded by the number of registrations.
#pragma once

#include <tessera/abi.h>
#include <tessera/dispatcher.h>

#include "operator_slots.h"

namespace tessera {

class PluginRecord;

struct PluginKernel {
  TsrKernelFn fn = nullptr;
  void* context = nullptr;
  PluginRecord* plugin = nullptr;
};

struct BackendKernels {
  PluginKernel by_dtype[kNumScalarTypes];
};

/// The kernel for (op, device type, dtype), or null. Lock-free.
[[gnu::always_inline]] inline const PluginKernel* find_plugin_kernel(const Operator& op, DeviceTypeId t, ScalarType d) {
  const auto* k = static_cast<const BackendKernels*>(detail::OperatorSlots::backend_kernels(op.kernel_source(), t));
  if (k == nullptr || !is_valid(d)) return nullptr;
  const PluginKernel& pk = k->by_dtype[static_cast<int>(d)];
  return pk.fn ? &pk : nullptr;
}

/// The dtypes with a kernel for (op, device type).
uint64_t registered_dtype_mask(const Operator& op, DeviceTypeId t);

/// Withdraws every kernel `plugin` registered, on every op. Serialized by the host.
void remove_plugin_kernels(const PluginRecord* plugin);

/// Publishes kernels for every dtype in `mask`. Serialized by the plugin host.
void install_plugin_kernel(Operator& op, DeviceTypeId t, uint64_t mask, TsrKernelFn fn, void* context,
                           PluginRecord* plugin);

}  // namespace tessera
