// The plugin loader against damaged and foreign files, host functions called
// wrongly, and registration hygiene (docs/abi.md H1, H3, H6, H8, H17, H18):
//  - the ELF pre-check (core/src/plugin_file_check.h) refuses truncated, foreign
//    and non-library files before dlopen, which would die of SIGBUS on a
//    truncated one — so truncations run in this process: a crash fails the test;
//  - every host function refuses NULL and foreign contexts and handles;
//  - reserved fields the host writes are 0; unusable device counts are refused;
//  - built-in names and DLPack types cannot be taken, whatever the load order;
//    duplicates on the search path and kernels dispatch never reaches are
//    reported; an SDK plugin fails loudly on a kernel for an unknown device type.
// Scenarios that depend on TESSERA_PLUGIN_PATH run `tessera info` in a child
// process with their own path (default plugins load once per process).
#include <gtest/gtest.h>
#include <tessera/abi.h>
#include <tessera/tessera.h>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "operator_slots.h"

#include "plugin_file_check.h"  // internal (core/src): the pure check
#include "pointwise_lane.h"     // internal (core/src): the lanes' dtypes

using namespace tessera;
namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const unsigned char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A fresh folder of this test's own, removed when the test ends.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path_ = (fs::path(testing::TempDir()) / ("tsr_loader_" + std::to_string(::getpid()) + "_" + info->name())).string();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  operator const std::string&() const { return path_; }  // NOLINT: used as the folder's path
  const char* c_str() const { return path_.c_str(); }

 private:
  std::string path_;
};

std::string builtin(const char* file) { return (fs::path(TSRTEST_BUILTIN_PLUGIN_DIR) / file).string(); }

// The meta plugin: small, and a real shared library built with the tree.
std::string meta_plugin() { return builtin("libtessera-meta.so"); }

