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

/// The most devices a device type may have: Device keeps its index in 16 bits
/// and device strings take indices 0..32767. A larger device_count is refused.
inline constexpr int32_t kMaxDevicesPerType = 32768;

struct DeviceTypeEntry {
  std::string name;
  DeviceTypeId id = 0;
  /// The plugin's description, copied; fields beyond the plugin's struct_size are zero.
  TsrDeviceTypeDesc desc{};
  /// The registering plugin. Valid while the type is live (not retired); after
  /// its plugin is unloaded only plugin_name may be used.
  PluginRecord* plugin = nullptr;
  std::string plugin_name;
  int32_t device_count = 0;
  std::string unavailable_reason;
  /// Small blocks are reused per thread (small_block_cache.h): the plugin allows
  /// caching and the device is synchronous.
  bool small_block_cache = false;
  /// Tensors' memory comes from the core's caching allocator
  /// (memory/device_allocators.h): the plugin allows caching and the device
  /// holds memory.
  bool core_allocator = false;

  bool has(uint64_t cap) const { return (desc.capabilities & cap) != 0; }
  bool no_storage() const { return has(TSR_DEVICE_CAP_NO_STORAGE); }
  bool host_accessible() const { return has(TSR_DEVICE_CAP_HOST_ACCESSIBLE); }
};

namespace device_registry {
extern std::atomic<DeviceTypeEntry*> g_entries[kMaxDeviceTypes];
/// The entry with this id, or null. Lock-free.
inline const DeviceTypeEntry* get(DeviceTypeId id) {
  return id < kMaxDeviceTypes ? g_entries[id].load(std::memory_order_acquire) : nullptr;
}
/// Lookups by name / DLPack type among live, published types; null if absent.
/// (Load default plugins first.)
const DeviceTypeEntry* find(std::string_view name);
const DeviceTypeEntry* find_dlpack(int32_t dlpack_device_type);
/// Adds an entry, unpublished: lookups by name or DLPack type skip it until
/// publish(), so that no other thread uses a device type whose plugin is still
/// installing its kernels. Throws PluginError if the name or DLPack type is
/// taken or the table is full. Returns the new entry.
DeviceTypeEntry* add(DeviceTypeEntry entry);
/// Makes an added entry visible to find(), find_dlpack() and all().
void publish(DeviceTypeId id);
/// Live, published entries, in id order.
std::vector<const DeviceTypeEntry*> all();
/// Marks a type gone (its plugin was unloaded): lookups skip it, allocations on
/// it fail; its id is never reused, so storages made on it still free correctly.
void retire(DeviceTypeId id);
inline bool retired(DeviceTypeId id);
}  // namespace device_registry

namespace device_registry {
extern std::atomic<bool> g_retired[kMaxDeviceTypes];
extern std::atomic<bool> g_published[kMaxDeviceTypes];
inline bool retired(DeviceTypeId id) { return g_retired[id].load(std::memory_order_acquire); }
}  // namespace device_registry

/// The DLDevice kernels of this device type see (kDLExtDev for a type without a DLPack type).
inline DLDevice dl_device_of(const DeviceTypeEntry& e, int32_t index) {
  return DLDevice{e.desc.dlpack_device_type ? static_cast<DLDeviceType>(e.desc.dlpack_device_type) : kDLExtDev, index};
}

[[noreturn, gnu::cold]] void fail_unregistered_device_type(Device d);
/// The entry of `d`'s type (must exist). Lock-free.
[[gnu::always_inline]] inline const DeviceTypeEntry& device_entry(Device d) {
  const DeviceTypeEntry* e = device_registry::get(d.type());
  if (e == nullptr) [[unlikely]] fail_unregistered_device_type(d);
  return *e;
}

}  // namespace tessera
