// grad() against backward() on one long chain: the engine's selection of the
// nodes to run (only those leading to the requested inputs, for grad() and
// backward(inputs=)) must be linear in the graph's size, like backward()'s
// plain walk. Each iteration builds the chain twice (cycling mul, add, exp,
// sub on 1-element f32, as bench_autograd.cpp) and times backward() on one
// and grad() on the other, in alternating order, so drift hits both alike;
// graph building and freeing are not timed. The counters are the medians of
// the per-iteration times and of the per-iteration ratios.
// Target: grad_over_backward <= 2 on a 1e6-op chain.
// Run: build/release/bin/tessera_bench_autograd_grad
//   (BM_grad_vs_backward/40000 is the chain the issue measured; /1000000 the target.)
#include <benchmark/benchmark.h>
#include <tessera/autograd.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "autograd_chain.h"

using namespace tessera;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void BM_grad_vs_backward(benchmark::State& s) {
  const int64_t n = s.range(0);
  const Tensor a = full({1}, 0.5f), b = full({1}, 0.25f);
  std::vector<double> grad_ms, backward_ms, ratio;
  bool grad_first = false;
  for (auto _ : s) {
    double g = 0, bw = 0;
    for (int k = 0; k < 2; ++k) {
      const bool do_grad = (k == 0) == grad_first;
      Tensor x = ones({1}).requires_grad_();
      Tensor y = bench::run_chain(x, a, b, n);
      const auto t0 = std::chrono::steady_clock::now();
      if (do_grad) {
        std::vector<Tensor> r = autograd::grad({y}, {x});
        benchmark::DoNotOptimize(r[0].unsafeGetTensorImpl());
      } else {
        y.backward();
        benchmark::DoNotOptimize(x.grad().unsafeGetTensorImpl());
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      (do_grad ? g : bw) = ms;
    }  // y and its graph are freed here, untimed
    grad_first = !grad_first;
    grad_ms.push_back(g);
    backward_ms.push_back(bw);
    ratio.push_back(g / bw);
  }
  s.counters["grad_ms"] = median(grad_ms);
  s.counters["backward_ms"] = median(backward_ms);
  s.counters["grad_over_backward"] = median(ratio);
  std::printf("chain of %lld ops: grad %.1f ms, backward %.1f ms (medians of %zu), grad/backward %.2fx (target <= 2x)\n",
              static_cast<long long>(n), median(grad_ms), median(backward_ms), ratio.size(), median(ratio));
}
BENCHMARK(BM_grad_vs_backward)->Arg(40000)->Arg(1000000)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
