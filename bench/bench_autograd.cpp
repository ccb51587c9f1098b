// Autograd engine overhead: backward through a chain of 1,000 tiny ops against
// the forward of the same chain (which records the graph), measured in the
// same run. The chain cycles through mul, add, exp and sub on 1-element f32
// tensors, so every step does one small kernel forward and one or two in
// backward; what dominates is the per-node cost of recording and running.
// Run: build/release/bin/tessera_bench_autograd --benchmark_repetitions=7 \
//        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <tessera/autograd.h>
#include <tessera/tessera.h>

#include <chrono>
#include <cstdio>

#include "autograd_chain.h"

using namespace tessera;

namespace {
constexpr int kChain = 1000;

// Each iteration: forward (timed as "forward"), then backward plus freeing the
// graph (timed as "backward"). Reports both per chain and their ratio.
void BM_chain_forward_vs_backward(benchmark::State& s) {
  const Tensor a = full({1}, 0.5f), b = full({1}, 0.25f);
  double fwd_ns = 0, bwd_ns = 0;
  int64_t n = 0;
  for (auto _ : s) {
    Tensor x = ones({1}).requires_grad_();
    auto t0 = std::chrono::steady_clock::now();
    Tensor y = bench::run_chain(x, a, b, kChain);
    auto t1 = std::chrono::steady_clock::now();
    y.backward();
    y = Tensor();  // frees the graph
    auto t2 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(x.grad().unsafeGetTensorImpl());
    fwd_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    bwd_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    ++n;
  }
  s.counters["forward_us"] = fwd_ns / n / 1e3;
  s.counters["backward_us"] = bwd_ns / n / 1e3;
  s.counters["backward_over_forward"] = bwd_ns / fwd_ns;
}
BENCHMARK(BM_chain_forward_vs_backward)->Unit(benchmark::kMicrosecond);

// The same chain without autograd, for reference (what recording costs).
void BM_chain_no_grad(benchmark::State& s) {
  const Tensor a = full({1}, 0.5f), b = full({1}, 0.25f);
  const Tensor x = ones({1});
  for (auto _ : s) {
    Tensor y = bench::run_chain(x, a, b, kChain);
    benchmark::DoNotOptimize(y.unsafeGetTensorImpl());
  }
}
BENCHMARK(BM_chain_no_grad)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