std::string expect_plugin_error(const std::string& path, std::initializer_list<const char*> fragments) {
  try {
    load_plugin(path);
    ADD_FAILURE() << "expected PluginError for " << path;
    return "";
  } catch (const PluginError& e) {
    const std::string msg = e.what();
    for (const char* f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
    return msg;
  }
}

void expect_core_works() { EXPECT_EQ((ones({2}) + ones({2})).sum().item<float>(), 4.0f); }

struct CliRun {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr
};

// Runs `tessera info` with the given environment assignments ("NAME=value").
CliRun run_info(const std::vector<std::string>& env) {
  std::string cmd = "exec env -u TESSERA_VERBOSE";  // exec: a signal that kills tessera reaches pclose
  for (const std::string& e : env) cmd += " '" + e + "'";
  cmd += " '" TSRTEST_TESSERA_CLI "' info 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// The text of `tessera info` about one plugin: from its "plugin <name> " line to the next.
std::string plugin_section(const std::string& info, const std::string& name) {
  const size_t at = info.find("\nplugin " + name + " ");
  if (at == std::string::npos) return "";
  const size_t end = info.find("\nplugin ", at + 1);
  const size_t failed = info.find("\nplugins that failed to load", at + 1);
  return info.substr(at, std::min(end, failed) - at);
}

// Where the ELF header fields live, for patching copies.
ElfW(Ehdr) header_of(const std::vector<unsigned char>& img) {
  ElfW(Ehdr) eh;
  std::memcpy(&eh, img.data(), sizeof eh);
  return eh;
}
ElfW(Phdr) phdr_of(const std::vector<unsigned char>& img, size_t i) {
  const ElfW(Ehdr) eh = header_of(img);
  ElfW(Phdr) ph;
  std::memcpy(&ph, img.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
  return ph;
}
size_t phdr_index(const std::vector<unsigned char>& img, uint32_t type) {
  for (size_t i = 0; i < header_of(img).e_phnum; ++i)
    if (phdr_of(img, i).p_type == type) return i;
  return SIZE_MAX;
}
template <typename T>
void poke(std::vector<unsigned char>& img, size_t offset, T value) {
  std::memcpy(img.data() + offset, &value, sizeof value);
}

std::string check(const std::vector<unsigned char>& img) { return detail::check_plugin_image(img.data(), img.size()); }

}  // namespace

// ---------------------------------------------------------------------------
// The pure check over a buffer (what the fuzzer calls)
// ---------------------------------------------------------------------------

TEST(PluginFileCheck, RealPluginsPass) {
  for (const std::string& path : {meta_plugin(), std::string(TSRTEST_FAULTY), std::string(TSRTEST_RESERVED_PROBE)}) {
    const auto img = read_bytes(path);
    ASSERT_GT(img.size(), 1000u) << path;
    EXPECT_EQ(check(img), "") << path;
  }
}

TEST(PluginFileCheck, EveryPrefixOfARealPluginIsRefused) {
  // The section headers sit at the end of the file, so every prefix loses some.
  const auto img = read_bytes(meta_plugin());
  const ElfW(Ehdr) eh = header_of(img);
  ASSERT_EQ(eh.e_shoff + eh.e_shnum * sizeof(ElfW(Shdr)), img.size());
  for (size_t n = 0; n < img.size(); ++n) {
    const std::string why = detail::check_plugin_image(img.data(), n);
    ASSERT_FALSE(why.empty()) << "a prefix of " << n << " bytes passed";
  }
}

TEST(PluginFileCheck, ReasonsForTruncations) {
  const auto img = read_bytes(meta_plugin());
  const auto at = [&](size_t n) { return detail::check_plugin_image(img.data(), n); };
  EXPECT_EQ(detail::check_plugin_image(nullptr, 0), "empty file (0 bytes)");
  EXPECT_EQ(at(0), "empty file (0 bytes)");
  EXPECT_EQ(at(1), "not an ELF file (no ELF magic number)");
  EXPECT_EQ(at(16), "truncated: the ELF header ends at byte 64, the file is 16 bytes");
  EXPECT_EQ(at(63), "truncated: the ELF header ends at byte 64, the file is 63 bytes");
  // The program headers follow the ELF header.
  const ElfW(Ehdr) eh = header_of(img);
  EXPECT_EQ(at(64), "truncated: the program header table ends at byte " +
                        std::to_string(eh.e_phoff + eh.e_phnum * sizeof(ElfW(Phdr))) + ", the file is 64 bytes");
  // The first PT_LOAD starts at 0 and covers more than 1000 bytes (the case).
  const ElfW(Phdr) first_load = phdr_of(img, phdr_index(img, PT_LOAD));
  ASSERT_GT(first_load.p_offset + first_load.p_filesz, 1000u);
  EXPECT_NE(at(1000).find("truncated: PT_LOAD segment 1 of "), std::string::npos) << at(1000);
  EXPECT_NE(at(1000).find(", the file is 1000 bytes"), std::string::npos) << at(1000);
  EXPECT_NE(at(img.size() - 1).find("truncated: the section header table ends at byte " + std::to_string(img.size())),
            std::string::npos)
      << at(img.size() - 1);
}

TEST(PluginFileCheck, ForeignAndNonLibraryElfFiles) {
  const auto img = read_bytes(meta_plugin());
  auto patched = [&](size_t offset, auto value) {
    auto copy = img;
    poke(copy, offset, value);
    return check(copy);
  };
  EXPECT_EQ(patched(EI_CLASS, uint8_t(ELFCLASS32)), "built for 32-bit (ELFCLASS32), this host is 64-bit (ELFCLASS64)");
  EXPECT_EQ(patched(EI_CLASS, uint8_t(7)), "corrupt: invalid ELF class 7");
  EXPECT_EQ(patched(EI_DATA, uint8_t(ELFDATA2MSB)), "built for a big-endian machine, this host is little-endian");
  EXPECT_EQ(patched(EI_VERSION, uint8_t(2)), "unsupported ELF version 2");
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_type), uint16_t(ET_EXEC)), "not a shared library (ET_EXEC: an executable)");
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_type), uint16_t(ET_REL)), "not a shared library (ET_REL: an object file, not linked)");
#if defined(__x86_64__)
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_machine), uint16_t(EM_AARCH64)), "built for aarch64, this host is x86-64");
#elif defined(__aarch64__)
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_machine), uint16_t(EM_X86_64)), "built for x86-64, this host is aarch64");
#endif
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_phnum), uint16_t(0)), "not a loadable library: no program headers");
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_phentsize), uint16_t(32)),
            "corrupt: program header entries of 32 bytes, expected 56");
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_phoff), uint64_t(-8)), "corrupt: the program header table's offset overflows");
  EXPECT_EQ(patched(offsetof(ElfW(Ehdr), e_shoff), uint64_t(-8)), "corrupt: the section header table's size overflows");
  // Not ELF at all.
  const std::string text = "#!/bin/sh\necho this is a script\n";
  EXPECT_EQ(detail::check_plugin_image(reinterpret_cast<const unsigned char*>(text.data()), text.size()),
            "not an ELF file (no ELF magic number)");
}

