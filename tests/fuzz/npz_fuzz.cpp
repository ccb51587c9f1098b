// Fuzz target: .npz state dict loading (tessera::load: libzip, the .npy header
// parser and the data reader of core/src/serialize/), a parser of untrusted files.
//
// The input is the file's bytes, read through an in-memory file
// (/proc/self/fd/N of a memfd). Properties:
//   - load returns or throws a tessera::Error naming the file; nothing else;
//   - it never asks for more memory at once than the file's bytes can inflate
//     to (deflate expands at most 1032:1, stored members not at all), also on the
//     way to a refusal (alloc_probe.h watches every allocation);
//   - every tensor it returns is a contiguous cpu tensor of a supported dtype whose
//     bytes are readable, and bool elements are 0 or 1;
//   - what it returns saves and loads back unchanged.
#include <tessera/error.h>
#include <tessera/serialize.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "alloc_probe.h"
#include "fuzz_input.h"

namespace {

constexpr const char* kName = "npz";
constexpr size_t kDeflateMaxRatio = 1032;
// libzip's own bookkeeping: it sizes its entry table from the count the archive
// declares (up to 65535 entries of 32 bytes without zip64) before checking it.
constexpr size_t kSlack = size_t{8} << 20;

int g_fd = -1;
std::string g_path;     // /proc/self/fd/N
std::string g_rt_path;  // the round trip's file, in a private temporary folder

void remove_rt_dir() {
  std::error_code ec;
  if (!g_rt_path.empty()) std::filesystem::remove_all(std::filesystem::path(g_rt_path).parent_path(), ec);
}

void setup() {
  if (g_fd >= 0) return;
  g_fd = memfd_create("tessera-npz-fuzz", 0);
  if (g_fd < 0) tessera::fuzz::violated(kName, "memfd_create failed (harness setup)");
  g_path = "/proc/self/fd/" + std::to_string(g_fd);
  std::string dir = (std::filesystem::temp_directory_path() / "tessera-npz-fuzz-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) tessera::fuzz::violated(kName, "mkdtemp failed (harness setup)");
  g_rt_path = dir + "/round_trip.npz";
  std::atexit(remove_rt_dir);
}

bool supported(tessera::ScalarType t) {
  using namespace tessera;
  switch (t) {
    case kBool: case kByte: case kChar: case kShort: case kInt: case kLong: case kHalf: case kFloat: case kDouble:
      return true;
    default:
      return false;
  }
}

bool same_bytes(const tessera::Tensor& a, const tessera::Tensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  setup();
  if (ftruncate(g_fd, 0) != 0 || pwrite(g_fd, data, size, 0) != static_cast<ssize_t>(size))
    tessera::fuzz::violated(kName, "cannot write the in-memory file (harness setup)");

  tessera::StateDict dict;
  bool refused = false;
  {
    tessera::fuzz::AllocProbe probe;
    try {
      dict = tessera::load(g_path);
    } catch (const tessera::Error& e) {
      TSR_FUZZ_CHECK(kName, std::string(e.what()).find(g_path) != std::string::npos);  // names the file
      refused = true;
    }
    // No allocation beyond what the file's bytes can inflate to, also on the way to a refusal.
    if (probe.observes() && probe.largest() > size * kDeflateMaxRatio + kSlack) {
      std::fprintf(stderr, "fuzz npz: an allocation of %zu bytes for a file of %zu bytes\n", probe.largest(), size);
      tessera::fuzz::violated(kName, "probe.largest() <= size * kDeflateMaxRatio + kSlack");
    }
  }
  if (refused) return 0;

  size_t total = 0;
  for (const auto& [key, t] : dict) {
    TSR_FUZZ_CHECK(kName, !key.empty());
    TSR_FUZZ_CHECK(kName, t.device().type_name() == "cpu" && t.is_contiguous());
    TSR_FUZZ_CHECK(kName, supported(t.scalar_type()));
    __int128 numel = 1;  // in exact arithmetic: an accepted shape must not overflow
    for (int64_t d : t.sizes()) {
      TSR_FUZZ_CHECK(kName, d >= 0);
      numel *= d;
      TSR_FUZZ_CHECK(kName, numel <= INT64_MAX);
    }
    TSR_FUZZ_CHECK(kName, t.numel() == static_cast<int64_t>(numel));
    TSR_FUZZ_CHECK(kName, t.storage()->nbytes() >= static_cast<size_t>(numel) * t.element_size());
    const auto* p = static_cast<const unsigned char*>(t.data_ptr());
    unsigned sum = 0;
    for (size_t i = 0; i < t.nbytes(); ++i) sum += p[i];  // every byte readable (ASan)
    if (t.scalar_type() == tessera::kBool)
      for (size_t i = 0; i < t.nbytes(); ++i) TSR_FUZZ_CHECK(kName, p[i] <= 1);
    (void)sum;
    total += t.nbytes();
  }
  TSR_FUZZ_CHECK(kName, total <= size * kDeflateMaxRatio);

  // Round trip; keys save() refuses ('/') end the case.
  try {
    tessera::save(g_rt_path, dict);
  } catch (const tessera::ValueError&) {
    return 0;
  }
  const tessera::StateDict back = tessera::load(g_rt_path);
  TSR_FUZZ_CHECK(kName, back.keys() == dict.keys());
  for (const auto& [key, t] : dict) {
    const tessera::Tensor& u = back.at(key);
    TSR_FUZZ_CHECK(kName, u.scalar_type() == t.scalar_type() && u.sizes().size() == t.sizes().size());
    for (size_t i = 0; i < t.sizes().size(); ++i) TSR_FUZZ_CHECK(kName, u.sizes()[i] == t.sizes()[i]);
    TSR_FUZZ_CHECK(kName, same_bytes(t, u));
  }
  return 0;
}
