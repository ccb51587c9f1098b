// The op catalogue is part of the ABI contract (docs/abi.md §6, "The op
// catalogue"): plugins register kernels by op name and read their arguments by
// index in schema order, callers pass them by position or keyword. Every
// catalogue version is committed as tests/abi/op_catalogue_v<N>.txt and never
// edited; this program checks that the live dispatcher keeps every op of every
// committed version, changed at most by appended arguments with defaults (or a
// default or positional use granted), and that it declares nothing the newest
// version does not record.
//
//   abi_op_catalogue_test                 the checks (GoogleTest)
//   abi_op_catalogue_test --write [FILE]  the accept step: writes the live
//       catalogue to FILE (default: op_catalogue_v<op_catalogue_version()>.txt
//       in the source folder), refusing if FILE exists or if the core breaks a
//       committed version.
#include <gtest/gtest.h>
#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/op_catalogue.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace tessera;

namespace {

const char* const kCatalogueDir = TSRTEST_OP_CATALOGUE_DIR;

// One op as the catalogue records it. `kind` says what a plugin may do with it:
// "kernel" (plugins register kernels under this name), "kernel:<op>" (an
// in-place variant calling <op>'s kernels) or "composite" (the core's own, for
// every device; H8 refuses plugin kernels). Flags change what a kernel or a
// caller sees (in place, view, factory, data-dependent output); "pointwise" is
// left out: it only picks the core's fast path, the kernel sees the same call.
struct Entry {
  std::string attributes;  // kind, then flags, space-separated
  std::string text;        // the schema as declared
  Schema schema;
};
using Catalogue = std::map<std::string, Entry>;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string attributes_of(const Operator& op) {
  std::string a = !op.is_structured()          ? "composite"
                  : &op.kernel_source() == &op ? "kernel"
                                               : "kernel:" + op.kernel_source().name();
  if (op.flags() & kInPlace) a += " inplace";
  if (op.flags() & kView) a += " view";
  if (op.flags() & kFactory) a += " factory";
  if (op.flags() & kDataDependent) a += " data_dependent";
  return a;
}

// The library's ops; ops without a family (a test's, a user's) are not part of it.
Catalogue live_catalogue() {
  Catalogue c;
  for (const Operator* op : Dispatcher::instance().operators())
    if (*op->family() != '\0') c[op->name()] = Entry{attributes_of(*op), op->schema().text, op->schema()};
  return c;
}

// File format: '#' comments, a "version N" line, then one op per line:
// "<attributes> | <schema>".
Catalogue parse_catalogue(const std::string& text, const std::string& origin, int* version = nullptr) {
  Catalogue c;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("version ", 0) == 0) {
      if (version) *version = std::stoi(line.substr(8));
      continue;
    }
    const size_t bar = line.find(" | ");
    if (bar == std::string::npos)
      throw std::runtime_error(origin + ":" + std::to_string(no) + ": expected '<attributes> | <schema>'");
    Entry e{trim(line.substr(0, bar)), trim(line.substr(bar + 3)), {}};
    e.schema = Schema::parse(e.text);
    if (!c.emplace(e.schema.name, e).second)
      throw std::runtime_error(origin + ":" + std::to_string(no) + ": op '" + e.schema.name + "' listed twice");
  }
  return c;
}

std::string format_catalogue(const Catalogue& c, int version) {
  std::ostringstream os;
  os << "# Tessera op catalogue, version " << version << " (docs/abi.md §6, \"The op catalogue\").\n"
     << "# Written by `abi_op_catalogue_test --write`. Never edit a committed version: a change\n"
     << "# to the catalogue is a new file with the next version number.\n"
     << "# One op per line: <kind> [flags] | <schema>. kind: kernel (plugins register kernels\n"
     << "# for it), kernel:<op> (in-place variant using <op>'s kernels), composite (no plugin kernels).\n"
     << "version " << version << "\n";
  for (const auto& [name, e] : c) os << e.attributes << " | " << e.text << "\n";
  return os.str();
}

std::string quoted(const SchemaArgument& a) {
  return "'" + a.type + " " + a.name + (a.default_value.empty() ? "" : "=" + a.default_value) + "'" +
         (a.kwarg_only ? " (keyword-only)" : "");
}