TEST(PluginFileCheck, CorruptSegmentsAndDynamicSection) {
  const auto img = read_bytes(meta_plugin());
  const ElfW(Ehdr) eh = header_of(img);
  const size_t load = phdr_index(img, PT_LOAD), dyn = phdr_index(img, PT_DYNAMIC);
  ASSERT_NE(load, SIZE_MAX);
  ASSERT_NE(dyn, SIZE_MAX);
  const size_t load_at = eh.e_phoff + load * sizeof(ElfW(Phdr)), dyn_at = eh.e_phoff + dyn * sizeof(ElfW(Phdr));
  {  // more bytes in the file than in memory
    auto copy = img;
    poke(copy, load_at + offsetof(ElfW(Phdr), p_memsz), uint64_t(1));
    EXPECT_NE(check(copy).find("corrupt: PT_LOAD segment 1 of"), std::string::npos) << check(copy);
  }
  {  // an offset that overflows
    auto copy = img;
    poke(copy, load_at + offsetof(ElfW(Phdr), p_offset), uint64_t(-16));
    EXPECT_NE(check(copy).find("range overflows"), std::string::npos) << check(copy);
  }
  {  // no PT_DYNAMIC
    auto copy = img;
    poke(copy, dyn_at + offsetof(ElfW(Phdr), p_type), uint32_t(PT_NULL));
    EXPECT_EQ(check(copy), "not a shared library: no dynamic section (PT_DYNAMIC)");
  }
  {  // PT_DYNAMIC outside every PT_LOAD
    auto copy = img;
    poke(copy, dyn_at + offsetof(ElfW(Phdr), p_vaddr), uint64_t(1) << 40);
    EXPECT_EQ(check(copy), "corrupt: the dynamic section (PT_DYNAMIC) is not inside a loadable segment (PT_LOAD)");
  }
  const ElfW(Phdr) d = phdr_of(img, dyn);
  const size_t entries = d.p_filesz / sizeof(ElfW(Dyn));
  {  // no DT_NULL: the loader would read past the section
    auto copy = img;
    for (size_t i = 0; i < entries; ++i) {
      ElfW(Dyn) e;
      std::memcpy(&e, copy.data() + d.p_offset + i * sizeof e, sizeof e);
      if (e.d_tag == DT_NULL) poke(copy, d.p_offset + i * sizeof e + offsetof(ElfW(Dyn), d_tag), int64_t(DT_DEBUG));
    }
    EXPECT_EQ(check(copy), "corrupt: the dynamic section has no DT_NULL entry to end it");
  }
  {  // a string table far outside the file's segments
    auto copy = img;
    for (size_t i = 0; i < entries; ++i) {
      ElfW(Dyn) e;
      std::memcpy(&e, copy.data() + d.p_offset + i * sizeof e, sizeof e);
      if (e.d_tag == DT_STRTAB) poke(copy, d.p_offset + i * sizeof e + offsetof(ElfW(Dyn), d_un), uint64_t(1) << 44);
    }
    EXPECT_NE(check(copy).find("corrupt: dynamic entry DT_STRTAB"), std::string::npos) << check(copy);
  }
}

