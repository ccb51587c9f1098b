// Samples of the reduction family (docs/ops/reduction.md).
#include "samples.h"

namespace tessera::kit {

void add_reduction_samples() {}

}  // namespace tessera::kit
