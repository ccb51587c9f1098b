// Test-side CUDA helpers for tessera_cuda_tests: a kernel that holds a stream
// busy, so tests can show that work queued behind it waits (stream order,
// record_stream, events, DLPack stream hand-off), and the CUDA plugin's copy
// of cpu's sum order built for the host. Tests may link the CUDA runtime; the
// core and plugins' public API (and that header) is all they use otherwise.
#include "cuda_test_kernels.h"

#include <cuda_runtime.h>

#include "cpu_reduction_order.cuh"

namespace {

// The global nanosecond timer: unlike clock64's SM cycles, it does not depend
// on the clock the SM runs at.
__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins for `ns` nanoseconds of device time, then copies n floats.
__global__ void spin_then_copy(const float* src, float* dst, long long n, unsigned long long ns) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const unsigned long long start = global_ns();
    while (global_ns() - start < ns) {
    }
  }
  __syncthreads();
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

namespace tsrtest {

std::string spin_then_copy(void* stream, const float* src, float* dst, long long n, unsigned long long ns) {
  // One block: the spin must precede every copy, and __syncthreads orders only a block.
  ::spin_then_copy<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(src, dst, n, ns);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorName(e));
}

std::string spin(void* stream, unsigned long long ns) { return spin_then_copy(stream, nullptr, nullptr, 0, ns); }

template <typename A>
struct Strided {  // a functor, not a lambda: lane_sum is __host__ __device__
  const A* p;
  int64_t s;
  __host__ __device__ A operator()(int64_t i) const { return p[i * s]; }
};
template <typename A>
A cpu_order_sum_of(const A* p, int64_t n, int64_t s) {
  return tessera::cuda::cpu_order::lane_sum<A>(Strided<A>{p, s}, n);
}
double cpu_order_sum(const double* p, int64_t n, int64_t s) { return cpu_order_sum_of(p, n, s); }
float cpu_order_sum(const float* p, int64_t n, int64_t s) { return cpu_order_sum_of(p, n, s); }
double cpu_order_column_sum(const double* p, int64_t rows, int64_t s) {
  return tessera::cuda::cpu_order::outer_sum<double>(Strided<double>{p, s}, rows);
}
float cpu_order_column_sum(const float* p, int64_t rows, int64_t s) {
  return tessera::cuda::cpu_order::outer_sum<float>(Strided<float>{p, s}, rows);
}
template <typename A>
A cpu_order_prod_of(const A* p, int64_t n, int64_t s) {
  A acc = A(1);
  tessera::cuda::cpu_order::lane_prod<A>(Strided<A>{p, s}, n, s == 1, acc);
  return acc;
}
double cpu_order_prod(const double* p, int64_t n, int64_t s) { return cpu_order_prod_of(p, n, s); }
float cpu_order_prod(const float* p, int64_t n, int64_t s) { return cpu_order_prod_of(p, n, s); }

}  // namespace tsrtest
