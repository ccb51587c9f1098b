// The core's caching allocator serving tensors on the sim device (issue 15):
// stream-ordered reuse and record_stream (judged by sim's shadow-memory
// checker), out of memory at every recovery stage with its message, the
// per-device limit, expandable segments against plain ones on a variable-size
// loop, pinned memory with non-blocking copies, snapshots and history, and
// threads. After every test, the statistics rebuilt from each device's
// snapshot equal its memory_stats (PyTorch's _check_memory_stat_consistency)
// and the allocator's invariants hold.
//
// This program sets TESSERA_SIM=devices=4,memory_mb=256 before anything loads
// the plugins. sim:0, sim:1 and sim:3 get the default allocator settings,
// sim:2 expandable segments (settings apply to allocators built afterwards).
// Slow streams come from TESSERA_SIM_STREAM_LATENCY_US, read at stream_create.
#include <gtest/gtest.h>
#include <tessera/memory.h>
#include <tessera/tessera.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memory/device_allocators.h"
#include "memory/snapshot.h"

using namespace tessera;

namespace {

const bool kConfigured = [] { return setenv("TESSERA_SIM", "devices=4,memory_mb=256", 1) == 0; }();
constexpr int64_t kMiB = int64_t{1} << 20;

Device sim(int index) { return Device("sim:" + std::to_string(index)); }

// Builds every device's allocator once, in a fixed order, so that each test
// sees the same settings whichever runs first.
void configure_devices() {
  static const bool done = [] {
    (void)kConfigured;
    set_alloc_conf("");
    for (int i : {0, 1, 3}) (void)memory_summary(sim(i));
    set_alloc_conf("expandable_segments:True");
    (void)memory_summary(sim(2));
    set_alloc_conf("");
    return true;
  }();
  (void)done;
}

Tensor floats(int64_t bytes, Device d) { return empty({bytes / 4}, TensorOptions(kFloat).device(d)); }

// A stream of `d` whose work waits `latency_us` before each launch.
Stream slow_stream(Device d, int latency_us = 200000) {
  setenv("TESSERA_SIM_STREAM_LATENCY_US", std::to_string(latency_us).c_str(), 1);
  Stream s = Stream::create(d);
  unsetenv("TESSERA_SIM_STREAM_LATENCY_US");
  return s;
}

// x * 2 queued on `s` after the work queued so far on x's current stream: a
// kernel that reads x behind s's latency.
Tensor doubled_on(const Stream& s, const Tensor& x) {
  s.wait_stream(current_stream(x.device()));
  StreamGuard g(s);
  return x * 2;
}

int64_t stat(Device d, const std::string& key) { return memory_stats(d).at(key); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class SimMemory : public ::testing::Test {
 protected:
  void SetUp() override { configure_devices(); }
  // Every device's statistics agree with its snapshot, and its blocks with its pools.
  void TearDown() override {
    for (int i = 0; i < 4; ++i) synchronize(sim(i));
    for (memory::DeviceAllocator* a : memory::device_allocators::all()) {
      const memory::Snapshot snap = a->allocator.snapshot();
      const std::map<std::string, int64_t> stats = a->allocator.stats_map();
      for (const auto& [key, value] : memory::current_stats_from_snapshot(snap))
        EXPECT_EQ(stats.at(key), value) << a->device.str() << " " << key;
      EXPECT_EQ(a->allocator.check_invariants(), "") << a->device.str();
    }
  }
};

TEST_F(SimMemory, TensorsTakeRoundedBlocksFromTheDevicesAllocator) {
  const Device d = sim(0);
  empty_cache(d);
  const int64_t before = memory_allocated(d), requested = stat(d, "requested_bytes.all.current");
  {
    Tensor t = empty({1000}, TensorOptions(kFloat).device(d));  // 4000 bytes -> 4096 (512 B rounding)
    EXPECT_EQ(memory_allocated(d) - before, 4096);
    EXPECT_EQ(stat(d, "requested_bytes.all.current") - requested, 4000);
    EXPECT_GE(memory_reserved(d), 2 * kMiB);  // a small-pool segment
    t.fill_(2.5f);
    EXPECT_EQ(t.cpu().to_vector<float>()[999], 2.5f);
  }
  synchronize(d);
  EXPECT_EQ(memory_allocated(d), before);
  if (before == 0) {
    empty_cache(d);
    EXPECT_EQ(memory_reserved(d), 0);
  }
  // Big requests: a 12 MiB tensor gets a segment of its size rounded to 2 MiB.
  const int64_t reserved = memory_reserved(d);
  Tensor big = floats(11 * kMiB + 1024, d);
  EXPECT_EQ(memory_reserved(d) - reserved, 12 * kMiB);
  EXPECT_GE(stat(d, "segment.large_pool.current"), 1);
}

TEST_F(SimMemory, MemoryUsedOnAnotherStreamIsReusedTooEarlyWithoutRecordStream) {
  const Device d = sim(0);
  Stream slow = slow_stream(d);
  Tensor x = full({256}, 1.0f, TensorOptions().device(d));
  void* px = x.data_ptr();
  Tensor y = doubled_on(slow, x);
  x = Tensor();  // no record_stream: the block is free on its own stream at once
  Tensor z = empty({256}, TensorOptions(kFloat).device(d));
  EXPECT_EQ(z.data_ptr(), px) << "the freed block is reused by the next request on its stream";
  try {
    z.fill_(3.0f);
    ADD_FAILURE() << "the checker did not flag the write over memory a queued kernel still reads";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "record_stream")) << e.what();
    EXPECT_TRUE(contains(e.what(), "fill_")) << e.what();
  }
  slow.synchronize();
}

