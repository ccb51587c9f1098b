// Host memory blocks aligned to kMemoryAlignment, as the CPU allocator hands out.
#pragma once

#include "device.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

// Blocks of 4 MiB and more come fresh from mmap; with transparent huge pages in
// "madvise" mode (the usual default) the first writes to a 64 MB output would
// take ~16K page faults, costing more than an exp over it. Asking for huge pages
// turns ~500 faults per MiB into one per 2 MiB (NumPy does the same for its
// arrays). Advisory: an error only means small pages.
/// Advises transparent huge pages for [p, p + nbytes) when 4 MiB or more
/// (device allocations, large kernel scratch). Never fails; any thread.
inline void prefer_huge_pages(void* p, size_t nbytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kPage = 4096;
  if (nbytes < (size_t{4} << 20)) return;
  // Every page the block touches: such a block is its own mmap, so the 2 MiB
  // windows at both ends may become huge pages too. Advice changes no data.
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + nbytes + kPage - 1) & ~(kPage - 1);
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)nbytes;
#endif
}

}  // namespace tessera::cpu