TEST(PluginFileCheck, ArbitraryBytesNeverCrash) {
  // Headers of a real plugin with every single byte of the first 256 flipped,
  // and short random buffers: refused or passed, never a crash.
  const auto img = read_bytes(meta_plugin());
  for (size_t i = 0; i < 256; ++i) {
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      auto copy = img;
      copy[i] ^= x;
      (void)check(copy);
    }
  }
  uint64_t state = 88172645463325252ull;
  for (int k = 0; k < 2000; ++k) {
    std::vector<unsigned char> buf(1 + k % 300);
    for (auto& b : buf) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      b = static_cast<unsigned char>(state);
    }
    if (k % 2 == 0 && buf.size() >= 4) std::memcpy(buf.data(), ELFMAG, SELFMAG);
    (void)check(buf);
  }
}

// ---------------------------------------------------------------------------
// The loader on real files (dlopen follows a passed check)
// ---------------------------------------------------------------------------

TEST(PluginLoaderHardening, TruncatedCopiesAreRefusedNotCrashed) {
  // A SIGBUS inside dlopen would kill this process: every truncation runs here.
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const auto img = read_bytes(meta_plugin());
  std::set<size_t> lengths = {0, 1, 16, 63, 64, 1000, img.size() / 2, img.size() - 1};
  for (size_t k = 1; k < 48; ++k) lengths.insert(img.size() * k / 48);
  for (size_t n : lengths) {
    const std::string path = dir + "/libtsrtest_truncated_" + std::to_string(n) + ".so";
    write_bytes(path, img.data(), n);
    const std::string msg = expect_plugin_error(path, {path.c_str()});
    const char* reason = n == 0 ? "empty file (0 bytes)"
                         : n == 1 ? "not a loadable shared library (not an ELF file"
                         : n == 1000 ? "not a loadable shared library (truncated: PT_LOAD segment 1 of "
                                     : "not a loadable shared library (truncated: ";
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
  expect_core_works();
}

TEST(PluginLoaderHardening, ForeignElfFilesAreRefusedBeforeDlopen) {
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const auto img = read_bytes(meta_plugin());
  const auto patched = [&](const char* name, size_t offset, auto value) {
    auto copy = img;
    poke(copy, offset, value);
    const std::string path = dir + "/" + name;
    write_bytes(path, copy.data(), copy.size());
    return path;
  };
  expect_plugin_error(patched("lib32.so", EI_CLASS, uint8_t(ELFCLASS32)), {"lib32.so", "built for 32-bit (ELFCLASS32)"});
  expect_plugin_error(patched("libbe.so", EI_DATA, uint8_t(ELFDATA2MSB)), {"libbe.so", "big-endian"});
  expect_plugin_error(patched("libexec.so", offsetof(ElfW(Ehdr), e_type), uint16_t(ET_EXEC)),
                      {"libexec.so", "not a shared library (ET_EXEC: an executable)"});
#if defined(__x86_64__)
  expect_plugin_error(patched("libarm.so", offsetof(ElfW(Ehdr), e_machine), uint16_t(EM_AARCH64)),
                      {"libarm.so", "built for aarch64, this host is x86-64"});
#endif
  // Real foreign files, where the system has them: a 32-bit library (valgrind
  // ships some) and a non-position-independent executable.
  const char* const lib32 = "/usr/libexec/valgrind/vgpreload_core-x86-linux.so";
  if (sizeof(void*) == 8 && fs::exists(lib32)) expect_plugin_error(lib32, {lib32, "built for 32-bit (ELFCLASS32)"});
  if (fs::exists("/bin/true") && header_of(read_bytes("/bin/true")).e_type == ET_EXEC)
    expect_plugin_error("/bin/true", {"/bin/true", "ET_EXEC"});
  expect_plugin_error(TSRTEST_NOT_A_LIBRARY, {"libtsrtest_not_a_library.so", "not an ELF file"});
  expect_core_works();
}

TEST(PluginLoaderHardening, NonRegularAndUnreadableFilesAreRefusedWithoutHanging) {
  const ScratchDir scratch;
  const std::string& dir = scratch;
  expect_plugin_error(dir, {dir.c_str(), "a directory, not a plugin file"});
  const std::string fifo = dir + "/libfifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_plugin_error(fifo, {fifo.c_str(), "a FIFO, not a plugin file"});  // no writer: must not block
  expect_plugin_error("/dev/zero", {"/dev/zero", "a character device, not a plugin file"});
  const std::string empty = dir + "/libempty.so";
  write_bytes(empty, nullptr, 0);
  expect_plugin_error(empty, {empty.c_str(), "empty file (0 bytes)"});
  if (::geteuid() != 0) {  // root reads anything
    const std::string locked = dir + "/liblocked.so";
    fs::copy_file(meta_plugin(), locked);
    ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
    expect_plugin_error(locked, {locked.c_str(), "cannot open it: Permission denied"});
  }
  expect_core_works();
}

TEST(PluginLoaderHardening, PathWithANulByteIsRefusedNotTruncated) {
  // Before: the path was cut at the NUL and the file before it loaded.
  const std::string real = TSRTEST_FAULTY;
  const std::string with_nul = real + std::string("\0.disabled", 10);
  const std::string msg = expect_plugin_error(with_nul, {"the path contains a NUL byte"});
  EXPECT_NE(msg.find("(at position " + std::to_string(real.size()) + ")"), std::string::npos) << msg;
  EXPECT_NE(msg.find(real + "\\0.disabled"), std::string::npos) << msg;
  for (const PluginInfo& p : plugins()) EXPECT_NE(p.name, "faulty");
}

TEST(PluginLoaderHardening, LoadingTheSameFileAgainReturnsTheLoadedPlugin) {
  // plugin.h: the same file (by canonical path, here through a symlink) is a no-op.
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const PluginInfo first = load_plugin(TSRTEST_FAULTY);
  const std::string link = dir + "/libfaulty_link.so";
  fs::create_symlink(TSRTEST_FAULTY, link);
  const size_t count = plugins().size();
  const PluginInfo again = load_plugin(link);
  EXPECT_EQ(again.name, "faulty");
  EXPECT_EQ(again.path, first.path);
  EXPECT_EQ(again.kernels.size(), first.kernels.size());
  EXPECT_EQ(plugins().size(), count);
}

TEST(PluginLoaderHardening, InfoListsATruncatedPluginAsAFailureAndGoesOn) {
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const auto img = read_bytes(meta_plugin());
  const std::string truncated = dir + "/libtsrtest_truncated.so";
  write_bytes(truncated, img.data(), 1000);
  const CliRun r = run_info({"TESSERA_PLUGIN_PATH=" TSRTEST_BUILTIN_PLUGIN_DIR ":" + truncated});
  EXPECT_EQ(r.signal, 0) << "tessera info was killed by signal " << r.signal << "\n" << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nplugin cpu "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nplugin meta "), std::string::npos) << r.output;
  const size_t failed = r.output.find("plugins that failed to load:");
  ASSERT_NE(failed, std::string::npos) << r.output;
  EXPECT_NE(r.output.find(truncated + "': not a loadable shared library (truncated: PT_LOAD segment 1 of", failed),
            std::string::npos)
      << r.output;
}

