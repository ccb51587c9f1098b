// tessera-plugin-test: the conformance kit's command line (docs/conformance.md).
//   tessera-plugin-test <plugin.so or plugin name> [--device TYPE] [--op REGEX]
//     [--dtype LIST] [--mode test|grad|perf|coverage] [--seed N]
//     [--output console|json|junit] [-j N] [--threads N]
// Exit status: 0 when every check passed, 1 when one failed, 2 for bad usage
// or a plugin that cannot be loaded.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "kit.h"

namespace {

const char* const kUsage =
    "usage: tessera-plugin-test <plugin.so or plugin name> [--device TYPE] [--op REGEX] [--dtype LIST]\n"
    "         [--mode test|grad|perf|coverage] [--seed N] [--output console|json|junit] [-j N] [--threads N]\n"
    "Runs the conformance kit on a device plugin, comparing its kernels with the cpu plugin's\n"
    "(docs/conformance.md). Exit status 0 only when every check passes.\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "tessera-plugin-test: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

long long number(const std::string& flag, const std::string& v, long long lo) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo) usage_error(flag + " takes a whole number of at least " + std::to_string(lo) +
                                                       ", not '" + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::kit;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--device") {
      o.device_type = value();
    } else if (a == "--op") {
      o.op_regex = value();
    } else if (a == "--dtype") {
      const std::string list = value();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = list.find(',', start);
        const std::string d = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!d.empty()) o.dtypes.push_back(d);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (a == "--mode") {
      const std::string m = value();
      if (m == "test") o.mode = Mode::Test;
      else if (m == "grad") o.mode = Mode::Grad;
      else if (m == "perf") o.mode = Mode::Perf;
      else if (m == "coverage") o.mode = Mode::Coverage;
      else usage_error("unknown mode '" + m + "' (test, grad, perf or coverage)");
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(number(a, value(), 0));
    } else if (a == "--output") {
      const std::string f = value();
      if (f == "console") o.output = Output::Console;
      else if (f == "json") o.output = Output::Json;
      else if (f == "junit") o.output = Output::Junit;
      else usage_error("unknown output '" + f + "' (console, json or junit)");
    } else if (a == "-j" || a == "--jobs") {
      o.jobs = static_cast<int>(number(a, value(), 1));
    } else if (a.rfind("-j", 0) == 0 && a.size() > 2) {
      o.jobs = static_cast<int>(number("-j", a.substr(2), 1));
    } else if (a == "--threads") {
      o.threads = static_cast<int>(number(a, value(), 1));
    } else if (!a.empty() && a[0] == '-') {
      usage_error("unknown option '" + a + "'");
    } else if (o.plugin.empty()) {
      o.plugin = a;
    } else {
      usage_error("one plugin at a time ('" + o.plugin + "' and '" + a + "')");
    }
  }
  if (o.plugin.empty()) usage_error("name the plugin to test");
  Report r;
  try {
    r = run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera-plugin-test: %s\n", e.what());
    return 2;
  }
  const std::string text = format(r, o.output);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return r.passed() ? 0 : 1;
}
