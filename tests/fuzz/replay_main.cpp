// The replay driver: a main() for a fuzz harness built without libFuzzer (any
// compiler). It runs every file given, and every regular file of every folder
// given (not recursively; README.md files and names starting with '.' are
// skipped), through LLVMFuzzerTestOneInput, printing each name first so that a
// crash names its input. A path that does not exist is skipped with a note, but
// replaying no file at all is an error (a misspelt corpus folder must not pass).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace fs = std::filesystem;

namespace {
bool skipped_name(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.empty() || name[0] == '.' || name == "README.md";
}
}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && !skipped_name(e.path())) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s does not exist, skipped\n", argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no input files in the paths given\n");
    return 2;
  }
  for (const fs::path& f : files) {
    std::fprintf(stderr, "replay: %s\n", f.c_str());
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    // A copy of exactly the input's size, as libFuzzer passes: reads past the
    // end are caught by AddressSanitizer builds.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
  }
  std::fprintf(stderr, "replay: %zu input(s) ran without a failure\n", files.size());
  return 0;
}