// What breaks a plugin kernel reading args by index, or a caller, when `before`
// (released) becomes `after`. Empty: `after` is `before` with appended arguments
// that every existing caller and kernel can ignore.
std::vector<std::string> schema_breaks(const Schema& before, const Schema& after) {
  std::vector<std::string> out;
  const auto& b = before.arguments;
  const auto& a = after.arguments;
  for (size_t i = 0; i < b.size(); ++i) {
    const std::string where = "argument " + std::to_string(i) + " " + quoted(b[i]);
    auto named = [](const std::vector<SchemaArgument>& v, const std::string& n) {
      return static_cast<size_t>(
          std::find_if(v.begin(), v.end(), [&](const SchemaArgument& x) { return x.name == n; }) - v.begin());
    };
    if (i >= a.size() || b[i].name != a[i].name) {
      const size_t moved = named(a, b[i].name);
      if (moved < a.size())
        out.push_back(where + " moved to position " + std::to_string(moved) +
                      " (reordered: kernels read arguments by index)");
      else if (i >= a.size() || named(b, a[i].name) < b.size())
        out.push_back(where + " was removed");
      else
        out.push_back(where + " was renamed or replaced by " + quoted(a[i]));
      continue;
    }
    if (b[i].type != a[i].type) out.push_back(where + " was retyped to '" + a[i].type + "'");
    // A default for an argument that had none, or a keyword-only argument made
    // positional, changes nothing a kernel or an existing caller sees.
    if (!b[i].default_value.empty() && b[i].default_value != a[i].default_value)
      out.push_back(where + " changed its default to '" + a[i].default_value + "'");
    if (!b[i].kwarg_only && a[i].kwarg_only) out.push_back(where + " became keyword-only");
  }
  for (size_t i = b.size(); i < a.size(); ++i) {
    const std::string where = "appended argument " + std::to_string(i) + " " + quoted(a[i]);
    if (a[i].default_value.empty()) out.push_back(where + " has no default: existing callers do not pass it");
    if (a[i].mutable_alias) out.push_back(where + " is written by the op: a kernel that predates it would not");
  }
  if (before.returns != after.returns) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& r : v) s += (s.empty() ? "" : ", ") + r;
      return "(" + s + ")";
    };
    out.push_back("returns changed from " + join(before.returns) + " to " + join(after.returns));
  }
  return out;
}

// Every promise `after` breaks against the released catalogue `before`, one
// message per difference, each naming the op.
std::vector<std::string> catalogue_breaks(const Catalogue& before, const Catalogue& after, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& [name, old] : before) {
    auto it = after.find(name);
    if (it == after.end()) {
      out.push_back("op '" + name + "' of " + what + " was removed (released ops are never removed)");
      continue;
    }
    if (old.attributes != it->second.attributes)
      out.push_back("op '" + name + "': kind/flags changed from '" + old.attributes + "' to '" + it->second.attributes +
                    "'");
    for (const std::string& m : schema_breaks(old.schema, it->second.schema))
      out.push_back("op '" + name + "': " + m + "\n    " + what + ": " + old.text + "\n    now: " + it->second.text);
  }
  return out;
}

bool same_schema(const Schema& x, const Schema& y) {
  auto key = [](const SchemaArgument& a) { return std::tie(a.type, a.name, a.default_value, a.kwarg_only); };
  return x.returns == y.returns &&
         std::equal(x.arguments.begin(), x.arguments.end(), y.arguments.begin(), y.arguments.end(),
                    [&](const auto& a, const auto& b) { return key(a) == key(b); });
}

// What the live catalogue has that `newest` does not record (new ops, compatible
// schema changes): allowed, but only once written down by the accept step.
// Breaks are not listed here: catalogue_breaks reports them.
std::vector<std::string> unrecorded(const Catalogue& newest, const Catalogue& live) {
  std::vector<std::string> out;
  for (const auto& [name, e] : live) {
    auto it = newest.find(name);
    if (it == newest.end())
      out.push_back("new op '" + name + "': " + e.text);
    else if (!same_schema(it->second.schema, e.schema) && it->second.attributes == e.attributes &&
             schema_breaks(it->second.schema, e.schema).empty())
      out.push_back("op '" + name + "' changed compatibly: " + e.text);
  }
  return out;
}

struct CatalogueFile {
  int version;
  std::filesystem::path path;
  Catalogue ops;
};

