// memory/caching_allocator.cpp — the engine (see caching_allocator.h and docs/memory.md).
#include "caching_allocator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <thread>

#include <tessera/error.h>

#include "block_pool.h"

namespace tessera::memory {

using internal::Block;
using internal::LargeOrder;
using internal::Segment;
using internal::StreamPools;

namespace {

constexpr size_t kSizeMax = std::numeric_limits<size_t>::max();

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
size_t round_down(size_t n, size_t to) { return n / to * to; }

// The size a request is rounded to (PyTorch's round_size).
[[gnu::always_inline]] inline size_t round_request(const AllocatorConfig& cfg, size_t nbytes) noexcept {
  if (cfg.backend == AllocatorBackend::Plugin) return nbytes;
  if (nbytes <= CachingAllocator::kMinBlockSize) return CachingAllocator::kMinBlockSize;
  const uint32_t divisions = cfg.divisions_for(nbytes);
  if (divisions > 1 && nbytes > CachingAllocator::kMinBlockSize * divisions) {
    if (std::has_single_bit(nbytes)) return nbytes;
    const size_t floor2 = std::bit_floor(nbytes);
    const size_t step = floor2 / divisions;  // >= 512 since nbytes > 512 * divisions
    const size_t down = nbytes & ~(step - 1);
    return down == nbytes ? nbytes : down + step;
  }
  return round_up(nbytes, CachingAllocator::kMinBlockSize);
}

[[gnu::always_inline]] inline void inc(StatArray& a, bool small, int64_t n) noexcept {
  a[kAllPools].increase(n);
  a[small ? kSmallPool : kLargePool].increase(n);
}
[[gnu::always_inline]] inline void dec(StatArray& a, bool small, int64_t n) noexcept {
  a[kAllPools].decrease(n);
  a[small ? kSmallPool : kLargePool].decrease(n);
}

// One statistic kept per pool; its "all" row is derived when read, except the
// peak, which is tracked on increases. Halves the hot path's statistics work
// against updating "all" and a pool on every change.
struct PoolSplitStat {
  Stat pool[2];          // [0] large pool, [1] small pool
  int64_t all_peak = 0;

  [[gnu::always_inline]] void increase(bool small, int64_t n) noexcept {
    Stat& s = pool[small ? 1 : 0];
    s.current += n;
    s.allocated += n;
    if (s.current > s.peak) s.peak = s.current;
    const int64_t all = pool[0].current + pool[1].current;
    if (all > all_peak) all_peak = all;
  }
  [[gnu::always_inline]] void decrease(bool small, int64_t n) noexcept {
    Stat& s = pool[small ? 1 : 0];
    s.current -= n;
    s.freed += n;
  }
  int64_t all_current() const noexcept { return pool[0].current + pool[1].current; }
  void export_to(StatArray& a) const noexcept {
    a[kSmallPool] = pool[1];
    a[kLargePool] = pool[0];
    a[kAllPools] = Stat{all_current(), all_peak, pool[0].allocated + pool[1].allocated, pool[0].freed + pool[1].freed};
  }
  void reset_peak() noexcept {
    pool[0].reset_peak(), pool[1].reset_peak();
    all_peak = all_current();
  }
  void reset_accumulated() noexcept { pool[0].reset_accumulated(), pool[1].reset_accumulated(); }
};

[[gnu::always_inline]] inline void inc(PoolSplitStat& a, bool small, int64_t n) noexcept { a.increase(small, n); }
[[gnu::always_inline]] inline void dec(PoolSplitStat& a, bool small, int64_t n) noexcept { a.decrease(small, n); }

/// An "active" statistic (allocated or waiting for events before reuse) kept
/// as its allocated twin plus what is pending, so that the hot path updates
/// only the twin. Active grows only when something is allocated: while nothing
/// is pending its peak is the twin's, and allocate() calls note_peak while
/// something is. `lag` is the twin's decreases that active has not had yet
/// (pending blocks freed since the last reset_accumulated).
struct DerivedActive {
  int64_t pending[2] = {0, 0};  // [0] large pool, [1] small pool
  int64_t lag[2] = {0, 0};
  int64_t peak[2] = {0, 0};
  int64_t all_peak = 0;

  void pend(bool small, int64_t n) noexcept { pending[small] += n, lag[small] += n; }
  void unpend(bool small, int64_t n) noexcept { pending[small] -= n, lag[small] -= n; }
  void note_peak(const PoolSplitStat& twin) noexcept {
    for (int p = 0; p < 2; ++p) peak[p] = std::max(peak[p], twin.pool[p].current + pending[p]);
    all_peak = std::max(all_peak, twin.all_current() + pending[0] + pending[1]);
  }
  int64_t all_current(const PoolSplitStat& twin) const noexcept {
    return twin.all_current() + pending[0] + pending[1];
  }
  void export_to(StatArray& a, const PoolSplitStat& twin) const noexcept {
    StatArray t;
    twin.export_to(t);
    const StatPool rows[2] = {kLargePool, kSmallPool};
    for (int p = 0; p < 2; ++p) {
      const Stat& s = t[rows[p]];
      a[rows[p]] = Stat{s.current + pending[p], std::max(peak[p], s.peak), s.allocated, s.freed - lag[p]};
    }
    const Stat& s = t[kAllPools];
    a[kAllPools] = Stat{s.current + pending[0] + pending[1], std::max(all_peak, s.peak), s.allocated,
                        s.freed - lag[0] - lag[1]};
  }
  void reset_peak(const PoolSplitStat& twin) noexcept {  // after the twin's
    for (int p = 0; p < 2; ++p) peak[p] = twin.pool[p].current + pending[p];
    all_peak = all_current(twin);
  }
  void reset_accumulated() noexcept { lag[0] = lag[1] = 0; }
};

/// The engine's statistics as it updates them; stats() exports a DeviceStats.
struct HotStats {
  PoolSplitStat allocation, segment, inactive_split, allocated_bytes, reserved_bytes, inactive_split_bytes,
      requested_bytes;
  DerivedActive active, active_bytes;  // from allocation and allocated_bytes
  int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0, num_device_alloc = 0, num_device_free = 0;
  int64_t max_split_size = -1;
  Stat oversize_allocations, oversize_segments;

  template <typename F>
  void for_each(F f) {
    for (PoolSplitStat* p : {&allocation, &segment, &inactive_split, &allocated_bytes, &reserved_bytes,
                             &inactive_split_bytes, &requested_bytes})
      f(*p);
  }
  DeviceStats export_stats() const {
    DeviceStats d;
    allocation.export_to(d.allocation);
    segment.export_to(d.segment);
    active.export_to(d.active, allocation);
    inactive_split.export_to(d.inactive_split);
    allocated_bytes.export_to(d.allocated_bytes);
    reserved_bytes.export_to(d.reserved_bytes);
    active_bytes.export_to(d.active_bytes, allocated_bytes);
    inactive_split_bytes.export_to(d.inactive_split_bytes);
    requested_bytes.export_to(d.requested_bytes);
    d.num_alloc_retries = num_alloc_retries;
    d.num_ooms = num_ooms;
    d.num_sync_all_streams = num_sync_all_streams;
    d.num_device_alloc = num_device_alloc;
    d.num_device_free = num_device_free;
    d.max_split_size = max_split_size;
    d.oversize_allocations = oversize_allocations;
    d.oversize_segments = oversize_segments;
    return d;
  }
  void reset_peak() noexcept {
    for_each([](PoolSplitStat& p) { p.reset_peak(); });
    active.reset_peak(allocation);
    active_bytes.reset_peak(allocated_bytes);
    oversize_allocations.reset_peak();
    oversize_segments.reset_peak();
  }
  void reset_accumulated() noexcept {
    for_each([](PoolSplitStat& p) { p.reset_accumulated(); });
    active.reset_accumulated();
    active_bytes.reset_accumulated();
    oversize_allocations.reset_accumulated();
    oversize_segments.reset_accumulated();
    num_alloc_retries = num_ooms = num_sync_all_streams = num_device_alloc = num_device_free = 0;
  }
};

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t stream_id(TsrStream s) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s)); }

