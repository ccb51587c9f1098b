// The caching allocator's behaviour against hand-computed values (issue 15,
// points 2, 4 and 9): rounding, pools, best fit with splitting and coalescing,
// per-stream reuse, record_stream, out of memory at each stage, empty_cache,
// garbage collection, the limit, expandable segments and the plugin backend.
// Every test ends with the consistency check of allocator_test_util.h.
#include <tessera/error.h>

#include "allocator_test_util.h"

namespace tsrtest {
namespace {

using tessera::OutOfMemoryError;
using namespace tessera::memory;

char* addr(void* p) { return static_cast<char*>(p); }
size_t size_of(const CachingAllocator& a, void* p) {
  size_t size = 0;
  EXPECT_TRUE(a.lookup(p, &size, nullptr));
  return size;
}

TEST_F(AllocatorTest, RoundsRequestsTo512Bytes) {
  auto& a = make();
  void* p1 = a.allocate(1, S(1));
  void* p2 = a.allocate(512, S(1));
  void* p3 = a.allocate(513, S(1));
  EXPECT_EQ(size_of(a, p1), 512u);
  EXPECT_EQ(size_of(a, p2), 512u);
  EXPECT_EQ(size_of(a, p3), 1024u);
  // Best fit carves each from the one small segment, in order.
  EXPECT_EQ(addr(p2), addr(p1) + 512);
  EXPECT_EQ(addr(p3), addr(p2) + 512);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 2048);
  EXPECT_EQ(stat(a, "requested_bytes.all.current"), 1 + 512 + 513);
  EXPECT_EQ(stat(a, "reserved_bytes.small_pool.current"), int64_t(2 * MiB));
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 1);
  EXPECT_EQ(stat(a, "num_device_alloc"), 1);
  EXPECT_EQ(a.allocate(0, S(1)), nullptr);
  a.free(nullptr);
  for (void* p : {p1, p2, p3}) a.free(p);
}

TEST_F(AllocatorTest, SmallAndLargePoolSegmentSizes) {
  auto& a = make();
  void* s = a.allocate(1 * MiB, S(1));           // small pool: a 2 MiB segment
  void* l1 = a.allocate(1 * MiB + 1, S(1));      // large pool: a 20 MiB segment
  void* l2 = a.allocate(9 * MiB, S(1));          // fits in the 20 MiB segment's rest
  void* l3 = a.allocate(10 * MiB, S(1));         // its own 10 MiB segment
  void* l4 = a.allocate(11 * MiB, S(1));         // a 12 MiB segment, not split (1 MiB left is not > 1 MiB)
  EXPECT_EQ(stat(a, "reserved_bytes.small_pool.current"), int64_t(2 * MiB));
  EXPECT_EQ(stat(a, "reserved_bytes.large_pool.current"), int64_t((20 + 10 + 12) * MiB));
  EXPECT_EQ(stat(a, "segment.large_pool.current"), 3);
  EXPECT_EQ(stat(a, "num_device_alloc"), 4);
  EXPECT_EQ(addr(l2), addr(l1) + MiB + 512);
  EXPECT_EQ(size_of(a, l4), 12 * MiB);
  EXPECT_EQ(stat(a, "allocated_bytes.large_pool.current"), int64_t(MiB + 512 + 9 * MiB + 10 * MiB + 12 * MiB));
  EXPECT_EQ(stat(a, "requested_bytes.large_pool.current"), int64_t(MiB + 1 + 9 * MiB + 10 * MiB + 11 * MiB));
  for (void* p : {s, l1, l2, l3, l4}) a.free(p);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(44 * MiB));  // cached, not returned
  EXPECT_EQ(stat(a, "num_device_free"), 0);
}

TEST_F(AllocatorTest, BestFitSplitsAndCoalesces) {
  auto& a = make();
  void* p = a.allocate(4 * KiB, S(1));
  void* q = a.allocate(8 * KiB, S(1));
  void* r = a.allocate(4 * KiB, S(1));
  void* t = a.allocate(16 * KiB, S(1));
  a.free(q);  // an 8 KiB hole between p and r
  EXPECT_EQ(stat(a, "inactive_split.small_pool.current"), 2);  // the hole and the segment's tail
  EXPECT_EQ(stat(a, "inactive_split_bytes.small_pool.current"), int64_t(2 * MiB - 24 * KiB));
  void* u = a.allocate(6 * KiB, S(1));
  EXPECT_EQ(u, q) << "best fit takes the 8 KiB hole, not the large tail";
  a.free(t);  // merges with the tail
  const Snapshot snap = a.snapshot();
  ASSERT_EQ(snap.segments.size(), 1u);
  ASSERT_EQ(snap.segments[0].blocks.size(), 5u);  // p, u, 2 KiB hole, r, tail
  EXPECT_EQ(snap.segments[0].blocks[2].size, 2 * KiB);
  EXPECT_EQ(snap.segments[0].blocks[4].size, 2 * MiB - 16 * KiB);
  for (void* x : {p, u, r}) a.free(x);
  const Snapshot after = a.snapshot();
  ASSERT_EQ(after.segments[0].blocks.size(), 1u) << "everything coalesces back";
  EXPECT_EQ(after.segments[0].blocks[0].size, 2 * MiB);
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 0);

  // Large pool: a 4 MiB request takes the 5 MiB hole whole (1 MiB left is not > 1 MiB).
  void* x1 = a.allocate(3 * MiB, S(1));
  void* y = a.allocate(3 * MiB / 2, S(1));
  void* x2 = a.allocate(5 * MiB, S(1));
  void* z = a.allocate(3 * MiB / 2, S(1));
  a.free(x1);
  a.free(x2);
  void* w = a.allocate(4 * MiB, S(1));
  EXPECT_EQ(w, x2);
  EXPECT_EQ(size_of(a, w), 5 * MiB);
  for (void* v : {y, z, w}) a.free(v);
}

