// memory/memory_stats.h — the caching allocator's statistics, named as
// torch.cuda.memory_stats() names them (docs/memory.md defines each one).
//
// Plain values: a CachingAllocator updates its DeviceStats under its lock and
// hands out copies. Thread-safety: none of its own (a value type).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace tessera::memory {

/// One quantity's history since the last resets.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;       // highest `current` since reset_peak()
  int64_t allocated = 0;  // sum of increases since reset_accumulated()
  int64_t freed = 0;      // sum of decreases since reset_accumulated()

  void increase(int64_t n) noexcept {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void decrease(int64_t n) noexcept {
    current -= n;
    freed += n;
  }
  void reset_peak() noexcept { peak = current; }
  void reset_accumulated() noexcept { allocated = 0, freed = 0; }
};

/// Which pools a stat covers: index 0 all, 1 the small pool, 2 the large pool.
enum StatPool : int { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;

/// Every statistic of one device's allocator.
struct DeviceStats {
  StatArray allocation;            // blocks handed out and not yet freed
  StatArray segment;               // device allocations held (not counting expandable segments)
  StatArray active;                // blocks allocated or waiting for their streams' events
  StatArray inactive_split;        // cached blocks inside split segments
  StatArray allocated_bytes;       // bytes of `allocation` (rounded sizes)
  StatArray reserved_bytes;        // bytes of device memory held (segments, mapped granules)
  StatArray active_bytes;          // bytes of `active`
  StatArray inactive_split_bytes;  // bytes of `inactive_split`
  StatArray requested_bytes;       // bytes asked by the callers of `allocation` (before rounding)
  int64_t num_alloc_retries = 0;   // allocations retried after synchronizing and freeing all cached blocks
  int64_t num_ooms = 0;            // OutOfMemoryErrors thrown
  int64_t num_sync_all_streams = 0;  // times every pending event was waited for (OOM retry, empty_cache)
  int64_t num_device_alloc = 0;    // raw allocations and granule mappings
  int64_t num_device_free = 0;     // raw deallocations and granule unmappings
  int64_t max_split_size = -1;     // the setting in bytes; -1: no limit
  Stat oversize_allocations;       // allocations of at least max_split_size
  Stat oversize_segments;          // segments of at least max_split_size

  /// Sets every peak to its current value.
  void reset_peak() noexcept;
  /// Sets every allocated/freed sum and every num_* counter to 0.
  void reset_accumulated() noexcept;
  /// The flat view torch.cuda.memory_stats() gives: "allocated_bytes.all.current",
  /// "num_ooms", "oversize_allocations.peak", ...
  std::map<std::string, int64_t> to_map() const;
};

}  // namespace tessera::memory
