// tessera/ops/nn.h — neural-network ops (softmax, log_softmax, layer_norm, losses, conv2d, pooling): free functions.
// Included by tessera/tensor.h; the method forms are in nn_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