// A cached small block that grows in place (a neighbour freed into it) keeps
// its size class while it grew by at most 1/16 of it: the fit chosen is then
// within 1/16 of the best. Growing more moves it, and best fit holds.
TEST_F(AllocatorTest, SmallPoolFitIsWithinASixteenthOfTheBest) {
  auto& a = make();
  for (const size_t grow : {4 * KiB, 1 * KiB}) {
    const size_t other = grow == 4 * KiB ? 34 * KiB : 32 * KiB + 512;
    void* x = a.allocate(32 * KiB, S(1));
    void* g = a.allocate(grow, S(1));
    void* s1 = a.allocate(1 * KiB, S(1));
    void* y = a.allocate(other, S(1));
    void* s2 = a.allocate(1 * KiB, S(1));
    a.free(x);
    a.free(y);
    a.free(g);  // x grows to 32 KiB + grow
    void* z = a.allocate(32 * KiB, S(1));
    if (grow == 4 * KiB) {
      EXPECT_EQ(z, y) << "36 KiB moved past the 34 KiB block: best fit";
    } else {
      EXPECT_EQ(z, x) << "33 KiB kept 32 KiB's class: chosen over 32.5 KiB, within 1/16";
    }
    EXPECT_EQ(a.check_invariants(), "");
    for (void* v : {z, s1, s2}) a.free(v);
    EXPECT_EQ(a.check_invariants(), "");
  }
}

TEST_F(AllocatorTest, BlocksAreReusedOnlyOnTheirStream) {
  auto& a = make();
  void* p = a.allocate(4 * KiB, S(1));
  a.free(p);
  void* q = a.allocate(4 * KiB, S(2));
  EXPECT_EQ(stat(a, "num_device_alloc"), 2) << "stream 2 may not take stream 1's cached block";
  void* r = a.allocate(4 * KiB, S(1));
  EXPECT_EQ(r, p);
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  a.free(q);
  a.free(r);
}

TEST_F(AllocatorTest, RecordStreamDefersReuseUntilEventsCompleteWithoutBlocking) {
  auto& a = make();
  void* p = a.allocate(4 * KiB, S(1));
  a.record_stream(p, S(2));
  a.record_stream(p, S(2));  // once per stream
  a.record_stream(p, S(1));  // its own stream: nothing to wait for
  dev().enqueue_work(S(2));  // stream 2 is still busy with p
  a.free(p);
  EXPECT_EQ(dev().event_record(), 1u);
  EXPECT_EQ(stat(a, "allocation.all.current"), 0);
  EXPECT_EQ(stat(a, "active.all.current"), 1) << "pending blocks stay active";
  {
    const Snapshot snap = a.snapshot();
    EXPECT_EQ(snap.segments[0].blocks[0].state, BlockState::ActivePendingFree);
    EXPECT_EQ(snap.segments[0].blocks[0].requested_size, 4 * KiB);
  }
  void* q = a.allocate(4 * KiB, S(1));
  EXPECT_NE(q, p) << "reused while stream 2 may still use it";
  EXPECT_GE(dev().event_query(), 1u);
  dev().complete(S(2));
  a.free(q);
  void* r = a.allocate(4 * KiB, S(1));  // polls: p's block is back and coalesced
  EXPECT_EQ(r, p);
  EXPECT_EQ(dev().blocking_waits(), 0u) << "the allocation path never waits";
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 0);
  a.free(r);
  // A second use reuses the pooled event instead of creating one.
  void* s = a.allocate(4 * KiB, S(1));
  a.record_stream(s, S(3));
  a.free(s);
  EXPECT_EQ(dev().events_created(), 1u);
  a.process_events();  // stream 3 has no queued work: the event is complete
  EXPECT_EQ(stat(a, "active.all.current"), 0);
}