// ---------------------------------------------------------------------------
// Host functions called wrongly
// ---------------------------------------------------------------------------

TEST(PluginLoaderHardening, HostFunctionsRefuseBadContextsHandlesAndArguments) {
  // The plugin makes every wrong call itself and fails its initialize (or its
  // kernel) if one is accepted; a crash ends this test.
  testing::internal::CaptureStderr();
  const PluginInfo info = load_plugin(TSRTEST_BAD_HOST_CALLS);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(info.name, "bad_host_calls");
  EXPECT_NE(log.find("log called with an invalid host context (NULL)"), std::string::npos) << log;
  EXPECT_NE(log.find(", not one this host gave out)"), std::string::npos) << log;
  EXPECT_NE(log.find("the message: badcalls: log with a NULL context"), std::string::npos) << log;
  EXPECT_NE(log.find("the message: badcalls: log with the TsrHostApi as context"), std::string::npos) << log;
  EXPECT_NE(log.find("plugin bad_host_calls error: badcalls: log with level 99"), std::string::npos) << log;
  EXPECT_NE(log.find("plugin bad_host_calls warning: (null)"), std::string::npos) << log;
  // allocate_output: NULL, foreign and other-thread handles refused, then the right one.
  const Tensor x = tensor({0.0f, 1.5f, 0.0f, -2.0f, 3.0f}).to(Device("badcalls"));
  EXPECT_EQ(x.nonzero().cpu().view({-1}).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 4}));
  expect_core_works();
}

