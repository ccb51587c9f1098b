// What the CPU plugin's op families share: each family file (unary.cpp, ...)
// holds its kernels, which throw sdk::Error on bad arguments, wraps them with
// kernel_entry<> (common.hpp: runs them inside sdk::guard) and registers them
// with their dtype masks through the register_*_kernels function declared here.
//
// The family files are compiled once per instruction-set level (isa.hpp); a
// plugin registers one level's kernels through register_kernels() below.
#pragma once

#include "isa.hpp"

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

namespace tessera::cpu {
inline namespace TSR_CPU_ISA {

// Each op family registers its kernels (and their dtype masks) from its own
// files; register_all_kernels (kernels_all.cpp) calls the first nine.
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
// Every family of this compilation.
void register_all_kernels(const sdk::Host& host);  // kernels_all.cpp

}  // namespace TSR_CPU_ISA

/// The instruction-set levels the kernels are compiled for. On x86-64:
/// baseline (SSE2), avx2 (x86-64-v3: AVX2, FMA, F16C, BMI2) and avx512
/// (x86-64-v4: AVX-512 F/BW/CD/DQ/VL); elsewhere only baseline.
enum class KernelIsa { baseline, avx2, avx512 };

/// The name of a level as TESSERA_CPU_ISA spells it: "baseline", "avx2", "avx512".
const char* kernel_isa_name(KernelIsa isa) noexcept;

/// The level whose kernels run here: the environment variable TESSERA_CPU_ISA
/// when set and non-empty (to test a lower level's code on a machine with a
/// higher one), else the highest level this build has and this CPU and OS support.
/// Throws sdk::Error: TSR_ERROR_INVALID_ARGUMENT when TESSERA_CPU_ISA names an
/// unknown level, one this build lacks, or one this CPU lacks, naming the value
/// and the levels there are; TSR_ERROR_UNAVAILABLE when this build has no level
/// the CPU supports (a TESSERA_CPU_LEVELS subset). Reads the environment on
/// every call; thread-safe.
KernelIsa select_kernel_isa();

/// Registers every op family's kernels compiled for `isa` with `host`.
/// Precondition: `isa` is one select_kernel_isa() can return here.
void register_kernels(const sdk::Host& host, KernelIsa isa);

}  // namespace tessera::cpu