// "active" = allocated + waiting for events: its peak counts a pending block
// and a new allocation together, its sums count the pending block's decrease
// when its events complete, also across reset_accumulated/reset_peak.
TEST_F(AllocatorTest, ActiveStatisticsCountPendingBlocksInPeaksAndSums) {
  auto& a = make();
  void* p = a.allocate(4 * KiB, S(1));
  a.record_stream(p, S(2));
  dev().enqueue_work(S(2));
  a.free(p);  // pending on stream 2
  void* q = a.allocate(8 * KiB, S(1));
  EXPECT_EQ(stat(a, "allocation.all.peak"), 1);
  EXPECT_EQ(stat(a, "active.all.current"), 2);
  EXPECT_EQ(stat(a, "active.all.peak"), 2);
  EXPECT_EQ(stat(a, "active.small_pool.peak"), 2);
  EXPECT_EQ(stat(a, "active_bytes.all.peak"), 12 * KiB);
  EXPECT_EQ(stat(a, "active_bytes.large_pool.peak"), 0);
  EXPECT_EQ(stat(a, "active.all.allocated"), 2);
  EXPECT_EQ(stat(a, "allocation.all.freed"), 1);
  EXPECT_EQ(stat(a, "active.all.freed"), 0) << "the pending block is still active";
  a.reset_accumulated_stats();
  a.reset_peak_stats();
  EXPECT_EQ(stat(a, "active.all.peak"), 2) << "reset to the current value, pending included";
  EXPECT_EQ(stat(a, "active_bytes.all.peak"), 12 * KiB);
  dev().complete(S(2));
  a.process_events();
  EXPECT_EQ(stat(a, "active.all.current"), 1);
  EXPECT_EQ(stat(a, "active.all.freed"), 1) << "its decrease came after the reset";
  EXPECT_EQ(stat(a, "active_bytes.all.freed"), 4 * KiB);
  EXPECT_EQ(stat(a, "allocation.all.freed"), 0);
  a.free(q);
  EXPECT_EQ(stat(a, "active.all.freed"), 2);
  EXPECT_EQ(stat(a, "active.all.peak"), 2);
  EXPECT_EQ(stat(a, "active.all.current"), 0);
}

TEST_F(AllocatorTest, EventsOfSeveralStreamsAllGateReuse) {
  auto& a = make();
  void* p = a.allocate(4 * KiB, S(1));
  a.record_stream(p, S(2));
  a.record_stream(p, S(3));
  dev().enqueue_work(S(2));
  dev().enqueue_work(S(3));
  a.free(p);
  dev().complete(S(2));
  a.process_events();
  EXPECT_EQ(stat(a, "active.all.current"), 1) << "stream 3 still uses it";
  dev().complete(S(3));
  a.process_events();
  EXPECT_EQ(stat(a, "active.all.current"), 0);
  EXPECT_EQ(dev().blocking_waits(), 0u);
}

TEST_F(AllocatorTest, SynchronousDeviceIgnoresStreams) {
  opts.async = false;
  auto& a = make();
  void* p = a.allocate(4 * KiB, nullptr);
  a.record_stream(p, S(2));
  a.free(p);
  EXPECT_EQ(a.allocate(4 * KiB, nullptr), p);
  EXPECT_EQ(dev().events_created(), 0u);
  a.free(p);
}

TEST_F(AllocatorTest, FreeOrRecordStreamOfAnUnknownPointerThrows) {
  auto& a = make();
  int x = 0;
  EXPECT_THROW(a.free(&x), tessera::ValueError);
  EXPECT_THROW(a.record_stream(&x, S(1)), tessera::ValueError);
  void* p = a.allocate(100, S(1));
  a.free(p);
  EXPECT_THROW(a.free(p), tessera::ValueError) << "double free";
}

TEST_F(AllocatorTest, StatsCountAndReset) {
  auto& a = make();
  void* p = a.allocate(1000, S(1));
  void* q = a.allocate(3000, S(1));
  a.free(p);
  EXPECT_EQ(stat(a, "allocation.all.current"), 1);
  EXPECT_EQ(stat(a, "allocation.all.peak"), 2);
  EXPECT_EQ(stat(a, "allocation.all.allocated"), 2);
  EXPECT_EQ(stat(a, "allocation.all.freed"), 1);
  EXPECT_EQ(stat(a, "allocated_bytes.small_pool.peak"), 1024 + 3072);
  EXPECT_EQ(stat(a, "allocated_bytes.large_pool.peak"), 0);
  EXPECT_EQ(stat(a, "requested_bytes.all.current"), 3000);
  EXPECT_EQ(stat(a, "active_bytes.all.current"), 3072);
  EXPECT_EQ(stat(a, "inactive_split_bytes.all.current"), int64_t(2 * MiB - 3072));
  EXPECT_EQ(stat(a, "max_split_size"), -1);
  a.reset_peak_stats();
  EXPECT_EQ(stat(a, "allocation.all.peak"), 1);
  EXPECT_EQ(stat(a, "allocated_bytes.all.peak"), 3072);
  a.reset_accumulated_stats();
  EXPECT_EQ(stat(a, "allocation.all.allocated"), 0);
  EXPECT_EQ(stat(a, "allocation.all.freed"), 0);
  EXPECT_EQ(stat(a, "num_device_alloc"), 0);
  EXPECT_EQ(stat(a, "allocation.all.current"), 1) << "resets keep current values";
  a.free(q);
  EXPECT_EQ(stat(a, "allocation.all.freed"), 1);
  const std::string table = a.summary();
  EXPECT_NE(table.find("Allocated memory"), std::string::npos);
  EXPECT_NE(table.find("fake:0"), std::string::npos);
}

