// How the CPU plugin reads its TESSERA_CPU_* environment settings, as pure
// functions of the variable's text (NULL when unset), so that tests and the
// fuzz harness (tests/fuzz/env_fuzz.cpp) check the rules without touching the
// environment. Each call site reads its variable once. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <optional>

namespace tessera::cpu::env {

/// A whole decimal number without sign, blanks or other characters that fits
/// in 64 bits, else nullopt (strtoull would take " +12", "-1" as 2^64-1, or
/// clamp "99999999999999999999").
inline std::optional<uint64_t> parse_decimal(const char* value) noexcept {
  if (value == nullptr || *value == '\0') return std::nullopt;
  uint64_t v = 0;
  for (const char* p = value; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(*p - '0'), &v))
      return std::nullopt;
  }
  return v;
}

/// TESSERA_CPU_LOAD_AWARE: on unless the value starts with '0'.
inline bool parse_load_aware(const char* value) noexcept { return value == nullptr || value[0] != '0'; }

/// TESSERA_CPU_STREAM_GRAIN: a positive whole decimal number of elements that
/// fits in int64, else `fallback`.
inline int64_t parse_stream_grain(const char* value, int64_t fallback) noexcept {
  const std::optional<uint64_t> v = parse_decimal(value);
  return v && *v > 0 && *v <= uint64_t(INT64_MAX) ? static_cast<int64_t>(*v) : fallback;
}

}  // namespace tessera::cpu::env
