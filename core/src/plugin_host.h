// Internal: a loaded plugin.
#pragma once

#include <tessera/abi.h>
#include <tessera/plugin.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

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
  /// References from storages and the host's own list.
  std::atomic<long> refs{0};

  PluginInfo describe() const;
};

}  // namespace tessera
