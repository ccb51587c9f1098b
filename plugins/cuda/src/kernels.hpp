// The CUDA plugin's kernel registrations, one function per file of kernels.
#pragma once

#include <tessera/sdk/plugin.hpp>

namespace tessera::cuda {

/// pointwise.cu: add, sub, mul, neg, abs, exp, log, sqrt, tanh, sigmoid.
void register_pointwise(const sdk::Host& host);

}  // namespace tessera::cuda
