// bfloat16 matrix products through oneDNN's matmul primitive (Debian's
// libdnnl-dev), when the plugin was built with it. Compiled once, for baseline
// x86-64 (tessera_cpu_kernels_common): oneDNN chooses its kernels for the CPU at
// run time, so this lives outside the instruction-set namespaces (isa.hpp) and
// every level's linalg.cpp calls it, as nn_conv_onednn.hpp for conv2d.
#pragma once

#include <cstdint>

namespace tessera::cpu::onednn {

/// c[b] = a[b] @ b[b] for b < batch: a is batch x M x K, b batch x K x N,
/// c batch x M x N. Element (i, r, j) of an operand lies at
/// data + i*sb + r*sr + j*sc (strides in elements, as linalg.cpp's Mat).
/// A batch stride of 0 broadcasts one matrix over the batch (a and b only).
struct MatmulProblem {
  int64_t batch, M, N, K;
  int64_t a_sb, a_sr, a_sc;
  int64_t b_sb, b_sr, b_sc;
  int64_t c_sb, c_sr, c_sc;
};

/// Whether the oneDNN path can run at all: built with oneDNN and not disabled
/// by TESSERA_CPU_ONEDNN=0 (read once; the same switch as conv2d's).
bool matmul_available();

/// Computes c = a @ b for bfloat16 a and b (raw bits, uint16) with float32
/// accumulation; c is bfloat16 (each element rounded once, to nearest even)
/// or, with f32_out, float32 (the unrounded sums). Returns false, having
/// written nothing that matters, when oneDNN is unavailable or refuses the
/// problem: a layout it cannot describe (overlapping rows or columns, zero or
/// negative strides; other strided layouts are packed first), a size past its
/// int range, or no kernel for it on this CPU that beats float32 OpenBLAS (an
/// AMX kernel, or the AVX512-BF16 one on AMD CPUs; matmul_onednn.cpp has the
/// numbers). The caller then computes it another way. Refusals are remembered
/// per problem. Thread-safe.
/// oneDNN runs on `threads` OpenMP threads (clamped to 1..omp_get_max_threads();
/// the caller's setting is restored before the return).
bool matmul_bf16(const MatmulProblem& p, const void* a, const void* b, void* c, bool f32_out, int threads);

/// The same for float32 operands and output, where oneDNN has a kernel for
/// the problem that beats OpenBLAS here (its brg:avx512_core kernel, on AMD and
/// Intel CPUs; matmul_onednn.cpp has the numbers); false otherwise, as matmul_bf16.
bool matmul_f32(const MatmulProblem& p, const float* a, const float* b, float* c, int threads);

/// Whether matmul_f32 can take any problem here at all (oneDNN available, a
/// CPU with AVX-512): callers skip preparing for it otherwise.
bool matmul_f32_enabled();

}  // namespace tessera::cpu::onednn
