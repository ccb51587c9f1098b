// tessera/ops/binary.h — binary pointwise ops (add, sub, mul, div, remainder, pow, comparisons, logical and bitwise ops, shifts, ...): free functions.
// Included by tessera/tensor.h; the method forms are in binary_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
