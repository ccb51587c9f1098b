// Test-side CUDA helpers (cuda_test_kernels.cu). Each returns "" on success or
// the CUDA error's name. `stream` is a cudaStream_t (a TsrStream of the cuda
// plugin; NULL: the legacy default stream).
#pragma once

#include <cstdint>
#include <string>

namespace tsrtest {

/// Queues on `stream`: wait at least `ns` nanoseconds, then dst[i] = src[i] for i < n.
std::string spin_then_copy(void* stream, const float* src, float* dst, long long n, unsigned long long ns);
/// Queues on `stream` a kernel that only waits at least `ns` nanoseconds.
std::string spin(void* stream, unsigned long long ns);

/// The CUDA plugin's copy of cpu's floating sum order (cpu_reduction_order.cuh)
/// run on the host: n elements at p, stride s (elements). Needs no GPU.
double cpu_order_sum(const double* p, int64_t n, int64_t s);
float cpu_order_sum(const float* p, int64_t n, int64_t s);
/// The same copy's column order (cpu's outer layout) over `rows` rows, element
/// r at p[r * s]. Needs no GPU.
double cpu_order_column_sum(const double* p, int64_t rows, int64_t s);
float cpu_order_column_sum(const float* p, int64_t rows, int64_t s);
/// The same copy's product of n elements at p, stride s (cpu's fold_run). Needs no GPU.
double cpu_order_prod(const double* p, int64_t n, int64_t s);
float cpu_order_prod(const float* p, int64_t n, int64_t s);

}  // namespace tsrtest
