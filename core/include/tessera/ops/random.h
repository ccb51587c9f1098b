// tessera/ops/random.h — random numbers (the Philox generator, rand, randn, randint, uniform_, normal_, bernoulli, randperm, dropout): free functions.
// Included by tessera/tensor.h; the method forms are in random_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
