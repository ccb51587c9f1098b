// Samples of the nn family (docs/ops/nn.md).
#include "samples.h"

namespace tessera::kit {

void add_nn_samples() {}

}  // namespace tessera::kit