TEST_F(SimMemory, RecordStreamHoldsTheBlockUntilTheOtherStreamIsDone) {
  const Device d = sim(0);
  Stream slow = slow_stream(d);
  Tensor x = full({256}, 1.0f, TensorOptions().device(d));
  void* px = x.data_ptr();
  Tensor y = doubled_on(slow, x);
  x.record_stream(slow);
  const int64_t active = stat(d, "active.all.current");
  x = Tensor();
  EXPECT_EQ(stat(d, "active.all.current"), active) << "pending: still active until the slow stream's event";
  Tensor z = empty({256}, TensorOptions(kFloat).device(d));
  EXPECT_NE(z.data_ptr(), px);
  z.fill_(3.0f);  // no conflict: z is other memory
  slow.synchronize();
  EXPECT_EQ(y.cpu().to_vector<float>(), std::vector<float>(256, 2.0f));
  EXPECT_EQ(z.cpu().to_vector<float>(), std::vector<float>(256, 3.0f));
  // Once the event completed, the next allocation polls it and the block is free again.
  Tensor w = empty({256}, TensorOptions(kFloat).device(d));
  EXPECT_EQ(w.data_ptr(), px);
}

TEST_F(SimMemory, RecordStreamOfAnotherDeviceIsRefused) {
  Tensor x = ones({4}, TensorOptions().device(sim(0)));
  Stream other = Stream::create(sim(1));
  EXPECT_THROW(x.record_stream(other), ValueError);
  x.record_stream(current_stream(sim(0)));  // its own stream: nothing to do
  Tensor c = ones({4});
  c.record_stream(current_stream(Device("cpu")));  // synchronous: nothing to do
}

TEST_F(SimMemory, OutOfMemoryFirstReturnsCachedSegmentsThatAreFree) {
  const Device d = sim(1);
  empty_cache(d);
  const int64_t retries = stat(d, "num_alloc_retries"), frees = stat(d, "num_device_free");
  Tensor a = floats(160 * kMiB, d);
  a = Tensor();  // its 160 MiB segment stays cached
  EXPECT_EQ(memory_reserved(d), 160 * kMiB);
  Tensor b = floats(200 * kMiB, d);  // 160 + 200 > 256: the cached segment must go first
  EXPECT_EQ(memory_reserved(d), 200 * kMiB);
  EXPECT_EQ(stat(d, "num_alloc_retries"), retries) << "stage 1 needs no wait and counts no retry";
  EXPECT_EQ(stat(d, "num_device_free"), frees + 1);
}

