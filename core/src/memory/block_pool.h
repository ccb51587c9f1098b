// memory/block_pool.h — the caching allocator's internal data structures:
// blocks and segments, the small pool's segregated bins, the large pool's
// ordered set, the live-pointer table and the block object pool.
// Internal to caching_allocator.cpp; not thread-safe (the allocator's mutex
// guards them all).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include <tessera/abi.h>

#include "call_stack.h"

namespace tessera::memory::internal {

struct Segment;
struct StreamPools;

/// A range of a segment: allocated, cached (in its pool), pending (waiting
/// for events), or unmapped (expandable segments' address space without memory).
struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  size_t requested = 0;             // the caller's size while allocated or pending
  Block* prev = nullptr;            // address-order neighbours within the segment
  Block* next = nullptr;
  Block* bin_prev = nullptr;        // small-pool bin list links while in the pool
  Block* bin_next = nullptr;
  Segment* segment = nullptr;
  uint64_t free_tick = 0;           // when it entered the pool (garbage collection's age)
  int event_count = 0;              // events still pending before it may enter the pool
  bool allocated = false;
  bool in_pool = false;
  bool mapped = true;
  uint16_t bin = 0;                 // its small-pool size class while in a small pool
  std::vector<TsrStream> uses;      // streams given to record_stream while allocated
  std::shared_ptr<const StackContext> context;  // where it was allocated (history only)
};

/// One device allocation (plain) or one reserved address range (expandable).
struct Segment {
  char* base = nullptr;
  size_t size = 0;     // plain: the allocation's size; expandable: the reserved range
  size_t mapped = 0;   // expandable: bytes mapped
  StreamPools* pools = nullptr;
  bool small = false;
  bool expandable = false;
  Block* first = nullptr;
  size_t index = 0;    // position in the allocator's segment list
  std::shared_ptr<const StackContext> context;
};

/// The small pool's free blocks, one LIFO list per size class (512 B steps up
/// to 2 MiB; the last class holds every larger block, which only expandable
/// segments have), with a two-level bitmap for the first non-empty class at or
/// above a request's: best fit in a few instructions. A cached block that
/// grows in place (a neighbour freed into it) stays in its class while its own
/// class is at most 1/16 above it, and one that shrinks (an allocation carved
/// from its front) while its size still fits the class: the steady
/// allocate/free cycle then moves no block between lists, and the fit chosen
/// is within 1/16 of the best.
class SmallBins {
 public:
  static constexpr size_t kClasses = 4096;
  [[gnu::always_inline]] static size_t class_of(size_t size) noexcept {
    const size_t c = size / 512 - 1;
    return c < kClasses ? c : kClasses - 1;
  }
  [[gnu::always_inline]] void insert(Block* b) noexcept {
    const size_t c = class_of(b->size);
    b->bin = static_cast<uint16_t>(c);
    b->bin_prev = nullptr;
    b->bin_next = head_[c];
    if (head_[c] != nullptr) head_[c]->bin_prev = b;
    else set_bit(c);
    head_[c] = b;
    ++count_;
  }
  [[gnu::always_inline]] void remove(Block* b) noexcept {
    const size_t c = b->bin;
    if (b->bin_prev != nullptr) b->bin_prev->bin_next = b->bin_next;
    else head_[c] = b->bin_next;
    if (b->bin_next != nullptr) b->bin_next->bin_prev = b->bin_prev;
    if (head_[c] == nullptr) clear_bit(c);
    b->bin_prev = b->bin_next = nullptr;
    --count_;
  }
  /// b (in a list) grew: moves it when its class is more than 1/16 above its list's.
  [[gnu::always_inline]] void grew(Block* b) noexcept {
    if (class_of(b->size) > size_t{b->bin} + b->bin / 16u) [[unlikely]] {
      remove(b);
      insert(b);
    }
  }
  /// b (in a list) shrank: moves it when it no longer fits its list's class.
  [[gnu::always_inline]] void shrank(Block* b) noexcept {
    if (class_of(b->size) < b->bin) {
      remove(b);
      insert(b);
    }
  }
  /// Whether b's list is one it may be in (see the class comment).
  static bool listed_right(const Block* b, size_t c) noexcept {
    return b->bin == c && class_of(b->size) >= c && class_of(b->size) <= c + c / 16;
  }
  /// A block of the smallest class holding sizes >= size; nullptr if none.
  [[gnu::always_inline]] Block* best_fit(size_t size) const noexcept {
    size_t c = class_of(size);
    size_t w = c / 64;
    uint64_t bits = words_[w] & (~uint64_t{0} << (c % 64));
    if (bits == 0) {
      const uint64_t higher = w + 1 < 64 ? summary_ & (~uint64_t{0} << (w + 1)) : 0;
      if (higher == 0) return nullptr;
      w = static_cast<size_t>(std::countr_zero(higher));
      bits = words_[w];
    }
    return head_[w * 64 + static_cast<size_t>(std::countr_zero(bits))];
  }
  size_t count() const noexcept { return count_; }
  /// Calls f(class, block) for every block, by class.
  template <typename F>
  void for_each(F f) const {
    for (size_t w = 0; w < kClasses / 64; ++w)
      for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        const size_t c = w * 64 + static_cast<size_t>(std::countr_zero(bits));
        for (const Block* b = head_[c]; b != nullptr; b = b->bin_next) f(c, b);
      }
  }

 private:
  [[gnu::always_inline]] void set_bit(size_t c) noexcept {
    words_[c / 64] |= uint64_t{1} << (c % 64);
    summary_ |= uint64_t{1} << (c / 64);
  }
  [[gnu::always_inline]] void clear_bit(size_t c) noexcept {
    words_[c / 64] &= ~(uint64_t{1} << (c % 64));
    if (words_[c / 64] == 0) summary_ &= ~(uint64_t{1} << (c / 64));
  }
  Block* head_[kClasses] = {};
  uint64_t words_[kClasses / 64] = {};
  uint64_t summary_ = 0;
  size_t count_ = 0;
};

