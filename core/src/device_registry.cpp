#include "device_registry.h"

#include <tessera/error.h>

#include <mutex>

namespace tessera {
namespace {
std::mutex g_mutex;
int g_count = 0;  // guarded by g_mutex
}  // namespace

namespace device_registry {
std::atomic<DeviceTypeEntry*> g_entries[kMaxDeviceTypes] = {};
}  // namespace device_registry
using device_registry::g_entries;

namespace device_registry {

std::atomic<bool> g_retired[kMaxDeviceTypes] = {};
std::atomic<bool> g_published[kMaxDeviceTypes] = {};

void retire(DeviceTypeId id) { g_retired[id].store(true, std::memory_order_release); }
void publish(DeviceTypeId id) { g_published[id].store(true, std::memory_order_release); }

const DeviceTypeEntry* find(std::string_view name) {
  for (int i = 0; i < kMaxDeviceTypes; ++i) {
    const DeviceTypeEntry* e = g_entries[i].load(std::memory_order_acquire);
    if (e == nullptr) break;
    if (e->name == name && !retired(e->id) && g_published[i].load(std::memory_order_acquire)) return e;
  }
  return nullptr;
}

const DeviceTypeEntry* find_dlpack(int32_t dlpack_device_type) {
  if (dlpack_device_type == 0) return nullptr;
  for (int i = 0; i < kMaxDeviceTypes; ++i) {
    const DeviceTypeEntry* e = g_entries[i].load(std::memory_order_acquire);
    if (e == nullptr) break;
    if (e->desc.dlpack_device_type == dlpack_device_type && !retired(e->id) &&
        g_published[i].load(std::memory_order_acquire))
      return e;
  }
  return nullptr;
}

DeviceTypeEntry* add(DeviceTypeEntry entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < g_count; ++i) {
    const DeviceTypeEntry* e = g_entries[i].load(std::memory_order_relaxed);
    if (retired(e->id)) continue;
    TSR_CHECK(e->name != entry.name, PluginError, "device type '", entry.name, "' is already registered");
    TSR_CHECK(entry.desc.dlpack_device_type == 0 || e->desc.dlpack_device_type != entry.desc.dlpack_device_type, PluginError, "device type '",
              entry.name, "': DLPack device type ", entry.desc.dlpack_device_type,
              " is already taken by device type '", e->name, "'");
  }
  TSR_CHECK(g_count < kMaxDeviceTypes, PluginError, "cannot register device type '", entry.name, "': all ",
            kMaxDeviceTypes, " device type slots are taken");
  entry.id = static_cast<DeviceTypeId>(g_count);
  auto* stored = new DeviceTypeEntry(std::move(entry));  // never freed: ids stay valid
  g_entries[g_count].store(stored, std::memory_order_release);
  ++g_count;
  return stored;
}

std::vector<const DeviceTypeEntry*> all() {
  std::vector<const DeviceTypeEntry*> out;
  for (int i = 0; i < kMaxDeviceTypes; ++i) {
    const DeviceTypeEntry* e = g_entries[i].load(std::memory_order_acquire);
    if (e == nullptr) break;
    if (!retired(e->id) && g_published[i].load(std::memory_order_acquire)) out.push_back(e);
  }
  return out;
}

}  // namespace device_registry

void fail_unregistered_device_type(Device d) {
  throw InternalError(detail::str("device type id ", int(d.type()), " is not registered"));
}

}  // namespace tessera
