// The caching allocator of each device that asks for one (device_allocators.h).
#include "device_allocators.h"

#include <tessera/error.h>

#include <cstdio>
#include <exception>
#include <mutex>

#include "../allocation.h"
#include "alloc_config.h"

namespace tessera::memory {

DeviceAllocator::DeviceAllocator(const DeviceTypeEntry& e, Device d)
    : device(d), memory(e, d.index()), allocator(memory, current_alloc_conf(), d.index()) {}

namespace device_allocators {

constinit std::atomic<std::atomic<DeviceAllocator*>*> g_tables[kMaxDeviceTypes] = {};

namespace {
std::mutex& create_mutex() {
  static std::mutex mu;
  return mu;
}

void report(const char* what, Device d, const std::exception* e) noexcept {
  std::fprintf(stderr, "[tessera] %s on %s failed: %s\n", what, d.str().c_str(),
               e != nullptr ? e->what() : "unknown exception");
}

// Gives a retired device's cached memory and spare events back to its plugin.
void drain(DeviceAllocator& a) noexcept {
  try {
    a.allocator.empty_cache();
  } catch (const std::exception& e) {
    report("returning cached memory of an unloaded plugin", a.device, &e);
  } catch (...) {
    report("returning cached memory of an unloaded plugin", a.device, nullptr);
  }
  a.allocator.release_spare_events();
}
}  // namespace

DeviceAllocator& create(const DeviceTypeEntry& e, Device device) {
  std::lock_guard lock(create_mutex());
  std::atomic<DeviceAllocator*>* table = g_tables[device.type()].load(std::memory_order_acquire);
  if (table == nullptr) {
    table = new std::atomic<DeviceAllocator*>[static_cast<size_t>(e.device_count)]();
    g_tables[device.type()].store(table, std::memory_order_release);
  }
  DeviceAllocator* a = table[device.index()].load(std::memory_order_acquire);
  if (a == nullptr) {
    a = new DeviceAllocator(e, device);  // never deleted (see the header)
    a->allocator.set_cache_release_hook(&release_thread_caches_note);
    table[device.index()].store(a, std::memory_order_release);
  }
  return *a;
}

DeviceAllocator* find(Device device) noexcept {
  if (device.type() >= kMaxDeviceTypes) return nullptr;
  const DeviceTypeEntry* e = device_registry::get(device.type());
  std::atomic<DeviceAllocator*>* table = g_tables[device.type()].load(std::memory_order_acquire);
  if (e == nullptr || table == nullptr || device.index() < 0 || device.index() >= e->device_count) return nullptr;
  return table[device.index()].load(std::memory_order_acquire);
}

std::vector<DeviceAllocator*> all() {
  std::vector<DeviceAllocator*> out;
  for (int t = 0; t < kMaxDeviceTypes; ++t) {
    const DeviceTypeEntry* e = device_registry::get(static_cast<DeviceTypeId>(t));
    std::atomic<DeviceAllocator*>* table = g_tables[t].load(std::memory_order_acquire);
    if (e == nullptr || table == nullptr) continue;
    for (int32_t i = 0; i < e->device_count; ++i)
      if (DeviceAllocator* a = table[i].load(std::memory_order_acquire)) out.push_back(a);
  }
  return out;
}

void free(DeviceAllocator& a, void* ptr) noexcept {
  try {
    a.allocator.free(ptr);
  } catch (const std::exception& e) {
    report("freeing a block", a.device, &e);
  } catch (...) {
    report("freeing a block", a.device, nullptr);
  }
  if (device_registry::retired(a.device.type())) [[unlikely]] drain(a);
}

void retire(DeviceTypeId type) noexcept {
  std::atomic<DeviceAllocator*>* table = g_tables[type].load(std::memory_order_acquire);
  const DeviceTypeEntry* e = device_registry::get(type);
  if (table == nullptr || e == nullptr) return;
  for (int32_t i = 0; i < e->device_count; ++i)
    if (DeviceAllocator* a = table[i].load(std::memory_order_acquire)) drain(*a);
}

}  // namespace device_allocators
}  // namespace tessera::memory
