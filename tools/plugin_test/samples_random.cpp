// Samples of the random family (docs/ops/random.md).
#include "samples.h"

namespace tessera::kit {

void add_random_samples() {}

}  // namespace tessera::kit
