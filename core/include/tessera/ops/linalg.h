// tessera/ops/linalg.h — linear algebra beyond mm/bmm/matmul (addmm, dot, outer): free functions.
// Included by tessera/tensor.h; the method forms are in linalg_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