struct Record {
  TraceAction action;
  uint64_t addr;
  uint64_t size;
  TsrStream stream;
  int64_t time_us;
  uint64_t device_free;
  std::shared_ptr<const StackContext> context;
};

}  // namespace

void AllocatorMutex::lock_contended() noexcept {
  for (unsigned round = 0;; ++round) {
    // Test before exchanging: waiters read the line instead of taking it from the holder.
    if (!held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire)) return;
    if (round < 128) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else if (round < 160) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(1u << std::min(round - 160, 10u)));
    }
  }
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", bytes);
  else if (bytes < (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  else if (bytes < (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

namespace {
/// Thrown by the last out-of-memory stage while Impl::defer_oom is set.
struct DeferredOom {};
}  // namespace

struct CachingAllocator::Impl {
  Impl(DeviceMemory& device, const AllocatorConfig& config, size_t limit, int device_index)
      : dev(device), cfg(config), limit(limit), device_index(device_index),
        plugin(config.backend == AllocatorBackend::Plugin),
        max_split(config.max_split_size) {
    stats.max_split_size = max_split == kSizeMax ? -1 : static_cast<int64_t>(max_split);
    if (cfg.garbage_collection_threshold > 0) {
      const size_t base = limit != 0 ? limit : dev.total_memory();
      gc_bytes = static_cast<size_t>(cfg.garbage_collection_threshold * static_cast<double>(base));
    }
    use_expandable = !plugin && cfg.expandable_segments && dev.expandable() && dev.granularity() > 0;
    if (use_expandable) {
      granularity = dev.granularity();
      const size_t total = dev.total_memory();
      // Room for all of the device's memory in one segment, plus slack for holes
      // left between mapped ranges; 64 GiB when the device cannot tell its size.
      va_size = round_up(total != 0 ? total + total / 8 : size_t{64} << 30, granularity);
    }
  }

  DeviceMemory& dev;
  const AllocatorConfig& cfg;
  size_t limit;  // changed only by set_memory_fraction, under the lock
  const int device_index;
  const bool plugin;
  const size_t max_split;
  size_t gc_bytes = 0;  // reserved bytes above which garbage collection runs; 0: off
  /// True during the pass after the cache release hook: its first pass counted.
  bool retry_counted = false;
  /// While true, the last out-of-memory stage throws DeferredOom instead of
  /// the error (the public allocate() then runs the cache release hook and
  /// tries once more); oom_note is appended to that final attempt's message.
  bool defer_oom = false;
  std::string oom_note;
  bool use_expandable = false;
  size_t granularity = 0;
  size_t va_size = 0;

  HotStats stats;
  internal::BlockFactory blocks;
  internal::PtrMap live;
  std::vector<Segment*> segments;
  std::vector<std::unique_ptr<StreamPools>> streams;
  StreamPools* last_pools = nullptr;
  std::vector<TsrEvent> spare_events;
  size_t pending_events = 0;
  uint64_t tick = 0;

  // History (when on): a ring of the last `history_max` records.
  bool history = false;
  size_t history_max = 0;
  std::vector<Record> ring;
  size_t ring_next = 0;
  std::shared_ptr<const StackContext> context;  // the current public call's stack (history only)

  // ---------------------------------------------------------------- helpers
  [[gnu::always_inline]] StreamPools& pools(TsrStream s) {
    if (last_pools != nullptr && last_pools->stream == s) [[likely]] return *last_pools;
    return pools_slow(s);
  }
  [[gnu::noinline]] StreamPools& pools_slow(TsrStream s) {
    for (auto& p : streams)
      if (p->stream == s) return *(last_pools = p.get());
    streams.push_back(std::make_unique<StreamPools>());
    streams.back()->stream = s;
    return *(last_pools = streams.back().get());
  }

  [[gnu::always_inline]] void record(TraceAction action, uint64_t addr, uint64_t size, TsrStream stream,
                                     uint64_t device_free = 0) {
    if (history) [[unlikely]] record_slow(action, addr, size, stream, device_free);
  }
  [[gnu::noinline]] void record_slow(TraceAction action, uint64_t addr, uint64_t size, TsrStream stream,
                                     uint64_t device_free) {
    Record r{action, addr, size, stream, now_us(), device_free, context};
    if (ring.size() < history_max) {
      ring.push_back(std::move(r));
    } else {
      ring[ring_next] = std::move(r);
      ring_next = (ring_next + 1) % history_max;
    }
  }

  static bool counts_inactive_split(const Block* b) noexcept {
    return !b->segment->expandable && (b->prev != nullptr || b->next != nullptr);
  }

  [[gnu::always_inline]] void pool_insert(Block* b) {
    b->in_pool = true;
    b->free_tick = ++tick;
    Segment* s = b->segment;
    if (s->small) s->pools->small.insert(b);
    else s->pools->large.insert(b);
    if (counts_inactive_split(b)) {
      inc(stats.inactive_split, s->small, 1);
      inc(stats.inactive_split_bytes, s->small, static_cast<int64_t>(b->size));
    }
  }

  [[gnu::always_inline]] void pool_remove(Block* b) {
    Segment* s = b->segment;
    if (counts_inactive_split(b)) {
      dec(stats.inactive_split, s->small, 1);
      dec(stats.inactive_split_bytes, s->small, static_cast<int64_t>(b->size));
    }
    if (s->small) s->pools->small.remove(b);
    else s->pools->large.erase(b);
    b->in_pool = false;
  }

  size_t segment_size(size_t size) const {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return round_up(size, kRoundLarge);
  }

  [[gnu::always_inline]] bool should_split(const Block* b, size_t size) const {
    const size_t remaining = b->size - size;
    if (b->segment->small || b->segment->expandable) return remaining >= kMinBlockSize;
    return size < max_split && remaining > kSmallSize;
  }

  /// Best fit in the stream's pool; removes the block from the pool.
  [[gnu::always_inline]] Block* fit(StreamPools& sp, size_t size, bool small) {
    Block* b;
    if (small) {
      b = sp.small.best_fit(size);
      if (b == nullptr) return nullptr;
    } else {
      auto it = sp.large.lower_bound(LargeOrder::Key{size, nullptr});
      if (it == sp.large.end()) return nullptr;
      b = *it;
      if (!b->segment->expandable) {
        // An oversize block serves only an oversize request, and not one much smaller.
        if (size < max_split && b->size >= max_split) return nullptr;
        if (size >= max_split && b->size >= size + kLargeBuffer) return nullptr;
      }
    }
    pool_remove(b);
    return b;
  }

  /// The inactive-split statistics of a cached block whose size or neighbours
  /// changed in place: `was` and `old_size` before, the block as it is now.
  [[gnu::always_inline]] void recount_split(const Block* b, bool was, size_t old_size) {
    const bool small = b->segment->small;
    const bool now = counts_inactive_split(b);
    if (was && now) {
      if (b->size > old_size) inc(stats.inactive_split_bytes, small, static_cast<int64_t>(b->size - old_size));
      else dec(stats.inactive_split_bytes, small, static_cast<int64_t>(old_size - b->size));
      return;
    }
    if (was) {
      dec(stats.inactive_split, small, 1);
      dec(stats.inactive_split_bytes, small, static_cast<int64_t>(old_size));
    }
    if (now) {
      inc(stats.inactive_split, small, 1);
      inc(stats.inactive_split_bytes, small, static_cast<int64_t>(b->size));
    }
  }

  /// The small pool's best fit for `size`, out of the pool: a new block carved
  /// from the front of a cached one, which stays cached (and usually in its
  /// list), or a whole cached block with less than 512 bytes to spare.
  [[gnu::always_inline]] Block* take_small(StreamPools& sp, size_t size) {
    Block* c = sp.small.best_fit(size);
    if (c == nullptr) return nullptr;
    if (c->size - size < kMinBlockSize) {
      pool_remove(c);
      return c;
    }
    const bool was = counts_inactive_split(c);
    const size_t old_size = c->size;
    Block* a = blocks.make();
    a->ptr = c->ptr;
    a->size = size;
    a->segment = c->segment;
    a->prev = c->prev;
    a->next = c;
    if (c->prev != nullptr) c->prev->next = a;
    else c->segment->first = a;
    c->prev = a;
    c->ptr += size;
    c->size -= size;
    recount_split(c, was, old_size);
    sp.small.shrank(c);
    return a;
  }

  /// The freed small-pool block b (out of the pool, mapped) joins the pool:
  /// merged into a cached neighbour in place, else inserted.
  [[gnu::always_inline]] void return_small(Block* b) {
    Block* p = b->prev;
    Block* n = b->next;
    const bool into_prev = p != nullptr && p->in_pool;
    const bool into_next = n != nullptr && n->in_pool;
    if (!into_prev && !into_next) {
      pool_insert(b);
      return;
    }
    Block* keep = into_prev ? p : n;
    const bool was = counts_inactive_split(keep);
    const size_t old_size = keep->size;
    if (into_prev) {
      p->size += b->size;
      p->next = n;
      if (n != nullptr) n->prev = p;
      blocks.recycle(b);
      if (into_next) {
        pool_remove(n);
        absorb_next(p);
      }
    } else {
      n->ptr = b->ptr;
      n->size += b->size;
      n->prev = p;
      if (p != nullptr) p->next = n;
      else n->segment->first = n;
      blocks.recycle(b);
    }
    keep->free_tick = ++tick;
    recount_split(keep, was, old_size);
    keep->segment->pools->small.grew(keep);
  }

  // ------------------------------------------------------------- allocation
  [[gnu::always_inline]] void* allocate(size_t nbytes, TsrStream stream, size_t size) {
    if (pending_events != 0) poll_events();
    StreamPools& sp = pools(stream);
    const bool small = size <= kSmallSize && !plugin;
    Block* b = small ? take_small(sp, size) : plugin ? nullptr : fit(sp, size, false);
    if (b == nullptr) b = alloc_slow(sp, size, nbytes, small);
    if (!plugin && should_split(b, size)) {
      Block* rest = blocks.make();
      rest->ptr = b->ptr + size;
      rest->size = b->size - size;
      rest->segment = b->segment;
      rest->mapped = true;
      rest->prev = b;
      rest->next = b->next;
      if (b->next != nullptr) b->next->prev = rest;
      b->next = rest;
      b->size = size;
      pool_insert(rest);
    }
    b->allocated = true;
    b->requested = nbytes;
    if (context) b->context = context;
    live.insert(b);
    const bool pool_small = b->segment->small;
    const auto sz = static_cast<int64_t>(b->size);
    inc(stats.allocation, pool_small, 1);
    inc(stats.allocated_bytes, pool_small, sz);
    inc(stats.requested_bytes, pool_small, static_cast<int64_t>(nbytes));
    if (pending_events != 0) [[unlikely]] {
      stats.active.note_peak(stats.allocation);
      stats.active_bytes.note_peak(stats.allocated_bytes);
    }
    if (b->size >= max_split) stats.oversize_allocations.increase(1);
    record(TraceAction::Alloc, reinterpret_cast<uintptr_t>(b->ptr), b->size, stream);
    return b->ptr;
  }

  Block* alloc_slow(StreamPools& sp, size_t size, size_t nbytes, bool small) {
    std::string device_msg;
    const int e = small ? 1 : 0;
    if (use_expandable && !sp.expandable_failed[e]) {
      if (Block* b = grow(sp, size, small, &device_msg)) return b;
      if (!sp.expandable_failed[e]) {
        if (release_available_cached(size))
          if (Block* b = grow(sp, size, small, &device_msg)) return b;
        count_retry();
        release_all_cached();
        if (Block* b = fit(sp, size, small)) return b;
        if (Block* b = grow(sp, size, small, &device_msg)) return b;
        if (!sp.expandable_failed[e]) throw_oom(sp, size, nbytes, device_msg);
      }
    }
    const size_t alloc_size = plugin ? size : segment_size(size);
    if (gc_bytes != 0) garbage_collect();
    if (Block* b = new_segment_or_tight(sp, alloc_size, size, small, &device_msg)) return b;
    if (!plugin && release_available_cached(alloc_size))
      if (Block* b = new_segment_or_tight(sp, alloc_size, size, small, &device_msg)) return b;
    count_retry();
    release_all_cached();
    if (!plugin)
      if (Block* b = fit(sp, size, small)) return b;
    if (Block* b = new_segment_or_tight(sp, alloc_size, size, small, &device_msg)) return b;
    throw_oom(sp, size, nbytes, device_msg);
  }

  /// A new segment of `alloc_size`; when the device (or the limit) cannot give
  /// that much, one of exactly the request's `size`, so that a device smaller
  /// than a segment, or nearly full, still serves what fits.
  Block* new_segment_or_tight(StreamPools& sp, size_t alloc_size, size_t size, bool small, std::string* msg) {
    if (Block* b = new_segment(sp, alloc_size, small, msg)) return b;
    if (alloc_size == size) return nullptr;
    return new_segment(sp, size, small, msg);  // its message (it asked for the request) is the one reported
  }

  bool over_limit(size_t more, std::string* msg) const {
    if (limit == 0 || static_cast<size_t>(stats.reserved_bytes.all_current()) + more <= limit) return false;
    *msg = detail::str("the limit of ", format_bytes(limit), " (per_process_memory_fraction) would be exceeded");
    return true;
  }

  /// A new plain segment of `alloc_size` whose one block is returned (not in a pool).
  Block* new_segment(StreamPools& sp, size_t alloc_size, bool small, std::string* msg) {
    if (over_limit(alloc_size, msg)) return nullptr;
    msg->clear();
    void* p = dev.allocate(alloc_size, sp.stream, msg);
    if (p == nullptr) return nullptr;
    ++stats.num_device_alloc;
    auto* s = new Segment;
    s->base = static_cast<char*>(p);
    s->size = alloc_size;
    s->pools = &sp;
    s->small = small;
    s->index = segments.size();
    s->context = context;
    segments.push_back(s);
    Block* b = blocks.make();
    b->ptr = s->base;
    b->size = alloc_size;
    b->segment = s;
    s->first = b;
    inc(stats.segment, small, 1);
    inc(stats.reserved_bytes, small, static_cast<int64_t>(alloc_size));
    if (alloc_size >= max_split) stats.oversize_segments.increase(1);
    record(TraceAction::SegmentAlloc, reinterpret_cast<uintptr_t>(p), alloc_size, sp.stream);
    return b;
  }

  void drop_segment(Segment* s) {
    Segment* last = segments.back();
    last->index = s->index;
    segments[s->index] = last;
    segments.pop_back();
    delete s;
  }

  /// Returns a plain segment whose one block is free (cached, or the plugin
  /// backend's freed block) to the device.
  void release_segment(Segment* s) {
    Block* b = s->first;
    if (b->in_pool) pool_remove(b);
    dec(stats.segment, s->small, 1);
    dec(stats.reserved_bytes, s->small, static_cast<int64_t>(s->size));
    if (s->size >= max_split) stats.oversize_segments.decrease(1);
    record(TraceAction::SegmentFree, reinterpret_cast<uintptr_t>(s->base), s->size, s->pools->stream);
    dev.deallocate(s->base, s->size, s->pools->stream);
    ++stats.num_device_free;
    blocks.recycle(b);
    drop_segment(s);
  }

  static bool whole_and_cached(const Segment* s) {
    return !s->expandable && s->first->in_pool && s->first->next == nullptr;
  }

  /// Out-of-memory stage 1: returns cached unsplit segments (no waiting): the
  /// smallest one of at least `needed` bytes, else the largest ones until
  /// `needed` bytes are returned. Whether anything was returned.
  bool release_available_cached(size_t needed) {
    std::vector<Segment*> cands;
    for (Segment* s : segments)
      if (whole_and_cached(s)) cands.push_back(s);
    if (cands.empty()) return false;
    Segment* best = nullptr;
    for (Segment* s : cands)
      if (s->size >= needed && (best == nullptr || s->size < best->size)) best = s;
    if (best != nullptr) {
      release_segment(best);
      return true;
    }
    std::sort(cands.begin(), cands.end(), [](Segment* a, Segment* b) { return a->size > b->size; });
    size_t freed = 0;
    for (Segment* s : cands) {
      if (freed >= needed) break;
      freed += s->size;
      release_segment(s);
    }
    return true;
  }

  /// Out-of-memory stage 2 and empty_cache: waits for every pending event, then
  /// returns every cached unsplit segment and unmaps every unused granule.
  void release_all_cached() {
    synchronize_events();
    for (size_t i = segments.size(); i-- > 0;)
      if (i < segments.size() && whole_and_cached(segments[i])) release_segment(segments[i]);
    if (use_expandable) shrink_expandable();
    // Stream-ordered frees (these and earlier ones) give memory back only when
    // their streams reach them: wait, so that what follows can use it.
    if (dev.async()) dev.device_synchronize();
  }

  /// Garbage collection: while reserved memory is above the threshold, return
  /// the large pool's cached unsplit segments, least recently freed first.
  void garbage_collect() {
    const auto reserved = static_cast<size_t>(stats.reserved_bytes.all_current());
    if (reserved <= gc_bytes) return;
    std::vector<Segment*> cands;
    for (Segment* s : segments)
      if (!s->small && whole_and_cached(s)) cands.push_back(s);
    std::sort(cands.begin(), cands.end(),
              [](Segment* a, Segment* b) { return a->first->free_tick < b->first->free_tick; });
    size_t freed = 0;
    for (Segment* s : cands) {
      if (reserved - freed <= gc_bytes) break;
      freed += s->size;
      release_segment(s);
    }
  }

  // ------------------------------------------------------ expandable segments
  Segment* expandable_segment(StreamPools& sp, bool small) {
    const int e = small ? 1 : 0;
    if (sp.expandable[e] != nullptr) return sp.expandable[e];
    void* base = dev.va_reserve(va_size);
    if (base == nullptr) {
      sp.expandable_failed[e] = true;  // no address space: this pool uses plain segments
      return nullptr;
    }
    auto* s = new Segment;
    s->base = static_cast<char*>(base);
    s->size = va_size;
    s->pools = &sp;
    s->small = small;
    s->expandable = true;
    s->index = segments.size();
    segments.push_back(s);
    Block* b = blocks.make();
    b->ptr = s->base;
    b->size = va_size;
    b->segment = s;
    b->mapped = false;
    s->first = b;
    sp.expandable[e] = s;
    return s;
  }

  /// Maps granules of the stream's expandable segment so that a free block of
  /// `size` exists; returns it (out of the pool), or nullptr.
  Block* grow(StreamPools& sp, size_t size, bool small, std::string* msg) {
    Segment* s = expandable_segment(sp, small);
    if (s == nullptr) return nullptr;
    // The unmapped range needing the fewest new bytes, counting a cached block just before it.
    Block* best = nullptr;
    size_t best_map = kSizeMax;
    for (Block* u = s->first; u != nullptr; u = u->next) {
      if (u->mapped) continue;
      const size_t before = (u->prev != nullptr && u->prev->in_pool) ? u->prev->size : 0;
      const size_t need = round_up(size > before ? size - before : granularity, granularity);
      if (need <= u->size && need < best_map) best = u, best_map = need;
    }
    if (best == nullptr) {
      *msg = "the expandable segment's address space is used up";
      return nullptr;
    }
    if (over_limit(best_map, msg)) return nullptr;
    msg->clear();
    if (!dev.va_map(best->ptr, best_map, msg)) return nullptr;
    ++stats.num_device_alloc;
    s->mapped += best_map;
    inc(stats.reserved_bytes, small, static_cast<int64_t>(best_map));
    record(TraceAction::SegmentMap, reinterpret_cast<uintptr_t>(best->ptr), best_map, sp.stream);
    if (best_map < best->size) {
      Block* rest = blocks.make();
      rest->ptr = best->ptr + best_map;
      rest->size = best->size - best_map;
      rest->segment = s;
      rest->mapped = false;
      rest->prev = best;
      rest->next = best->next;
      if (best->next != nullptr) best->next->prev = rest;
      best->next = rest;
      best->size = best_map;
    }
    best->mapped = true;
    Block* merged = merge_free(best);
    return merged;  // not in the pool: the caller allocates from it
  }

  /// Unmaps the whole granules inside cached blocks of expandable segments, and
  /// releases segments left with nothing mapped. Waits for the device first:
  /// a cached block's last kernels may still be queued.
  void shrink_expandable() {
    std::vector<Block*> cands;
    for (Segment* s : segments) {
      if (!s->expandable) continue;
      for (Block* b = s->first; b != nullptr; b = b->next) {
        if (!b->in_pool) continue;
        const size_t lo = round_up(static_cast<size_t>(b->ptr - s->base), granularity);
        const size_t hi = round_down(static_cast<size_t>(b->ptr - s->base) + b->size, granularity);
        if (hi > lo) cands.push_back(b);
      }
    }
    if (!cands.empty() && dev.async()) dev.device_synchronize();
    for (Block* b : cands) {
      Segment* s = b->segment;
      const size_t off = static_cast<size_t>(b->ptr - s->base);
      const size_t lo = round_up(off, granularity), hi = round_down(off + b->size, granularity);
      pool_remove(b);
      // b keeps the head [off, lo) when not empty; the middle is unmapped; a tail stays mapped.
      Block* tail = nullptr;
      if (off + b->size > hi) {
        tail = blocks.make();
        tail->ptr = s->base + hi;
        tail->size = off + b->size - hi;
        tail->segment = s;
        tail->mapped = true;
        tail->next = b->next;
        if (b->next != nullptr) b->next->prev = tail;
        b->next = tail;
        tail->prev = b;
        b->size = hi - off;
      }
      Block* mid = b;
      if (lo > off) {
        mid = blocks.make();
        mid->ptr = s->base + lo;
        mid->size = hi - lo;
        mid->segment = s;
        mid->prev = b;
        mid->next = b->next;
        if (b->next != nullptr) b->next->prev = mid;
        b->next = mid;
        b->size = lo - off;
        pool_insert(b);
      }
      mid->mapped = false;
      dev.va_unmap(mid->ptr, mid->size);
      ++stats.num_device_free;
      s->mapped -= mid->size;
      dec(stats.reserved_bytes, s->small, static_cast<int64_t>(mid->size));
      record(TraceAction::SegmentUnmap, reinterpret_cast<uintptr_t>(mid->ptr), mid->size, s->pools->stream);
      if (tail != nullptr) pool_insert(tail);
      merge_unmapped(mid);
    }
    for (size_t i = segments.size(); i-- > 0;) {
      if (i >= segments.size()) continue;
      Segment* s = segments[i];
      if (!s->expandable || s->mapped != 0) continue;
      // Nothing mapped: one unmapped block spans it.
      s->pools->expandable[s->small ? 1 : 0] = nullptr;
      dev.va_release(s->base, s->size);
      blocks.recycle(s->first);
      drop_segment(s);
    }
  }

  void merge_unmapped(Block* b) {
    for (Block* n = b->next; n != nullptr && !n->mapped; n = b->next) absorb_next(b);
    while (b->prev != nullptr && !b->prev->mapped) {
      b = b->prev;
      absorb_next(b);
    }
  }

  /// b takes over its next neighbour (both out of pools).
  [[gnu::always_inline]] void absorb_next(Block* b) {
    Block* n = b->next;
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    blocks.recycle(n);
  }

  /// Merges the free mapped block b (out of the pool) with cached neighbours;
  /// returns the merged block, still out of the pool.
  [[gnu::always_inline]] Block* merge_free(Block* b) {
    Block* p = b->prev;
    if (p != nullptr && p->in_pool) {
      pool_remove(p);
      p->size += b->size;
      p->next = b->next;
      if (b->next != nullptr) b->next->prev = p;
      if (b->context) p->context.reset();
      blocks.recycle(b);
      b = p;
    }
    Block* n = b->next;
    if (n != nullptr && n->in_pool) {
      pool_remove(n);
      absorb_next(b);
    }
    return b;
  }

  // ------------------------------------------------------------------- free
  [[gnu::always_inline]] void free(void* ptr) {
    Block* b = live.erase(ptr);
    if (b == nullptr)
      throw ValueError(detail::str("CachingAllocator::free on ", dev.device_name(), ": ", ptr,
                                   " is not a live allocation of this allocator"));
    b->allocated = false;
    const bool small = b->segment->small;
    dec(stats.allocation, small, 1);
    dec(stats.allocated_bytes, small, static_cast<int64_t>(b->size));
    dec(stats.requested_bytes, small, static_cast<int64_t>(b->requested));
    if (b->size >= max_split) stats.oversize_allocations.decrease(1);
    record(TraceAction::FreeRequested, reinterpret_cast<uintptr_t>(b->ptr), b->size, b->segment->pools->stream);
    if (!b->uses.empty()) [[unlikely]] {
      record_events(b);
      if (b->event_count != 0) {  // still active until its events complete
        stats.active.pend(small, 1);
        stats.active_bytes.pend(small, static_cast<int64_t>(b->size));
        return;
      }
    }
    free_block(b);
  }

  /// An event on each stream that used b; b waits for them (poll_events).
  void record_events(Block* b) {
    for (TsrStream s : b->uses) {
      TsrEvent ev = nullptr;
      try {
        if (spare_events.empty()) {
          ev = dev.event_create();
        } else {
          ev = spare_events.back();
          spare_events.pop_back();
        }
        dev.event_record(ev, s);
      } catch (...) {
        // No event: wait for the device instead, so that reuse stays safe.
        if (ev != nullptr) spare_events.push_back(ev);
        try {
          dev.device_synchronize();
        } catch (...) {
        }
        continue;
      }
      pools(s).events.emplace_back(ev, b);
      ++b->event_count;
      ++pending_events;
    }
    b->uses.clear();
  }

  /// b (neither allocated nor pending) returns to its pool, coalesced.
  [[gnu::always_inline]] void free_block(Block* b) {
    record(TraceAction::FreeCompleted, reinterpret_cast<uintptr_t>(b->ptr), b->size, b->segment->pools->stream);
    b->requested = 0;
    b->context.reset();
    if (plugin) {
      release_segment(b->segment);
      return;
    }
    if (b->segment->small) return_small(b);
    else pool_insert(merge_free(b));
  }

  void event_done(TsrEvent ev, Block* b) {
    spare_events.push_back(ev);
    --pending_events;
    if (--b->event_count == 0) {
      stats.active.unpend(b->segment->small, 1);
      stats.active_bytes.unpend(b->segment->small, static_cast<int64_t>(b->size));
      free_block(b);
    }
  }

  /// Returns the blocks whose events completed; never blocks. Events on one
  /// stream complete in order: the first incomplete one ends that stream's scan.
  void poll_events() {
    for (auto& sp : streams) {
      auto& q = sp->events;
      while (!q.empty()) {
        auto [ev, b] = q.front();
        if (!dev.event_query(ev)) break;
        q.pop_front();
        event_done(ev, b);
      }
    }
  }

  /// The pools of a stream that is going away: see CachingAllocator::release_stream.
  void release_stream(TsrStream stream) {
    StreamPools* sp = nullptr;
    for (auto& p : streams)
      if (p->stream == stream) sp = p.get();
    if (sp == nullptr) return;
    synchronize_events();  // events recorded on it, and its blocks' pending frees
    bool expandable = false;
    for (size_t i = segments.size(); i-- > 0;) {
      if (i >= segments.size() || segments[i]->pools != sp) continue;
      if (segments[i]->expandable) expandable = true;
      else if (whole_and_cached(segments[i])) release_segment(segments[i]);
    }
    if (expandable) shrink_expandable();
    for (const Segment* s : segments)
      if (s->pools == sp) return;  // something is still allocated there: keep its pools
    if (last_pools == sp) last_pools = nullptr;
    std::erase_if(streams, [sp](const std::unique_ptr<StreamPools>& p) { return p.get() == sp; });
  }

  void synchronize_events() {
    ++stats.num_sync_all_streams;
    for (auto& sp : streams) {
      auto& q = sp->events;
      while (!q.empty()) {
        auto [ev, b] = q.front();
        dev.event_synchronize(ev);
        q.pop_front();
        event_done(ev, b);
      }
    }
  }

  // -------------------------------------------------------------------- oom
  /// num_alloc_retries counts allocations that had to release the cache and
  /// retry: once each, also when the cache release hook's pass retries again.
  void count_retry() {
    if (!retry_counted) ++stats.num_alloc_retries;
  }

  [[noreturn]] void throw_oom(StreamPools& sp, size_t size, size_t nbytes, const std::string& device_msg) {
    if (defer_oom) throw DeferredOom{};  // the caller releases its caches first (set_cache_release_hook)
    ++stats.num_ooms;
    const size_t total = dev.total_memory();
    const auto reserved = static_cast<uint64_t>(stats.reserved_bytes.all_current());
    const auto allocated = static_cast<uint64_t>(stats.allocated_bytes.all_current());
    const uint64_t free_on_device = total > reserved ? total - reserved : 0;
    record(TraceAction::Oom, 0, nbytes, sp.stream, free_on_device);
    std::ostringstream os;
    os << "Tessera out of memory on " << dev.device_name() << ": tried to allocate " << format_bytes(nbytes) << " ("
       << nbytes << " bytes";
    if (size != nbytes) os << ", " << size << " after rounding";
    os << "). Allocated by Tessera: " << format_bytes(allocated) << "; reserved by Tessera but unallocated: "
       << format_bytes(reserved - allocated) << "; ";
    if (limit != 0) {
      os << "limit: " << format_bytes(limit) << " (per_process_memory_fraction " << cfg.per_process_memory_fraction
         << " of the device's " << format_bytes(total) << ")";
    } else if (total != 0) {
      os << "device capacity: " << format_bytes(total) << ", no limit set";
    } else {
      os << "device capacity unknown, no limit set";
    }
    os << ". The device says: " << (device_msg.empty() ? std::string("(nothing)") : "\"" + device_msg + "\"") << ".";
    const uint64_t unallocated = reserved - allocated;
    std::vector<std::string> hints;
    if (unallocated > 0 && unallocated >= nbytes / 4) {
      if (max_split == kSizeMax && !use_expandable)
        hints.push_back("max_split_size_mb:<MiB, at least 20> (cached blocks that large are never split)");
      if (!cfg.expandable_segments && dev.expandable())
        hints.push_back("expandable_segments:True (segments grow in place instead)");
    }
    if (!hints.empty()) {
      os << " Reserved but unallocated memory is fragmented; TESSERA_ALLOC_CONF may help: ";
      for (size_t i = 0; i < hints.size(); ++i) os << (i ? ", or " : "") << hints[i];
      os << ".";
    }
    if (limit != 0 && cfg.per_process_memory_fraction < 1.0)
      os << " The limit is set: a larger per_process_memory_fraction (TESSERA_ALLOC_CONF or "
            "set_per_process_memory_fraction) may help.";
    if (!oom_note.empty()) os << " " << oom_note;
    throw OutOfMemoryError(os.str());
  }

  // ---------------------------------------------------------------- queries
  BlockState state_of(const Block* b) const {
    if (b->allocated) return BlockState::ActiveAllocated;
    if (b->in_pool) return BlockState::Inactive;
    return BlockState::ActivePendingFree;
  }

  std::string check() const;
};

namespace {
// The current public call's stack, seen by the history records it makes.
struct ContextScope {
  CachingAllocator::Impl& m;
  ContextScope(CachingAllocator::Impl& impl, std::shared_ptr<const StackContext> c) : m(impl) {
    if (c) m.context = std::move(c);
  }
  ~ContextScope() {
    if (m.context) m.context.reset();
  }
};
}  // namespace

CachingAllocator::CachingAllocator(DeviceMemory& device, AllocatorConfig config, int device_index)
    : device_(device), config_(std::move(config)) {
  if (config_.per_process_memory_fraction > 0) {
    const size_t total = device_.total_memory();
    if (total != 0)
      limit_ = static_cast<size_t>(config_.per_process_memory_fraction * static_cast<double>(total));
  }
  impl_ = std::make_unique<Impl>(device_, config_, limit_, device_index);
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mu_);
  Impl& m = *impl_;
  try {
    m.history = false;
    m.release_all_cached();
  } catch (...) {
    // The device failed while waiting: leave the rest to it.
  }
  for (TsrEvent ev : m.spare_events) device_.event_destroy(ev);
  m.spare_events.clear();
  for (Segment* s : m.segments) delete s;  // segments with live blocks stay with the device
  m.segments.clear();
}


size_t CachingAllocator::round_size(size_t nbytes) const noexcept { return round_request(config_, nbytes); }

void* CachingAllocator::allocate(size_t nbytes, TsrStream stream) {
  if (nbytes == 0) return nullptr;
  if (nbytes > (kSizeMax >> 1)) {
    std::lock_guard lock(mu_);
    ++impl_->stats.num_ooms;
    throw OutOfMemoryError(detail::str("Tessera out of memory on ", device_.device_name(), ": tried to allocate ",
                                       nbytes, " bytes, more than any device holds"));
  }
  const size_t size = round_request(config_, nbytes);
  std::shared_ptr<const StackContext> ctx;
  if (history_on_.load(std::memory_order_relaxed)) [[unlikely]] ctx = capture_context(__builtin_return_address(0));
  if (release_hook_ == nullptr) {
    std::lock_guard lock(mu_);
    ContextScope scope(*impl_, std::move(ctx));
    return impl_->allocate(nbytes, stream, size);
  }
  {
    std::lock_guard lock(mu_);
    ContextScope scope(*impl_, ctx);
    impl_->defer_oom = true;
    try {
      void* p = impl_->allocate(nbytes, stream, size);
      impl_->defer_oom = false;
      return p;
    } catch (const DeferredOom&) {
      impl_->defer_oom = false;
    } catch (...) {
      impl_->defer_oom = false;
      throw;
    }
  }
  return allocate_after_release(nbytes, stream, size, std::move(ctx));
}

void* CachingAllocator::allocate_after_release(size_t nbytes, TsrStream stream, size_t size,
                                               std::shared_ptr<const StackContext> ctx) {
  const std::string note = release_hook_();  // outside the lock: it frees into this allocator
  std::lock_guard lock(mu_);
  ContextScope scope(*impl_, std::move(ctx));
  impl_->oom_note = note;
  impl_->retry_counted = true;
  try {
    void* p = impl_->allocate(nbytes, stream, size);
    impl_->oom_note.clear();
    impl_->retry_counted = false;
    return p;
  } catch (...) {
    impl_->oom_note.clear();
    impl_->retry_counted = false;
    throw;
  }
}

std::shared_ptr<const StackContext> CachingAllocator::capture_context(const void* caller) {
  ContextRecorder recorder;
  {
    std::lock_guard lock(recorder_mu_);
    recorder = recorder_;
  }
  return capture_stack(caller, 32, &recorder);
}

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::shared_ptr<const StackContext> ctx;
  if (history_on_.load(std::memory_order_relaxed)) [[unlikely]] ctx = capture_context(__builtin_return_address(0));
  std::lock_guard lock(mu_);
  ContextScope scope(*impl_, std::move(ctx));
  impl_->free(ptr);
}

void CachingAllocator::record_stream(void* ptr, TsrStream stream) {
  std::lock_guard lock(mu_);
  Block* b = impl_->live.find(ptr);
  if (b == nullptr)
    throw ValueError(detail::str("record_stream on ", device_.device_name(), ": ", ptr,
                                 " is not a live allocation of this allocator"));
  if (!device_.async() || stream == b->segment->pools->stream) return;
  if (std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end()) b->uses.push_back(stream);
}

void CachingAllocator::process_events() {
  std::lock_guard lock(mu_);
  impl_->poll_events();
}

void CachingAllocator::empty_cache() {
  std::shared_ptr<const StackContext> ctx;
  if (history_on_.load(std::memory_order_relaxed)) ctx = capture_context(__builtin_return_address(0));
  std::lock_guard lock(mu_);
  ContextScope scope(*impl_, std::move(ctx));
  impl_->release_all_cached();
}

void CachingAllocator::set_memory_fraction(double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw ValueError(detail::str("set_per_process_memory_fraction on ", device_.device_name(), ": ", fraction,
                                 " is not accepted: the fraction must be > 0 and <= 1"));
  const size_t total = device_.total_memory();
  if (total == 0)
    throw ValueError(detail::str("set_per_process_memory_fraction on ", device_.device_name(),
                                 ": the device cannot tell its total memory (its plugin has no memory_info), so "
                                 "a fraction of it means nothing"));
  std::lock_guard lock(mu_);
  config_.per_process_memory_fraction = fraction;
  limit_ = static_cast<size_t>(fraction * static_cast<double>(total));
  Impl& m = *impl_;
  m.limit = limit_;
  if (config_.garbage_collection_threshold > 0)
    m.gc_bytes = static_cast<size_t>(config_.garbage_collection_threshold * static_cast<double>(limit_));
}

void CachingAllocator::release_stream(TsrStream stream) {
  std::lock_guard lock(mu_);
  impl_->release_stream(stream);
}

void CachingAllocator::release_spare_events() {
  std::lock_guard lock(mu_);
  for (TsrEvent ev : impl_->spare_events) device_.event_destroy(ev);
  impl_->spare_events.clear();
}

bool CachingAllocator::lookup(const void* ptr, size_t* size, size_t* requested) const {
  std::lock_guard lock(mu_);
  const Block* b = impl_->live.find(ptr);
  if (b == nullptr) return false;
  if (size != nullptr) *size = b->size;
  if (requested != nullptr) *requested = b->requested;
  return true;
}

DeviceStats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return impl_->stats.export_stats();
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mu_);
  impl_->stats.reset_peak();
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard lock(mu_);
  impl_->stats.reset_accumulated();
}

