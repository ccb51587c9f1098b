// Unload/reload cycles of an asynchronous plugin (docs/abi.md H20, DESIGN §2
// rule 9): a plugin stays mapped while a tensor, stream or event it produced
// lives, those objects keep working after unload_plugin, the library is
// unmapped when the last one goes, and the same file loads again — with no
// leak (LeakSanitizer, linked into this program: its malloc interposes on the
// whole process, libtessera and the plugins included), no thread or file
// descriptor left behind, and no crash.
//
//   reload_cycles_test <plugin.so> drive <total> <per-process>
//       runs `total` cycles in child processes of at most `per-process` cycles
//       each (a process registers at most kMaxDeviceTypes device types and never
//       reuses an id: each load of the plugin takes a new one).
//   reload_cycles_test <plugin.so> cycles <n>      n cycles in this process
//   reload_cycles_test <plugin.so> until-full      reload until the registry is
//       full: the load must fail with a PluginError, not crash or corrupt.
//
// TSR_RELOAD_CYCLES_BREAK breaks the promise on purpose, to show the checks fail:
//   leak  a tensor made inside libtessera is leaked once (only LSan can see it);
//   keep  one tensor per cycle is kept alive (reachable), so the library stays mapped.
#include <tessera/tessera.h>

#include <dirent.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>


extern char** environ;

using namespace tessera;

namespace {

int g_cycle = -1;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "reload_cycles: FAILED in cycle %d: %s\n", g_cycle, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // no exit-time leak report on top of the real failure
}

#define CHECK(cond, msg) \
  do {                   \
    if (!(cond)) fail(std::string(#cond ": ") + (msg)); \
  } while (0)

template <class E, class F>
void expect_throw(F&& f, const char* what) {
  try {
    f();
  } catch (const E&) {
    return;
  } catch (const std::exception& e) {
    fail(std::string(what) + ": threw the wrong error: " + e.what());
  }
  fail(std::string(what) + ": did not throw");
}

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) return true;
  return false;
}

int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}
int threads() { return count_entries("/proc/self/task"); }
int fds() { return count_entries("/proc/self/fd"); }

bool has_device_type(const std::string& name) {
  for (const DeviceTypeSummary& t : device_types())
    if (t.name == name) return true;
  return false;
}

std::vector<float> values(const Tensor& t) { return t.cpu().contiguous().to_vector<float>(); }

const char* broken() {
  const char* b = std::getenv("TSR_RELOAD_CYCLES_BREAK");
  return b != nullptr ? b : "";
}

std::vector<Tensor> g_kept;  // TSR_RELOAD_CYCLES_BREAK=keep

// TSR_RELOAD_CYCLES_BREAK=leak: a TensorImpl allocated inside libtessera, its
// last reference dropped without release.
[[gnu::noinline]] void leak_a_tensor() {
  const Tensor t = ones({16});
  boost::intrusive_ptr<TensorImpl> extra = t.impl();
  (void)extra.detach();
}

// One cycle: load, use, unload with objects alive, use them, drop them, check unmapped.
void cycle(const std::string& plugin_file, int n) {
  const PluginInfo info = load_plugin(plugin_file);
  CHECK(info.name == "sim" && info.abi_major == 1 && info.abi_minor >= 2, "unexpected plugin " + info.name);
  const std::string& path = info.path;  // canonical: what /proc/self/maps shows
  CHECK(mapped(path), path + " is loaded but not in /proc/self/maps");
  const Device dev("sim");

  constexpr int64_t kN = 1024;
  const Tensor host = arange(kN, TensorOptions(kFloat));
  std::vector<float> want(kN);
  for (int64_t i = 0; i < kN; ++i) want[i] = 2.0f * float(i) + 1.0f;

  // Tensors (an allocation and a host-to-device copy), a stream, kernels queued
  // on it, an event recorded after them.
  Tensor a = full({kN}, 2.0, TensorOptions(kFloat).device(dev));
  Tensor b = host.to(dev);
  Stream s = Stream::create(dev);
  Tensor c;
  s.wait_stream(Stream::default_stream(dev));  // a and b were written on the default stream
  {
    StreamGuard guard(s);
    c = a * b + 1.0;
  }
  Event e;
  e.record(s);
  if (std::strcmp(broken(), "keep") == 0) g_kept.push_back(b);

  // Which objects outlive unload_plugin, and which of them goes last, rotates.
  const int variant = n % 4;
  if (variant == 3) {  // nothing alive: the library closes inside unload_plugin
    e.synchronize();
    CHECK(values(c) == want, "kernel result before unload");
    a = b = c = Tensor();
    s = Stream::default_stream();
    e = Event();
  }
  unload_plugin("sim");
  CHECK(!has_device_type("sim"), "sim still registered after unload_plugin");
  if (variant == 3) {
    CHECK(!mapped(path), "still mapped after unloading a plugin that had nothing alive");
    return;
  }
  expect_throw<ValueError>([] { Device("sim"); }, "Device(\"sim\") after unload");
  CHECK(mapped(path), "unmapped while its tensors, stream and event live");

  // Everything alive keeps working through the unloaded plugin's slots.
  s.synchronize();
  // Only called, not asserted: sim's query records a marker event that its worker
  // completes a moment later, so it can say "busy" right after synchronize.
  (void)s.query();
  e.synchronize();
  CHECK(e.query(), "event not complete after synchronize");
  s.wait_event(e);
  CHECK(values(c) == want, "kernel result after unload");
  CHECK(values(b) == values(host), "copied tensor after unload");
  expect_throw<UnavailableError>([&] { (void)empty({4}, TensorOptions(kFloat).device(a.device())); },
                                 "allocation on the retired device");
  expect_throw<NotImplementedError>([&] { a.fill_(0.0); }, "kernel on the retired device (withdrawn)");

  // Drop them one by one; the library stays until the last.
  const auto drop_stream = [&] { s = Stream::default_stream(); };
  const auto drop_event = [&] { e = Event(); };
  const auto drop_tensors = [&] { a = b = c = Tensor(); };
  std::vector<std::function<void()>> order;
  if (variant == 0) order = {drop_tensors, drop_stream, drop_event};  // the event goes last
  if (variant == 1) order = {drop_event, drop_tensors, drop_stream};  // the stream goes last
  if (variant == 2) order = {drop_stream, drop_event, drop_tensors};  // a tensor goes last
  for (size_t i = 0; i < order.size(); ++i) {
    CHECK(mapped(path), "unmapped before its last object went (step " + std::to_string(i) + ")");
    order[i]();
  }
  CHECK(!mapped(path), "still mapped after the last tensor, stream and event went");
}

