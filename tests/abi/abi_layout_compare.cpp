// abi_layout_compare — the ctest `abi.layout_baseline`: runs abi_layout_dump and
// compares its listing of the current <tessera/abi.h> with the committed
// baseline abi_1_0_layout.txt.
//
//   abi_layout_compare --baseline FILE --dump EXE [--header abi.h] [--write FILE]
//
// What may differ (ABI 1.x grows only by appending; docs/abi.md H/P rules):
//   - a growable struct may have new fields after the baseline's last field, and
//     a larger size (same alignment);
//   - new structs, typedefs and constants may appear;
//   - a `const-min` constant (TSR_ABI_VERSION_MINOR) may grow.
// Everything else fails: a struct, field, typedef or constant of the baseline
// that is missing, moved, resized, retyped or revalued; any change to a frozen
// struct (TsrVersion, TsrValue, the DLPack types); a field inserted before the
// baseline's last field (it shifts or renames what follows).
//
// With --header, it also scans abi.h for constants (#define TSR_...), structs and
// typedefs that abi_manifest.h does not list: those would escape the baseline,
// so they fail the test until listed.
//
// Exit status: 0 pass (appended items are listed as notes), 1 drift, 2 usage or
// I/O error, 77 the dump skipped (not an LP64 platform).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

struct Field {
  std::string path;  // e.g. "TsrError.code"
  std::string line;  // the normalized line, compared as a whole
};

struct Struct {
  std::string name;
  std::string kind;  // growable | frozen
  long size = 0;
  long align = 0;
  std::vector<Field> fields;
};

struct Listing {
  std::vector<Struct> structs;
  std::map<std::string, std::string> typedefs;   // name -> line
  std::map<std::string, std::string> consts;     // name -> line (const and const-str)
  std::map<std::string, long long> const_mins;   // name -> value
  std::map<std::string, std::string> const_min_lines;

