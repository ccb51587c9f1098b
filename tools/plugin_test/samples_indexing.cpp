// Samples of the indexing family (docs/ops/indexing.md).
#include "samples.h"

namespace tessera::kit {

void add_indexing_samples() {}

}  // namespace tessera::kit
