// Kernel bodies of the CPU plugin, one per op of docs/ops.md. Each throws
// sdk::Error on bad arguments; plugin.cpp wraps them with kernel_entry<> (which
// runs them inside sdk::guard) and registers them with their dtype masks.
#pragma once

#include <tessera/abi.h>

namespace tessera::cpu {

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
