// What the CPU plugin's op families share: each family file (unary.cpp, ...)
// holds its kernels, which throw sdk::Error on bad arguments, wraps them with
// kernel_entry<> (common.hpp: runs them inside sdk::guard) and registers them
// with their dtype masks through the register_*_kernels function declared here.
// The kernels declared after those are the founding ops', which plugin.cpp
// still registers from its central list.
#pragma once

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

namespace tessera::cpu {

// Each op family registers its kernels (and their dtype masks) from its own file.
void register_unary_kernels(const sdk::Host& host);      // unary.cpp
void register_binary_kernels(const sdk::Host& host);     // binary.cpp
void register_ternary_kernels(const sdk::Host& host);    // ternary.cpp
void register_reduction_kernels(const sdk::Host& host);  // reduce.cpp
void register_linalg_kernels(const sdk::Host& host);     // matmul.cpp
void register_shape_kernels(const sdk::Host& host);      // shape.cpp
void register_indexing_kernels(const sdk::Host& host);   // indexing.cpp
void register_random_kernels(const sdk::Host& host);     // random.cpp
void register_nn_kernels(const sdk::Host& host);         // nn.cpp

// binary.cpp
void add_kernel(const TsrKernelCall& call);
void sub_kernel(const TsrKernelCall& call);
void mul_kernel(const TsrKernelCall& call);
void div_kernel(const TsrKernelCall& call);
// unary.cpp
void neg_kernel(const TsrKernelCall& call);
void exp_kernel(const TsrKernelCall& call);
void relu_kernel(const TsrKernelCall& call);
// reduce.cpp
void sum_kernel(const TsrKernelCall& call);
// matmul.cpp
void mm_kernel(const TsrKernelCall& call);
void bmm_kernel(const TsrKernelCall& call);
// copy.cpp
void copy_kernel(const TsrKernelCall& call);
void fill_kernel(const TsrKernelCall& call);
void arange_kernel(const TsrKernelCall& call);
// nonzero.cpp
void nonzero_kernel(const TsrKernelCall& call);

}  // namespace tessera::cpu
