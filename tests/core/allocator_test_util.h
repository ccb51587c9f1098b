// allocator_test_util.h — what every caching-allocator test shares: the
// consistency check run after each test (statistics rebuilt from the snapshot
// equal stats(), PyTorch's _check_memory_stat_consistency), and a fixture that
// builds allocators over a FakeDevice and checks them all in TearDown.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fake_device_memory.h"
#include "memory/caching_allocator.h"

namespace tsrtest {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;
constexpr size_t GiB = size_t{1} << 30;

/// Statistics rebuilt from a snapshot equal stats(); blocks tile each segment
/// and their sums give the segment's sizes; the engine's own invariants hold.
inline void expect_consistent(tessera::memory::CachingAllocator& a) {
  using namespace tessera::memory;
  EXPECT_EQ(a.check_invariants(), "");
  const Snapshot snap = a.snapshot();
  const auto want = current_stats_from_snapshot(snap);
  const auto have = a.stats_map();
  for (const auto& [key, value] : want) {
    auto it = have.find(key);
    ASSERT_NE(it, have.end()) << key;
    EXPECT_EQ(it->second, value) << key;
  }
  for (const SnapshotSegment& seg : snap.segments) {
    uint64_t cursor = seg.address, allocated = 0, active = 0, requested = 0;
    for (const SnapshotBlock& b : seg.blocks) {
      EXPECT_EQ(b.address, cursor) << "gap or overlap in the segment at " << seg.address;
      cursor += b.size;
      if (b.state == BlockState::ActiveAllocated) allocated += b.size, requested += b.requested_size;
      if (b.state != BlockState::Inactive) active += b.size;
    }
    EXPECT_EQ(cursor, seg.address + seg.total_size);
    EXPECT_EQ(allocated, seg.allocated_size);
    EXPECT_EQ(active, seg.active_size);
    EXPECT_EQ(requested, seg.requested_size);
  }
}

class AllocatorTest : public ::testing::Test {
 protected:
  FakeDevice& dev() {
    if (!dev_) dev_ = std::make_unique<FakeDevice>(opts);
    return *dev_;
  }
  tessera::memory::CachingAllocator& make(std::string_view conf = "") {
    allocs_.push_back(std::make_unique<tessera::memory::CachingAllocator>(dev(), tessera::memory::parse_alloc_conf(conf)));
    return *allocs_.back();
  }
  void TearDown() override {
    bool all_freed = true;
    for (auto& a : allocs_) {
      expect_consistent(*a);
      all_freed &= a->stats().allocation[0].current == 0;
    }
    allocs_.clear();  // returns every cached segment
    if (dev_) {
      EXPECT_EQ(dev_->errors(), 0u) << "the allocator misused the device";
      EXPECT_EQ(dev_->unmap_while_busy(), 0u) << "unmapped memory while work was queued";
      if (all_freed) {
        EXPECT_EQ(dev_->live_allocations(), 0u);
        EXPECT_EQ(dev_->mapped_bytes(), 0u);
        EXPECT_EQ(dev_->reservations(), 0u);
      }
    }
  }
  static TsrStream S(int i) { return FakeDevice::stream(i); }

  FakeDevice::Options opts;
  std::unique_ptr<FakeDevice> dev_;
  std::vector<std::unique_ptr<tessera::memory::CachingAllocator>> allocs_;
};

inline int64_t stat(const tessera::memory::CachingAllocator& a, const std::string& key) {
  return a.stats_map().at(key);
}

}  // namespace tsrtest