// ---------------------------------------------------------------------------
// Registration hygiene
// ---------------------------------------------------------------------------

namespace {
// Fills the stack below the caller with a pattern, so that a field the host
// leaves unwritten on its stack holds garbage rather than a lucky 0.
[[gnu::noinline]] void dirty_stack() {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0xA5;
}
}  // namespace

TEST(PluginLoaderHardening, ReservedFieldsTheHostWritesAreZero) {
  // The probe's kernels and copy refuse any non-zero reserved field they receive
  // (the op then throws with the field and value); each way into a kernel is
  // checked on its own, after filling the stack with garbage.
  load_plugin(TSRTEST_RESERVED_PROBE);
  const Device probe("probe");
  const Tensor a = tensor({1.0f, 2.0f, 3.0f, 4.0f}).to(probe), b = tensor({10.0f, 20.0f, 30.0f, 40.0f}).to(probe);
  const Tensor row = tensor({100.0f}).to(probe), z = tensor({0.0f, 5.0f, 0.0f, 6.0f}).to(probe);
  const std::vector<std::pair<const char*, std::function<std::vector<float>()>>> cases = {
      {"the lane (same shape and dtype)", [&] { return (a + b).cpu().to_vector<float>(); }},
      {"the lane with an integer alpha", [&] { return a.add(b, 2).cpu().to_vector<float>(); }},
      {"the lane, strided", [&] { return add(a.view({2, 2}).t(), b.view({2, 2})).cpu().to_vector<float>(); }},
      {"the meta rule (broadcast)", [&] { return (a + row).cpu().to_vector<float>(); }},
      {"the meta rule with a float alpha", [&] { return add(a, row, 0.5).cpu().to_vector<float>(); }},
      {"fill_", [&] { return full({3}, 7.0, TensorOptions().device(probe)).cpu().to_vector<float>(); }},
      {"sum (int list, bool, none)", [&] { return a.sum().cpu().to_vector<float>(); }},
      {"nonzero (allocate_output)",
       [&] {
         const std::vector<int64_t> i = z.nonzero().cpu().view({-1}).to_vector<int64_t>();
         return std::vector<float>(i.begin(), i.end());
       }},
  };
  const std::vector<std::vector<float>> expected = {{11, 22, 33, 44},      {21, 42, 63, 84}, {11, 23, 32, 44},
                                                    {101, 102, 103, 104}, {51, 52, 53, 54}, {7, 7, 7},
                                                    {10},                 {1, 3}};
  for (size_t k = 0; k < cases.size(); ++k) {
    dirty_stack();
    try {
      EXPECT_EQ(cases[k].second(), expected[k]) << cases[k].first;
    } catch (const Error& e) {
      ADD_FAILURE() << cases[k].first << ": " << e.what();
    }
  }
}

