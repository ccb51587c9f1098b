// Snapshots, history and their writers (issue 15, point 7): block states and
// requested sizes, recorded actions with C++ and recorder frames, the pickle
// encoder byte for byte, and (with python3 present) the pickle and the JSON
// loading to the same object in PyTorch's _snapshot() layout.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <tessera/error.h>

#include "allocator_test_util.h"
#include "memory/object_writers.h"

namespace tsrtest {

// External linkage (exported with ENABLE_EXPORTS) so that dladdr names them in
// recorded stacks; the empty asm keeps each call from becoming a tail jump.
[[gnu::noinline]] void* history_allocate(tessera::memory::CachingAllocator& a, size_t n, TsrStream s) {
  void* p = a.allocate(n, s);
  asm volatile("" ::: "memory");
  return p;
}
[[gnu::noinline]] void history_free(tessera::memory::CachingAllocator& a, void* p) {
  a.free(p);
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void history_empty_cache(tessera::memory::CachingAllocator& a) {
  a.empty_cache();
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] tessera::memory::Snapshot history_snapshot(tessera::memory::CachingAllocator& a) {
  tessera::memory::Snapshot s = a.snapshot();
  asm volatile("" ::: "memory");
  return s;
}

namespace {

using namespace tessera::memory;

TEST_F(AllocatorTest, SnapshotShowsBlockStatesAndRequestedSizes) {
  auto& a = make();
  void* p = a.allocate(1000, S(1));
  void* q = a.allocate(3000, S(1));
  a.record_stream(q, S(2));
  dev().enqueue_work(S(2));
  a.free(q);
  const Snapshot snap = a.snapshot();
  EXPECT_EQ(snap.device_name, "fake:0");
  ASSERT_EQ(snap.segments.size(), 1u);
  const SnapshotSegment& s = snap.segments[0];
  EXPECT_TRUE(s.small);
  EXPECT_FALSE(s.is_expandable);
  EXPECT_EQ(s.stream, reinterpret_cast<uintptr_t>(S(1)));
  EXPECT_EQ(s.address, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(s.total_size, 2 * MiB);
  EXPECT_EQ(s.allocated_size, 1024u);
  EXPECT_EQ(s.active_size, 1024u + 3072u);
  EXPECT_EQ(s.requested_size, 1000u);
  ASSERT_EQ(s.blocks.size(), 3u);
  EXPECT_EQ(s.blocks[0].state, BlockState::ActiveAllocated);
  EXPECT_EQ(s.blocks[0].requested_size, 1000u);
  EXPECT_EQ(s.blocks[1].state, BlockState::ActivePendingFree);
  EXPECT_EQ(s.blocks[1].requested_size, 3000u);
  EXPECT_EQ(s.blocks[2].state, BlockState::Inactive);
  EXPECT_EQ(s.blocks[2].size, 2 * MiB - 4096);
  EXPECT_TRUE(s.blocks[0].frames.empty()) << "no call stacks without history";
  EXPECT_TRUE(snap.trace.empty());
  dev().complete(S(2));
  a.free(p);
}

bool has_frame(const std::vector<Frame>& frames, const std::string& part) {
  for (const Frame& f : frames)
    if (f.name.find(part) != std::string::npos) return true;
  return false;
}

TEST_F(AllocatorTest, HistoryRecordsEveryActionWithCallStacks) {
  auto& a = make();
  a.record_history(true, 1000);
  a.set_context_recorder([] { return std::vector<Frame>{{"train.py", 42, "forward"}}; });
  void* p = history_allocate(a, 4 * KiB, S(1));
  history_free(a, p);
  history_empty_cache(a);
  const Snapshot snap = history_snapshot(a);
  std::vector<TraceAction> actions;
  for (const TraceEntry& e : snap.trace) actions.push_back(e.action);
  const std::vector<TraceAction> want = {TraceAction::SegmentAlloc,  TraceAction::Alloc,
                                         TraceAction::FreeRequested, TraceAction::FreeCompleted,
                                         TraceAction::SegmentFree,   TraceAction::Snapshot};
  EXPECT_EQ(actions, want);
  ASSERT_EQ(snap.trace.size(), want.size());
  EXPECT_EQ(snap.trace[1].addr, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(snap.trace[1].size, 4 * KiB);
  EXPECT_EQ(snap.trace[0].size, 2 * MiB);
  EXPECT_EQ(snap.trace[1].stream, reinterpret_cast<uintptr_t>(S(1)));
  for (size_t i = 1; i < snap.trace.size(); ++i) EXPECT_GE(snap.trace[i].time_us, snap.trace[i - 1].time_us);
  const char* const callers[] = {"history_allocate", "history_allocate", "history_free", "history_free",
                                 "history_empty_cache", "history_snapshot"};
  for (size_t i = 0; i < snap.trace.size(); ++i) {
    const TraceEntry& e = snap.trace[i];
    // The C++ frames start at the allocator's caller, the recorder's come last.
    ASSERT_FALSE(e.frames.empty());
    EXPECT_NE(e.frames.front().name.find(callers[i]), std::string::npos)
        << trace_action_name(e.action) << ": " << e.frames.front().name;
    EXPECT_FALSE(has_frame(e.frames, "capture_context")) << "the allocator's own frames are skipped";
    ASSERT_FALSE(e.frames.empty());
    EXPECT_EQ(e.frames.back(), (Frame{"train.py", 42, "forward"}));
  }
  // A live block carries its allocation's stack.
  void* q = history_allocate(a, 4 * KiB, S(1));
  const Snapshot live = a.snapshot();
  EXPECT_TRUE(has_frame(live.segments[0].blocks[0].frames, "history_allocate"));
  EXPECT_TRUE(has_frame(live.segments[0].frames, "history_allocate"));
  a.free(q);
  a.record_history(false);
  EXPECT_TRUE(a.snapshot().trace.empty());
}

TEST_F(AllocatorTest, HistoryKeepsTheLastEntries) {
  auto& a = make();
  a.record_history(true, 5);
  std::vector<void*> ps;
  for (int i = 0; i < 10; ++i) ps.push_back(a.allocate(512 * (i + 1), S(1)));
  const Snapshot snap = a.snapshot();
  ASSERT_EQ(snap.trace.size(), 5u);
  // The last four allocations, then the snapshot entry.
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(snap.trace[k].action, TraceAction::Alloc);
    EXPECT_EQ(snap.trace[k].size, 512u * (7 + k));
  }
  EXPECT_EQ(snap.trace[4].action, TraceAction::Snapshot);
  for (void* p : ps) a.free(p);
}

TEST_F(AllocatorTest, HistoryRecordsOomMapAndUnmap) {
  opts.capacity = 8 * MiB;
  auto& a = make("expandable_segments:True");
  a.record_history(true, 100);
  void* p = a.allocate(3 * MiB, S(1));
  EXPECT_THROW(a.allocate(7 * MiB, S(1)), tessera::OutOfMemoryError);
  a.free(p);
  a.empty_cache();
  const Snapshot snap = a.snapshot();
  std::vector<std::string> actions;
  for (const TraceEntry& e : snap.trace) actions.push_back(trace_action_name(e.action));
  const std::vector<std::string> want = {"segment_map", "alloc", "oom", "free_requested", "free_completed",
                                         "segment_unmap", "snapshot"};
  EXPECT_EQ(actions, want);
  ASSERT_EQ(snap.trace.size(), want.size());
  EXPECT_EQ(snap.trace[0].size, 4 * MiB);
  EXPECT_EQ(snap.trace[2].size, 7 * MiB);
  EXPECT_EQ(snap.trace[2].device_free, 4 * MiB) << "capacity minus reserved";
}

// ----------------------------------------------------------------- writers

std::string hex(const std::string& bytes) {
  std::string out;
  char buf[4];
  for (unsigned char c : bytes) std::snprintf(buf, sizeof buf, "%02x", c), out += buf;
  return out;
}

TEST(PickleWriter, EncodesEachKindByTheProtocol) {
  PickleWriter w;
  w.begin_dict();
  w.key("a"), w.integer(1);
  w.key("b"), w.begin_list(), w.integer(300), w.integer(-1), w.integer(int64_t{1} << 40),
      w.integer(-(int64_t{1} << 40)), w.uinteger(~uint64_t{0}), w.integer(70000), w.end_list();
  w.key("c"), w.real(1.5);
  w.key("d"), w.boolean(true), w.key("e"), w.boolean(false), w.key("f"), w.none();
  w.end_dict();
  // Opcodes by hand: PROTO 2, EMPTY_DICT MARK, BINUNICODE "a" BININT1 1, ...
  const std::string want =
      "8002"                  // PROTO 2
      "7d28"                  // EMPTY_DICT MARK
      "580100000061" "4b01"   // 'a': BININT1 1
      "580100000062" "5d28"   // 'b': EMPTY_LIST MARK
      "4d2c01"                // BININT2 300
      "4affffffff"            // BININT -1
      "8a06000000000001"      // LONG1 6 bytes: 2^40
      "8a060000000000ff"      // LONG1 6 bytes: -2^40
      "8a09ffffffffffffffff00"  // LONG1 9 bytes: 2^64 - 1
      "4a70110100"            // BININT 70000
      "65"                    // APPENDS
      "580100000063" "473ff8000000000000"  // 'c': BINFLOAT 1.5, big-endian
      "580100000064" "88" "580100000065" "89" "580100000066" "4e"  // True, False, None
      "75"                    // SETITEMS
      "2e";                   // STOP
  EXPECT_EQ(hex(w.finish()), want);
}

TEST(JsonWriter, EscapesAndNests) {
  JsonWriter w;
  w.begin_dict();
  w.key("s"), w.str("a\"b\\c\n\x01");
  w.key("l"), w.begin_list(), w.integer(-3), w.real(2.0), w.real(0.1), w.none(), w.boolean(false), w.end_list();
  w.key("e"), w.begin_dict(), w.end_dict();
  w.end_dict();
  EXPECT_EQ(w.finish(), R"({"s":"a\"b\\c\n\u0001","l":[-3,2.0,0.10000000000000001,null,false],"e":{}})");
}

bool have_python() { return std::system("python3 -c pass > /dev/null 2>&1") == 0; }

TEST_F(AllocatorTest, PickleAndJsonLoadAsTorchSnapshotsInPython) {
  if (!have_python()) GTEST_SKIP() << "python3 is not on PATH";
  auto& a = make("expandable_segments:True,max_split_size_mb:64");
  a.record_history(true, 1000);
  void* p = a.allocate(4 * KiB, S(1));
  void* q = a.allocate(30 * MiB, S(2));
  void* r = a.allocate(3 * MiB, S(1));
  a.free(r);
  const Snapshot snap = a.snapshot();
  Snapshot other = snap;  // a second device's snapshot in the same file
  other.device = 2;
  for (auto& seg : other.segments) seg.device = 2;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_snapshot_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                    std::to_string(reinterpret_cast<uintptr_t>(&a)));
  std::filesystem::create_directories(dir);
  {
    std::ofstream pk(dir / "snap.pickle", std::ios::binary), js(dir / "snap.json");
    write_snapshot_pickle({snap, other}, pk);
    write_snapshot_json({snap, other}, js);
  }
  std::ofstream(dir / "check.py") << R"PY(
import json, pickle, sys
d = sys.argv[1]
snap = pickle.load(open(d + "/snap.pickle", "rb"))
assert snap == json.load(open(d + "/snap.json")), "pickle and json differ"
assert set(snap) >= {"segments", "device_traces", "allocator_settings"}, set(snap)
assert len(snap["device_traces"]) == 3 and snap["device_traces"][1] == []
segs = [s for s in snap["segments"] if s["device"] == 0]
assert len(segs) == 3, len(segs)
for s in segs:
    assert s["segment_type"] in ("small", "large") and s["is_expandable"] is True
    assert sum(b["size"] for b in s["blocks"]) == s["total_size"]
    for b in s["blocks"]:
        assert b["state"] in ("active_allocated", "active_pending_free", "inactive"), b["state"]
        assert all(set(f) == {"filename", "line", "name"} for f in b["frames"])
trace = snap["device_traces"][0]
actions = [e["action"] for e in trace]
assert actions[-1] == "snapshot" and "segment_map" in actions and "alloc" in actions, actions
for e in trace:
    assert {"action", "addr", "size", "stream", "time_us", "frames"} <= set(e), e
    assert e["frames"] and all(f["name"] for f in e["frames"]), e["frames"]
st = snap["allocator_settings"]
assert st["expandable_segments"] is True and st["max_split_size"] == 64 << 20, st
assert st["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True,max_split_size_mb:64", st
print("ok")
)PY";
  const std::string cmd = "python3 " + (dir / "check.py").string() + " " + dir.string() + " > " +
                          (dir / "out.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(dir / "out.txt");
  std::stringstream text;
  text << out.rdbuf();
  EXPECT_EQ(rc, 0) << text.str();
  EXPECT_EQ(text.str(), "ok\n");
  std::filesystem::remove_all(dir);
  a.free(p);
  a.free(q);
}

}  // namespace
}  // namespace tsrtest