TEST_F(SimMemory, OutOfMemoryThenWaitsForPendingFreesAndRetries) {
  const Device d = sim(1);
  empty_cache(d);
  const int64_t retries = stat(d, "num_alloc_retries"), syncs = stat(d, "num_sync_all_streams");
  Stream slow = slow_stream(d);
  Tensor a = floats(160 * kMiB, d);
  slow.wait_stream(current_stream(d));
  Tensor s;
  {
    StreamGuard g(slow);
    s = a.sum();  // queued on the slow stream
  }
  a.record_stream(slow);
  a = Tensor();  // pending until the slow stream passes the sum: not free for stage 1
  Tensor b = floats(200 * kMiB, d);
  EXPECT_EQ(stat(d, "num_alloc_retries"), retries + 1);
  EXPECT_GE(stat(d, "num_sync_all_streams"), syncs + 1);
  b.fill_(1.0f);
  EXPECT_EQ(s.cpu().numel(), 1);
}

TEST_F(SimMemory, OutOfMemoryErrorNamesTheDeviceTheRequestTheHoldingsAndTheCapacity) {
  const Device d = sim(1);
  empty_cache(d);
  const int64_t ooms = stat(d, "num_ooms");
  try {
    (void)floats(300 * kMiB, d);
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    for (const char* part : {"empty", "float32[78643200]", "sim:1", "plugin 'sim'", "tried to allocate 300.00 MiB",
                             "(314572800 bytes)", "Allocated by Tessera", "reserved by Tessera but unallocated",
                             "device capacity: 256.00 MiB", "The device says", "out of memory"})
      EXPECT_TRUE(contains(m, part)) << "'" << part << "' not in: " << m;
  }
  EXPECT_EQ(stat(d, "num_ooms"), ooms + 1);
  // Small blocks in many segments, freed: after empty_cache the whole device is one allocation away.
  {
    std::vector<Tensor> keep;
    for (int i = 0; i < 40; ++i) keep.push_back(floats(3 * kMiB, d));
  }
  EXPECT_GT(memory_reserved(d), 0);
  empty_cache(d);
  EXPECT_EQ(memory_reserved(d), 0);
  Tensor full_device = floats(250 * kMiB, d);
  full_device.fill_(1.0f);
  EXPECT_EQ(memory_reserved(d), 250 * kMiB);
}

TEST_F(SimMemory, FragmentedOutOfMemoryNamesTheSettingsThatHelp) {
  const Device d = sim(3);
  empty_cache(d);
  std::vector<Tensor> live;
  // 9 MiB requests share 20 MiB segments; freeing every other one strands
  // cached memory inside segments that cannot go back.
  std::vector<Tensor> all;
  for (int i = 0; i < 20; ++i) {
    try {
      all.push_back(floats(9 * kMiB, d));
    } catch (const OutOfMemoryError&) {
      break;
    }
  }
  for (size_t i = 0; i < all.size(); i += 2) live.push_back(all[i]);
  all.clear();
  try {
    (void)floats(120 * kMiB, d);
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "fragmented")) << m;
    EXPECT_TRUE(contains(m, "max_split_size_mb")) << m;
    EXPECT_TRUE(contains(m, "expandable_segments:True")) << m;
  }
}