// ---------------------------------------------------------- configuration keys

TEST_F(AllocatorTest, MaxSplitSizeKeepsOversizeBlocksWhole) {
  auto& plain = make();
  void* p = plain.allocate(30 * MiB, S(1));
  plain.free(p);
  void* q = plain.allocate(12 * MiB, S(1));
  EXPECT_EQ(q, p) << "without the setting the cached 30 MiB block is split";
  EXPECT_EQ(stat(plain, "num_device_alloc"), 1);
  plain.free(q);

  auto& a = make("max_split_size_mb:20");
  EXPECT_EQ(stat(a, "max_split_size"), int64_t(20 * MiB));
  void* big = a.allocate(30 * MiB, S(1));
  EXPECT_EQ(stat(a, "oversize_allocations.current"), 1);
  EXPECT_EQ(stat(a, "oversize_segments.current"), 1);
  a.free(big);
  void* small = a.allocate(12 * MiB, S(1));
  EXPECT_NE(small, big) << "a request below max_split_size never takes an oversize block";
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  // An oversize request takes a cached oversize block only if it wastes less than 20 MiB.
  void* o1 = a.allocate(64 * MiB, S(1));
  a.free(o1);
  void* o2 = a.allocate(40 * MiB, S(1));  // 64 >= 40 + 20: a new segment
  EXPECT_NE(o2, o1);
  void* o3 = a.allocate(50 * MiB, S(1));  // 64 < 50 + 20: the cached block, whole
  EXPECT_EQ(o3, o1);
  EXPECT_EQ(size_of(a, o3), 64 * MiB);
  EXPECT_EQ(stat(a, "oversize_allocations.current"), 2);
  for (void* x : {small, o2, o3}) a.free(x);
}

TEST_F(AllocatorTest, RoundupPower2DivisionsRoundsToDivisions) {
  auto& plain = make();
  auto& four = make("roundup_power2_divisions:4");
  auto& bands = make("roundup_power2_divisions:[2:1,8:4,>:8]");
  const size_t a = MiB + 100 * KiB, b = 3 * MiB + 100 * KiB, c = 9 * MiB + 100 * KiB;
  EXPECT_EQ(plain.round_size(a), a);
  EXPECT_EQ(four.round_size(a), MiB + MiB / 4);
  EXPECT_EQ(four.round_size(4200), 5120u);
  EXPECT_EQ(plain.round_size(4200), 4608u);
  EXPECT_EQ(four.round_size(1500), 1536u) << "below 512 x divisions: 512 B rounding";
  EXPECT_EQ(four.round_size(4 * MiB), 4 * MiB) << "powers of two stay";
  EXPECT_EQ(bands.round_size(a), a) << "below 2 MiB: 1 division";
  EXPECT_EQ(bands.round_size(b), 3 * MiB + MiB / 2) << "2..8 MiB: 4 divisions";
  EXPECT_EQ(bands.round_size(c), 10 * MiB) << "from 8 MiB: 8 divisions";
  void* p = four.allocate(a, S(1));
  EXPECT_EQ(size_of(four, p), MiB + MiB / 4);
  EXPECT_EQ(stat(four, "requested_bytes.all.current"), int64_t(a));
  four.free(p);
}

TEST_F(AllocatorTest, GarbageCollectionThresholdFreesOldestCachedBlocks) {
  opts.capacity = GiB;
  for (const bool gc : {false, true}) {
    auto& a = make(gc ? "garbage_collection_threshold:0.5" : "");
    std::vector<void*> ps;
    for (int i = 0; i < 6; ++i) ps.push_back(a.allocate(100 * MiB, S(1)));
    for (void* p : ps) a.free(p);  // freed oldest first: ps[0]
    EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(600 * MiB));
    void* big = a.allocate(200 * MiB, S(1));
    if (gc) {
      // 600 MiB > 0.5 x 1 GiB: the oldest cached block goes, leaving 500 MiB.
      EXPECT_EQ(stat(a, "num_device_free"), 1);
      EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(700 * MiB));
      const Snapshot snap = a.snapshot();
      for (const SnapshotSegment& s : snap.segments) EXPECT_NE(s.address, reinterpret_cast<uintptr_t>(ps[0]));
    } else {
      EXPECT_EQ(stat(a, "num_device_free"), 0);
      EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(800 * MiB));
    }
    a.free(big);
    a.empty_cache();
  }
}

