// Internal: a loaded plugin.
#pragma once

#include <tessera/abi.h>
#include <tessera/plugin.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "device_registry.h"

namespace tessera {

class PluginRecord;

// Registrations a plugin makes during initialize, committed only on success.
struct PendingKernel {
  std::string op;
  std::string device_type;
  uint64_t dtype_mask;
  TsrKernelFn fn;
  void* context;
};
struct PluginStaging {
  PluginRecord* plugin = nullptr;
  std::vector<struct DeviceTypeEntry> device_types;
  std::vector<PendingKernel> kernels;
  bool open = true;  // registration allowed (only during initialize)
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
  /// The dynamic library (opaque; a boost::dll::shared_library).
  std::shared_ptr<void> library;
  /// The host context handed to the plugin (log may use it at any time).
  PluginStaging staging;
  /// References from storages and the host's own list. At zero the plugin is
  /// shut down and its library closed (only after unload_plugin dropped the
  /// host's reference).
  std::atomic<long> refs{0};

  PluginInfo describe() const;
};

}  // namespace tessera
