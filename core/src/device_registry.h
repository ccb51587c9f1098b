// Internal: the registry of device types that plugins registered.
//
// Entries are created under the registry lock and never freed, so a pointer to
// one stays valid for the life of the process; lookups by id are lock-free.
#pragma once

#include <tessera/abi.h>
#include <tessera/device.h>

#include <atomic>
#include <string>
#include <vector>

namespace tessera {

class PluginRecord;

struct DeviceTypeEntry {
  std::string name;
  DeviceTypeId id = 0;
  /// The plugin's description, copied; fields beyond the plugin's struct_size are zero.
  TsrDeviceTypeDesc desc{};
  PluginRecord* plugin = nullptr;  // the registering plugin (lives as long as the entry)
  int32_t device_count = 0;
  std::string unavailable_reason;

  bool has(uint64_t cap) const { return (desc.capabilities & cap) != 0; }
  bool no_storage() const { return has(TSR_DEVICE_CAP_NO_STORAGE); }
  bool host_accessible() const { return has(TSR_DEVICE_CAP_HOST_ACCESSIBLE); }
};

namespace device_registry {
/// The entry with this id, or null. Lock-free.
const DeviceTypeEntry* get(DeviceTypeId id);
/// Lookups by name / DLPack type; null if absent. (Load default plugins first.)
const DeviceTypeEntry* find(std::string_view name);
const DeviceTypeEntry* find_dlpack(int32_t dlpack_device_type);
/// Adds an entry; throws PluginError if the name or DLPack type is taken or the
/// table is full. Returns the new entry.
DeviceTypeEntry* add(DeviceTypeEntry entry);
std::vector<const DeviceTypeEntry*> all();
}  // namespace device_registry

/// The entry of `d`'s type (must exist).
const DeviceTypeEntry& device_entry(Device d);

}  // namespace tessera