TEST_F(AllocatorTest, PerProcessMemoryFractionLimitsTheDevice) {
  opts.capacity = GiB;
  auto& free_ = make();
  void* f1 = free_.allocate(200 * MiB, S(1));
  void* f2 = free_.allocate(100 * MiB, S(1));
  free_.free(f1);
  free_.free(f2);
  free_.empty_cache();

  auto& a = make("per_process_memory_fraction:0.25");
  EXPECT_EQ(a.limit(), 256 * MiB);
  void* p = a.allocate(200 * MiB, S(1));
  const size_t device_calls = dev().alloc();
  try {
    a.allocate(100 * MiB, S(1));
    FAIL() << "over the limit";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("limit: 256.00 MiB (per_process_memory_fraction 0.25 of the device's 1.00 GiB)"),
              std::string::npos) << m;
    EXPECT_NE(m.find("a larger per_process_memory_fraction"), std::string::npos) << m;
  }
  EXPECT_EQ(dev().alloc(), device_calls) << "the limit is checked before the device is asked";
  EXPECT_EQ(stat(a, "num_ooms"), 1);
  a.free(p);
}

TEST_F(AllocatorTest, LimitAndGarbageCollectionNeedTheDeviceTotal) {
  opts.report_total = false;  // total_memory() == 0: the device cannot tell
  auto& a = make("per_process_memory_fraction:0.1,garbage_collection_threshold:0.5");
  EXPECT_EQ(a.limit(), 0u);
  void* p = a.allocate(200 * MiB, S(1));  // far above 0.1 of the (unknown) capacity
  a.free(p);
  void* q = a.allocate(300 * MiB, S(1));
  EXPECT_EQ(stat(a, "num_device_free"), 0) << "no garbage collection without a limit";
  a.free(q);
}

TEST_F(AllocatorTest, ExpandableSegmentsGrowOneSegmentPerStreamAndPool) {
  auto& plain = make("expandable_segments:False");
  void* q = plain.allocate(4 * KiB, S(1));
  EXPECT_FALSE(plain.snapshot().segments[0].is_expandable);
  plain.free(q);

  auto& a = make("expandable_segments:True");
  void* p1 = a.allocate(4 * KiB, S(1));
  void* p2 = a.allocate(12 * MiB, S(1));
  void* p3 = a.allocate(30 * MiB, S(1));  // grows the same large segment
  void* p4 = a.allocate(4 * KiB, S(2));   // another stream: its own segment
  EXPECT_EQ(addr(p3), addr(p2) + 12 * MiB) << "contiguous in one large segment";
  EXPECT_EQ(dev().va_reserve(), 3u);
  EXPECT_EQ(stat(a, "reserved_bytes.large_pool.current"), int64_t(42 * MiB));  // 2 MiB granules
  EXPECT_EQ(stat(a, "reserved_bytes.small_pool.current"), int64_t(4 * MiB));
  EXPECT_EQ(stat(a, "segment.all.current"), 0) << "expandable segments are not counted (as PyTorch)";
  const Snapshot snap = a.snapshot();
  ASSERT_EQ(snap.segments.size(), 3u);
  for (const auto& s : snap.segments) EXPECT_TRUE(s.is_expandable);
  for (void* p : {p1, p2, p3, p4}) a.free(p);
}

TEST_F(AllocatorTest, ExpandableSegmentsFallBackWithoutAddressSpace) {
  opts.va_limit = 0;
  auto& a = make("expandable_segments:True");
  void* p = a.allocate(4 * KiB, S(1));
  EXPECT_FALSE(a.snapshot().segments[0].is_expandable);
  a.free(p);
}

TEST_F(AllocatorTest, ExpandableSegmentsNeedTheDeviceSlots) {
  opts.expandable = false;
  auto& a = make("expandable_segments:True");
  void* p = a.allocate(4 * KiB, S(1));
  EXPECT_FALSE(a.snapshot().segments[0].is_expandable);
  EXPECT_EQ(dev().va_reserve(), 0u);
  a.free(p);
}

TEST_F(AllocatorTest, BackendPluginCallsTheDeviceForEachAllocation) {
  auto& a = make("backend:plugin");
  void* p = a.allocate(1000, S(1));
  void* q = a.allocate(1000, S(1));
  EXPECT_EQ(dev().alloc(), 2u);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 2000);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 2000);
  a.free(p);
  EXPECT_EQ(dev().free(), 1u) << "nothing is cached";
  // A block used on another stream goes back to the device only after its event.
  a.record_stream(q, S(2));
  dev().enqueue_work(S(2));
  a.free(q);
  EXPECT_EQ(dev().free(), 1u);
  dev().complete(S(2));
  a.process_events();
  EXPECT_EQ(dev().free(), 2u);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
}

// ------------------------------------------------------------- out of memory

TEST_F(AllocatorTest, OutOfMemoryFirstFreesCachedUnsplitBlocks) {
  opts.capacity = 100 * MiB;
  auto& a = make();
  void* p = a.allocate(60 * MiB, S(1));
  a.free(p);  // cached for stream 1
  void* q = a.allocate(60 * MiB, S(2));
  EXPECT_EQ(dev().alloc_failed(), 1u);
  EXPECT_EQ(stat(a, "num_device_free"), 1) << "stream 1's cached segment went back";
  EXPECT_EQ(stat(a, "num_alloc_retries"), 0);
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 0);
  EXPECT_EQ(dev().blocking_waits(), 0u) << "stage 1 does not wait";
  a.free(q);
}

