// DeviceMemory over a plugin's TsrDeviceTypeDesc (plugin_device_memory.h).
#include "plugin_device_memory.h"

#include <tessera/error.h>

#include <cstdio>

#include "../abi_bridge.h"

namespace tessera::memory {

std::string PluginDeviceMemory::device_name() const { return Device(entry_.id, index_).str(); }

void PluginDeviceMemory::fail(TsrError* err, const char* what) const {
  throw_abi_error(err, detail::str(what, " on ", device_name(), " (plugin '", entry_.plugin_name, "')"));
}

void PluginDeviceMemory::report(TsrError* err, const char* what) const noexcept {
  if (err == nullptr) return;
  const std::string message = take_error_message(err);
  std::fprintf(stderr, "[tessera] %s on %s (plugin '%s') failed: %s\n", what, device_name().c_str(),
               entry_.plugin_name.c_str(), message.c_str());
}

void* PluginDeviceMemory::allocate(size_t nbytes, TsrStream stream, std::string* oom_message) {
  void* ptr = nullptr;
  const auto& d = entry_.desc;
  TsrError* err = call_plugin([&] { return d.allocate(d.context, index_, nbytes, stream, &ptr); });
  if (err == nullptr) {
    if (ptr == nullptr)
      throw InternalError(detail::str("allocating ", nbytes, " bytes on ", device_name(), ": plugin '",
                                      entry_.plugin_name, "' reported success and returned NULL"));
    return ptr;
  }
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail(err, "allocating memory");
  std::string message = take_error_message(err);
  if (oom_message != nullptr) *oom_message = std::move(message);
  return nullptr;
}

void PluginDeviceMemory::deallocate(void* ptr, size_t nbytes, TsrStream stream) noexcept {
  const auto& d = entry_.desc;
  try {
    d.deallocate(d.context, index_, ptr, nbytes, stream);
  } catch (...) {  // ABI rule 4 violated; nothing here can report it otherwise
    std::fprintf(stderr, "[tessera] plugin %s: deallocate threw a C++ exception across the C ABI\n",
                 entry_.plugin_name.c_str());
  }
}

TsrEvent PluginDeviceMemory::event_create() {
  TsrEvent ev = nullptr;
  const auto& d = entry_.desc;
  if (TsrError* err = call_plugin([&] { return d.event_create(d.context, index_, &ev); }))
    fail(err, "creating an event for the allocator");
  return ev;
}

void PluginDeviceMemory::event_destroy(TsrEvent event) noexcept {
  const auto& d = entry_.desc;
  report(call_plugin([&] { return d.event_destroy(d.context, index_, event); }), "destroying an allocator event");
}

void PluginDeviceMemory::event_record(TsrEvent event, TsrStream stream) {
  const auto& d = entry_.desc;
  if (TsrError* err = call_plugin([&] { return d.event_record(d.context, index_, event, stream); }))
    fail(err, "recording an allocator event");
}

bool PluginDeviceMemory::event_query(TsrEvent event) {
  int32_t done = 0;
  const auto& d = entry_.desc;
  if (TsrError* err = call_plugin([&] { return d.event_query(d.context, index_, event, &done); }))
    fail(err, "querying an allocator event");
  return done != 0;
}

void PluginDeviceMemory::event_synchronize(TsrEvent event) {
  const auto& d = entry_.desc;
  if (TsrError* err = call_plugin([&] { return d.event_synchronize(d.context, index_, event); }))
    fail(err, "waiting for an allocator event");
}

void PluginDeviceMemory::device_synchronize() {
  const auto& d = entry_.desc;
  if (d.device_synchronize == nullptr) return;  // a synchronous device: nothing is queued
  if (TsrError* err = call_plugin([&] { return d.device_synchronize(d.context, index_); }))
    fail(err, "synchronizing the device");
}

size_t PluginDeviceMemory::total_memory() {
  const auto& d = entry_.desc;
  if (d.memory_info == nullptr) return 0;
  size_t free_bytes = 0, total = 0;
  if (TsrError* err = call_plugin([&] { return d.memory_info(d.context, index_, &free_bytes, &total); })) {
    report(err, "asking memory_info");
    return 0;
  }
  return total;
}

size_t PluginDeviceMemory::granularity() {
  size_t g = granularity_.load(std::memory_order_relaxed);
  if (g != 0) return g;
  const auto& d = entry_.desc;
  if (TsrError* err = call_plugin([&] { return d.va_granularity(d.context, index_, &g); }))
    fail(err, "asking va_granularity");
  if (g == 0 || (g & (g - 1)) != 0)
    throw PluginError(detail::str("plugin '", entry_.plugin_name, "': va_granularity of ", device_name(),
                                  " is ", g, ", not a power of two"));
  granularity_.store(g, std::memory_order_relaxed);
  return g;
}

void* PluginDeviceMemory::va_reserve(size_t nbytes) {
  void* base = nullptr;
  const auto& d = entry_.desc;
  TsrError* err = call_plugin([&] { return d.va_reserve(d.context, index_, nbytes, &base); });
  if (err == nullptr) return base;
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail(err, "reserving address space");
  take_error_message(err);
  return nullptr;
}

void PluginDeviceMemory::va_release(void* base, size_t nbytes) noexcept {
  const auto& d = entry_.desc;
  try {
    d.va_release(d.context, index_, base, nbytes);
  } catch (...) {
    std::fprintf(stderr, "[tessera] plugin %s: va_release threw a C++ exception across the C ABI\n",
                 entry_.plugin_name.c_str());
  }
}

bool PluginDeviceMemory::va_map(void* addr, size_t nbytes, std::string* oom_message) {
  const auto& d = entry_.desc;
  TsrError* err = call_plugin([&] { return d.va_map(d.context, index_, addr, nbytes); });
  if (err == nullptr) return true;
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail(err, "mapping memory into a reservation");
  std::string message = take_error_message(err);
  if (oom_message != nullptr) *oom_message = std::move(message);
  return false;
}

void PluginDeviceMemory::va_unmap(void* addr, size_t nbytes) noexcept {
  const auto& d = entry_.desc;
  try {
    d.va_unmap(d.context, index_, addr, nbytes);
  } catch (...) {
    std::fprintf(stderr, "[tessera] plugin %s: va_unmap threw a C++ exception across the C ABI\n",
                 entry_.plugin_name.c_str());
  }
}

}  // namespace tessera::memory
