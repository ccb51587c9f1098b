// memory/device_allocators.h — the caching allocator of each device that asks
// for one.
//
// A device type whose plugin sets TSR_DEVICE_CAP_CACHING_ALLOCATOR (and holds
// memory) gets one CachingAllocator per device index, built on first use over
// a PluginDeviceMemory with the process's TESSERA_ALLOC_CONF settings. Tensor
// storage, kernel workspace and the per-thread small-block cache all take their
// memory from it (allocation.cpp).
//
// Lookup is lock-free (an atomic table per device type); creation takes a
// mutex. Allocators are never destroyed: when a plugin is unloaded its
// allocators return every cached segment and spare event at once (retire), and
// each later free on them does the same, so that the plugin — kept loaded by
// the storages still alive (ABI rule 9) — gets all its memory and events back
// before its shutdown.
#pragma once

#include <tessera/device.h>

#include <atomic>
#include <vector>

#include "../device_registry.h"
#include "caching_allocator.h"
#include "plugin_device_memory.h"

namespace tessera::memory {

/// One device's allocator and the DeviceMemory it runs over.
struct DeviceAllocator {
  DeviceAllocator(const DeviceTypeEntry& entry, Device device);
  Device device;
  PluginDeviceMemory memory;
  CachingAllocator allocator;
  const DeviceTypeEntry& entry() const noexcept { return memory.entry(); }
};

/// Whether allocations on this device type go through the core's allocator.
inline bool uses_caching_allocator(const DeviceTypeEntry& e) {
  return e.has(TSR_DEVICE_CAP_CACHING_ALLOCATOR) && !e.no_storage();
}

namespace device_allocators {

/// Per device type: a table of `device_count` slots, created on first use.
extern std::atomic<std::atomic<DeviceAllocator*>*> g_tables[kMaxDeviceTypes];

/// Creates (once) the allocator of `device`; cold path of get(). Throws what
/// parsing TESSERA_ALLOC_CONF throws (ValueError naming the key).
DeviceAllocator& create(const DeviceTypeEntry& e, Device device);

/// The allocator of `device` (type `e`, uses_caching_allocator(e), index in
/// range), created on first use. Lock-free once created.
[[gnu::always_inline]] inline DeviceAllocator& get(const DeviceTypeEntry& e, Device device) {
  if (std::atomic<DeviceAllocator*>* table = g_tables[device.type()].load(std::memory_order_acquire)) [[likely]] {
    if (DeviceAllocator* a = table[device.index()].load(std::memory_order_acquire)) [[likely]] return *a;
  }
  return create(e, device);
}

/// The allocator of `device` if it was created; null otherwise. No throw.
DeviceAllocator* find(Device device) noexcept;

/// Every allocator created so far, by device type and index.
std::vector<DeviceAllocator*> all();

/// Returns a block from `a.allocator.allocate`. On a retired device type it
/// then returns every cached segment and spare event to the plugin. No throw
/// (a failure is reported on stderr).
void free(DeviceAllocator& a, void* ptr) noexcept;

/// The device type's plugin is being unloaded (the type is already retired):
/// its allocators return every cached segment and spare event now.
void retire(DeviceTypeId type) noexcept;

}  // namespace device_allocators
}  // namespace tessera::memory
