// Transparent huge pages for large kernel outputs. The CPU allocator hands out
// plain malloc memory; with THP in "madvise" mode (the usual default) a 64 MB
// output then takes ~16K page faults on first touch, which cost more than
// computing exp over it. NumPy advises huge pages for arrays >= 4 MB; so do we,
// on the output, before the kernel first writes it. A hint only: errors are
// ignored and memory already touched is unaffected.
#pragma once

#include "common.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace tessera::cpu {

inline void advise_huge_pages(const DLTensor& out) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  constexpr int64_t kMinBytes = int64_t{4} << 20;
  const int64_t bytes = sdk::numel(out) * ((out.dtype.bits * out.dtype.lanes + 7) / 8);
  if (bytes < kMinBytes) return;
  if (out.strides != nullptr) {  // only a dense output covers [data, data + bytes)
    int64_t expected = 1;
    for (int32_t d = out.ndim - 1; d >= 0; --d) {
      if (out.shape[d] != 1 && out.strides[d] != expected) return;
      expected *= out.shape[d];
    }
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(data_ptr(out));
  const uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (start + static_cast<uintptr_t>(bytes)) & ~(kHuge - 1);
#ifdef MADV_HUGEPAGE
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)begin;
  (void)end;
#endif
}

}  // namespace tessera::cpu
