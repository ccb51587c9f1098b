// Randomized stress of the caching allocator (issue 15, point 9): allocate,
// free, record_stream, event completion and empty_cache on several streams,
// one thread (checked after every step) and several threads (checked at the
// quiescent point after each round). Checks against an independent model:
// live blocks never overlap, the allocator's allocated bytes equal the model's,
// its reserved bytes equal what the device gave out, peaks never decrease,
// empty_cache leaves no unused segment or granule; plus the engine's own
// invariants (blocks tile every segment) and the snapshot/stats consistency.
//
// TESSERA_ALLOC_STRESS_OPS sets the number of operations of the single-thread
// test (default 1e6, 1e5 under sanitizers); the threaded test runs 2/5 of it.
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include <tessera/error.h>

#include "allocator_test_util.h"

namespace tsrtest {
namespace {

using namespace tessera::memory;

size_t stress_ops() {
  if (const char* v = std::getenv("TESSERA_ALLOC_STRESS_OPS")) return std::strtoull(v, nullptr, 10);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 100000;
#else
  return 1000000;
#endif
}

size_t random_size(std::mt19937_64& rng) {
  const unsigned kind = rng() % 100;
  if (kind < 70) return 1 + rng() % (64 * KiB);
  if (kind < 90) return 64 * KiB + rng() % (960 * KiB);
  if (kind < 98) return MiB + rng() % (11 * MiB);
  return 12 * MiB + rng() % (36 * MiB);
}

/// Live blocks by address: a new block must not overlap any.
struct LiveModel {
  std::map<uintptr_t, size_t> blocks;
  int64_t bytes = 0;
  ::testing::AssertionResult add(void* p, size_t size) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto next = blocks.lower_bound(a);
    if (next != blocks.end() && next->first < a + size)
      return ::testing::AssertionFailure() << "block at " << p << " overlaps the live block at " << next->first;
    if (next != blocks.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > a)
        return ::testing::AssertionFailure() << "block at " << p << " overlaps the live block at " << prev->first;
    }
    blocks.emplace(a, size);
    bytes += static_cast<int64_t>(size);
    return ::testing::AssertionSuccess();
  }
  void remove(void* p) {
    auto it = blocks.find(reinterpret_cast<uintptr_t>(p));
    bytes -= static_cast<int64_t>(it->second);
    blocks.erase(it);
  }
};

::testing::AssertionResult peaks_monotone(const DeviceStats& before, const DeviceStats& now) {
  const StatArray DeviceStats::*arrays[] = {
      &DeviceStats::allocation,      &DeviceStats::segment,        &DeviceStats::active,
      &DeviceStats::inactive_split,  &DeviceStats::allocated_bytes, &DeviceStats::reserved_bytes,
      &DeviceStats::active_bytes,    &DeviceStats::inactive_split_bytes, &DeviceStats::requested_bytes};
  for (auto m : arrays)
    for (int p = 0; p < 3; ++p) {
      const Stat &b = (before.*m)[p], &n = (now.*m)[p];
      if (n.peak < b.peak || n.peak < n.current || n.allocated < b.allocated || n.freed < b.freed)
        return ::testing::AssertionFailure() << "a peak or total went down, or a peak is below current";
    }
  return ::testing::AssertionSuccess();
}

/// After empty_cache: every plain segment holds an allocated block, and no
/// cached block of an expandable segment holds a whole mapped granule.
void expect_nothing_unused(CachingAllocator& a, size_t granularity) {
  const Snapshot snap = a.snapshot();
  for (const SnapshotSegment& s : snap.segments) {
    if (!s.is_expandable) {
      EXPECT_GT(s.allocated_size, 0u) << "empty_cache kept an unused segment";
      continue;
    }
    for (const SnapshotBlock& b : s.blocks) {
      if (b.state != BlockState::Inactive) continue;
      const uint64_t lo = (b.address + granularity - 1) / granularity * granularity;
      EXPECT_GT(lo + granularity, b.address + b.size) << "empty_cache kept a whole unused granule mapped";
    }
  }
}

