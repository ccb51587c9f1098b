// How the CPU plugin reads its TESSERA_CPU_* environment settings, as pure
// functions of the variable's text (NULL when unset), so that tests and the
// fuzz harness (tests/fuzz/env_fuzz.cpp) check the rules without touching the
// environment. Each call site reads its variable once. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>

namespace tessera::cpu::env {

/// TESSERA_CPU_LOAD_AWARE: on unless the value starts with '0'.
inline bool parse_load_aware(const char* value) noexcept { return value == nullptr || value[0] != '0'; }

/// TESSERA_CPU_CACHE_BYTES: the large-block cache budget in bytes (0 disables
/// the cache), or nullopt (unset or not a number: the default).
inline std::optional<uint64_t> parse_cache_bytes(const char* value) noexcept {
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (end != value && *end == '\0') return v;
  return std::nullopt;
}

/// TESSERA_CPU_STREAM_GRAIN: a positive number of elements, else `fallback`.
inline int64_t parse_stream_grain(const char* value, int64_t fallback) noexcept {
  const long long g = value != nullptr ? std::atoll(value) : 0;
  return g > 0 ? static_cast<int64_t>(g) : fallback;
}

}  // namespace tessera::cpu::env
