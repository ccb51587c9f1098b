#include <tessera/device.h>
#include <tessera/error.h>
#include <tessera/plugin.h>

#include <atomic>
#include <charconv>

#include "device_registry.h"
#include "plugin_load_note.h"

namespace tessera {
namespace {
DeviceTypeId lookup_type(std::string_view name) {
  const DeviceTypeEntry* e = device_registry::find(name);
  if (e == nullptr) {
    load_default_plugins();
    e = device_registry::find(name);
  }
  if (e == nullptr) [[unlikely]] {
    std::string known;
    for (const DeviceTypeEntry* x : device_registry::all()) known += (known.empty() ? "" : ", ") + x->name;
    throw ValueError(detail::str("unknown device type '", name, "' (registered device types: ",
                                 known.empty() ? "none — no plugin loaded" : known, ")",
                                 detail::plugin_load_note()));
  }
  return e->id;
}
}  // namespace

Device::Device() : index_(0) {
  static std::atomic<int> cpu{-1};  // cached: the default device is on hot paths
  int id = cpu.load(std::memory_order_relaxed);
  if (id < 0 || device_registry::retired(static_cast<DeviceTypeId>(id))) {  // first use, or cpu was reloaded
    id = lookup_type("cpu");
    cpu.store(id, std::memory_order_relaxed);
  }
  type_ = static_cast<DeviceTypeId>(id);
}

Device::Device(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    const std::string_view idx = spec.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), index);
    TSR_CHECK(ec == std::errc() && ptr == idx.data() + idx.size() && index >= 0 && index <= kMaxDeviceIndex, ValueError,
              "invalid device string '", spec, "' (expected 'type' or 'type:index', e.g. 'cpu' or 'cuda:1')");
  }
  type_ = lookup_type(name);
  index_ = static_cast<int16_t>(index);
}

void Device::fail_index(int index) {
  throw ValueError(detail::str("device index ", index, " is out of range (0 to ", kMaxDeviceIndex, ")"));
}

const std::string& Device::type_name() const { return device_entry(*this).name; }

std::string Device::str() const {
  const DeviceTypeEntry* e = device_registry::get(type_);
  return (e ? e->name : "device" + std::to_string(type_)) + ":" + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace tessera
