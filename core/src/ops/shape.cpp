// Shape ops: cat, stack, split, chunk, flip, roll, repeat, tile, pad, tril, triu.
#include "ops.h"

namespace tessera::ops {

void declare_shape_ops() {}

}  // namespace tessera::ops