int run_cycles(const std::string& plugin_file, int count, bool until_full) {
  load_default_plugins();
  const int threads0 = threads(), fds0 = fds();
  if (std::strcmp(broken(), "leak") == 0) leak_a_tensor();
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  for (g_cycle = 0; until_full || g_cycle < count; ++g_cycle) {
    if (until_full) {
      try {
        cycle(plugin_file, g_cycle);
      } catch (const PluginError& err) {
        CHECK(std::strstr(err.what(), "device type slots are taken") != nullptr, err.what());
        std::printf("reload_cycles: the registry was full after %d reloads: %s\n", done, err.what());
        break;
      }
    } else {
      cycle(plugin_file, g_cycle);
    }
    ++done;
    // The plugin's worker threads are joined and nothing it opened stays open.
    CHECK(threads() == threads0, std::to_string(threads()) + " threads, " + std::to_string(threads0) + " before");
    CHECK(fds() == fds0, std::to_string(fds()) + " open files, " + std::to_string(fds0) + " before");
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("reload_cycles: %d cycles in %.2f s (%.2f ms each)", done, secs, 1e3 * secs / (done ? done : 1));
#if TSR_RELOAD_LSAN
  // LeakSanitizer checks at exit (exit code 23 on a leak): by then no stack
  // frame of this program holds a stale pointer that would hide a leak.
  std::printf(", leak check at exit\n");
#else
  std::printf(" (no leak check: built without LeakSanitizer)\n");
#endif
  std::fflush(stdout);
  return 0;
}

// Runs `total` cycles in children of at most `per_process` cycles each.
int drive(const char* self, const std::string& plugin_file, int total, int per_process) {
  const auto t0 = std::chrono::steady_clock::now();
  int children = 0;
  for (int left = total; left > 0; left -= per_process, ++children) {
    const std::string n = std::to_string(left < per_process ? left : per_process);
    const char* argv[] = {self, plugin_file.c_str(), "cycles", n.c_str(), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) {
      std::perror("posix_spawn");
      return 1;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      const bool leaked = WIFEXITED(status) && WEXITSTATUS(status) == 23;
      std::fprintf(stderr, "reload_cycles: FAILED: child %d (cycles %d..) %s %d%s\n", children, total - left,
                   WIFSIGNALED(status) ? "killed by signal" : "exited with",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                   leaked ? " (LeakSanitizer found leaks, report above)" : "");
      return 1;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("reload_cycles: %d cycles in %d processes, %.2f s, no failure\n", total, children, secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[2] : "";
  try {
    if (argc == 5 && mode == "drive") return drive(argv[0], argv[1], std::atoi(argv[3]), std::atoi(argv[4]));
    if (argc == 4 && mode == "cycles") return run_cycles(argv[1], std::atoi(argv[3]), false);
    if (argc == 3 && mode == "until-full") return run_cycles(argv[1], 0, true);
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception: ") + e.what());
  }
  std::fprintf(stderr, "usage: %s PLUGIN.so drive TOTAL PER_PROCESS | cycles N | until-full\n", argv[0]);
  return 2;
}
