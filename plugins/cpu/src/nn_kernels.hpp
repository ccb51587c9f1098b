// Kernel bodies of the nn ops that live in nn_conv.cpp (registered by nn.cpp).
#pragma once

#include "isa.hpp"
#include <tessera/abi.h>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace nn {

void conv2d_kernel(const TsrKernelCall& call);
void conv2d_backward_weight_kernel(const TsrKernelCall& call);
void max_pool2d_kernel(const TsrKernelCall& call);
void max_pool2d_backward_kernel(const TsrKernelCall& call);
void avg_pool2d_kernel(const TsrKernelCall& call);

}}}  // namespace tessera::cpu::TSR_CPU_ISA::nn