TEST(PluginLoaderHardening, DeviceCountsTheHostCannotIndexAreRefused) {
  testing::internal::CaptureStderr();
  const PluginInfo info = load_plugin(TSRTEST_BAD_COUNT);
  const std::string log = testing::internal::GetCapturedStderr();
  std::map<std::string, DeviceTypeSummary> types;
  for (const DeviceTypeSummary& t : device_types()) types[t.name] = t;
  ASSERT_TRUE(types.count("count_huge") && types.count("count_negative") && types.count("count_ok"));
  EXPECT_EQ(types["count_huge"].device_count, 0);
  EXPECT_EQ(types["count_huge"].unavailable_reason,
            "device_count returned 70000, more than the 32768 devices a device type can have");
  EXPECT_EQ(types["count_negative"].device_count, 0);
  EXPECT_EQ(types["count_negative"].unavailable_reason, "device_count returned -3, a negative count");
  EXPECT_EQ(types["count_ok"].device_count, 2);
  for (const Device& d : devices()) EXPECT_NE(d.type_name(), "count_huge");
  ASSERT_EQ(info.warnings.size(), 2u);
  EXPECT_NE(log.find("plugin bad_count warning: device type 'count_huge': device_count returned 70000"),
            std::string::npos)
      << log;
  const std::string text = info_text();
  EXPECT_NE(text.find("device type count_huge: 0 device(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("unavailable: device_count returned -3, a negative count"), std::string::npos) << text;
}

TEST(PluginLoaderHardening, ExplicitLoadCannotTakeBuiltinNamesOrDLPackTypes) {
  expect_plugin_error(TSRTEST_HIJACK_DLPACK,
                      {"hijack_dlpack", "failed to initialize", "DLPack device type 1 (kDLCPU) is reserved for the built-in plugin 'cpu'"});
  expect_plugin_error(TSRTEST_HIJACK_NAME,
                      {"hijack_name", "failed to initialize", "device type 'cpu': the name is reserved for the built-in plugin 'cpu'"});
  expect_core_works();
}

TEST(PluginLoaderHardening, BuiltinDLPackTypeCannotBeTakenByLoadOrder) {
  // The stranger first on the path: before, it took kDLCPU and the cpu plugin
  // failed to load (NumPy arrays then imported onto the stranger's device).
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const std::string early = dir + "/libaaa_hijack.so";
  fs::copy_file(TSRTEST_HIJACK_DLPACK, early);
  const CliRun r = run_info({"TESSERA_PLUGIN_PATH=" + early + ":" TSRTEST_BUILTIN_PLUGIN_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(plugin_section(r.output, "cpu").find("device type cpu: 1 device(s), DLPack type 1,"), std::string::npos)
      << r.output;
  EXPECT_EQ(plugin_section(r.output, "hijack_dlpack"), "") << r.output;
  EXPECT_NE(r.output.find("DLPack device type 1 (kDLCPU) is reserved for the built-in plugin 'cpu'"), std::string::npos)
      << r.output;
}

TEST(PluginLoaderHardening, BuiltinDeviceTypeNameCannotBeTakenByLoadOrder) {
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const std::string early = dir + "/libaaa_hijack.so";
  fs::copy_file(TSRTEST_HIJACK_NAME, early);
  const CliRun r = run_info({"TESSERA_PLUGIN_PATH=" + early + ":" TSRTEST_BUILTIN_PLUGIN_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(plugin_section(r.output, "cpu").find("device type cpu: 1 device(s), DLPack type 1,"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("device type 'cpu': the name is reserved for the built-in plugin 'cpu'"), std::string::npos)
      << r.output;
}

TEST(PluginLoaderHardening, BuiltinPluginsLoadFirstWhateverThePathOrder) {
  // A plugin adding a kernel to "cpu", listed before the cpu plugin: before, it
  // loaded first and its kernel was silently dropped.
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const std::string early = dir + "/libaaa_cpu_extra.so";
  fs::copy_file(TSRTEST_CPU_EXTRA, early);
  const CliRun r = run_info({"TESSERA_PLUGIN_PATH=" + early + ":" TSRTEST_BUILTIN_PLUGIN_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string extra = plugin_section(r.output, "cpu_extra");
  EXPECT_NE(extra.find("kernels (1), by device type and dtypes:\n    [cpu] bool:\n      mm"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("plugins that failed to load"), std::string::npos) << r.output;
}

TEST(PluginLoaderHardening, DuplicatePluginNamesOnTheSearchPathAreRecorded) {
  // A second meta plugin (another copy, same name): recorded with both paths,
  // and logged with TESSERA_VERBOSE=1. The same file reached twice is no error.
  const ScratchDir scratch;
  const std::string& dir = scratch;
  const std::string copy = dir + "/libtessera-meta.so";
  fs::copy_file(meta_plugin(), copy);
  const CliRun r = run_info({"TESSERA_VERBOSE=1", "TESSERA_PLUGIN_PATH=" TSRTEST_BUILTIN_PLUGIN_DIR ":" + copy + ":" +
                                                   meta_plugin()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string failure = "cannot load plugin 'meta' from '" + copy +
                              "': a plugin of that name is already loaded from '" +
                              fs::canonical(meta_plugin()).string() + "'";
  const size_t failed = r.output.find("plugins that failed to load:");
  ASSERT_NE(failed, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  " + failure, failed), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[tessera] default plugin not loaded: " + failure), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(meta_plugin() + ": listed more than once in the plugin search path; loaded once"),
            std::string::npos)
      << r.output;
  // Exactly one failure: the same file twice is not one.
  const std::string tail = r.output.substr(failed);
  EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n'), 2) << tail;
}

TEST(PluginLoaderHardening, KernelsDispatchNeverReachesAreReported) {
  testing::internal::CaptureStderr();
  const PluginInfo info = load_plugin(TSRTEST_UNREACHABLE);
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string warning =
      "kernel for 'exp' on 'unreach' for int64 is never called: the core runs 'exp' only in float16, bfloat16, "
      "float32, float64 and converts other inputs first";
  ASSERT_EQ(info.warnings, std::vector<std::string>{warning});
  EXPECT_NE(log.find("[tessera] plugin unreachable warning: " + warning), std::string::npos) << log;
  const std::string text = plugin_section(info_text(), "unreachable");
  EXPECT_NE(text.find("  warnings:\n    " + warning), std::string::npos) << text;
  // Kept, not refused: add (every dtype reachable) and exp are both registered.
  ASSERT_EQ(info.kernels.size(), 2u);
}

TEST(PluginLoaderHardening, SdkFailsLoudlyOnAKernelForAnUnknownDeviceType) {
  // Before, the SDK skipped it like an unknown op and the plugin loaded without it.
  expect_plugin_error(TSRTEST_ORPHAN_KERNEL,
                      {"orphan_kernel", "failed to initialize", "unknown device type 'no_such_device'"});
  for (const PluginInfo& p : plugins()) EXPECT_NE(p.name, "orphan_kernel");
}

TEST(PluginLoaderHardening, LaneDtypesAreTheDtypesDispatchCallsKernelsWith) {
  // The unreachable-kernel warning trusts PointwiseLane::dtypes (plugin_host.cpp):
  // for every lane op it checks, every dtype (pair) of input, the dtype the cpu
  // kernel is called with (from the dispatch trace) must be one of them.
  const ScalarType all[] = {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};
  int checked = 0;
  for (const Operator* op : Dispatcher::instance().operators()) {
    const PointwiseLane* lane = detail::OperatorSlots::pointwise_lane(*op);
    if (lane == nullptr || lane->trailing == PointwiseLane::Trailing::NoneOnly || &op->kernel_source() != op) continue;
    const int n = lane->num_tensors;
    for (ScalarType da : all) {
      for (ScalarType db : all) {
        if (n == 1 && db != all[0]) continue;
        const Tensor a = ones({2}, TensorOptions(da)), b = ones({2}, TensorOptions(db));
        std::vector<IValue> args = {IValue::of(a)};
        if (n == 2) args.push_back(IValue::of(b));
        if (lane->trailing == PointwiseLane::Trailing::Alpha) args.push_back(IValue::of(int64_t{1}));
        Tensor out;
        Frame frame{args.data(), static_cast<int>(args.size()), &out, 1};
        testing::internal::CaptureStderr();
        Dispatcher::set_trace(true);
        bool refused = false;
        try {
          Dispatcher::instance().call(*op, frame);
        } catch (const Error&) {
          refused = true;
        }
        Dispatcher::set_trace(false);
        const std::string trace = testing::internal::GetCapturedStderr();
        if (refused) continue;
        const std::regex kernel_line("kernel " + op->name() + " \\[cpu, (\\w+)\\]");
        std::smatch m;
        ASSERT_TRUE(std::regex_search(trace, m, kernel_line)) << op->name() << ": no kernel line in\n" << trace;
        const ScalarType called = [&] {
          for (ScalarType t : all)
            if (dtype_name(t) == m[1].str()) return t;
          return ScalarType::Undefined;
        }();
        ASSERT_NE(called, ScalarType::Undefined) << m[1];
        EXPECT_TRUE(lane->dtypes & (1u << static_cast<int>(called)))
            << op->name() << "(" << dtype_name(da) << (n == 2 ? std::string(", ") + std::string(dtype_name(db)) : "")
            << ") calls the kernel for " << m[1] << ", outside the lane's dtypes";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}
