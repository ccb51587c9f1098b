// tessera_bench_cuda: the CUDA plugin's speed as ratios against baselines
// measured in the same run (issue 17 point 7; docs/performance.md):
//  - elementwise add/mul/exp on 256M float32 and bfloat16 elements: achieved
//    bandwidth / cudaMemcpy device-to-device bandwidth (target >= 0.90);
//  - a full float32 sum: read bandwidth / copy bandwidth (target >= 0.85);
//  - mm float32, TF32 and bfloat16 at 4096 and 8192: cuBLAS called directly /
//    Tessera's time (target >= 0.97);
//  - a cached allocate+free pair (the device's caching allocator itself, as
//    bench_allocator.cpp times sim's) against cudaMalloc+cudaFree (target >=
//    100x), and a whole empty() of the same size against the same;
//  - the host time of a 1-element add (PyTorch's side: bench/bench_cuda_vs_torch.py).
// Tessera's side runs the allocating forms (results come from the caching
// allocator). Contenders alternate within each repetition; figures are medians. Plain C++
// (no Google Benchmark), so it builds on a GPU machine from the GPU kit alone.
//   tessera_bench_cuda [--quick]    (--quick: 1/16 of the sizes, 3 repetitions)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <tessera/memory.h>
#include <tessera/plugin.h>
#include <tessera/tessera.h>

#include "device_registry.h"
#include "memory/device_allocators.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace tessera;