void CachingAllocator::record_history(bool enabled, size_t max_entries) {
  std::lock_guard lock(mu_);
  Impl& m = *impl_;
  m.history = enabled && max_entries > 0;
  m.history_max = max_entries;
  m.ring.clear();
  m.ring.shrink_to_fit();
  m.ring_next = 0;
  history_on_.store(m.history, std::memory_order_relaxed);
}

void CachingAllocator::set_context_recorder(ContextRecorder recorder) {
  std::lock_guard lock(recorder_mu_);
  recorder_ = std::move(recorder);
}

Snapshot CachingAllocator::snapshot() {
  // Raw state under the lock; symbolization (slow: dladdr, demangling) after.
  struct RawBlock {
    uint64_t address, size, requested;
    BlockState state;
    std::shared_ptr<const StackContext> context;
  };
  struct RawSegment {
    SnapshotSegment seg;
    std::shared_ptr<const StackContext> context;
    std::vector<RawBlock> blocks;
  };
  std::vector<RawSegment> raw;
  std::vector<Record> trace;
  Snapshot out;
  {
    std::shared_ptr<const StackContext> ctx;
    if (history_on_.load(std::memory_order_relaxed)) ctx = capture_context(__builtin_return_address(0));
    std::lock_guard lock(mu_);
    Impl& m = *impl_;
    ContextScope scope(m, std::move(ctx));
    const int64_t active_bytes = m.stats.active_bytes.all_current(m.stats.allocated_bytes);
    m.record(TraceAction::Snapshot, 0, static_cast<uint64_t>(active_bytes), nullptr);
    out.device = m.device_index;
    out.device_name = device_.device_name();
    out.config = config_;
    out.stats = m.stats.export_stats();
    std::vector<Segment*> segs = m.segments;
    std::sort(segs.begin(), segs.end(), [](Segment* a, Segment* b) { return a->base < b->base; });
    for (Segment* s : segs) {
      RawSegment* cur = nullptr;
      for (Block* b = s->first; b != nullptr; b = b->next) {
        if (!b->mapped) {
          cur = nullptr;  // an expandable segment's hole ends its mapped range
          continue;
        }
        if (cur == nullptr) {
          raw.emplace_back();
          cur = &raw.back();
          cur->seg.device = m.device_index;
          cur->seg.address = reinterpret_cast<uintptr_t>(b->ptr);
          cur->seg.stream = stream_id(s->pools->stream);
          cur->seg.small = s->small;
          cur->seg.is_expandable = s->expandable;
          cur->context = s->context;
        }
        const BlockState st = m.state_of(b);
        cur->seg.total_size += b->size;
        if (st == BlockState::ActiveAllocated) {
          cur->seg.allocated_size += b->size;
          cur->seg.requested_size += b->requested;
        }
        if (st != BlockState::Inactive) cur->seg.active_size += b->size;
        cur->blocks.push_back({reinterpret_cast<uintptr_t>(b->ptr), b->size, b->requested, st, b->context});
      }
    }
    if (m.history) {
      trace.reserve(m.ring.size());
      for (size_t i = 0; i < m.ring.size(); ++i) trace.push_back(m.ring[(m.ring_next + i) % m.ring.size()]);
    }
  }
  Symbolizer sym;
  out.segments.reserve(raw.size());
  for (RawSegment& r : raw) {
    r.seg.frames = sym.frames(r.context.get());
    for (RawBlock& b : r.blocks)
      r.seg.blocks.push_back({b.address, b.size, b.requested, b.state, sym.frames(b.context.get())});
    out.segments.push_back(std::move(r.seg));
  }
  out.trace.reserve(trace.size());
  for (const Record& r : trace)
    out.trace.push_back({r.action, r.addr, r.size, stream_id(r.stream), r.time_us, r.device_free,
                         sym.frames(r.context.get())});
  return out;
}