TEST_F(AllocatorTest, OutOfMemoryThenWaitsForPendingEventsAndFreesAll) {
  opts.capacity = 100 * MiB;
  auto& a = make();
  void* p = a.allocate(60 * MiB, S(1));
  a.record_stream(p, S(2));
  dev().enqueue_work(S(2));
  a.free(p);  // pending on stream 2
  void* q = a.allocate(60 * MiB, S(1));
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1);
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 1);
  EXPECT_EQ(dev().event_sync(), 1u);
  EXPECT_EQ(stat(a, "num_device_free"), 1);
  EXPECT_EQ(stat(a, "num_ooms"), 0);
  a.free(q);
}

TEST_F(AllocatorTest, OutOfMemoryErrorNamesTheNumbers) {
  opts.capacity = 100 * MiB;
  auto& a = make();
  void* p = a.allocate(60 * MiB, S(1));
  try {
    a.allocate(50 * MiB, S(1));
    FAIL() << "no room";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    for (const char* part :
         {"Tessera out of memory on fake:0", "tried to allocate 50.00 MiB (52428800 bytes)",
          "Allocated by Tessera: 60.00 MiB", "reserved by Tessera but unallocated: 0 bytes",
          "device capacity: 100.00 MiB, no limit set", "fake device: no room for 52428800 bytes"})
      EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
    EXPECT_EQ(m.find("TESSERA_ALLOC_CONF"), std::string::npos) << "no setting helps here: " << m;
  }
  EXPECT_EQ(stat(a, "num_ooms"), 1);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1);
  void* q = a.allocate(30 * MiB, S(1));  // still usable
  a.free(q);
  a.free(p);
}

TEST_F(AllocatorTest, OutOfMemoryFromFragmentationSuggestsSettings) {
  opts.capacity = 60 * MiB;
  auto& a = make();
  void* x = a.allocate(3 * MiB, S(1));
  void* y = a.allocate(3 * MiB, S(1));  // both in one 20 MiB segment
  a.free(x);
  try {
    a.allocate(50 * MiB, S(1));
    FAIL() << "no room";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("reserved by Tessera but unallocated: 17.00 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("TESSERA_ALLOC_CONF may help: max_split_size_mb:"), std::string::npos) << m;
    EXPECT_NE(m.find("expandable_segments:True"), std::string::npos) << m;
  }
  a.free(y);
}

TEST_F(AllocatorTest, FullSizeAllocationSucceedsAfterEmptyCache) {
  opts.capacity = 64 * MiB;
  auto& a = make();
  std::vector<void*> ps;
  for (int i = 0; i < 20; ++i) ps.push_back(a.allocate(MiB, S(1 + i % 2)));  // 10 small segments
  for (int i = 0; i < 2; ++i) ps.push_back(a.allocate(5 * MiB, S(1)));       // one 20 MiB segment
  for (void* p : ps) a.free(p);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(40 * MiB));
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(dev().live_allocations(), 0u);
  void* full = a.allocate(64 * MiB, S(1));
  EXPECT_EQ(stat(a, "num_alloc_retries"), 0);
  a.free(full);
}

TEST_F(AllocatorTest, FullSizeAllocationRecoversEverythingCached) {
  opts.capacity = 64 * MiB;
  auto& a = make();
  std::vector<void*> ps;
  for (int i = 0; i < 20; ++i) ps.push_back(a.allocate(MiB, S(1 + i % 3)));
  for (void* p : ps) a.free(p);
  void* full = a.allocate(64 * MiB, S(4));  // stage 1 returns every cached segment
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(64 * MiB));
  a.free(full);
}

TEST_F(AllocatorTest, DeviceErrorsOtherThanOutOfMemoryPassThrough) {
  auto& a = make();
  dev().set_fail_hard(true);
  EXPECT_THROW(a.allocate(4 * KiB, S(1)), tessera::InternalError);
  EXPECT_EQ(stat(a, "num_ooms"), 0);
  dev().set_fail_hard(false);
  void* p = a.allocate(4 * KiB, S(1));
  a.free(p);
}

TEST_F(AllocatorTest, ImpossibleSizesAreOutOfMemory) {
  auto& a = make();
  EXPECT_THROW(a.allocate(~size_t{0} - 10, S(1)), OutOfMemoryError);
  EXPECT_EQ(stat(a, "num_ooms"), 1);
}

// ---------------------------------------------------------------- empty_cache