// The committed catalogues, oldest first.
std::vector<CatalogueFile> committed() {
  std::vector<CatalogueFile> files;
  for (const auto& f : std::filesystem::directory_iterator(kCatalogueDir)) {
    const std::string n = f.path().filename().string();
    if (n.rfind("op_catalogue_v", 0) != 0 || f.path().extension() != ".txt") continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    CatalogueFile c{-1, f.path(), {}};
    c.ops = parse_catalogue(text.str(), n, &c.version);
    if (n != "op_catalogue_v" + std::to_string(c.version) + ".txt")
      throw std::runtime_error(n + ": its 'version' line says " + std::to_string(c.version));
    files.push_back(std::move(c));
  }
  std::sort(files.begin(), files.end(), [](const auto& x, const auto& y) { return x.version < y.version; });
  return files;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& m : v) s += "  " + m + "\n";
  return s;
}

const std::string kAccept =
    "If the change is intended and compatible, record it as a new catalogue version (docs/abi.md §6,\n"
    "\"The op catalogue\"): bump op_catalogue_version() in core/src/dispatcher.cpp, rebuild, and run\n"
    "  build/release/bin/abi_op_catalogue_test --write\n"
    "which writes tests/abi/op_catalogue_v<op_catalogue_version()>.txt.";

// --- the checks on the real catalogue -------------------------------------------

TEST(AbiOpCatalogue, EveryCommittedVersionIsKept) {
  const auto files = committed();
  ASSERT_FALSE(files.empty()) << "no op_catalogue_v*.txt in " << kCatalogueDir;
  const Catalogue live = live_catalogue();
  for (const auto& f : files) {
    const auto breaks = catalogue_breaks(f.ops, live, f.path.filename().string());
    EXPECT_TRUE(breaks.empty()) << "the core breaks the released op catalogue " << f.path.filename().string() << ":\n"
                                << joined(breaks)
                                << "Released ops may only gain trailing arguments with defaults; anything else "
                                   "needs a new ABI major version (docs/abi.md §6).";
  }
}

TEST(AbiOpCatalogue, EachVersionGrowsThePrevious) {
  const auto files = committed();
  for (size_t i = 1; i < files.size(); ++i) {
    EXPECT_EQ(files[i].version, files[i - 1].version + 1) << "catalogue versions are consecutive";
    const auto breaks = catalogue_breaks(files[i - 1].ops, files[i].ops, files[i - 1].path.filename().string());
    EXPECT_TRUE(breaks.empty()) << files[i].path.filename().string() << " breaks its predecessor:\n" << joined(breaks);
  }
}

TEST(AbiOpCatalogue, NewestVersionRecordsTheLiveCatalogue) {
  const auto files = committed();
  ASSERT_FALSE(files.empty());
  const CatalogueFile& newest = files.back();
  EXPECT_EQ(op_catalogue_version(), newest.version)
      << "op_catalogue_version() must name the newest committed catalogue, " << newest.path.filename().string();
  const auto extra = unrecorded(newest.ops, live_catalogue());
  EXPECT_TRUE(extra.empty()) << "the core declares what " << newest.path.filename().string() << " does not record:\n"
                             << joined(extra) << kAccept;
}

TEST(AbiOpCatalogue, LiveCatalogueIsTheWholeLibrary) {
  // The founding ops of ABI 1.0, structured, composite and in place, are all in it.
  const Catalogue live = live_catalogue();
  EXPECT_GT(live.size(), 200u);
  EXPECT_EQ(live.at("add").attributes, "kernel");
  EXPECT_EQ(live.at("add_").attributes, "kernel:add inplace");
  EXPECT_EQ(live.at("nonzero").attributes, "kernel data_dependent");
  EXPECT_EQ(live.at("matmul").attributes, "composite");
  // The file format round-trips.
  const Catalogue again = parse_catalogue(format_catalogue(live, 7), "formatted");
  EXPECT_TRUE(catalogue_breaks(live, again, "live").empty());
  EXPECT_TRUE(unrecorded(again, live).empty());
}

// --- the comparison itself fails on each kind of break ---------------------------

Catalogue one(const std::string& line) { return parse_catalogue(line, "test"); }

const char* const kSum =
    "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";

