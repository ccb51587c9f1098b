// The "Where an op lives" rule of docs/architecture.md, checked for every op the
// core declares: each op belongs to exactly one family (Operator::family(), set
// by the family file that declares it), its family's page docs/ops/<family>.md
// lists it and no other family page does, the CPU plugin registers its kernels
// only from its family's files, and its Python bindings are defined only in its
// family's binding file. Its own program: no test op may be declared before it.
#include <gtest/gtest.h>
#include <tessera/dispatcher.h>
#include <tessera/tessera.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using tessera::Dispatcher;
using tessera::Operator;

namespace {

const std::vector<std::string> kFamilies = {"unary", "binary", "ternary", "reduction", "linalg",
                                            "shape", "indexing", "random", "nn"};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << "cannot read " << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path source_dir() { return fs::path(TSRTEST_SOURCE_DIR); }

// The family a source file belongs to by its name: <family>.cpp, <family>_<part>.cpp,
// ops_<family>.cpp (Python); "" for a file of no family.
std::string family_of_file(std::string stem) {
  if (stem.rfind("ops_", 0) == 0) stem = stem.substr(4);
  for (const std::string& f : kFamilies)
    if (stem == f || stem.rfind(f + "_", 0) == 0) return f;
  return "";
}

// The backticked names in the first column of every table row of a page.
std::set<std::string> first_column_names(const std::string& page) {
  std::set<std::string> names;
  std::istringstream lines(page);
  std::string line;
  const std::regex code("`([A-Za-z0-9_.]+)`");
  while (std::getline(lines, line)) {
    if (line.rfind("|", 0) != 0) continue;
    const size_t end = line.find('|', 1);
    if (end == std::string::npos) continue;
    const std::string cell = line.substr(1, end - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), code), e; it != e; ++it) names.insert((*it)[1]);
  }
  return names;
}

// The names an op may be listed under: itself, without its overload, and for an
// in-place variant its functional op (pages list "exp" for exp and exp_).
std::vector<std::string> listed_names(const std::string& name) {
  std::vector<std::string> out{name};
  const std::string base = name.substr(0, name.find('.'));
  if (base != name) out.push_back(base);
  if (base.size() > 1 && base.back() == '_') out.push_back(base.substr(0, base.size() - 1));
  return out;
}

std::map<std::string, const Operator*> declared_ops() {
  std::map<std::string, const Operator*> ops;
  for (const Operator* op : Dispatcher::instance().operators()) ops[op->name()] = op;
  return ops;
}

TEST(OpFamilies, EveryOpIsDeclaredByOneKnownFamily) {
  const auto ops = declared_ops();
  ASSERT_GT(ops.size(), 100u);
  for (const auto& [name, op] : ops) {
    const std::string family = op->family();
    EXPECT_NE(std::find(kFamilies.begin(), kFamilies.end(), family), kFamilies.end())
        << "op '" << name << "' has family '" << family << "'";
  }
  // The founding ops are where the architecture page says.
  const std::map<std::string, std::string> expected = {
      {"add", "binary"},   {"sub", "binary"},   {"mul", "binary"},  {"div_", "binary"},   {"neg", "unary"},
      {"exp", "unary"},    {"relu_", "unary"},  {"sum", "reduction"}, {"mm", "linalg"},   {"bmm", "linalg"},
      {"matmul", "linalg"}, {"copy_", "shape"}, {"fill_", "shape"}, {"arange", "shape"},  {"empty", "shape"},
      {"view", "shape"},   {"squeeze.dim", "shape"}, {"nonzero", "indexing"}};
  for (const auto& [name, family] : expected) {
    ASSERT_TRUE(ops.count(name)) << name;
    EXPECT_EQ(std::string(ops.at(name)->family()), family) << name;
  }
}

TEST(OpFamilies, EachOpIsOnItsFamilyPageOnly) {
  std::map<std::string, std::set<std::string>> pages;
  for (const std::string& f : kFamilies) pages[f] = first_column_names(read(source_dir() / "docs/ops" / (f + ".md")));
  for (const auto& [name, op] : declared_ops()) {
    const std::string family = op->family();
    std::vector<std::string> on;
    for (const auto& [f, names] : pages)
      for (const std::string& n : listed_names(name))
        if (names.count(n)) {
          on.push_back(f);
          break;
        }
    EXPECT_EQ(on, std::vector<std::string>{family})
        << "op '" << name << "' (family " << family << ") is listed on the pages of: " << ::testing::PrintToString(on);
  }
}

TEST(OpFamilies, CpuKernelsAreRegisteredFromTheirFamilysFiles) {
  const auto ops = declared_ops();
  const std::regex entry("\\{\"([A-Za-z0-9_.]+)\",\\s*k[A-Za-z]*Mask");
  int registrations = 0;
  for (const auto& file : fs::directory_iterator(source_dir() / "plugins/cpu/src")) {
    if (file.path().extension() != ".cpp") continue;
    const std::string text = read(file.path());
    const std::string file_family = family_of_file(file.path().stem().string());
    for (std::sregex_iterator it(text.begin(), text.end(), entry), e; it != e; ++it) {
      const std::string name = (*it)[1];
      ++registrations;
      ASSERT_TRUE(ops.count(name)) << file.path() << " registers a kernel for '" << name << "', which is no op";
      EXPECT_EQ(file_family, ops.at(name)->family())
          << file.path() << " registers '" << name << "' of family " << ops.at(name)->family();
    }
  }
  EXPECT_GT(registrations, 100);
}

TEST(OpFamilies, PythonBindingsAreInTheirFamilysFile) {
  const auto ops = declared_ops();
  const std::regex def("\\bdef\\(\"([A-Za-z0-9_]+)\"");
  int checked = 0;
  for (const auto& file : fs::directory_iterator(source_dir() / "python/src")) {
    if (file.path().extension() != ".cpp") continue;
    const std::string stem = file.path().stem().string();
    const std::string file_family = stem.rfind("ops_", 0) == 0 ? family_of_file(stem) : "";
    const std::string text = read(file.path());
    for (std::sregex_iterator it(text.begin(), text.end(), def), e; it != e; ++it) {
      const std::string name = (*it)[1];
      if (!ops.count(name)) continue;  // not an op: a property, a conversion, a helper
      ++checked;
      EXPECT_EQ(file_family, ops.at(name)->family())
          << file.path() << " binds op '" << name << "' of family " << ops.at(name)->family();
    }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
