// The plugin kernel tables of the ops (plugin_kernels.h): copy-on-write per
// (op, device type), so dispatch reads them without a lock.
#include "plugin_kernels.h"

#include <mutex>
#include <vector>

namespace tessera {

namespace {

// Tables replaced while other threads may still be reading them are kept here
// rather than freed (lock-free readers hold no reference). Bounded by the number
// of registrations; reachable, so leak checkers are quiet.
struct RetiredTables {
  std::mutex mutex;
  std::vector<const BackendKernels*> tables;
};
void retire_table(const BackendKernels* t) {
  if (t == nullptr) return;
  static RetiredTables* r = new RetiredTables();  // leaked: plugins unload during static destruction
  std::lock_guard<std::mutex> lock(r->mutex);
  r->tables.push_back(t);
}

}  // namespace

uint64_t registered_dtype_mask(const Operator& op, DeviceTypeId t) {
  const auto* k = static_cast<const BackendKernels*>(detail::OperatorSlots::backend_kernels(op, t));
  uint64_t mask = 0;
  if (k != nullptr)
    for (int d = 0; d < kNumScalarTypes; ++d)
      if (k->by_dtype[d].fn) mask |= uint64_t{1} << d;
  return mask;
}

void install_plugin_kernel(Operator& op, DeviceTypeId t, uint64_t mask, TsrKernelFn fn, void* context,
                           PluginRecord* plugin) {
  const auto* old = static_cast<const BackendKernels*>(detail::OperatorSlots::backend_kernels(op, t));
  auto* next = old ? new BackendKernels(*old) : new BackendKernels();  // copy-on-write; old kept for readers
  for (int d = 0; d < kNumScalarTypes; ++d)
    if (mask & (uint64_t{1} << d)) next->by_dtype[d] = PluginKernel{fn, context, plugin};
  detail::OperatorSlots::set_backend_kernels(op, t, next);
  retire_table(old);
}

void remove_plugin_kernels(const PluginRecord* plugin) {
  for (const Operator* cop : Dispatcher::instance().operators()) {
    auto* op = const_cast<Operator*>(cop);
    for (int t = 0; t < kMaxDeviceTypes; ++t) {
      const auto* old = static_cast<const BackendKernels*>(detail::OperatorSlots::backend_kernels(*op, static_cast<DeviceTypeId>(t)));
      if (old == nullptr) continue;
      bool touched = false;
      auto* next = new BackendKernels(*old);  // copy-on-write; the old table stays for readers
      for (PluginKernel& k : next->by_dtype) {
        if (k.plugin == plugin) {
          k = PluginKernel{};
          touched = true;
        }
      }
      if (touched) {
        detail::OperatorSlots::set_backend_kernels(*op, static_cast<DeviceTypeId>(t), next);
        retire_table(old);
      } else {
        delete next;
      }
    }
  }
}

}  // namespace tessera