std::string only_break(const std::string& before, const std::string& after) {
  const auto b = catalogue_breaks(one(before), one(after), "v1");
  EXPECT_EQ(b.size(), 1u) << joined(b);
  return b.empty() ? "" : b[0];
}

TEST(AbiOpCatalogueCompare, AcceptsAppendedArgumentsWithDefaults) {
  EXPECT_TRUE(catalogue_breaks(one(kSum), one(kSum), "v1").empty());
  // Whitespace is not a change.
  EXPECT_TRUE(catalogue_breaks(one(kSum),
                               one("kernel |  sum(Tensor self,int[1]? dim=None, bool keepdim=False, *, "
                                   "ScalarType? dtype=None)->Tensor"),
                               "v1")
                  .empty());
  const std::string grown =
      "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
      "bool fast=False, Tensor? mask=None) -> Tensor";
  EXPECT_TRUE(catalogue_breaks(one(kSum), one(grown), "v1").empty());
  // Positional arguments may be appended to an op with no keyword-only ones.
  EXPECT_TRUE(catalogue_breaks(one("kernel | mm(Tensor self, Tensor mat2) -> Tensor"),
                               one("kernel | mm(Tensor self, Tensor mat2, bool tf32=False) -> Tensor"), "v1")
                  .empty());
  // A default for a required argument, a keyword-only argument made positional.
  EXPECT_TRUE(catalogue_breaks(one("kernel | mm(Tensor self, *, int k) -> Tensor"),
                               one("kernel | mm(Tensor self, int k=0) -> Tensor"), "v1")
                  .empty());
  // ... and new ops are no break, only unrecorded.
  Catalogue more = one(grown);
  more.merge(one("kernel | frob(Tensor self) -> Tensor"));
  EXPECT_TRUE(catalogue_breaks(one(kSum), more, "v1").empty());
  const auto extra = unrecorded(one(kSum), more);
  ASSERT_EQ(extra.size(), 2u) << joined(extra);
  EXPECT_NE(extra[0].find("new op 'frob'"), std::string::npos) << extra[0];
  EXPECT_NE(extra[1].find("op 'sum' changed compatibly"), std::string::npos) << extra[1];
  // A break is reported as a break, not as something to record.
  EXPECT_TRUE(unrecorded(one(kSum), one("kernel | sum(Tensor self) -> Tensor")).empty());
}

TEST(AbiOpCatalogueCompare, RemovedOp) {
  Catalogue c = one(kSum);
  c.merge(one("kernel | mm(Tensor self, Tensor mat2) -> Tensor"));
  const auto b = catalogue_breaks(c, one(kSum), "v1");
  ASSERT_EQ(b.size(), 1u) << joined(b);
  EXPECT_NE(b[0].find("op 'mm' of v1 was removed"), std::string::npos) << b[0];
}

TEST(AbiOpCatalogueCompare, RemovedArgument) {
  const std::string last =
      only_break(kSum, "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor");
  EXPECT_NE(last.find("op 'sum': argument 3 'ScalarType? dtype=None' (keyword-only) was removed"), std::string::npos)
      << last;
  // From the middle: the arguments after it shift, which breaks them too.
  const auto b = catalogue_breaks(
      one(kSum), one("kernel | sum(Tensor self, int[1]? dim=None, *, ScalarType? dtype=None) -> Tensor"), "v1");
  ASSERT_EQ(b.size(), 2u) << joined(b);
  EXPECT_NE(b[0].find("op 'sum': argument 2 'bool keepdim=False' was removed"), std::string::npos) << b[0];
  EXPECT_NE(b[1].find("argument 3 'ScalarType? dtype=None' (keyword-only) moved to position 2"), std::string::npos)
      << b[1];
}

TEST(AbiOpCatalogueCompare, ReorderedArgument) {
  const auto b = catalogue_breaks(
      one(kSum),
      one("kernel | sum(Tensor self, bool keepdim=False, int[1]? dim=None, *, ScalarType? dtype=None) -> Tensor"),
      "v1");
  ASSERT_EQ(b.size(), 2u) << joined(b);
  EXPECT_NE(b[0].find("op 'sum': argument 1 'int[1]? dim=None' moved to position 2 (reordered"), std::string::npos)
      << b[0];
  EXPECT_NE(b[1].find("argument 2 'bool keepdim=False' moved to position 1"), std::string::npos) << b[1];
}

