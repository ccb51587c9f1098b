// Samples of the shape family (docs/ops/shape.md).
#include "samples.h"

namespace tessera::kit {

void add_shape_samples() {}

}  // namespace tessera::kit
