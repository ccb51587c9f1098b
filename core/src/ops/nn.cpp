// Neural-network ops: softmax, layer_norm, losses, conv2d, pooling.
#include "ops.h"

namespace tessera::ops {

void declare_nn_ops() {}

}  // namespace tessera::ops
