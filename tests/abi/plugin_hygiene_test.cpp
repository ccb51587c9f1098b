// Plugin hygiene (DESIGN §1 and §2 rule 1; docs/abi.md P1, P2): for every plugin
// in the build's plugin folder (libtessera-cpu.so, libtessera-meta.so,
// libtessera-cuda.so when built — whatever is there when the test runs):
//   - the dynamic symbol table exports exactly one code/data symbol, the entry
//     point tessera_plugin_entry, as a function;
//   - it does not depend on libtessera, directly (readelf NEEDED) or through
//     another library (ldd), and references no tessera:: symbol it would need
//     the core to resolve.
// Runs binutils through popen; needs nm, readelf and ldd on PATH.
// TSRTEST_HYGIENE_DIR=<folder> checks another folder instead (e.g. an installed
// plugin folder, or to see the test fail on a deliberately bad plugin).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "elf_tools.h"

namespace fs = std::filesystem;
using namespace tsr_abi_test;

namespace {

std::string plugin_dir() {
  const char* dir = std::getenv("TSRTEST_HYGIENE_DIR");
  return dir != nullptr && *dir != 0 ? dir : TSRTEST_PLUGIN_OUTPUT_DIR;
}

std::vector<std::string> plugin_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(plugin_dir(), ec))
    if (e.is_regular_file() && e.path().extension() == ".so") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string name_of(const std::string& path) { return fs::path(path).filename().string(); }

bool mentions_libtessera(const std::string& library) { return library.rfind("libtessera", 0) == 0; }

}  // namespace

TEST(AbiPluginHygiene, PluginFolderHasPlugins) {
  const auto files = plugin_files();
  ASSERT_FALSE(files.empty()) << "no *.so in the plugin folder " << plugin_dir();
  if (plugin_dir() != TSRTEST_PLUGIN_OUTPUT_DIR) return;  // a folder given by TSRTEST_HYGIENE_DIR
  // The meta plugin is always built; the others depend on the machine.
  EXPECT_TRUE(std::any_of(files.begin(), files.end(),
                          [](const std::string& f) { return name_of(f) == "libtessera-meta.so"; }))
      << "libtessera-meta.so is missing from " << plugin_dir();
  for (const auto& f : files) std::cout << "[ plugin   ] " << f << "\n";
}

TEST(AbiPluginHygiene, EveryPluginExportsOnlyTheEntryPoint) {
  for (const std::string& path : plugin_files()) {
    std::vector<Symbol> syms;
    std::string error;
    ASSERT_TRUE(exported_symbols(path, syms, error)) << error;
    const bool only_entry = syms.size() == 1 && syms[0].name == "tessera_plugin_entry";
    EXPECT_TRUE(only_entry) << "plugin " << name_of(path) << " (" << path << ") must export exactly one symbol, "
                            << "tessera_plugin_entry (ABI rule P1: build it with tessera_add_plugin, which hides "
                            << "everything else with -fvisibility=hidden and a version script). It exports "
                            << syms.size() << ":" << describe(syms);
    if (only_entry) {
      EXPECT_EQ(syms[0].kind, 'T') << "plugin " << name_of(path)
                                   << ": tessera_plugin_entry must be a function (nm kind T), got kind " << syms[0].kind;
    }
  }
}

TEST(AbiPluginHygiene, NoPluginDependsOnLibtessera) {
  for (const std::string& path : plugin_files()) {
    const std::string plugin = name_of(path);
    std::vector<std::string> needed;
    std::string error;
    ASSERT_TRUE(needed_libraries(path, needed, error)) << error;
    for (const std::string& lib : needed) {
      EXPECT_FALSE(mentions_libtessera(lib))
          << "plugin " << plugin << " (" << path << ") links " << lib
          << " (readelf -d NEEDED): plugins must never link libtessera or another plugin (DESIGN §1; ABI rule P2)";
    }

    // Transitive dependencies, as the dynamic loader resolves them.
    const CommandResult ldd = run_command("ldd " + shell_quote(path));
    ASSERT_EQ(ldd.status, 0) << "ldd failed on " << path << ":\n" << ldd.output;
    std::istringstream lines(ldd.output);
    std::string line;
    while (std::getline(lines, line)) {
      const std::string lib = line.substr(std::min(line.find_first_not_of(" \t"), line.size()));
      EXPECT_FALSE(mentions_libtessera(lib))
          << "plugin " << plugin << " depends on libtessera (ldd, directly or through another library): " << lib;
      EXPECT_EQ(line.find("not found"), std::string::npos)
          << "plugin " << plugin << " has an unresolvable dependency (ldd): " << lib
          << " — it could not load, and its transitive dependencies cannot be checked";
    }

    // A symbol only the core could provide would make the plugin unloadable on its own.
    const CommandResult nm = run_command("nm -D --undefined-only -C " + shell_quote(path));
    ASSERT_EQ(nm.status, 0) << "nm failed on " << path << ":\n" << nm.output;
    std::vector<Symbol> core_refs;
    for (const Symbol& s : parse_nm(nm.output))
      if (s.name.rfind("tessera::", 0) == 0) core_refs.push_back(s);
    EXPECT_TRUE(core_refs.empty()) << "plugin " << plugin
                                   << " references symbols that only libtessera defines:" << describe(core_refs);
  }
}
