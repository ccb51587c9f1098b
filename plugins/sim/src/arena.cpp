// Arena (arena.hpp): best fit over a free list kept by address and by size.
#include "arena.hpp"

#include <tessera/sdk/plugin.hpp>

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

namespace tessera::sim {

Arena::Arena(size_t bytes) : size_(bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw sdk::Error(TSR_ERROR_UNAVAILABLE, "sim: cannot reserve " + std::to_string(bytes) +
                                                " bytes of address space for device memory: " +
                                                std::strerror(errno));
  }
  base_ = static_cast<std::byte*>(p);
  insert_free(0, bytes);
}

Arena::~Arena() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

void Arena::insert_free(size_t offset, size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Arena::erase_free(std::map<size_t, size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

void* Arena::allocate(size_t bytes) {
  const auto best = free_by_size_.lower_bound({bytes, 0});  // the smallest block that fits
  if (best == free_by_size_.end()) return nullptr;
  const size_t offset = best->second, size = best->first;
  erase_free(free_by_offset_.find(offset));
  if (size > bytes) insert_free(offset + bytes, size - bytes);  // split
  live_.emplace(offset, bytes);
  return base_ + offset;
}

size_t Arena::free(void* ptr) {
  const auto p = static_cast<std::byte*>(ptr);
  if (p < base_ || p >= base_ + size_) return 0;
  const auto live = live_.find(static_cast<size_t>(p - base_));
  if (live == live_.end()) return 0;
  size_t offset = live->first, size = live->second;
  const size_t freed = size;
  live_.erase(live);
  // Coalesce with the free neighbours on both sides.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == offset + size) {
    size += next->second;
    erase_free(next);
  }
  auto after = free_by_offset_.lower_bound(offset);
  if (after != free_by_offset_.begin()) {
    const auto prev = std::prev(after);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      erase_free(prev);
    }
  }
  insert_free(offset, size);
  return freed;
}

size_t Arena::size_of(const void* ptr) const {
  const auto p = static_cast<const std::byte*>(ptr);
  if (p < base_ || p >= base_ + size_) return 0;
  const auto it = live_.find(static_cast<size_t>(p - base_));
  return it == live_.end() ? 0 : it->second;
}

bool Arena::contains(uintptr_t begin, uintptr_t end) const {
  const auto base = reinterpret_cast<uintptr_t>(base_);
  if (begin < base || end > base + size_ || begin >= end) return false;
  auto it = live_.upper_bound(static_cast<size_t>(begin - base));
  if (it == live_.begin()) return false;
  --it;
  return base + it->first + it->second >= end;
}

size_t Arena::largest_free() const { return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first; }

}  // namespace tessera::sim