namespace {

int g_reps = 7;
int64_t g_scale = 1;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorName(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

cudaStream_t stream_of(Device d) { return reinterpret_cast<cudaStream_t>(current_stream(d).handle()); }

// Device milliseconds of `iters` calls of f on the device's current stream.
double device_ms(Device d, int iters, const std::function<void()>& f) {
  cudaStream_t s = stream_of(d);
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  f();  // warm
  check(cudaEventRecord(a, s), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) f();
  check(cudaEventRecord(b, s), "cudaEventRecord");
  check(cudaEventSynchronize(b), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

// Medians of two contenders measured alternately.
std::pair<double, double> versus(Device d, int iters, const std::function<void()>& ours,
                                 const std::function<void()>& base) {
  std::vector<double> o, b;
  for (int r = 0; r < g_reps; ++r) {
    o.push_back(device_ms(d, iters, ours));
    b.push_back(device_ms(d, iters, base));
  }
  return {median(o), median(b)};
}

void row(const char* what, double ours, double base, double ratio, const char* ratio_name, double target) {
  std::printf("| %-40s | %10.4f | %10.4f | %6.3f %-22s | %s |\n", what, ours, base, ratio, ratio_name,
              ratio >= target ? "meets" : "BELOW");
}

void elementwise(Device d) {
  const int64_t n = (int64_t{256} << 20) / g_scale;
  for (ScalarType t : {kFloat, kBFloat16}) {
    const Tensor a = rand({n}, std::nullopt, TensorOptions(t).device(d));
    const Tensor b = rand({n}, std::nullopt, TensorOptions(t).device(d));
    Tensor out = empty({n}, TensorOptions(t).device(d));
    const size_t bytes = static_cast<size_t>(n) * a.element_size();
    auto copy = [&] { check(cudaMemcpyAsync(out.data_ptr(), a.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream_of(d)), "copy"); };
    struct Case {
      const char* name;
      int operands;  // arrays read + written
      std::function<void()> run;
    };
    const std::vector<Case> cases = {{"add", 3, [&] { (void)(a + b); }},
                                     {"mul", 3, [&] { (void)(a * b); }},
                                     {"exp", 2, [&] { (void)a.exp(); }}};
    for (const Case& c : cases) {
      const auto [ours, base] = versus(d, 5, c.run, copy);
      const double ours_bw = c.operands * bytes / (ours * 1e-3), copy_bw = 2.0 * bytes / (base * 1e-3);
      const std::string what = std::string(c.name) + " " + std::string(dtype_name(t)) + " " + std::to_string(n >> 20) + "M";
      row(what.c_str(), ours, base, ours_bw / copy_bw, "of memcpy bandwidth", 0.90);
    }
  }
  const Tensor x = rand({n}, std::nullopt, TensorOptions(kFloat).device(d));
  Tensor y = empty({n}, TensorOptions(kFloat).device(d));
  const size_t bytes = static_cast<size_t>(n) * 4;
  const auto [ours, base] = versus(
      d, 5, [&] { (void)x.sum(); },
      [&] { check(cudaMemcpyAsync(y.data_ptr(), x.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream_of(d)), "copy"); });
  row("sum float32 (full)", ours, base, (bytes / (ours * 1e-3)) / (2.0 * bytes / (base * 1e-3)), "of memcpy bandwidth", 0.85);
}

void matmul(Device d) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    std::exit(1);
  }
  void* ws = nullptr;
  check(cudaMalloc(&ws, 32 << 20), "cudaMalloc");
  cublasSetWorkspace(h, ws, 32 << 20);
  for (int64_t n : {int64_t{4096}, int64_t{8192}}) {
    n /= (g_scale > 1 ? 4 : 1);
    struct Mode {
      const char* name;
      ScalarType t;
      cudaDataType_t cu;
      cublasComputeType_t compute;
      bool tf32;
    };
    for (const Mode& m : {Mode{"float32", kFloat, CUDA_R_32F, CUBLAS_COMPUTE_32F, false},
                          Mode{"tf32", kFloat, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, true},
                          Mode{"bfloat16", kBFloat16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false}}) {
      if (m.tf32) setenv("TESSERA_CUDA_ALLOW_TF32", "1", 1);
      else unsetenv("TESSERA_CUDA_ALLOW_TF32");
      const Tensor a = rand({n, n}, std::nullopt, TensorOptions(m.t).device(d));
      const Tensor b = rand({n, n}, std::nullopt, TensorOptions(m.t).device(d));
      Tensor c = empty({n, n}, TensorOptions(m.t).device(d));
      const float one = 1, zero = 0;
      auto direct = [&] {
        cublasSetStream(h, stream_of(d));
        // Row-major C = A B is column-major C^T = B^T A^T.
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.data_ptr(), m.cu, n, a.data_ptr(), m.cu, n, &zero,
                     c.data_ptr(), m.cu, n, m.compute, CUBLAS_GEMM_DEFAULT);
      };
      const auto [ours, base] = versus(d, 3, [&] { (void)a.mm(b); }, direct);
      const std::string what = "mm " + std::string(m.name) + " " + std::to_string(n);
      const double tflops = 2.0 * n * n * n / (ours * 1e-3) / 1e12;
      row((what + " (" + std::to_string(static_cast<int>(tflops)) + " TFLOP/s)").c_str(), ours, base, base / ours,
          "of cuBLAS speed", 0.97);
    }
  }
  unsetenv("TESSERA_CUDA_ALLOW_TF32");
  cudaFree(ws);
  cublasDestroy(h);
}

double host_ns(int iters, const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
}

void allocator_and_overhead(Device d) {
  const size_t bytes = 1 << 20;
  // The device's caching allocator itself (what tensor storage takes its
  // memory from), on the current stream, as bench_allocator.cpp times sim's.
  memory::DeviceAllocator& a = memory::device_allocators::get(device_entry(d), d);
  const TsrStream stream = current_stream(d).handle();
  a.allocator.free(a.allocator.allocate(bytes, stream));  // the block is cached from here on
  std::vector<double> cached, tensor, raw;
  for (int r = 0; r < g_reps; ++r) {
    cached.push_back(host_ns(10000, [&] { a.allocator.free(a.allocator.allocate(bytes, stream)); }));
    tensor.push_back(host_ns(10000, [&] { (void)empty({int64_t(bytes / 4)}, TensorOptions(kFloat).device(d)); }));
    raw.push_back(host_ns(200, [&] {
      void* p = nullptr;
      check(cudaMalloc(&p, bytes), "cudaMalloc");
      check(cudaFree(p), "cudaFree");
    }));
  }
  const double c = median(cached), t = median(tensor), w = median(raw);
  std::printf("| %-40s | %8.1f ns | %8.1f ns | %6.1fx %-22s | %s |\n", "allocate+free 1 MiB: cached vs cudaMalloc", c, w,
              w / c, "faster", w / c >= 100 ? "meets" : "BELOW");
  std::printf("| %-40s | %8.1f ns | %8.1f ns | %6.1fx %-22s | |\n", "empty() of 1 MiB (whole call) vs cudaMalloc", t, w,
              w / t, "faster");
  const Tensor one_a = ones({1}, TensorOptions().device(d)), one_b = ones({1}, TensorOptions().device(d));
  std::vector<double> add;
  for (int r = 0; r < g_reps; ++r) add.push_back(host_ns(20000, [&] { (void)(one_a + one_b); }));
  synchronize(d);
  std::printf("| %-40s | %8.1f ns | (PyTorch: bench/bench_cuda_vs_torch.py) |\n", "1-element add, host time", median(add));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_scale = 16;
      g_reps = 3;
    }
  std::string why, name;
  int count = 0;
  for (const DeviceTypeSummary& t : device_types())
    if (t.name == "cuda") {
      count = t.device_count;
      why = t.unavailable_reason;
      if (!t.device_descriptions.empty()) name = t.device_descriptions[0];
    }
  if (count == 0) {
    std::printf("tessera_bench_cuda: no CUDA device (%s); nothing measured\n", why.empty() ? "plugin not loaded" : why.c_str());
    return 0;
  }
  const Device d("cuda:0");
  std::printf("# tessera_bench_cuda on %s, medians of %d alternating repetitions\n\n", name.c_str(), g_reps);
  std::printf("| case | Tessera ms | baseline ms | ratio | target |\n|---|---|---|---|---|\n");
  elementwise(d);
  matmul(d);
  allocator_and_overhead(d);
  return 0;
}
