// Spine benchmarks, each against a baseline measured in the same run:
//   tiny_add        add of two 1-element f32 tensors end to end   vs  malloc + add + free
//                   (also measured paired: both sides in alternating blocks)
//   dispatch        a no-op kernel through the dispatcher           vs  a direct indirect call
//   add_16M         elementwise add of 16M f32                      vs  a plain loop in this binary
//   matmul_N        NxN f32 matmul, N = 64, 256, 1024                vs  cblas_sgemm directly
// Run: build/release/bin/tessera_bench_spine --benchmark_repetitions=7 \
//        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//      (prints the ratio table at the end, from the medians; interleaving keeps
//      machine drift from favouring whichever side ran first)
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <tessera/tessera.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

using namespace tessera;

namespace {

// ---- tiny op ----
__attribute__((noinline)) float* direct_tiny_add(const float* a, const float* b) {
  auto* out = static_cast<float*>(std::malloc(sizeof(float)));
  out[0] = a[0] + b[0];
  return out;
}

void BM_tiny_add_baseline(benchmark::State& s) {
  float a = 1, b = 2;
  for (auto _ : s) {
    float* r = direct_tiny_add(&a, &b);
    benchmark::DoNotOptimize(r);
    std::free(r);
  }
}
BENCHMARK(BM_tiny_add_baseline);

void BM_tiny_add_tessera(benchmark::State& s) {
  const Tensor a = ones({1}), b = ones({1});
  for (auto _ : s) {
    Tensor r = add(a, b);
    benchmark::DoNotOptimize(r.unsafeGetTensorImpl());
  }
}
BENCHMARK(BM_tiny_add_tessera);

// The same pair measured in alternation: blocks of kBlock baseline calls and
// kBlock Tessera calls take turns within each iteration, so the drift of a
// shared VM (its speed changes over seconds) falls on both sides alike, where
// the two benchmarks above each see their own stretch of time. The time is a
// Tessera block's; the counters are each side's time per call and the ratio.
void BM_tiny_add_paired(benchmark::State& s) {
  using Clock = std::chrono::steady_clock;
  constexpr int kBlock = 256;
  const Tensor a = ones({1}), b = ones({1});
  float x = 1, y = 2;
  double baseline_ns = 0, tessera_ns = 0;
  for (auto _ : s) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBlock; ++i) {
      float* r = direct_tiny_add(&x, &y);
      benchmark::DoNotOptimize(r);
      std::free(r);
    }
    const auto t1 = Clock::now();
    for (int i = 0; i < kBlock; ++i) {
      Tensor r = add(a, b);
      benchmark::DoNotOptimize(r.unsafeGetTensorImpl());
    }
    const auto t2 = Clock::now();
    const double block_ns = std::chrono::duration<double, std::nano>(t2 - t1).count();
    baseline_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    tessera_ns += block_ns;
    s.SetIterationTime(block_ns * 1e-9);
  }
  const double calls = static_cast<double>(s.iterations()) * kBlock;
  s.counters["tessera_ns"] = tessera_ns / calls;
  s.counters["baseline_ns"] = baseline_ns / calls;
  s.counters["ratio"] = tessera_ns / baseline_ns;
}
BENCHMARK(BM_tiny_add_paired)->UseManualTime();

// ---- dispatch alone ----
void noop_kernel(const Operator&, DispatchKeySet, Frame&, void*) {}
using NoopFn = void (*)(const Operator&, DispatchKeySet, Frame&, void*);