std::string CachingAllocator::summary() const {
  const DeviceStats s = stats();
  std::ostringstream os;
  char line[160];
  const std::string rule = "|" + std::string(79, '-') + "|\n";
  os << rule;
  std::snprintf(line, sizeof line, "| %-77s |\n",
                detail::str("Tessera memory summary, device ", device_.device_name()).c_str());
  os << line << rule;
  std::snprintf(line, sizeof line, "| %-25s | %10s | %10s | %10s | %10s |\n", "Metric", "Cur Usage", "Peak Usage",
                "Tot Alloc", "Tot Freed");
  os << line << rule;
  auto row = [&](const char* name, const StatArray& a, bool bytes) {
    static const char* const pools[3] = {"", "      from large pool", "      from small pool"};
    const int order[3] = {kAllPools, kLargePool, kSmallPool};
    for (int k = 0; k < 3; ++k) {
      const Stat& st = a[order[k]];
      auto f = [bytes](int64_t v) {
        return bytes ? format_bytes(static_cast<uint64_t>(v < 0 ? 0 : v)) : std::to_string(v);
      };
      std::snprintf(line, sizeof line, "| %-25s | %10s | %10s | %10s | %10s |\n", k == 0 ? name : pools[k],
                    f(st.current).c_str(), f(st.peak).c_str(), f(st.allocated).c_str(), f(st.freed).c_str());
      os << line;
    }
    os << rule;
  };
  row("Allocated memory", s.allocated_bytes, true);
  row("Active memory", s.active_bytes, true);
  row("Requested memory", s.requested_bytes, true);
  row("Reserved memory", s.reserved_bytes, true);
  row("Non-releasable memory", s.inactive_split_bytes, true);
  row("Allocations", s.allocation, false);
  row("Active allocs", s.active, false);
  row("Reserved segments", s.segment, false);
  row("Non-releasable allocs", s.inactive_split, false);
  std::snprintf(line, sizeof line, "| %-25s | %10" PRId64 " | %10" PRId64 " | %10" PRId64 " | %10" PRId64 " |\n",
                "Oversize allocations", s.oversize_allocations.current, s.oversize_allocations.peak,
                s.oversize_allocations.allocated, s.oversize_allocations.freed);
  os << line;
  std::snprintf(line, sizeof line, "| %-25s | %10" PRId64 " | %10" PRId64 " | %10" PRId64 " | %10" PRId64 " |\n",
                "Oversize segments", s.oversize_segments.current, s.oversize_segments.peak,
                s.oversize_segments.allocated, s.oversize_segments.freed);
  os << line << rule;
  std::snprintf(line, sizeof line, "| %-77s |\n",
                detail::str("device allocs: ", s.num_device_alloc, ", device frees: ", s.num_device_free,
                            ", alloc retries: ", s.num_alloc_retries, ", OOMs: ", s.num_ooms).c_str());
  os << line << rule;
  return os.str();
}

