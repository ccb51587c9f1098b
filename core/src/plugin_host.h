// Internal: a loaded plugin.
#pragma once

#include <tessera/abi.h>
#include <tessera/plugin.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_registry.h"
#include "plugin_ops.h"

namespace tessera {

class PluginRecord;

// Registrations a plugin makes during initialize, committed only on success.
struct PendingKernel {
  std::string op;
  std::string device_type;
  uint64_t dtype_mask;
  TsrKernelFn fn;
  void* context;
  uint64_t unreachable_mask;  // dtypes of dtype_mask the core never dispatches the op with
};
/// What TsrHostApi.context points at. The host functions accept only contexts
/// of live plugins (a registry in plugin_host.cpp), never dereferencing another.
struct PluginStaging {
  PluginRecord* plugin = nullptr;
  std::vector<struct DeviceTypeEntry> device_types;
  std::vector<PendingKernel> kernels;
  std::vector<std::unique_ptr<defined_ops::Definition>> ops;  // register_op, in order
  std::atomic<bool> open{true};  // registration allowed (only during initialize)
  std::thread::id thread;        // initialize's thread, the only one that may register
};

class PluginRecord {
 public:
  std::string name;
  std::string version;
  std::string description;
  std::string path;
  TsrVersion abi_version{};
  const TsrPluginInfo* info = nullptr;
  void* state = nullptr;
  TsrHostApi host_api{};  // handed to the plugin; valid until its shutdown
  std::vector<std::string> device_types;
  std::vector<KernelInfo> kernels;
  /// Problems that did not stop the load (PluginInfo::warnings).
  std::vector<std::string> warnings;
  /// The dynamic library (opaque; a boost::dll::shared_library).
  std::shared_ptr<void> library;
  /// The host context handed to the plugin (log may use it at any time).
  PluginStaging staging;
  /// References from storages and the host's own list. At zero the plugin is
  /// shut down and its library closed (only after unload_plugin dropped the
  /// host's reference).
  std::atomic<long> refs{0};

  PluginRecord();
  /// Withdraws the host context from the registry: host functions called with
  /// it afterwards are refused.
  ~PluginRecord();
  PluginRecord(const PluginRecord&) = delete;
  PluginRecord& operator=(const PluginRecord&) = delete;
  PluginInfo describe() const;
};

}  // namespace tessera
