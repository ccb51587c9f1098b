// How the core reads its TESSERA_* environment settings, as pure functions of the
// variable's text (NULL when unset), so that tests and the fuzz harness
// (tests/fuzz/env_fuzz.cpp) check the rules without touching the environment.
// The call sites read each variable once (getenv) and pass its value here.
// Internal linkage: nothing here is exported from libtessera. Thread-safe (pure).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::env {

/// An on/off switch (TESSERA_DISPATCH_TRACE, TESSERA_VERBOSE): on when set to
/// anything but "" or "0".
[[maybe_unused]] static inline bool parse_switch(const char* value) noexcept {
  return value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0');
}

/// A ':'-separated list of paths (TESSERA_PLUGIN_PATH), in order; empty
/// entries ("a::b", a leading or trailing ':') are skipped.
[[maybe_unused]] static inline std::vector<std::string> parse_path_list(std::string_view value) {
  std::vector<std::string> out;
  while (!value.empty()) {
    const size_t colon = value.find(':');
    const std::string_view item = value.substr(0, colon);
    if (!item.empty()) out.emplace_back(item);
    if (colon == std::string_view::npos) break;
    value.remove_prefix(colon + 1);
  }
  return out;
}

}  // namespace tessera::env
