// Host memory blocks aligned to kMemoryAlignment, as the CPU allocator hands out.
#pragma once

#include "device.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace tessera::cpu {

// Blocks of kPageAlignFrom bytes and more start on a 4 KiB page. Why: a kernel
// that stores to out[i] while loading in[i + k] stalls on every load when the
// two addresses agree in their low 12 bits ("4K aliasing": the CPU takes the
// load for a reload of the store). glibc's mmap'd blocks, NumPy's arrays among
// them, start 16 bytes into a page; a 64-byte-aligned output of the same kind
// started 48 bytes after its input modulo 4 KiB, right in the window, and a 1M
// float relu read from a NumPy array ran 1.5x slower than from one of ours
// (AMD Zen 4; a standalone loop: 133 us at +64 bytes, 89 us at -16). On a page
// boundary, an output sits just behind any input that starts inside a page.
inline constexpr size_t kPageAlignFrom = size_t{64} << 10;
inline constexpr size_t kPageSize = 4096;

// glibc's posix_memalign/aligned_alloc cost ~4x a plain malloc for small
// blocks, and allocation sits on the path of every tiny op. So over-allocate by
// the alignment and keep the distance to the raw block, in 16-byte units less
// one (malloc's blocks are 16-byte aligned: 1..256 units), in the byte just
// before the aligned pointer.
static_assert(alignof(std::max_align_t) >= 16, "aligned_malloc stores distances in 16-byte units");
static_assert(kMemoryAlignment >= 16 && kPageSize / 16 <= 256, "a distance must fit the byte before the block");

inline void* aligned_malloc(size_t nbytes) {
  const size_t align = nbytes >= kPageAlignFrom ? kPageSize : kMemoryAlignment;
  if (nbytes > SIZE_MAX - align) return nullptr;
  auto* raw = static_cast<unsigned char*>(std::malloc(nbytes + align));
  if (raw == nullptr) return nullptr;
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(raw) + align) & ~uintptr_t{align - 1};
  auto* p = reinterpret_cast<unsigned char*>(aligned);
  p[-1] = static_cast<unsigned char>((p - raw) / 16 - 1);
  return p;
}

/// Frees a block from aligned_malloc (nullptr is a no-op).
inline void aligned_free(void* ptr) {
  if (ptr == nullptr) return;
  auto* p = static_cast<unsigned char*>(ptr);
  std::free(p - (size_t{p[-1]} + 1) * 16);
}

}  // namespace tessera::cpu