TEST_F(SimMemory, PerProcessMemoryFractionLimitsTheDevice) {
  const Device d = sim(3);
  empty_cache(d);
  set_per_process_memory_fraction(0.25, d);  // 64 MiB of 256
  try {
    (void)floats(100 * kMiB, d);
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "limit: 64.00 MiB (per_process_memory_fraction 0.25")) << m;
    EXPECT_TRUE(contains(m, "a larger per_process_memory_fraction (TESSERA_ALLOC_CONF or set_per_process_memory_fraction) may help")) << m;
  }
  Tensor ok = floats(60 * kMiB, d);
  EXPECT_THROW(set_per_process_memory_fraction(1.5, d), ValueError);
  EXPECT_THROW(set_per_process_memory_fraction(0.5, Device("meta")), ValueError);
  ok = Tensor();
  set_per_process_memory_fraction(1.0, d);
}

// A loop whose tensor sizes change every step (a transformer's sequence
// lengths): plain segments keep a segment per size seen, an expandable
// segment grows in place.
TEST_F(SimMemory, ExpandableSegmentsKeepReservedMemoryBoundedWherePlainSegmentsGrow) {
  const Device plain = sim(3), expandable = sim(2);
  set_per_process_memory_fraction(1.0, plain);
  for (Device d : {plain, expandable}) {
    empty_cache(d);
    reset_peak_memory_stats(d);
  }
  std::mt19937 rng(7);
  for (int step = 0; step < 30; ++step) {
    const int64_t seq = 1 + static_cast<int64_t>(rng() % 12);  // 1..12 units of 256 KiB
    for (Device d : {plain, expandable}) {
      std::vector<Tensor> saved;
      for (int layer = 0; layer < 6; ++layer) {
        saved.push_back(floats(seq * 256 * 1024, d));         // activations
        saved.push_back(floats(seq * seq * 64 * 1024, d));     // attention scores, quadratic
        Tensor tmp = floats(seq * 512 * 1024, d);              // a temporary
      }
      while (!saved.empty()) saved.pop_back();  // backward frees in reverse
    }
  }
  const double plain_ratio = double(max_memory_reserved(plain)) / double(max_memory_allocated(plain));
  const double exp_ratio = double(max_memory_reserved(expandable)) / double(max_memory_allocated(expandable));
  EXPECT_GE(stat(expandable, "num_device_alloc"), 1);
  EXPECT_EQ(stat(expandable, "segment.all.current"), 0) << "expandable segments are not counted as segments";
  EXPECT_LE(exp_ratio, 1.2) << "expandable: reserved peak " << max_memory_reserved(expandable) << " for "
                             << max_memory_allocated(expandable) << " allocated";
  EXPECT_GT(plain_ratio, exp_ratio + 0.2) << "plain: reserved peak " << max_memory_reserved(plain) << " for "
                                          << max_memory_allocated(plain) << " allocated";
  std::printf("peak reserved / peak allocated: plain %.3f, expandable %.3f\n", plain_ratio, exp_ratio);
}

TEST_F(SimMemory, PinnedSourceOfANonBlockingCopyIsReusedOnlyAfterTheCopy) {
  const Device d = sim(0);
  Stream slow = slow_stream(d);
  StreamGuard g(slow);
  Tensor host = arange(1024, TensorOptions(kFloat)).pin_memory("sim");
  ASSERT_TRUE(host.is_pinned());
  ASSERT_TRUE(host.is_pinned("sim"));
  void* block = host.data_ptr();
  Tensor dev = host.to(d, /*non_blocking=*/true);  // returns before the copy ran (200 ms latency)
  Event copied = slow.record_event();
  host = Tensor();  // pending: the queued copy still reads it
  Tensor other = empty({1024}).pin_memory("sim");
  EXPECT_NE(other.data_ptr(), block) << "a pinned block in use by a queued copy was handed out again";
  copied.synchronize();
  EXPECT_EQ(dev.cpu().to_vector<float>()[1023], 1023.0f);
  Tensor again = empty({1024}).pin_memory("sim");  // the copy is done: its block is free (polled here)
  EXPECT_EQ(again.data_ptr(), block);
}