class StressTest : public AllocatorTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(StressTest, RandomOpsKeepInvariantsAtEveryStep) {
  opts.capacity = 512 * MiB;
  auto& a = make(GetParam());
  const size_t ops = stress_ops() / 5;  // five configurations
  std::mt19937_64 rng(12345);
  std::vector<void*> live;
  LiveModel model;
  DeviceStats before = a.stats();
  size_t ooms = 0, allocs = 0;
  for (size_t step = 0; step < ops; ++step) {
    const unsigned r = rng() % 1000;
    if (r < 450 && live.size() < 250) {
      const TsrStream s = S(1 + static_cast<int>(rng() % 4));
      void* p = nullptr;
      try {
        p = a.allocate(random_size(rng), s);
      } catch (const tessera::OutOfMemoryError&) {
        ++ooms;
      }
      if (p != nullptr) {
        size_t size = 0;
        ASSERT_TRUE(a.lookup(p, &size, nullptr));
        ASSERT_TRUE(model.add(p, size)) << "step " << step;
        live.push_back(p);
        ++allocs;
      }
    } else if (r < 850 && !live.empty()) {
      const size_t i = rng() % live.size();
      a.free(live[i]);
      model.remove(live[i]);
      live[i] = live.back();
      live.pop_back();
    } else if (r < 930 && !live.empty()) {
      const TsrStream s = S(1 + static_cast<int>(rng() % 4));
      a.record_stream(live[rng() % live.size()], s);
      if (rng() % 2) dev().enqueue_work(s);
    } else if (r < 999) {
      dev().complete(S(1 + static_cast<int>(rng() % 4)));
    } else {
      a.empty_cache();
      expect_nothing_unused(a, 2 * MiB);
    }
    const std::string err = a.check_invariants();
    ASSERT_EQ(err, "") << "step " << step;
    const DeviceStats now = a.stats();
    ASSERT_TRUE(peaks_monotone(before, now)) << "step " << step;
    ASSERT_EQ(now.allocated_bytes[0].current, model.bytes) << "step " << step;
    ASSERT_EQ(static_cast<size_t>(now.reserved_bytes[0].current), dev().used()) << "step " << step;
    before = now;
    if (step % 25000 == 0) expect_consistent(a);
  }
  expect_consistent(a);
  EXPECT_GT(allocs, ops / 10);
  for (void* p : live) a.free(p);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes[0].current, 0);
  RecordProperty("ooms", static_cast<int>(ooms));
}

INSTANTIATE_TEST_SUITE_P(Configs, StressTest,
                         ::testing::Values("", "max_split_size_mb:40,roundup_power2_divisions:4",
                                           "expandable_segments:True",
                                           "garbage_collection_threshold:0.6,per_process_memory_fraction:0.8",
                                           "backend:plugin"));

// Several threads on one allocator; checked whenever they are all stopped.
class ConcurrentStress : public AllocatorTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ConcurrentStress, ThreadsAllocateFreeAndRecordStreams) {
  opts.capacity = 1 * GiB;
  auto& a = make(GetParam());
  constexpr int kThreads = 4;
  const size_t total = stress_ops() * 2 / 5 / 2;  // two configurations
  const size_t rounds = 20, per_round = std::max<size_t>(total / rounds / kThreads, 100);
  std::vector<std::vector<void*>> live(kThreads);
  std::vector<std::mt19937_64> rngs;
  for (int t = 0; t < kThreads; ++t) rngs.emplace_back(777 + t);
  DeviceStats before = a.stats();
  std::atomic<size_t> failures{0};
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        auto& rng = rngs[t];
        auto& mine = live[t];
        for (size_t i = 0; i < per_round; ++i) {
          const unsigned r = rng() % 1000;
          // Mostly its own stream; a fifth of the time the stream all threads share.
          const TsrStream own = rng() % 5 == 0 ? S(9) : S(1 + t);
          try {
            if (r < 450 && mine.size() < 60) {
              mine.push_back(a.allocate(random_size(rng) / 4 + 1, own));
            } else if (r < 850 && !mine.empty()) {
              const size_t k = rng() % mine.size();
              a.free(mine[k]);
              mine[k] = mine.back();
              mine.pop_back();
            } else if (r < 930 && !mine.empty()) {
              const TsrStream other = S(1 + static_cast<int>(rng() % kThreads));
              a.record_stream(mine[rng() % mine.size()], other);
              if (rng() % 2) dev().enqueue_work(other);
            } else if (r < 998) {
              dev().complete(S(1 + static_cast<int>(rng() % kThreads)));
            } else {
              a.empty_cache();
            }
          } catch (const tessera::OutOfMemoryError&) {
          } catch (...) {
            ++failures;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(failures.load(), 0u);
    ASSERT_EQ(a.check_invariants(), "") << "round " << round;
    LiveModel model;
    for (const auto& mine : live)
      for (void* p : mine) {
        size_t size = 0;
        ASSERT_TRUE(a.lookup(p, &size, nullptr));
        ASSERT_TRUE(model.add(p, size)) << "round " << round;
      }
    const DeviceStats now = a.stats();
    ASSERT_TRUE(peaks_monotone(before, now));
    ASSERT_EQ(now.allocated_bytes[0].current, model.bytes);
    ASSERT_EQ(static_cast<size_t>(now.reserved_bytes[0].current), dev().used());
    before = now;
    expect_consistent(a);
  }
  for (auto& mine : live)
    for (void* p : mine) a.free(p);
  dev().complete_all();
  a.empty_cache();
  expect_nothing_unused(a, 2 * MiB);
  EXPECT_EQ(a.stats().reserved_bytes[0].current, 0);
}

INSTANTIATE_TEST_SUITE_P(Configs, ConcurrentStress, ::testing::Values("", "expandable_segments:True"));

// History capture (backtrace, the recorder) from several threads at once.
TEST_F(AllocatorTest, ConcurrentHistoryRecording) {
  auto& a = make();
  a.record_history(true, 256);
  std::atomic<int> calls{0};
  a.set_context_recorder([&calls] {
    ++calls;
    return std::vector<Frame>{{"x.py", 1, "f"}};
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 500; ++i) a.free(a.allocate(512 * (1 + i % 8), S(1 + t)));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 4 * 500 * 2);
  EXPECT_EQ(a.snapshot().trace.size(), 256u);
}

}  // namespace
}  // namespace tsrtest
