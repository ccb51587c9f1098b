// run(): the plugin under test and the mode (kit.h).
#include "kit.h"

#include <tessera/error.h>

#include "runner.h"

namespace tessera::kit {

Report run(const Options& options) {
  const Target target = load_target(options);
  Report r;
  switch (options.mode) {
    case Mode::Test: r = run_test_mode(target, options); break;
    case Mode::Grad: r = run_grad_mode(target, options); break;
    case Mode::Coverage: r = run_coverage_mode(target, options); break;
    case Mode::Perf: r = run_perf_mode(target, options); break;
  }
  static const char* const kNames[] = {"test", "grad", "perf", "coverage"};
  r.mode = kNames[static_cast<int>(options.mode)];
  r.plugin = target.plugin.name;
  r.plugin_path = target.plugin.path;
  r.device_type = target.device_type;
  return r;
}

}  // namespace tessera::kit
