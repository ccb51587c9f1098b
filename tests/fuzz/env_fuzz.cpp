// Fuzz target: parsing of the TESSERA_* environment settings.
//
// Every TESSERA_* variable is read at one getenv site, whose value goes through
// a pure parse function (core/src/env_settings.h, plugins/cpu/src/env_settings.hpp):
//   TESSERA_DISPATCH_TRACE, TESSERA_VERBOSE   parse_switch
//   TESSERA_PLUGIN_PATH                       parse_path_list
//   TESSERA_CPU_LOAD_AWARE                    parse_load_aware
//   TESSERA_CPU_STREAM_GRAIN                  parse_stream_grain (over parse_decimal)
// The input is a variable's value (an empty input stands for "unset"; the
// value ends at the first NUL, as in an environment). Each function must agree
// with an independent statement of its rule (docs/testing.md lists them).
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/src/env_settings.h"
#include "fuzz_input.h"
#include "plugins/cpu/src/env_settings.hpp"

namespace {

constexpr const char* kName = "env";

// A whole unsigned decimal number that fits in 64 bits: std::from_chars takes
// no sign, blank or prefix and reports overflow.
std::optional<uint64_t> whole_decimal(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string> split_colons(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch != ':') {
      cur += ch;
      continue;
    }
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool unset = size == 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  text.resize(std::string_view(text.c_str()).size());  // up to the first NUL
  const char* value = unset ? nullptr : text.c_str();

  using namespace tessera;
  TSR_FUZZ_CHECK(kName, env::parse_switch(value) == (!unset && !text.empty() && text != "0"));
  if (!unset) TSR_FUZZ_CHECK(kName, env::parse_path_list(text) == split_colons(text));
  TSR_FUZZ_CHECK(kName, cpu::env::parse_load_aware(value) == (unset || text.empty() || text[0] != '0'));

  const std::optional<uint64_t> number = unset ? std::nullopt : whole_decimal(text);
  TSR_FUZZ_CHECK(kName, cpu::env::parse_decimal(value) == number);
  const int64_t fallback = int64_t{1} << 22;
  const int64_t grain = number && *number > 0 && *number <= uint64_t(INT64_MAX) ? int64_t(*number) : fallback;
  TSR_FUZZ_CHECK(kName, cpu::env::parse_stream_grain(value, fallback) == grain);
  return 0;
}
