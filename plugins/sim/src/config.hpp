// The sim plugin's settings: TESSERA_SIM, read once when the plugin loads, and
// TESSERA_SIM_STREAM_LATENCY_US, read by each stream_create. Pure functions of
// the variables' text, so tests check the rules without touching the
// environment. docs/sim.md lists every key.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

#include <cstdint>
#include <string>

namespace tessera::sim {

/// What the checker does with unsynchronized cross-stream access (checker.hpp).
enum class CheckMode { kError, kWarn, kOff };

inline const char* check_mode_name(CheckMode m) {
  switch (m) {
    case CheckMode::kError: return "error";
    case CheckMode::kWarn: return "warn";
    case CheckMode::kOff: return "off";
  }
  return "?";
}

struct Config {
  int32_t devices = 1;              // devices=N       number of sim devices, 0..64
  uint64_t memory_mb = 1024;        // memory_mb=N     capacity of each device in MiB, 1..1048576
  uint64_t latency_us = 0;          // latency_us=N    per-launch latency of each device's default stream
  uint64_t alloc_latency_us = 0;    // alloc_latency_us=N  host time of each raw allocate (cudaMalloc is slow)
  CheckMode check = CheckMode::kError;  // check=error|warn|off
  int32_t dlpack_type = 0;          // dlpack_type=N   DLPack device type to register (0: none), for DLPack tests
  uint64_t memory_bytes() const { return memory_mb << 20; }
};

/// The largest accepted dlpack_type (DLPack's codes are small; leaves room for new ones).
inline constexpr uint64_t kMaxDLPackType = 1023;

/// The largest accepted latency: 10 s (a typo like 1000000000 would hang tests).
inline constexpr uint64_t kMaxLatencyUs = 10'000'000;

namespace detail {

[[noreturn]] inline void bad_setting(const std::string& what) {
  throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT,
                   "TESSERA_SIM: " + what +
                       " (expected comma-separated key=value settings: devices=N, memory_mb=N, latency_us=N, "
                       "alloc_latency_us=N, check=error|warn|off, dlpack_type=N; see docs/sim.md)");
}

/// A whole decimal number in [lo, hi] without sign or blanks, else nullopt-like false.
inline bool parse_number(const std::string& text, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) return false;
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline uint64_t number_setting(const std::string& key, const std::string& value, uint64_t lo, uint64_t hi) {
  uint64_t v = 0;
  if (!parse_number(value, lo, hi, &v)) {
    bad_setting("'" + key + "=" + value + "': the value must be a whole number from " + std::to_string(lo) + " to " +
                std::to_string(hi));
  }
  return v;
}

}  // namespace detail

/// Parses TESSERA_SIM (NULL or "" gives the defaults). Throws sdk::Error
/// (TSR_ERROR_INVALID_ARGUMENT) naming the offending setting for an unknown or
/// repeated key, a missing '=', or a value that is malformed or out of range.
inline Config parse_config(const char* text) {
  Config c;
  if (text == nullptr) return c;
  const std::string s(text);
  if (s.empty()) return c;
  std::string seen = ",";
  size_t pos = 0;
  while (true) {
    const size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t eq = item.find('=');
    if (item.empty()) detail::bad_setting("an empty setting in '" + s + "'");
    if (eq == std::string::npos) detail::bad_setting("'" + item + "' has no '='");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (seen.find("," + key + ",") != std::string::npos) detail::bad_setting("'" + key + "' is set twice");
    seen += key + ",";
    if (key == "devices") {
      c.devices = static_cast<int32_t>(detail::number_setting(key, value, 0, 64));
    } else if (key == "memory_mb") {
      c.memory_mb = detail::number_setting(key, value, 1, uint64_t{1} << 20);
    } else if (key == "latency_us") {
      c.latency_us = detail::number_setting(key, value, 0, kMaxLatencyUs);
    } else if (key == "alloc_latency_us") {
      c.alloc_latency_us = detail::number_setting(key, value, 0, kMaxLatencyUs);
    } else if (key == "dlpack_type") {
      // Opt-in: sim memory is host memory, but only a test that asks for it
      // should see sim tensors cross DLPack (the host refuses reserved types).
      c.dlpack_type = static_cast<int32_t>(detail::number_setting(key, value, 0, kMaxDLPackType));
    } else if (key == "check") {
      if (value == "error") c.check = CheckMode::kError;
      else if (value == "warn") c.check = CheckMode::kWarn;
      else if (value == "off") c.check = CheckMode::kOff;
      else detail::bad_setting("'check=" + value + "': the value must be error, warn or off");
    } else {
      detail::bad_setting("unknown key '" + key + "'");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return c;
}

/// Parses TESSERA_SIM_STREAM_LATENCY_US for a new stream: `fallback` when
/// unset or empty; throws sdk::Error naming the variable when malformed.
inline uint64_t parse_stream_latency(const char* text, uint64_t fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  uint64_t v = 0;
  if (!detail::parse_number(text, 0, kMaxLatencyUs, &v)) {
    throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, std::string("TESSERA_SIM_STREAM_LATENCY_US='") + text +
                                                     "': the value must be a whole number of microseconds from 0 to " +
                                                     std::to_string(kMaxLatencyUs));
  }
  return v;
}

}  // namespace tessera::sim
