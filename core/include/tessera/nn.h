// tessera/nn.h — neural-network building blocks in C++ (the torch.nn of
// Tessera): nn::Module and the standard layers, parameter initialization, and
// state dicts saved as .npz. The functional ops (softmax, cross_entropy,
// conv2d, ...) are in tessera/ops/nn.h; optimizers in tessera/optim.h.
// docs/nn.md has a walk-through.
#pragma once

#include <tessera/nn/init.h>
#include <tessera/nn/module.h>
#include <tessera/nn/modules.h>
#include <tessera/serialize.h>
