// Host memory blocks aligned to kMemoryAlignment, as the CPU allocator hands out.
#pragma once

#include "device.hpp"

#include <cstdint>
#include <cstdlib>

namespace tessera::cpu {

// glibc's posix_memalign/aligned_alloc cost ~4x a plain malloc for small
// blocks, and allocation sits on the path of every tiny op. So over-allocate by
// the alignment and keep the distance to the raw block (1..64) in the byte just
// before the aligned pointer.
inline void* aligned_malloc(size_t nbytes) {
  if (nbytes > SIZE_MAX - kMemoryAlignment) return nullptr;
  auto* raw = static_cast<unsigned char*>(std::malloc(nbytes + kMemoryAlignment));
  if (raw == nullptr) return nullptr;
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(raw) + kMemoryAlignment) & ~uintptr_t{kMemoryAlignment - 1};
  auto* p = reinterpret_cast<unsigned char*>(aligned);
  p[-1] = static_cast<unsigned char>(p - raw);
  return p;
}

/// Frees a block from aligned_malloc (nullptr is a no-op).
inline void aligned_free(void* ptr) {
  if (ptr == nullptr) return;
  auto* p = static_cast<unsigned char*>(ptr);
  std::free(p - p[-1]);
}

}  // namespace tessera::cpu
