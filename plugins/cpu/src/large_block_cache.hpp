// Reuse of large freed host blocks by the CPU allocator.
//
// A block of a few MiB or more comes from mmap and goes back to the OS when
// freed, so every large op output starts as fresh pages the kernel zero-fills
// on first touch: for a 16M-element add that costs as much as the add. Training
// loops and benchmarks free and reallocate the same sizes over and over, so the
// allocator keeps freed large blocks (exact size, rounded up to whole pages) and
// hands them out again, up to a total budget; beyond it blocks are freed.
//
// Thread-safe (one mutex: large allocations are rare next to their cost).
// Under memory pressure the cache gives everything back: an allocation that
// fails frees all cached blocks and tries once more (device.cpp).
// Blocks still cached at process exit are freed by the cache's destructor.
#pragma once

#include <cstddef>

namespace tessera::cpu {

/// Blocks smaller than this are never cached (malloc reuses them cheaply).
inline constexpr size_t kLargeBlockMin = size_t{1} << 20;

/// The size the allocator asks malloc for when nbytes >= kLargeBlockMin: whole
/// pages, so that requests of nearby sizes share blocks.
size_t large_block_size(size_t nbytes);

/// A cached block of exactly `size` bytes (from large_block_size), or nullptr.
void* large_block_take(size_t size);

/// Offers a block of `size` bytes (from aligned_malloc) to the cache; false if the cache is full (the
/// caller frees it).
bool large_block_give(void* block, size_t size);

/// The cache budget in bytes: TESSERA_CPU_CACHE_BYTES if set to a whole
/// decimal number (0 disables the cache; other text is ignored), else 1/8 of
/// physical memory capped at 2 GiB. Read once.
size_t large_block_budget();

/// Frees every cached block (the allocator calls it when an allocation fails,
/// then retries); returns the bytes freed. Thread-safe.
size_t large_block_release();

}  // namespace tessera::cpu