TEST_F(AllocatorTest, EmptyCacheReturnsEveryUnusedSegment) {
  auto& a = make();
  void* keep_small = a.allocate(4 * KiB, S(1));
  void* drop_small = a.allocate(MiB, S(2));
  void* keep_large = a.allocate(12 * MiB, S(1));
  void* drop_large = a.allocate(30 * MiB, S(1));
  void* pending = a.allocate(15 * MiB, S(3));
  a.record_stream(pending, S(4));
  dev().enqueue_work(S(4));
  for (void* p : {drop_small, drop_large, pending}) a.free(p);
  a.empty_cache();
  EXPECT_EQ(dev().event_sync(), 1u) << "waits for the pending block's event";
  const Snapshot snap = a.snapshot();
  ASSERT_EQ(snap.segments.size(), 2u);
  for (const auto& s : snap.segments) EXPECT_GT(s.allocated_size, 0u) << "an unused segment was kept";
  EXPECT_EQ(dev().live_allocations(), 2u);
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 1);
  a.free(keep_small);
  a.free(keep_large);
  a.empty_cache();
  EXPECT_EQ(dev().live_allocations(), 0u);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
}

TEST_F(AllocatorTest, EmptyCacheUnmapsUnusedGranulesOfExpandableSegments) {
  auto& a = make("expandable_segments:True");
  void* x = a.allocate(8 * MiB, S(1));
  void* y = a.allocate(3 * MiB, S(1));
  void* z = a.allocate(1 * MiB + 512, S(1));  // [0,8) [8,11) [11,12+) MiB
  a.free(x);
  dev().enqueue_work(S(1));  // the freed block's kernels may still run
  a.empty_cache();
  EXPECT_EQ(dev().unmap_while_busy(), 0u);
  // x's 8 MiB were 4 whole granules; the granule [10,12) MiB holds y and z.
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(6 * MiB));
  EXPECT_EQ(dev().mapped_bytes(), 6 * MiB);
  const Snapshot snap = a.snapshot();
  ASSERT_EQ(snap.segments.size(), 1u) << "the mapped range after the hole";
  EXPECT_EQ(snap.segments[0].address, reinterpret_cast<uintptr_t>(y));
  // The hole is mapped again when it needs no more new memory than the end.
  void* w = a.allocate(8 * MiB, S(1));
  EXPECT_EQ(w, x);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(14 * MiB));
  for (void* p : {y, z, w}) a.free(p);
  a.empty_cache();
  EXPECT_EQ(dev().mapped_bytes(), 0u);
  EXPECT_EQ(dev().reservations(), 0u) << "a segment with nothing mapped gives its address space back";
  EXPECT_EQ(stat(a, "num_device_alloc"), 4) << "maps: x, y, z, w";
  EXPECT_EQ(stat(a, "num_device_free"), 2) << "unmaps: x's granules, then the whole coalesced range";
}

TEST_F(AllocatorTest, ExpandableSegmentsOutOfMemoryUnmapsThenRetries) {
  opts.capacity = 64 * MiB;
  auto& a = make("expandable_segments:True");
  void* p = a.allocate(40 * MiB, S(1));
  a.free(p);  // 40 MiB mapped and cached on stream 1
  void* q = a.allocate(40 * MiB, S(2));  // stream 2 needs them unmapped first
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(40 * MiB));
  try {
    a.allocate(30 * MiB, S(2));  // fits the address space, not the device
    FAIL() << "no room";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("fake device: no room to map"), std::string::npos) << e.what();
  }
  a.free(q);
}

// --------------------------------------------------------- expandable segments

// A loop whose sizes change every step (a training loop with variable
// sequence lengths): plain segments keep every old size cached, an expandable
// segment grows in place and its reserved memory follows the largest step.
TEST_F(AllocatorTest, ExpandableSegmentsKeepReservedMemoryBoundedInVariableSizeLoops) {
  opts.capacity = 64 * GiB;
  int64_t peak_reserved[2], peak_allocated[2];
  for (const bool expandable : {false, true}) {
    auto& a = make(expandable ? "expandable_segments:True" : "");
    void* weights = a.allocate(50 * MiB, S(1));
    for (int step = 0; step < 24; ++step) {
      const size_t seq = 64 + 37 * step % 400 + 8 * step;  // grows with jitter
      std::vector<void*> acts;
      for (int layer = 0; layer < 8; ++layer) acts.push_back(a.allocate(seq * 48 * KiB + 512 * layer, S(1)));
      void* grad = a.allocate(seq * 16 * KiB, S(1));
      for (auto it = acts.rbegin(); it != acts.rend(); ++it) a.free(*it);
      a.free(grad);
    }
    peak_reserved[expandable] = stat(a, "reserved_bytes.all.peak");
    peak_allocated[expandable] = stat(a, "allocated_bytes.all.peak");
    a.free(weights);
  }
  EXPECT_GT(peak_reserved[0], 3 * peak_allocated[0]) << "plain segments grow with every new size";
  EXPECT_LE(double(peak_reserved[1]), 1.15 * double(peak_allocated[1])) << "expandable: bounded";
}


// ---- what the core's integration added (issue 15: hook, streams going away,
// runtime fraction, devices smaller than a segment) ----

