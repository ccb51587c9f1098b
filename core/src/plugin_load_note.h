// The tail of a "no such device type" error: why a default plugin that might
// have provided it is missing (a CPU plugin refusing TESSERA_CPU_ISA, a
// missing library), so the user sees the cause, not only its symptom.
#pragma once

#include <tessera/plugin.h>

#include <string>

namespace tessera::detail {

/// "" when every default plugin loaded; else "; default plugins that failed
/// to load: <error>; <error>". Thread-safe (reads the loader's error list).
inline std::string plugin_load_note() {
  std::string note;
  for (const std::string& e : plugin_load_errors()) note += (note.empty() ? "" : "; ") + e;
  return note.empty() ? note : "; default plugins that failed to load: " + note;
}

}  // namespace tessera::detail