void BM_dispatch_baseline(benchmark::State& s) {
  const Operator& op = Dispatcher::instance().get("bench_noop");
  const Tensor a = ones({1});
  IValue args[1] = {IValue::of(a)};
  Frame f{args, 1, nullptr, 0};
  NoopFn volatile fn = &noop_kernel;  // volatile: a real indirect call
  for (auto _ : s) {
    fn(op, DispatchKeySet::backend(a.device().type()), f, nullptr);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_dispatch_baseline);

void BM_dispatch_tessera(benchmark::State& s) {
  const Operator& op = Dispatcher::instance().get("bench_noop");
  const Tensor a = ones({1});
  IValue args[1] = {IValue::of(a)};
  Frame f{args, 1, nullptr, 0};
  for (auto _ : s) {
    Dispatcher::instance().call(op, f);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_dispatch_tessera);

// ---- 16M elementwise add ----
constexpr int64_t kBig = 16 << 20;

__attribute__((noinline)) void plain_add(const float* __restrict a, const float* __restrict b, float* __restrict o,
                                         int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
}

void BM_add_16M_baseline(benchmark::State& s) {
  const Tensor a = ones({kBig}), b = ones({kBig});
  for (auto _ : s) {
    auto* o = static_cast<float*>(std::aligned_alloc(64, kBig * sizeof(float)));
    plain_add(static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()), o, kBig);
    benchmark::DoNotOptimize(o);
    std::free(o);
  }
  s.SetBytesProcessed(s.iterations() * kBig * 12);
}
BENCHMARK(BM_add_16M_baseline)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_add_16M_tessera(benchmark::State& s) {
  const Tensor a = ones({kBig}), b = ones({kBig});
  for (auto _ : s) {
    Tensor r = add(a, b);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  s.SetBytesProcessed(s.iterations() * kBig * 12);
}
BENCHMARK(BM_add_16M_tessera)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- NxN matmul ----
void BM_matmul_baseline(benchmark::State& s) {
  const int n = static_cast<int>(s.range(0));
  const Tensor a = ones({n, n}), b = ones({n, n});
  for (auto _ : s) {
    auto* c = static_cast<float*>(std::aligned_alloc(64, size_t(n) * n * sizeof(float)));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, static_cast<const float*>(a.data_ptr()),
                n, static_cast<const float*>(b.data_ptr()), n, 0.0f, c, n);
    benchmark::DoNotOptimize(c);
    std::free(c);
  }
}
BENCHMARK(BM_matmul_baseline)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_matmul_tessera(benchmark::State& s) {
  const int64_t n = s.range(0);
  const Tensor a = ones({n, n}), b = ones({n, n});
  for (auto _ : s) {
    Tensor r = a.matmul(b);
    benchmark::DoNotOptimize(r.data_ptr());
  }
}
BENCHMARK(BM_matmul_tessera)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Collects per-benchmark times so main can print the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns, counters;
  void ReportRuns(const std::vector<Run>& runs) override {
    // With --benchmark_repetitions the median is the figure; else the single run.
    for (const Run& r : runs) {
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Iteration || median) {
        const double scale = r.time_unit == benchmark::kMillisecond   ? 1e6
                             : r.time_unit == benchmark::kMicrosecond ? 1e3
                                                                      : 1.0;
        const std::string args = r.run_name.args.empty() ? "" : "/" + r.run_name.args;
        ns[r.run_name.function_name + args] = r.GetAdjustedRealTime() * scale;
        for (const auto& [key, counter] : r.counters) counters[r.run_name.function_name + args + ":" + key] = counter;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("TESSERA_PLUGIN_PATH") == nullptr) setenv("TESSERA_PLUGIN_PATH", TSR_BENCH_PLUGIN_DIR, 0);
  // An op whose only kernel does nothing: measures the dispatcher alone.
  Dispatcher::instance().declare_composite("bench_noop(Tensor self) -> ()", 0, &noop_kernel);
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto get = [&](const std::string& n) { return reporter.ns.count(n) ? reporter.ns[n] : 0.0; };
  std::printf("\n%-14s %14s %14s %10s  %s\n", "case", "tessera", "baseline", "ratio", "target");
  auto row = [&](const char* name, const char* t, const char* b, const char* target, bool speed) {
    const double x = get(t), y = get(b);
    if (x == 0 || y == 0) return;
    // "speed" rows report baseline/tessera (>= target is good), others tessera/baseline.
    std::printf("%-14s %11.1f ns %11.1f ns %9.3fx  %s\n", name, x, y, speed ? y / x : x / y, target);
  };
  row("tiny_add", "BM_tiny_add_tessera", "BM_tiny_add_baseline", "time <= 4x baseline and <= 150 ns", false);
  if (reporter.counters.count("BM_tiny_add_paired:ratio")) {
    std::printf("%-14s %11.1f ns %11.1f ns %9.3fx  %s\n", "tiny_add pair", reporter.counters["BM_tiny_add_paired:tessera_ns"],
                reporter.counters["BM_tiny_add_paired:baseline_ns"], reporter.counters["BM_tiny_add_paired:ratio"],
                "the same, measured in alternating blocks");
  }
  row("dispatch", "BM_dispatch_tessera", "BM_dispatch_baseline", "<= baseline + 20 ns", false);
  std::printf("%-14s %+11.1f ns over the direct indirect call\n", "", get("BM_dispatch_tessera") - get("BM_dispatch_baseline"));
  row("add_16M", "BM_add_16M_tessera", "BM_add_16M_baseline", "speed >= 0.9x the plain loop", true);
  row("matmul_64", "BM_matmul_tessera/64", "BM_matmul_baseline/64", "speed >= 0.95x cblas_sgemm", true);
  row("matmul_256", "BM_matmul_tessera/256", "BM_matmul_baseline/256", "speed >= 0.95x cblas_sgemm", true);
  row("matmul_1024", "BM_matmul_tessera/1024", "BM_matmul_baseline/1024", "speed >= 0.95x cblas_sgemm", true);
  benchmark::Shutdown();
  return 0;
}
