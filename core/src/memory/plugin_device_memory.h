// memory/plugin_device_memory.h — DeviceMemory over a plugin's device type.
//
// The caching allocator sees a device only through DeviceMemory; this is the
// core's implementation of it over the slots of one TsrDeviceTypeDesc and one
// device index: allocate/deallocate, the event slots, memory_info and the
// expandable-segment (va_*) slots. Plugin errors become tessera::Errors naming
// the call, the device and the plugin; an out-of-memory answer becomes the
// nullptr/false return the allocator expects, with the plugin's words.
//
// Thread-safety: stateless apart from the cached granularity; any thread.
// Lifetime: the DeviceTypeEntry is never freed (device_registry.h); the plugin
// must be loaded whenever a member is called (the allocators' owners ensure it,
// device_allocators.h).
#pragma once

#include <atomic>

#include "../device_registry.h"
#include "device_memory.h"

namespace tessera::memory {

class PluginDeviceMemory final : public DeviceMemory {
 public:
  PluginDeviceMemory(const DeviceTypeEntry& entry, int32_t index) : entry_(entry), index_(index) {}

  std::string device_name() const override;
  bool async() const override { return entry_.has(TSR_DEVICE_CAP_ASYNC); }
  size_t alignment() const override { return entry_.desc.memory_alignment; }
  void* allocate(size_t nbytes, TsrStream stream, std::string* oom_message) override;
  void deallocate(void* ptr, size_t nbytes, TsrStream stream) noexcept override;
  TsrEvent event_create() override;
  void event_destroy(TsrEvent event) noexcept override;
  void event_record(TsrEvent event, TsrStream stream) override;
  bool event_query(TsrEvent event) override;
  void event_synchronize(TsrEvent event) override;
  void device_synchronize() override;
  size_t total_memory() override;

  bool expandable() const override { return entry_.desc.va_map != nullptr; }
  size_t granularity() override;
  void* va_reserve(size_t nbytes) override;
  void va_release(void* base, size_t nbytes) noexcept override;
  bool va_map(void* addr, size_t nbytes, std::string* oom_message) override;
  void va_unmap(void* addr, size_t nbytes) noexcept override;

  const DeviceTypeEntry& entry() const noexcept { return entry_; }
  int32_t index() const noexcept { return index_; }

 private:
  [[noreturn]] void fail(TsrError* err, const char* what) const;
  void report(TsrError* err, const char* what) const noexcept;

  const DeviceTypeEntry& entry_;
  const int32_t index_;
  std::atomic<size_t> granularity_{0};  // 0: not asked yet
};

}  // namespace tessera::memory
