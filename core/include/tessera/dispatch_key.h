// tessera/dispatch_key.h — dispatch keys and 64-bit key sets.
//
// Bits 0..47 are backend bits, one per registered device type (the bit index is
// the DeviceTypeId). Bits 48..63 are functionality keys; a higher bit has higher
// priority, so the kernel run for a key set is the one of its highest set bit:
// User keys > Autograd > Autocast > backend. Pure values; thread-safe.
#pragma once

#include <tessera/device.h>

#include <bit>
#include <cstdint>
#include <string>

namespace tessera {

enum class DispatchKey : uint8_t {
  // 0..47: backends (DeviceTypeId)
  Autocast = 56,
  Autograd = 58,
  User0 = 62,  // free for embedders: tracers, profilers, Python modes
  User1 = 63,
};
inline constexpr int kNumDispatchKeys = 64;
inline constexpr int kFirstFunctionalityKey = 48;

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(uint64_t bits) : bits_(bits) {}
  constexpr DispatchKeySet(DispatchKey k) : bits_(uint64_t{1} << static_cast<int>(k)) {}  // NOLINT
  static constexpr DispatchKeySet backend(DeviceTypeId t) { return DispatchKeySet(uint64_t{1} << t); }

  constexpr uint64_t raw() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool has(int bit) const { return (bits_ >> bit) & 1; }
  constexpr bool has(DispatchKey k) const { return has(static_cast<int>(k)); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return DispatchKeySet(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return DispatchKeySet(bits_ & o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return DispatchKeySet(bits_ & ~o.bits_); }
  constexpr bool operator==(DispatchKeySet o) const { return bits_ == o.bits_; }
  /// Index (0..63) of the highest-priority key; -1 if empty.
  constexpr int highest() const { return bits_ ? 63 - std::countl_zero(bits_) : -1; }
  /// This set without every key of priority >= bit (what redispatch uses).
  constexpr DispatchKeySet below(int bit) const {
    return DispatchKeySet(bit <= 0 ? 0 : bits_ & ((uint64_t{1} << bit) - 1));
  }
  /// The backend bits only.
  constexpr DispatchKeySet backends() const {
    return DispatchKeySet(bits_ & ((uint64_t{1} << kFirstFunctionalityKey) - 1));
  }

 private:
  uint64_t bits_ = 0;
};

/// Name of a key: a device type name for backend bits ("cpu"), else "Autograd"...
std::string dispatch_key_name(int bit);
/// "[Autograd, cpu]".
std::string to_string(DispatchKeySet ks);

/// Thread-local keys added to (included) or removed from (excluded) every
/// dispatch on this thread. Exclusion wins.
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
  // Autograd's per-thread modes (tessera/autograd.h), kept here so that the
  // tensor constructor reads them from the same initial-exec TLS block.
  bool grad_enabled = true;
  bool inference_mode = false;
  bool anomaly_mode = false;
  uint32_t below_autograd = 0;  // depth of autograd kernels running the op below them
};
LocalDispatchKeySet& tls_local_dispatch_key_set();

/// RAII: adds keys to this thread's included set for the guard's scope.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks);
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

/// RAII: adds keys to this thread's excluded set for the guard's scope.
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks);
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

}  // namespace tessera