TEST_F(SimMemory, NonBlockingCopiesToTheHostArePinnedAndCorrectAfterTheirEvent) {
  const Device d = sim(0);
  Stream slow = slow_stream(d, 50000);
  StreamGuard g(slow);
  Tensor dev = arange(4096, TensorOptions(kFloat).device(d));
  Tensor host = dev.to(Device("cpu"), /*non_blocking=*/true);
  EXPECT_TRUE(host.is_pinned("sim")) << "to the host without waiting: pinned memory (as PyTorch)";
  Event done = slow.record_event();
  done.synchronize();
  EXPECT_EQ(host.to_vector<float>()[4095], 4095.0f);
  // copy_ into a pinned tensor, non-blocking: the bytes land once the stream passes it.
  Tensor into = full({4096}, -1.0f).pin_memory("sim");
  into.copy_(dev * 2, /*non_blocking=*/true);
  slow.synchronize();
  EXPECT_EQ(into.to_vector<float>()[10], 20.0f);
  // Pageable memory: non_blocking has no effect, the host waits.
  Tensor pageable = full({4096}, -1.0f);
  pageable.copy_(dev, /*non_blocking=*/true);
  EXPECT_EQ(pageable.to_vector<float>()[7], 7.0f);
  EXPECT_FALSE(pageable.is_pinned());
}

TEST_F(SimMemory, PinMemoryRefusesWhatItCannotPin) {
  EXPECT_THROW((void)ones({2}, TensorOptions().device(sim(0))).pin_memory(), ValueError);
  EXPECT_THROW((void)ones({2}).pin_memory("meta"), ValueError);
  EXPECT_THROW((void)ones({2}).pin_memory("no_such_type"), ValueError);
  Tensor p = ones({2}).pin_memory();  // the accelerator: sim when nothing else offers pinned memory here
  EXPECT_TRUE(p.is_pinned());
  EXPECT_EQ(p.pin_memory("sim").data_ptr(), p.data_ptr()) << "already pinned: itself";
}

TEST_F(SimMemory, SnapshotShowsLiveBlocksAndRecordedHistoryWithCallStacks) {
  const Device d = sim(0);
  record_memory_history(true, d);
  Tensor t = empty({3000}, TensorOptions(kFloat).device(d));  // 12000 bytes asked, 12288 held
  const std::string json = memory_snapshot_json({d});
  const std::string addr = "\"address\":" + std::to_string(reinterpret_cast<uintptr_t>(t.data_ptr()));
  EXPECT_TRUE(contains(json, addr)) << "the live block's address";
  EXPECT_TRUE(contains(json, "\"requested_size\":12000"));
  EXPECT_TRUE(contains(json, "\"state\":\"active_allocated\""));
  EXPECT_TRUE(contains(json, "\"action\":\"alloc\""));
  EXPECT_TRUE(contains(json, "\"name\":\"sim:0\""));
  t = Tensor();
  synchronize(d);
  const std::string after = memory_snapshot_json({d});
  EXPECT_TRUE(contains(after, "\"action\":\"free_completed\""));
  record_memory_history(false, d);
  const std::string pickle = memory_snapshot_pickle({d, Device("cpu")});
  ASSERT_GT(pickle.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(pickle[0]), 0x80);  // PROTO
  EXPECT_EQ(pickle.back(), '.');                             // STOP
  EXPECT_THROW((void)memory_snapshot_json({Device("meta")}), ValueError);
}

TEST_F(SimMemory, ConcurrentThreadsAllocateAndFreeOnTheirOwnStreams) {
  const Device d = sim(0);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Stream s = Stream::create(d);
      StreamGuard g(s);
      for (int i = 0; i < 200; ++i) {
        const int64_t n = 64 + 97 * ((i * 7 + t) % 40);
        Tensor a = full({n}, float(t), TensorOptions().device(d));
        Tensor b = a + 1.0f;
        if (i % 3 == 0) b.record_stream(current_stream(d));
        if (b.sum().item<float>() != float(n) * float(t + 1)) ++wrong;
      }
      s.synchronize();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
