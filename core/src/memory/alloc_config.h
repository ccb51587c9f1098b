// memory/alloc_config.h — the caching allocator's settings and the parser of
// TESSERA_ALLOC_CONF.
//
// The syntax is PYTORCH_CUDA_ALLOC_CONF's: `key:value,key:value`, spaces ignored.
// Keys (docs/memory.md has each one's effect):
//   max_split_size_mb:N               N >= 20 (MiB): blocks this large are never split
//   roundup_power2_divisions:D        D a power of two (0 or 1: off), for every size, or
//   roundup_power2_divisions:[256:1,512:2,>:4]   per size band (MiB bounds, powers of two)
//   garbage_collection_threshold:X    0 < X < 1
//   per_process_memory_fraction:X     0 < X <= 1 (of DeviceMemory::total_memory())
//   expandable_segments:True|False
//   backend:caching|plugin
// Thread-safety: AllocatorConfig is a value; parse_alloc_conf is pure.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace tessera::memory {

/// Which allocator serves a device's tensors.
enum class AllocatorBackend {
  Caching,  // the core's caching allocator (the default)
  Plugin,   // the device's own allocate/deallocate per tensor, nothing cached
};

/// Settings of one CachingAllocator. The defaults are PyTorch's.
struct AllocatorConfig {
  /// Size bands of roundup_power2_divisions: band 0 holds sizes below 2 MiB, band
  /// i (1..14) sizes in [2^i, 2^(i+1)) MiB, band 15 sizes from 32 GiB.
  static constexpr size_t kRoundupBands = 16;

  /// Blocks of at least this size are never split; SIZE_MAX: no limit.
  size_t max_split_size = std::numeric_limits<size_t>::max();
  /// Divisions per power-of-two interval, by size band (0 or 1: 512 B rounding only).
  std::array<uint32_t, kRoundupBands> roundup_power2_divisions{};
  /// 0: off. Else reclaim cached blocks when reserved memory exceeds this
  /// fraction of the limit (see CachingAllocator).
  double garbage_collection_threshold = 0.0;
  /// 0: no limit. Else the device limit is this fraction of total_memory().
  double per_process_memory_fraction = 0.0;
  bool expandable_segments = false;
  AllocatorBackend backend = AllocatorBackend::Caching;
  /// The text this configuration was parsed from ("" for the defaults).
  std::string text;

  /// The band of a (rounded) request size for roundup_power2_divisions.
  static size_t roundup_band(size_t size) noexcept {
    if (size < (size_t{2} << 20)) return 0;
    const size_t band = static_cast<size_t>(std::bit_width(size) - 1) - 20;
    return band < kRoundupBands ? band : kRoundupBands - 1;
  }
  /// The divisions that apply to `size`.
  uint32_t divisions_for(size_t size) const noexcept { return roundup_power2_divisions[roundup_band(size)]; }
  /// The configuration as TESSERA_ALLOC_CONF text that parses back to it.
  std::string to_string() const;
  bool operator==(const AllocatorConfig&) const = default;
};

/// Parses TESSERA_ALLOC_CONF text ("" or all spaces: the defaults). Keys not
/// given keep their default. Throws tessera::ValueError naming the key, the
/// value and what is accepted for an unknown key, a malformed or an
/// out-of-range value, or a key given twice.
AllocatorConfig parse_alloc_conf(std::string_view text);

/// The configuration new allocators take: set_alloc_conf()'s, else
/// TESSERA_ALLOC_CONF's (read once, on first call), else the defaults.
/// Throws tessera::ValueError when TESSERA_ALLOC_CONF is malformed (on every
/// call, so that the error is seen where the allocator is first used).
/// Thread-safe.
AllocatorConfig current_alloc_conf();

/// Replaces the configuration new allocators take, from TESSERA_ALLOC_CONF-style
/// text given by the program (it wins over the environment). Meant to be called
/// before a device's first allocation: allocators already built keep theirs.
/// Throws tessera::ValueError as parse_alloc_conf (the setting is then
/// unchanged). Thread-safe.
void set_alloc_conf(std::string_view text);

}  // namespace tessera::memory