  const Struct* find(const std::string& name) const {
    for (const auto& s : structs)
      if (s.name == name) return &s;
    return nullptr;
  }
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Collapses runs of blanks so that the baseline may be aligned by hand.
std::string normalize(const std::string& s) {
  std::istringstream in(s);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

bool parse(std::istream& in, const std::string& what, Listing& out, std::string& error) {
  std::string raw;
  int lineno = 0;
  Struct* current = nullptr;
  while (std::getline(in, raw)) {
    ++lineno;
    const std::string line = normalize(trim(raw));
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string kw, name;
    words >> kw >> name;
    if (kw == "struct") {
      Struct s;
      s.name = name;
      std::string k1, k2;
      words >> s.kind >> k1 >> s.size >> k2 >> s.align;
      if (k1 != "size" || k2 != "align" || (s.kind != "growable" && s.kind != "frozen")) {
        error = what + ":" + std::to_string(lineno) + ": malformed struct line: " + line;
        return false;
      }
      out.structs.push_back(s);
      current = &out.structs.back();
    } else if (kw == "field") {
      if (current == nullptr || name.compare(0, current->name.size() + 1, current->name + ".") != 0) {
        error = what + ":" + std::to_string(lineno) + ": field outside its struct: " + line;
        return false;
      }
      current->fields.push_back({name, line});
    } else if (kw == "typedef") {
      current = nullptr;
      out.typedefs[name] = line;
    } else if (kw == "const" || kw == "const-str") {
      current = nullptr;
      out.consts[name] = line;
    } else if (kw == "const-min") {
      current = nullptr;
      std::string v;
      long long value = 0;
      words >> v >> value;
      out.const_mins[name] = value;
      out.const_min_lines[name] = line;
    } else {
      error = what + ":" + std::to_string(lineno) + ": unknown line: " + line;
      return false;
    }
  }
  return true;
}

// Names abi.h declares that the listing must cover: object-like TSR_ macros with
// a value, and Tsr* struct and typedef names.
std::set<std::string> declared_names(std::istream& header, std::set<std::string>& structs) {
  static const std::regex define_re(R"(^\s*#\s*define\s+(TSR_[A-Z0-9_]+)\s+\S)");
  static const std::regex struct_re(R"(\}\s*(Tsr\w+)\s*;)");
  static const std::regex typedef_re(R"(^\s*typedef\s+[^;(]*\b(Tsr\w+)\s*;)");
  static const std::regex fn_typedef_re(R"(^\s*typedef\s+[^;]*\(\s*\*\s*(Tsr\w+)\s*\))");
  static const std::set<std::string> not_constants = {"TSR_PLUGIN_EXPORT"};
  std::set<std::string> names;
  std::string line;
  std::smatch m;
  while (std::getline(header, line)) {
    if (std::regex_search(line, m, define_re) && !not_constants.count(m[1])) names.insert(m[1]);
    else if (std::regex_search(line, m, struct_re)) structs.insert(m[1]);
    else if (std::regex_search(line, m, fn_typedef_re)) names.insert(m[1]);
    else if (std::regex_search(line, m, typedef_re)) names.insert(m[1]);
  }
  for (const auto& s : structs) names.erase(s);  // `typedef struct X {` ... `} X;`
  return names;
}

int run_dump(const std::string& exe, std::string& text) {
  FILE* p = popen(("\"" + exe + "\"").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string baseline_path, dump_exe, write_path, header_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--baseline") baseline_path = argv[i + 1];
    else if (a == "--dump") dump_exe = argv[i + 1];
    else if (a == "--write") write_path = argv[i + 1];
    else if (a == "--header") header_path = argv[i + 1];
  }
  if (baseline_path.empty() || dump_exe.empty()) {
    std::cerr << "usage: abi_layout_compare --baseline FILE --dump EXE [--write FILE]\n";
    return 2;
  }

  std::string current_text;
  const int rc = run_dump(dump_exe, current_text);
  if (rc == 77) {
    std::cout << "skipped: " << current_text;
    return 77;
  }
  if (!write_path.empty()) std::ofstream(write_path) << current_text;
  if (rc != 0) {
    std::cerr << "abi_layout_dump failed (exit status " << rc << "); see its message above.\n";
    return 1;
  }

  std::ifstream bf(baseline_path);
  if (!bf) {
    std::cerr << "cannot read the baseline " << baseline_path << "\n";
    return 2;
  }
  Listing base, cur;
  std::string error;
  std::istringstream cs(current_text);
  if (!parse(bf, baseline_path, base, error) || !parse(cs, "abi_layout_dump output", cur, error)) {
    std::cerr << error << "\n";
    return 2;
  }

  std::vector<std::string> drift, notes;

  if (!header_path.empty()) {
    std::ifstream hf(header_path);
    if (!hf) {
      std::cerr << "cannot read " << header_path << "\n";
      return 2;
    }
    std::set<std::string> structs;
    const std::set<std::string> names = declared_names(hf, structs);
    std::vector<std::string> unlisted;
    for (const auto& s : structs)
      if (cur.find(s) == nullptr) unlisted.push_back("struct " + s);
    for (const auto& n : names)
      if (!cur.typedefs.count(n) && !cur.consts.count(n) && !cur.const_mins.count(n)) unlisted.push_back(n);
    if (!unlisted.empty()) {
      std::cerr << "abi.h declares names that tests/abi/abi_manifest.h does not list, so no baseline protects them:\n";
      for (const auto& u : unlisted) std::cerr << "  - " << u << "\n";
      std::cerr << "List each in abi_manifest.h (TSR_M_CONST / TSR_M_TYPEDEF / TSR_M_STRUCT...), then append the line\n"
                   "the listing prints to abi_1_0_layout.txt, with a changelog entry in docs/abi.md.\n";
      return 1;
    }
  }

  for (const Struct& b : base.structs) {
    const Struct* c = cur.find(b.name);
    if (c == nullptr) {
      drift.push_back("struct " + b.name + " is gone (or no longer listed in tests/abi/abi_manifest.h)");
      continue;
    }
    if (c->kind != b.kind) drift.push_back("struct " + b.name + " changed kind from " + b.kind + " to " + c->kind);
    if (c->align != b.align)
      drift.push_back("struct " + b.name + " changed alignment from " + std::to_string(b.align) + " to " +
                      std::to_string(c->align));
    if (b.kind == "frozen") {
      if (c->size != b.size)
        drift.push_back("frozen struct " + b.name + " changed size from " + std::to_string(b.size) + " to " +
                        std::to_string(c->size) + " (frozen value types never change in ABI 1.x)");
    } else if (c->size < b.size) {
      drift.push_back("struct " + b.name + " shrank from " + std::to_string(b.size) + " to " + std::to_string(c->size) +
                      " bytes");
    }
    for (size_t i = 0; i < b.fields.size(); ++i) {
      if (i >= c->fields.size()) {
        drift.push_back("field " + b.fields[i].path + " is gone; baseline: `" + b.fields[i].line + "`");
      } else if (c->fields[i].line != b.fields[i].line) {
        drift.push_back("field #" + std::to_string(i) + " of " + b.name + " changed:\n      baseline: `" +
                        b.fields[i].line + "`\n      current:  `" + c->fields[i].line + "`");
      }
    }
    if (c->fields.size() > b.fields.size()) {
      if (b.kind == "frozen") {
        for (size_t i = b.fields.size(); i < c->fields.size(); ++i)
          drift.push_back("frozen struct " + b.name + " gained field `" + c->fields[i].line + "`");
      } else {
        for (size_t i = b.fields.size(); i < c->fields.size(); ++i)
          notes.push_back("appended to " + b.name + " after the baseline: `" + c->fields[i].line + "`");
        if (c->size != b.size)
          notes.push_back(b.name + " grew from " + std::to_string(b.size) + " to " + std::to_string(c->size) + " bytes");
      }
    } else if (b.kind != "frozen" && c->size > b.size) {
      drift.push_back("struct " + b.name + " grew from " + std::to_string(b.size) + " to " + std::to_string(c->size) +
                      " bytes without a new listed field (if you appended its fields to the baseline, update the size on its\n"
                      "      struct line too)");
    }
  }
  for (const Struct& c : cur.structs)
    if (base.find(c.name) == nullptr) notes.push_back("new struct " + c.name + " (size " + std::to_string(c.size) + ")");

  for (const auto& [name, line] : base.typedefs) {
    auto it = cur.typedefs.find(name);
    if (it == cur.typedefs.end()) drift.push_back("typedef " + name + " is gone");
    else if (it->second != line)
      drift.push_back("typedef " + name + " changed:\n      baseline: `" + line + "`\n      current:  `" + it->second + "`");
  }
  for (const auto& [name, line] : cur.typedefs)
    if (!base.typedefs.count(name)) notes.push_back("new typedef: `" + line + "`");

  for (const auto& [name, line] : base.consts) {
    auto it = cur.consts.find(name);
    if (it == cur.consts.end()) drift.push_back("constant " + name + " is gone");
    else if (it->second != line)
      drift.push_back("constant " + name + " changed:\n      baseline: `" + line + "`\n      current:  `" + it->second + "`");
  }
  for (const auto& [name, line] : cur.consts)
    if (!base.consts.count(name)) notes.push_back("new constant: `" + line + "`");

  for (const auto& [name, value] : base.const_mins) {
    auto it = cur.const_mins.find(name);
    if (it == cur.const_mins.end()) drift.push_back("constant " + name + " is gone");
    else if (it->second < value)
      drift.push_back("constant " + name + " went down from " + std::to_string(value) + " to " + std::to_string(it->second));
    else if (it->second > value)
      notes.push_back(name + " is now " + std::to_string(it->second) + " (baseline " + std::to_string(value) + ")");
  }

  if (!drift.empty()) {
    std::cerr << "ABI LAYOUT DRIFT: <tessera/abi.h> no longer matches the ABI 1.0 baseline\n"
              << "  " << baseline_path << "\n\n";
    for (const auto& d : drift) std::cerr << "  - " << d << "\n";
    std::cerr << "\nABI 1.x structs may only grow by appending fields at their end (a minor version bump);\n"
                 "frozen value types (TsrVersion, TsrValue) and DLPack's types never change; constants keep their\n"
                 "values. Changing, removing, retyping or reordering anything is an ABI break that needs a new major\n"
                 "version (docs/abi.md). The baseline may only gain lines: new fields at the end of a struct (with\n"
                 "its size line updated), new typedefs and constants - each with a changelog entry in docs/abi.md.\n"
                 "The current listing is in "
              << (write_path.empty() ? std::string("the output of abi_layout_dump") : write_path) << ".\n";
    return 1;
  }

  std::cout << "ABI layout matches the baseline " << baseline_path << " (" << base.structs.size() << " structs, "
            << base.typedefs.size() << " typedefs, " << base.consts.size() + base.const_mins.size() << " constants).\n";
  if (!notes.empty()) {
    std::cout << "\nThe header has grown since the baseline (allowed in ABI 1.x). Record the growth: append these\n"
                 "lines to the baseline and add a changelog entry to docs/abi.md:\n";
    for (const auto& n : notes) std::cout << "  - " << n << "\n";
  }
  return 0;
}
