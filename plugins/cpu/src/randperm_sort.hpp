// randperm's sort (random.cpp): indices by ascending (64-bit key, index), the
// order every device must produce (docs/ops/random.md). Header of its own so
// tests/cpu_plugin/randperm_sort_test.cpp can drive it with keys that tie.
#pragma once

#include "isa.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

struct Keyed {
  uint64_t key;
  int64_t index;
};
inline bool keyed_less(const Keyed& a, const Keyed& b) { return a.key != b.key ? a.key < b.key : a.index < b.index; }

/// randperm's order: indices by ascending (key, index). On entry v[i] =
/// (key_of(i) >> index_bits << index_bits) | i (2^index_bits > n - 1): one
/// 8-byte value sorts by (key top, index). An LSD radix sort of the values' top
/// bits in the fewest digits of at most 8 bits (256 buckets: their write
/// positions stay cached), enough bits that runs sharing them average below
/// one element, then each run sorted whole; values with equal key tops (rare:
/// ~n^2 / 2^(65 - index_bits) pairs) reordered by key_of, the whole key. On
/// return v holds the sorted indices; tmp (n values) is scratch. std::sort of
/// (key, index) pairs took 67 ms for 1M indices (PyTorch's Fisher-Yates:
/// 5.5 ms). Any thread; allocates only the histogram and tie buffers.
template <typename KeyOf>
inline void sort_packed(uint64_t* v, uint64_t* tmp, int64_t n, int index_bits, const KeyOf& key_of) {
  constexpr int kMaxDigit = 8;
  const int bits = std::min(64, 64 - __builtin_clzll(static_cast<uint64_t>(n)) + 1);
  const int passes = n < 256 ? 0 : (bits + kMaxDigit - 1) / kMaxDigit;
  const int width = passes == 0 ? 0 : (bits + passes - 1) / passes;  // digits of equal width
  const int64_t buckets = int64_t{1} << width;
  uint64_t* const result = v;
  const int top = std::min(64, passes * width);
  const auto digit = [top, width, buckets](uint64_t x, int p) {
    return static_cast<size_t>((x >> (64 - top + p * width)) & static_cast<uint64_t>(buckets - 1));
  };
  if (passes > 0) {
    std::vector<int64_t> count(static_cast<size_t>(passes * buckets), 0);
    for (int64_t i = 0; i < n; ++i) {
      for (int p = 0; p < passes; ++p) ++count[static_cast<size_t>(p * buckets) + digit(v[i], p)];
    }
    for (int p = 0; p < passes; ++p) {
      int64_t* c = count.data() + p * buckets;
      int64_t sum = 0;
      for (int64_t d = 0; d < buckets; ++d) {
        const int64_t m = c[d];
        c[d] = sum;
        sum += m;
      }
      for (int64_t i = 0; i < n; ++i) tmp[c[digit(v[i], p)]++] = v[i];
      std::swap(v, tmp);
    }
    if (v != result) {  // an odd number of passes
      std::copy(v, v + n, result);
      v = result;
    }
  }
  // Runs sharing the sorted top bits (top == 0: everything), sorted whole;
  // in them, values with equal key tops reordered by their whole keys; then
  // the key bits cleared, leaving the indices.
  const auto prefix = [top](uint64_t x) { return top == 0 ? 0 : x >> (64 - top); };
  const uint64_t mask = index_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << index_bits) - 1;
  for (int64_t i = 0; i + 1 < n; ++i) {
    if (prefix(v[i + 1]) != prefix(v[i])) continue;  // the usual case: no run starts here
    int64_t j = i + 2;
    while (j < n && prefix(v[j]) == prefix(v[i])) ++j;
    if (j - i > 16) {
      std::sort(v + i, v + j);
    } else {
      for (int64_t k = i + 1; k < j; ++k) {  // insertion sort: runs average under one extra element
        const uint64_t x = v[k];
        int64_t m = k;
        for (; m > i && v[m - 1] > x; --m) v[m] = v[m - 1];
        v[m] = x;
      }
    }
    for (int64_t k = i; k + 1 < j;) {
      int64_t e = k + 1;
      while (e < j && (v[e] & ~mask) == (v[k] & ~mask)) ++e;
      if (e - k > 1) {
        std::vector<Keyed> tie;
        for (int64_t q = k; q < e; ++q) {
          const auto index = static_cast<int64_t>(v[q] & mask);
          tie.push_back(Keyed{key_of(index), index});
        }
        std::sort(tie.begin(), tie.end(), keyed_less);
        for (int64_t q = k; q < e; ++q) v[q] = (v[q] & ~mask) | static_cast<uint64_t>(tie[static_cast<size_t>(q - k)].index);
      }
      k = e;
    }
    i = j - 1;
  }
  for (int64_t k = 0; k < n; ++k) v[k] &= mask;
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