std::string CachingAllocator::check_invariants() const {
  std::lock_guard lock(mu_);
  return impl_->check();
}

std::string CachingAllocator::Impl::check() const {
  std::ostringstream err;
  auto fail = [&err](auto&&... parts) {
    if (err.tellp() == 0) ((err << parts), ...);
  };
  DeviceStats want;
  size_t in_pool = 0, allocated = 0, pending = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment* s = segments[i];
    if (s->index != i) fail("segment ", i, " has index ", s->index);
    const char* cursor = s->base;
    size_t mapped = 0;
    const Block* prev = nullptr;
    for (const Block* b = s->first; b != nullptr; prev = b, b = b->next) {
      if (b->segment != s) fail("block ", (void*)b->ptr, " names another segment");
      if (b->prev != prev) fail("block ", (void*)b->ptr, " has a wrong prev link");
      if (b->ptr != cursor) fail("segment ", (void*)s->base, ": block at ", (void*)b->ptr, " where ", (void*)cursor,
                                 " was expected (gap or overlap)");
      if (b->size == 0 || b->size % kMinBlockSize != 0) {
        if (!plugin) fail("block ", (void*)b->ptr, " has size ", b->size);
      }
      cursor = b->ptr + b->size;
      const bool small = s->small;
      const int states = int(b->allocated) + int(b->in_pool) + int(b->event_count > 0) + int(!b->mapped);
      if (b->mapped) mapped += b->size;
      if (!b->mapped && (b->allocated || b->in_pool || b->event_count > 0 || !s->expandable))
        fail("unmapped block ", (void*)b->ptr, " is in use or outside an expandable segment");
      if (states != 1) fail("block ", (void*)b->ptr, " is in ", states, " states at once");
      if (b->allocated) {
        ++allocated;
        if (live.find(b->ptr) != b) fail("allocated block ", (void*)b->ptr, " is missing from the live table");
        inc(want.allocation, small, 1);
        inc(want.allocated_bytes, small, static_cast<int64_t>(b->size));
        inc(want.requested_bytes, small, static_cast<int64_t>(b->requested));
      }
      if (b->allocated || b->event_count > 0) {
        inc(want.active, small, 1);
        inc(want.active_bytes, small, static_cast<int64_t>(b->size));
      }
      pending += static_cast<size_t>(b->event_count);
      if (b->in_pool) {
        ++in_pool;
        if (prev != nullptr && prev->in_pool) fail("cached neighbours at ", (void*)prev->ptr, " not coalesced");
        if (counts_inactive_split(b)) {
          inc(want.inactive_split, small, 1);
          inc(want.inactive_split_bytes, small, static_cast<int64_t>(b->size));
        }
      }
      if (!b->mapped && prev != nullptr && !prev->mapped) fail("unmapped neighbours not merged");
      if (s->expandable && b->mapped && (static_cast<size_t>(b->ptr - s->base) % granularity != 0) &&
          (prev == nullptr || !prev->mapped))
        fail("mapped range at ", (void*)b->ptr, " not granule-aligned");
    }
    if (cursor != s->base + s->size) fail("segment ", (void*)s->base, " blocks end at ", (void*)cursor);
    if (s->expandable) {
      if (mapped != s->mapped) fail("expandable segment maps ", s->mapped, " bytes but its blocks ", mapped);
      inc(want.reserved_bytes, s->small, static_cast<int64_t>(mapped));
    } else {
      inc(want.segment, s->small, 1);
      inc(want.reserved_bytes, s->small, static_cast<int64_t>(s->size));
    }
  }
  size_t pooled = 0, queued = 0;
  for (const auto& sp : streams) {
    pooled += sp->small.count() + sp->large.size();
    queued += sp->events.size();
    for (const Block* b : sp->large)
      if (!b->in_pool || b->segment->small || b->segment->pools != sp.get()) fail("large pool holds a stray block");
    size_t listed = 0;
    sp->small.for_each([&](size_t c, const Block* b) {
      ++listed;
      if (!b->in_pool || !b->segment->small || !internal::SmallBins::listed_right(b, c) ||
          b->segment->pools != sp.get())
        fail("small bin ", c, " holds a stray block of ", b->size, " bytes");
    });
    if (listed != sp->small.count()) fail("small bins list ", listed, " blocks but count ", sp->small.count());
  }
  if (pooled != in_pool) fail("pools hold ", pooled, " blocks, ", in_pool, " blocks are cached");
  if (allocated != live.size()) fail("live table holds ", live.size(), " blocks, ", allocated, " are allocated");
  if (pending != pending_events || queued != pending_events)
    fail("pending events: counter ", pending_events, ", blocks ", pending, ", queues ", queued);
  const DeviceStats have_stats = stats.export_stats();
  const std::pair<const char*, std::pair<const StatArray*, const StatArray*>> arrays[] = {
      {"allocation", {&want.allocation, &have_stats.allocation}},
      {"segment", {&want.segment, &have_stats.segment}},
      {"active", {&want.active, &have_stats.active}},
      {"inactive_split", {&want.inactive_split, &have_stats.inactive_split}},
      {"allocated_bytes", {&want.allocated_bytes, &have_stats.allocated_bytes}},
      {"reserved_bytes", {&want.reserved_bytes, &have_stats.reserved_bytes}},
      {"active_bytes", {&want.active_bytes, &have_stats.active_bytes}},
      {"inactive_split_bytes", {&want.inactive_split_bytes, &have_stats.inactive_split_bytes}},
      {"requested_bytes", {&want.requested_bytes, &have_stats.requested_bytes}}};
  for (const auto& [name, pair] : arrays)
    for (int p = 0; p < 3; ++p) {
      const Stat& have = (*pair.second)[p];
      if ((*pair.first)[p].current != have.current)
        fail("stat ", name, "[", p, "].current is ", have.current, ", the blocks say ", (*pair.first)[p].current);
      if (have.peak < have.current) fail("stat ", name, "[", p, "] peak below current");
    }
  return err.str();
}

}  // namespace tessera::memory