// The hook the core sets frees blocks it keeps outside the allocator; it runs
// without the allocator's lock (it frees into the allocator) and only once
// every stage of recovery failed.
std::vector<void*> g_hook_blocks;
CachingAllocator* g_hook_alloc = nullptr;
int g_hook_calls = 0;
std::string release_hook_blocks() {
  ++g_hook_calls;
  if (g_hook_blocks.empty()) return "";
  for (void* p : g_hook_blocks) g_hook_alloc->free(p);  // deadlocks if the lock were held
  g_hook_blocks.clear();
  return "The test's cache released its blocks.";
}

TEST_F(AllocatorTest, CacheReleaseHookRunsLastAndItsBlocksServeTheRetry) {
  opts.capacity = 64 * MiB;
  auto& a = make();
  g_hook_alloc = &a;
  g_hook_calls = 0;
  a.set_cache_release_hook(&release_hook_blocks);
  g_hook_blocks = {a.allocate(30 * MiB, S(1))};  // "kept" by the caller
  void* other = a.allocate(20 * MiB, S(1));
  a.free(other);  // cached: stage 1 returns it first
  void* p = a.allocate(40 * MiB, S(1));  // fits once the cached 20 MiB and the hook's 30 MiB are gone
  EXPECT_EQ(g_hook_calls, 1);
  EXPECT_EQ(stat(a, "num_ooms"), 0) << "recovered: no error counted";
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1) << "one allocation retried, also through the hook's second pass";
  // Nothing left to release: the error counts once and carries the hook's note only when it released.
  try {
    a.allocate(40 * MiB, S(1));
    FAIL() << "no room";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()).find("The test's cache"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g_hook_calls, 2);
  EXPECT_EQ(stat(a, "num_ooms"), 1);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 2);
  g_hook_blocks = {a.allocate(20 * MiB, S(1))};
  try {
    a.allocate(60 * MiB, S(1));
    FAIL() << "no room";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("The test's cache released its blocks."), std::string::npos) << e.what();
  }
  EXPECT_EQ(stat(a, "num_ooms"), 2);
  a.free(p);
}

TEST_F(AllocatorTest, ReleaseStreamReturnsTheStreamsSegmentsOnThatStream) {
  auto& a = make();
  void* p = a.allocate(3 * MiB, S(1));
  void* q = a.allocate(4 * KiB, S(1));
  void* keep = a.allocate(3 * MiB, S(2));
  a.record_stream(q, S(2));
  dev().enqueue_work(S(2));
  a.free(p);
  a.free(q);  // pending on stream 2's event
  a.release_stream(S(1));
  EXPECT_EQ(dev().event_sync(), 1u) << "waited for the pending free's event";
  EXPECT_EQ(stat(a, "segment.all.current"), 1) << "only stream 2's segment is left";
  EXPECT_EQ(stat(a, "num_device_free"), 2);
  EXPECT_EQ(dev().frees_on(S(1)), 2u) << "freed in the order of the stream going away";
  a.release_stream(S(3));  // never seen: nothing happens
  void* again = a.allocate(4 * KiB, S(1));  // a stream with the same handle starts empty
  EXPECT_EQ(stat(a, "num_device_alloc"), 4);
  a.free(again);
  a.free(keep);
}

TEST_F(AllocatorTest, SetMemoryFractionChangesTheLimitAtRunTime) {
  opts.capacity = 100 * MiB;
  auto& a = make();
  EXPECT_EQ(a.limit(), 0u);
  a.set_memory_fraction(0.5);
  EXPECT_EQ(a.limit(), 50 * MiB);
  EXPECT_THROW(a.allocate(60 * MiB, S(1)), OutOfMemoryError);
  a.set_memory_fraction(1.0);
  void* p = a.allocate(60 * MiB, S(1));
  EXPECT_THROW(a.set_memory_fraction(0.0), tessera::ValueError);
  EXPECT_THROW(a.set_memory_fraction(1.01), tessera::ValueError);
  a.free(p);
  FakeDevice::Options no_total = opts;
  no_total.report_total = false;
  FakeDevice blind(no_total);
  CachingAllocator b(blind, parse_alloc_conf(""));
  EXPECT_THROW(b.set_memory_fraction(0.5), tessera::ValueError) << "no total memory: no fraction";
}

TEST_F(AllocatorTest, ADeviceSmallerThanASegmentGetsSegmentsOfTheRequestsSize) {
  opts.capacity = 8 * KiB;
  auto& a = make();
  void* p = a.allocate(1000, S(1));  // a 2 MiB segment does not fit: one of 1 KiB
  void* q = a.allocate(4 * KiB, S(1));
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), int64_t(5 * KiB));
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 2);
  EXPECT_EQ(stat(a, "num_ooms"), 0);
  a.free(p);
  void* r = a.allocate(512, S(1));  // best fit inside the cached 1 KiB segment
  EXPECT_EQ(r, p);
  EXPECT_THROW(a.allocate(4 * KiB, S(1)), OutOfMemoryError);  // 5 + 4 > 8, nothing cached is unsplit
  a.free(q);
  a.free(r);
}

}  // namespace
}  // namespace tsrtest
