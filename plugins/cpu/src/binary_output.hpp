// Preparing a large output of a binary/ternary kernel for its first write.
#pragma once

#include "common.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace tessera::cpu {

/// Outputs of at least this many bytes ask for transparent huge pages.
inline constexpr size_t kHugePageAdviceBytes = size_t{4} << 20;

/// A fresh multi-megabyte output is untouched memory: writing it faults in one
/// 4 KiB page at a time (16 Ki faults for 64 MiB), which costs more than the
/// arithmetic. Asking for transparent huge pages first (what NumPy's allocator
/// does for arrays of 4 MiB and more) makes that 2 MiB per fault. Only advice:
/// no effect where THP is off, and failures are ignored.
inline void advise_huge_pages(const DLTensor& out) {
  const size_t itemsize = out.dtype.bits / 8u;
  const int64_t n = sdk::numel(out);
  if (n <= 0 || static_cast<size_t>(n) * itemsize < kHugePageAdviceBytes || out.data == nullptr) return;
  // Only a dense output spans exactly [data, data + n * itemsize).
  int64_t expected = 1;
  for (int32_t d = out.ndim - 1; d >= 0; --d) {
    if (out.shape[d] != 1 && out.strides[d] != expected) return;
    expected *= out.shape[d];
  }
  constexpr uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<uintptr_t>(data_ptr(out));
  // Every page the output touches, so that the 2 MiB windows at both ends can
  // be huge pages too (the advice covers whole pages; it changes no data).
  const uintptr_t first = begin & ~(kPage - 1);
  const uintptr_t last = (begin + static_cast<uintptr_t>(n) * itemsize + kPage - 1) & ~(kPage - 1);
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace tessera::cpu
