// The `tessera` command: `tessera info` lists plugins, devices and kernels;
// `tessera demo [device]` runs the demo.
#include <tessera/tessera.h>

#include <cstring>
#include <iostream>

int run_demo(const char* device);

namespace {
void usage(std::ostream& os) {
  os << "usage: tessera <command>\n"
        "  info    list loaded plugins (name, version, ABI, path), their devices and kernels\n"
        "  demo [device]\n"
        "          show the plugins, then train a small MLP on two spirals (exit 1 below 95% accuracy),\n"
        "          on `device` (e.g. sim, cpu) or else the best one present\n"
        "environment: TESSERA_PLUGIN_PATH (':'-separated plugin files or folders),\n"
        "             TESSERA_DISPATCH_TRACE=1 (print each dispatch), TESSERA_VERBOSE=1\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  try {
    if (std::strcmp(argv[1], "info") == 0) {
      std::cout << tessera::info_text();
      return 0;
    }
    if (std::strcmp(argv[1], "demo") == 0) return run_demo(argc > 2 ? argv[2] : nullptr);
  } catch (const tessera::Error& e) {
    std::cerr << "tessera: error (" << tessera::error_code_name(e.code()) << "): " << e.what() << "\n";
    return 1;
  }
  std::cerr << "tessera: unknown command '" << argv[1] << "'\n";
  usage(std::cerr);
  return 2;
}
