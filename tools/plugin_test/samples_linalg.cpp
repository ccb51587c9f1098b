// Samples of the linalg family (docs/ops/linalg.md).
#include "samples.h"

namespace tessera::kit {

void add_linalg_samples() {}

}  // namespace tessera::kit