/// The large pool's order: size, then address (best fit, lowest address first).
struct LargeOrder {
  using is_transparent = void;
  struct Key {
    size_t size;
    const char* ptr;
  };
  bool operator()(const Block* a, const Block* b) const noexcept {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
  bool operator()(const Block* a, const Key& b) const noexcept {
    return a->size != b.size ? a->size < b.size : a->ptr < b.ptr;
  }
  bool operator()(const Key& a, const Block* b) const noexcept {
    return a.size != b->size ? a.size < b->size : a.ptr < b->ptr;
  }
};

/// Everything of one stream: its two pools, its expandable segments, and the
/// events recorded on it for blocks freed elsewhere (completing in order).
struct StreamPools {
  TsrStream stream = nullptr;
  SmallBins small;
  std::set<Block*, LargeOrder> large;
  Segment* expandable[2] = {nullptr, nullptr};  // [small ? 1 : 0]
  bool expandable_failed[2] = {false, false};    // no address space: plain segments
  std::deque<std::pair<TsrEvent, Block*>> events;
};

/// Live pointer -> block: open addressing with linear probing and
/// backward-shift deletion (no tombstones, no allocation per insert).
class PtrMap {
 public:
  PtrMap() { rehash(64); }
  void insert(Block* b) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    size_t i = home(b->ptr);
    while (slots_[i] != nullptr) i = (i + 1) & mask_;
    slots_[i] = b;
    ++size_;
  }
  Block* find(const void* p) const noexcept {
    for (size_t i = home(p);; i = (i + 1) & mask_) {
      Block* b = slots_[i];
      if (b == nullptr || b->ptr == p) return b;
    }
  }
  /// Removes and returns the block at p; nullptr if none.
  Block* erase(const void* p) noexcept {
    size_t i = home(p);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i] == nullptr) return nullptr;
      if (slots_[i]->ptr == p) break;
    }
    Block* const found = slots_[i];
    // Backward shift: move later entries of the probe run into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j] != nullptr; j = (j + 1) & mask_) {
      const size_t h = home(slots_[j]->ptr);
      // Entry j may move to the hole if its home is not in (hole, j] cyclically.
      const bool in_range = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
      if (!in_range) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = nullptr;
    --size_;
    return found;
  }
  size_t size() const noexcept { return size_; }

 private:
  size_t home(const void* p) const noexcept {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 9) * 0x9E3779B97F4A7C15ull >> shift_);
  }
  void rehash(size_t n) {
    std::vector<Block*> old = std::move(slots_);
    slots_.assign(n, nullptr);
    mask_ = n - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(n));
    size_ = 0;
    for (Block* b : old)
      if (b != nullptr) insert(b);
  }
  std::vector<Block*> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t size_ = 0;
};

/// Block objects, reused: no heap allocation per split or merge.
class BlockFactory {
 public:
  [[gnu::always_inline]] Block* make() {
    if (free_.empty()) [[unlikely]] grow();
    Block* b = free_.back();
    free_.pop_back();
    return b;
  }
  [[gnu::always_inline]] void recycle(Block* b) {
    b->ptr = nullptr;
    b->size = b->requested = 0;
    b->prev = b->next = b->bin_prev = b->bin_next = nullptr;
    b->segment = nullptr;
    b->free_tick = 0;
    b->event_count = 0;
    b->allocated = b->in_pool = false;
    b->mapped = true;
    if (!b->uses.empty()) b->uses.clear();
    if (b->context) b->context.reset();
    free_.push_back(b);
  }

 private:
  [[gnu::noinline]] void grow() {
    chunks_.push_back(std::make_unique<Block[]>(kChunk));
    for (size_t i = kChunk; i-- > 0;) free_.push_back(&chunks_.back()[i]);
  }
  static constexpr size_t kChunk = 256;
  std::vector<std::unique_ptr<Block[]>> chunks_;
  std::vector<Block*> free_;
};

}  // namespace tessera::memory::internal
