// tessera/ops/shape.h — shape ops (cat, stack, split, chunk, flip, roll, repeat, tile, pad, tril, triu): free functions.
// Included by tessera/tensor.h; the method forms are in shape_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
