// The core's caching allocator (core/src/memory): the host cost of a cached
// allocate+free pair against the device's raw allocate+free (a fake device,
// and the sim plugin through the ABI as tensors use it), and the
// fragmentation of a transformer-like training loop with variable sequence
// lengths, replayed with plain and with expandable segments.
//
// The device is tests/core/fake_device_memory.h with real memory: its raw
// allocate+free is an aligned_alloc+free plus its bookkeeping under a mutex
// (the cheapest a device can be); the "_1us" variant adds 1 us per raw call,
// still far below cudaMalloc's cost. The fragmentation replay uses fake
// addresses (no memory touched): it measures the allocator's bookkeeping only.
// Run: build/release/bin/tessera_bench_allocator --benchmark_repetitions=7 \
//        --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include <tessera/tessera.h>

#include "alloc_trace.h"
#include "device_registry.h"
#include "fake_device_memory.h"
#include "memory/caching_allocator.h"
#include "memory/device_allocators.h"

using tessera::memory::CachingAllocator;
using tessera::memory::parse_alloc_conf;
using tsrtest::FakeDevice;

namespace {

constexpr int kPairs = 1000;

// The calling thread's CPU time: on a shared machine, time the thread was not
// running would otherwise count.
double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// One iteration: kPairs cached pairs, then kPairs raw pairs, each timed in
// thread CPU time (the host time they cost); the counters give both per pair
// and their ratio.
void alloc_free_pairs(benchmark::State& s, int latency_ns) {
  FakeDevice::Options o;
  o.real_memory = true;
  o.latency_ns = latency_ns;
  o.capacity = size_t{1} << 30;
  FakeDevice dev(o);
  CachingAllocator alloc(dev, parse_alloc_conf(""));
  const TsrStream stream = FakeDevice::stream(1);
  alloc.free(alloc.allocate(1024, stream));  // the segment is cached from now on
  double cached_ns = 0, raw_ns = 0;
  int64_t n = 0;
  for (auto _ : s) {
    const double t0 = thread_cpu_ns();
    for (int i = 0; i < kPairs; ++i) {
      void* p = alloc.allocate(1024, stream);
      benchmark::DoNotOptimize(p);
      alloc.free(p);
    }
    const double t1 = thread_cpu_ns();
    for (int i = 0; i < kPairs; ++i) {
      void* p = dev.allocate(1024, stream, nullptr);
      benchmark::DoNotOptimize(p);
      dev.deallocate(p, 1024, stream);
    }
    const double t2 = thread_cpu_ns();
    cached_ns += t1 - t0;
    raw_ns += t2 - t1;
    ++n;
  }
  s.counters["cached_ns"] = cached_ns / n / kPairs;
  s.counters["raw_ns"] = raw_ns / n / kPairs;
  s.counters["raw_over_cached"] = raw_ns / cached_ns;
}

void BM_alloc_free_1KiB(benchmark::State& s) { alloc_free_pairs(s, 0); }
void BM_alloc_free_1KiB_raw_1us(benchmark::State& s) { alloc_free_pairs(s, 1000); }
BENCHMARK(BM_alloc_free_1KiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_alloc_free_1KiB_raw_1us)->Unit(benchmark::kMicrosecond);

// The sim plugin's device 0 as tensors reach it: its allocator (the one
// Tensor storage uses) against its raw allocate/deallocate slots through the
// C ABI, both on the default stream. TESSERA_SIM (e.g. alloc_latency_us=N)
// applies as usual; the default costs no simulated latency.
void BM_alloc_free_1KiB_sim(benchmark::State& s) {
  const tessera::Device sim("sim");
  const tessera::DeviceTypeEntry& e = tessera::device_entry(sim);
  tessera::memory::DeviceAllocator& a = tessera::memory::device_allocators::get(e, sim);
  a.allocator.free(a.allocator.allocate(1024, nullptr));
  double cached_ns = 0, raw_ns = 0;
  int64_t n = 0;
  for (auto _ : s) {
    const double t0 = thread_cpu_ns();
    for (int i = 0; i < kPairs; ++i) {
      void* p = a.allocator.allocate(1024, nullptr);
      benchmark::DoNotOptimize(p);
      a.allocator.free(p);
    }
    const double t1 = thread_cpu_ns();
    for (int i = 0; i < kPairs; ++i) {
      void* p = a.memory.allocate(1024, nullptr, nullptr);
      benchmark::DoNotOptimize(p);
      a.memory.deallocate(p, 1024, nullptr);
    }
    const double t2 = thread_cpu_ns();
    cached_ns += t1 - t0;
    raw_ns += t2 - t1;
    ++n;
  }
  tessera::synchronize(sim);
  s.counters["cached_ns"] = cached_ns / n / kPairs;
  s.counters["raw_ns"] = raw_ns / n / kPairs;
  s.counters["raw_over_cached"] = raw_ns / cached_ns;
}
BENCHMARK(BM_alloc_free_1KiB_sim)->Unit(benchmark::kMicrosecond);

// Replays the trace once per iteration; counters: peak reserved and peak
// allocated (GiB) and their ratio. Argument 1: expandable segments.
void BM_fragmentation_replay(benchmark::State& s) {
  const bool expandable = s.range(0) != 0;
  static const std::vector<bench::TraceOp> trace = bench::transformer_trace(bench::TraceShape{});
  double reserved = 0, allocated = 0;
  for (auto _ : s) {
    FakeDevice::Options o;
    o.capacity = size_t{64} << 30;
    FakeDevice dev(o);
    CachingAllocator alloc(dev, parse_alloc_conf(expandable ? "expandable_segments:True" : ""));
    std::unordered_map<uint32_t, void*> live;
    live.reserve(4096);
    const TsrStream stream = FakeDevice::stream(1);
    for (const bench::TraceOp& op : trace) {
      if (op.alloc) {
        live[op.id] = alloc.allocate(op.bytes, stream);
      } else {
        alloc.free(live[op.id]);
        live.erase(op.id);
      }
    }
    const auto st = alloc.stats();
    reserved = static_cast<double>(st.reserved_bytes[0].peak);
    allocated = static_cast<double>(st.allocated_bytes[0].peak);
    for (auto& [id, p] : live) alloc.free(p);
  }
  s.counters["peak_reserved_GiB"] = reserved / (1 << 30);
  s.counters["peak_allocated_GiB"] = allocated / (1 << 30);
  s.counters["reserved_over_allocated"] = reserved / allocated;
  s.counters["trace_ops"] = static_cast<double>(trace.size());
}
BENCHMARK(BM_fragmentation_replay)->ArgName("expandable")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
