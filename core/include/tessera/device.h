// tessera/device.h — a device: a registered device type plus an index.
//
// Device types are not a fixed enum: each is registered by a plugin at load time
// and gets a small id, which is also its backend bit in the DispatchKeySet. A
// Device is a trivially copyable value; building one from a string ("cpu",
// "cuda:1", "meta") looks the type up in the registry (loading the default
// plugins on first use) and throws ValueError for an unknown type.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace tessera {

/// Index of a registered device type, 0..kMaxDeviceTypes-1 (= its backend bit).
using DeviceTypeId = uint8_t;
inline constexpr int kMaxDeviceTypes = 48;
/// The largest device index a Device holds.
inline constexpr int kMaxDeviceIndex = 32767;

class Device {
 public:
  /// The CPU device (the "cpu" plugin must be loaded when it is used).
  Device();
  /// `index` must lie in 0..kMaxDeviceIndex (ValueError otherwise; indices are
  /// 16-bit, as a plugin's device_count is capped to match).
  Device(DeviceTypeId type, int index) : type_(type), index_(static_cast<int16_t>(index)) {
    if (static_cast<unsigned>(index) > unsigned{kMaxDeviceIndex}) [[unlikely]] fail_index(index);
  }
  Device(std::string_view spec);  // NOLINT: "cpu", "cpu:0", "meta", "cuda:1"
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  Device(const std::string& spec) : Device(std::string_view(spec)) {}  // NOLINT

  DeviceTypeId type() const { return type_; }
  int index() const { return index_; }
  /// The registered name of the type, e.g. "cpu".
  const std::string& type_name() const;
  /// "cpu:0", "meta:0", "cuda:1".
  std::string str() const;

  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  [[noreturn, gnu::cold]] static void fail_index(int index);
  DeviceTypeId type_;
  int16_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace tessera
