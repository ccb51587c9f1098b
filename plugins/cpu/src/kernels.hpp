// What the CPU plugin's op families share: each family file (unary.cpp, ...)
// holds its kernels, which throw sdk::Error on bad arguments, wraps them with
// kernel_entry<> (common.hpp: runs them inside sdk::guard) and registers them
// with their dtype masks through the register_*_kernels function declared here.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

namespace tessera::cpu {

// Each op family registers its kernels (and their dtype masks) from its own
// files; plugin.cpp calls the first nine.
void register_unary_kernels(const sdk::Host& host);      // unary.cpp
void register_binary_kernels(const sdk::Host& host);     // binary.cpp
void register_ternary_kernels(const sdk::Host& host);    // ternary.cpp
void register_reduction_kernels(const sdk::Host& host);  // reduction.cpp
void register_linalg_kernels(const sdk::Host& host);     // linalg.cpp
void register_shape_kernels(const sdk::Host& host);      // shape.cpp
void register_indexing_kernels(const sdk::Host& host);   // indexing.cpp
void register_random_kernels(const sdk::Host& host);     // random.cpp
void register_nn_kernels(const sdk::Host& host);         // nn.cpp
// The parts of a family in a file of their own, registered by the family's function.
void register_shape_copy_kernels(const sdk::Host& host);        // shape_copy.cpp: copy_, fill_, arange
void register_indexing_nonzero_kernels(const sdk::Host& host);  // indexing_nonzero.cpp: nonzero

}  // namespace tessera::cpu
