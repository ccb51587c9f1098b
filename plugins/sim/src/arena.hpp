// A device's memory: one range of address space reserved at first use, carved
// by best fit with splitting and coalescing (as a GPU driver carves its
// memory). Freed memory stays mapped, so a kernel that (wrongly) touches it
// reads stale bytes instead of crashing the process, and addresses are reused
// as on a real device — which is what gives the checker something to catch.
//
// Not thread-safe: the owning Device's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace tessera::sim {

class Arena {
 public:
  /// Every block's size and offset are multiples of this (cudaMalloc's 256 B).
  static constexpr size_t kAlignment = 256;

  /// Reserves `bytes` (a multiple of kAlignment) of readable and writable
  /// address space without committing memory (MAP_NORESERVE: pages are backed
  /// when first touched). Throws sdk::Error (TSR_ERROR_UNAVAILABLE) when the
  /// system refuses the reservation.
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  /// A block of `bytes` (a multiple of kAlignment, > 0), or nullptr when no
  /// free block is that large.
  void* allocate(size_t bytes);
  /// Frees a block from allocate and returns its size; 0 (and nothing freed)
  /// when `ptr` is not the start of a live block.
  size_t free(void* ptr);
  /// The size of the live block that starts at `ptr`; 0 when none does.
  size_t size_of(const void* ptr) const;
  /// Whether [begin, end) lies inside one live block.
  bool contains(uintptr_t begin, uintptr_t end) const;
  /// The largest block allocate could return now.
  size_t largest_free() const;

 private:
  std::byte* base_ = nullptr;
  size_t size_ = 0;
  std::map<size_t, size_t> free_by_offset_;            // offset -> size, for coalescing
  std::set<std::pair<size_t, size_t>> free_by_size_;   // (size, offset), for best fit
  std::map<size_t, size_t> live_;                      // offset -> size

  void insert_free(size_t offset, size_t size);
  void erase_free(std::map<size_t, size_t>::iterator it);
};

}  // namespace tessera::sim
