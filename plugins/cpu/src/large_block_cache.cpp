// Reuse of large freed host blocks: see large_block_cache.hpp.
#include "large_block_cache.hpp"

#include "aligned_memory.hpp"
#include "env_settings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

namespace tessera::cpu {
namespace {

constexpr size_t kPage = 4096;

size_t default_budget() {
  if (const auto v = env::parse_cache_bytes(std::getenv("TESSERA_CPU_CACHE_BYTES"))) return static_cast<size_t>(*v);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t physical = (pages > 0 && page > 0) ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  return std::min(physical / 8, size_t{2} << 30);
}

class Cache {
 public:
  ~Cache() {
    for (auto& [size, block] : blocks_) aligned_free(block);
  }
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(size);
    if (it == blocks_.end()) return nullptr;
    void* block = it->second;
    blocks_.erase(it);
    cached_ -= size;
    return block;
  }
  size_t release() {
    std::multimap<size_t, void*> blocks;
    size_t freed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(blocks_);
      freed = cached_;
      cached_ = 0;
    }
    for (auto& [size, block] : blocks) aligned_free(block);  // outside the lock
    return freed;
  }
  bool give(void* block, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + size > large_block_budget()) return false;
    try {
      blocks_.emplace(size, block);
    } catch (...) {  // called from deallocate, which cannot fail: the caller frees
      return false;
    }
    cached_ += size;
    return true;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  size_t cached_ = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

size_t large_block_size(size_t nbytes) { return (nbytes + kPage - 1) & ~(kPage - 1); }

size_t large_block_budget() {
  static const size_t budget = default_budget();
  return budget;
}

void* large_block_take(size_t size) { return large_block_budget() == 0 ? nullptr : cache().take(size); }

bool large_block_give(void* block, size_t size) { return large_block_budget() != 0 && cache().give(block, size); }

size_t large_block_release() { return large_block_budget() == 0 ? 0 : cache().release(); }

}  // namespace tessera::cpu
