#include "runner.h"
#include <tessera/error.h>
namespace tessera::kit {
Report run_grad_mode(const Target&, const Options&) { throw NotImplementedError("grad mode: not yet"); }
Report run_coverage_mode(const Target&, const Options&) { throw NotImplementedError("coverage mode: not yet"); }
Report run_perf_mode(const Target&, const Options&) { throw NotImplementedError("perf mode: not yet"); }
}
