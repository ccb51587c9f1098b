#include "runner.h"
#include <tessera/error.h>
namespace tessera::kit {
Report run_perf_mode(const Target&, const Options&) { throw NotImplementedError("perf mode: not yet"); }
}