TEST(AbiOpCatalogueCompare, RetypedRenamedOrRedefaultedArgument) {
  const std::string retyped = only_break(
      kSum, "kernel | sum(Tensor self, int[1]? dim=None, int keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_NE(retyped.find("op 'sum': argument 2 'bool keepdim=False' was retyped to 'int'"), std::string::npos)
      << retyped;
  const std::string renamed = only_break(
      kSum, "kernel | sum(Tensor self, int[1]? axis=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_NE(renamed.find("argument 1 'int[1]? dim=None' was renamed or replaced by 'int[1]? axis=None'"),
            std::string::npos)
      << renamed;
  const std::string redefault = only_break(
      kSum, "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=True, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_NE(redefault.find("changed its default to 'True'"), std::string::npos) << redefault;
  const std::string kw = only_break(
      kSum, "kernel | sum(Tensor self, int[1]? dim=None, *, bool keepdim=False, ScalarType? dtype=None) -> Tensor");
  EXPECT_NE(kw.find("argument 2 'bool keepdim=False' became keyword-only"), std::string::npos) << kw;
}

TEST(AbiOpCatalogueCompare, InsertedOrRequiredOrWrittenArgument) {
  // Inserted before the keyword-only ones: dtype's index moves.
  const std::string inserted = only_break(kSum,
                                          "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=False, bool "
                                          "fast=False, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_NE(inserted.find("argument 3 'ScalarType? dtype=None' (keyword-only) moved to position 4"), std::string::npos)
      << inserted;
  const std::string required = only_break(
      kSum,
      "kernel | sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, int n) -> Tensor");
  EXPECT_NE(required.find("appended argument 4 'int n' (keyword-only) has no default"), std::string::npos) << required;
  const std::string written = only_break("kernel | mm(Tensor self, Tensor mat2) -> Tensor",
                                         "kernel | mm(Tensor self, Tensor mat2, Tensor(a!)? out=None) -> Tensor");
  EXPECT_NE(written.find("is written by the op"), std::string::npos) << written;
}

TEST(AbiOpCatalogueCompare, ChangedReturnsOrKind) {
  const std::string ret = only_break("kernel | mm(Tensor self, Tensor mat2) -> Tensor",
                                     "kernel | mm(Tensor self, Tensor mat2) -> (Tensor, Tensor)");
  EXPECT_NE(ret.find("op 'mm': returns changed from (Tensor) to (Tensor, Tensor)"), std::string::npos) << ret;
  const std::string kind = only_break("kernel | mm(Tensor self, Tensor mat2) -> Tensor",
                                      "composite | mm(Tensor self, Tensor mat2) -> Tensor");
  EXPECT_NE(kind.find("op 'mm': kind/flags changed from 'kernel' to 'composite'"), std::string::npos) << kind;
}

int write_catalogue(const char* target) {
  const std::filesystem::path path = target ? std::filesystem::path(target)
                                            : std::filesystem::path(kCatalogueDir) /
                                                  ("op_catalogue_v" + std::to_string(op_catalogue_version()) + ".txt");
  // Committed versions are frozen; a file written by an earlier --write and not
  // yet committed may be deleted and written again.
  if (std::filesystem::exists(path)) {
    std::cerr << "refused: " << path.string() << " exists and catalogue files are never edited. Bump "
              << "op_catalogue_version() in core/src/dispatcher.cpp (now " << op_catalogue_version()
              << ") and rebuild, or delete the file if it is not committed yet.\n";
    return 1;
  }
  const Catalogue live = live_catalogue();
  int refused = 0;
  for (const auto& f : committed()) {
    const auto breaks = catalogue_breaks(f.ops, live, f.path.filename().string());
    if (!breaks.empty()) {
      std::cerr << "refused: the core breaks the committed catalogue " << f.path.filename().string() << ":\n"
                << joined(breaks);
      refused = 1;
    }
  }
  if (refused) return 1;
  std::ofstream out(path);
  out << format_catalogue(live, op_catalogue_version());
  if (!out.flush()) {
    std::cerr << "cannot write " << path << "\n";
    return 1;
  }
  std::cout << "wrote " << live.size() << " ops, catalogue version " << op_catalogue_version() << ", to " << path
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--write") return write_catalogue(argc >= 3 ? argv[2] : nullptr);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
