// OpenBLAS's GEMMs and GEMVs, loaded by the plugin itself (blas.cpp) rather than linked:
// OpenBLAS picks its kernels for the CPU when it loads, and a DYNAMIC_ARCH build
// (Debian's) takes some virtual CPUs that hide their model for a Prescott and
// runs SSE3 kernels — a 512^3 sgemm took 4.4x PyTorch's time on the project's
// development VM instead of 1.1x. Loading it ourselves lets the plugin name the
// kernel family the CPU's features allow first (OPENBLAS_CORETYPE, for the load
// only, unless the user set it).
#pragma once

#include <cblas.h>

namespace tessera::cpu {

struct Blas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  decltype(&cblas_sgemv) sgemv;  // matrix x vector: GEMM's packing costs more than the product there
  decltype(&cblas_dgemv) dgemv;
  decltype(&cblas_sdot) sdot;  // vector . vector: a one-row GEMV ran 1.4x PyTorch's sdot
  decltype(&cblas_ddot) ddot;
};

/// OpenBLAS's entry points, loaded on the first call (from any thread, once;
/// the library stays loaded for the process). Throws sdk::Error
/// (TSR_ERROR_UNAVAILABLE) naming what it tried when OpenBLAS cannot be loaded.
const Blas& blas();

}  // namespace tessera::cpu
