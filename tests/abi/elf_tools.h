// elf_tools.h — runs binutils (nm, readelf, ldd) on a shared library and parses
// what the ABI tests need: the defined dynamic symbols, the undefined ones, the
// direct (NEEDED) and resolved (ldd) dependencies. Linux/ELF only.
#pragma once

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace tsr_abi_test {

struct CommandResult {
  int status = -1;  // exit status, -1 if it could not run or was killed
  std::string output;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `command` through the shell, capturing stdout and stderr together.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

struct Symbol {
  char kind = '?';   // nm's letter: T text, D/B/R/G/S data, W/V weak, i indirect, u unique...
  std::string name;  // demangled
};

/// Symbols that the toolchain adds to every shared object; never counted as exports.
inline bool is_toolchain_symbol(const std::string& name) {
  static const std::set<std::string> names = {"_init", "_fini", "__bss_start", "_edata", "_end"};
  return names.count(name) != 0;
}

/// nm's letters of the kinds that are code or data (what a library exports).
inline bool is_code_or_data_kind(char k) {
  static const std::string kinds = "TtDdBbRrGgSsVvWwiu";
  return kinds.find(k) != std::string::npos;
}

/// Parses `nm -D [--defined-only|--undefined-only] -C` output: "[addr] K name".
inline std::vector<Symbol> parse_nm(const std::string& text) {
  std::vector<Symbol> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // Defined symbols have a hexadecimal address first; undefined ones have blanks.
    size_t i = line.find_first_not_of(' ');
    if (i == std::string::npos) continue;
    size_t j = line.find(' ', i);
    if (j == std::string::npos) continue;
    std::string first = line.substr(i, j - i);
    size_t k = line.find_first_not_of(' ', j);
    if (k == std::string::npos) continue;
    Symbol s;
    if (first.size() == 1) {  // no address: "K name"
      s.kind = first[0];
      s.name = line.substr(k);
    } else {  // "addr K name"
      s.kind = line[k];
      size_t n = line.find_first_not_of(' ', k + 1);
      if (n == std::string::npos) continue;
      s.name = line.substr(n);
    }
    out.push_back(s);
  }
  return out;
}

/// The exported code/data symbols of a library (toolchain symbols left out).
/// On failure returns false and sets `error`.
inline bool exported_symbols(const std::string& path, std::vector<Symbol>& out, std::string& error) {
  const CommandResult r = run_command("nm -D --defined-only -C " + shell_quote(path));
  if (r.status != 0) {
    error = "`nm -D --defined-only` failed on " + path + " (status " + std::to_string(r.status) + "): " + r.output;
    return false;
  }
  out.clear();
  for (const Symbol& s : parse_nm(r.output))
    if (is_code_or_data_kind(s.kind) && !is_toolchain_symbol(s.name)) out.push_back(s);
  return true;
}

inline std::string describe(const std::vector<Symbol>& syms) {
  std::string s;
  for (const Symbol& x : syms) s += std::string("\n    ") + x.kind + " " + x.name;
  return s.empty() ? "\n    (none)" : s;
}

/// The NEEDED entries of `readelf -d`.
inline bool needed_libraries(const std::string& path, std::vector<std::string>& out, std::string& error) {
  const CommandResult r = run_command("readelf -d " + shell_quote(path));
  if (r.status != 0) {
    error = "`readelf -d` failed on " + path + ": " + r.output;
    return false;
  }
  out.clear();
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    const size_t a = line.find('['), b = line.rfind(']');
    if (a != std::string::npos && b != std::string::npos && b > a) out.push_back(line.substr(a + 1, b - a - 1));
  }
  return true;
}

}  // namespace tsr_abi_test
