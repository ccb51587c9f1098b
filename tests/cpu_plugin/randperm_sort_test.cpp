// randperm's sort (plugins/cpu/src/randperm_sort.hpp) against a plain sort of
// (key, index) pairs: every length class (below the radix cut-off, odd and even
// pass counts), packed key tops of every width down to 2 bits so that many
// values tie on their tops, and keys with few distinct values (whole-key ties,
// resolved by index).
#include "randperm_sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace {

namespace rs = tessera::cpu;

std::vector<int64_t> reference(const std::vector<uint64_t>& key) {
  std::vector<std::pair<uint64_t, int64_t>> p;
  for (size_t i = 0; i < key.size(); ++i) p.emplace_back(key[i], static_cast<int64_t>(i));
  std::sort(p.begin(), p.end());
  std::vector<int64_t> out;
  for (const auto& e : p) out.push_back(e.second);
  return out;
}

std::vector<int64_t> sorted_by_plugin(const std::vector<uint64_t>& key, int index_bits) {
  const auto n = static_cast<int64_t>(key.size());
  std::vector<uint64_t> v(key.size()), tmp(key.size());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t top = index_bits == 64 ? 0 : key[static_cast<size_t>(i)] >> index_bits << index_bits;
    v[static_cast<size_t>(i)] = top | static_cast<uint64_t>(i);
  }
  rs::sort_packed(v.data(), tmp.data(), n, index_bits, [&key](int64_t i) { return key[static_cast<size_t>(i)]; });
  return std::vector<int64_t>(v.begin(), v.end());
}

int bits_for(int64_t n) { return n <= 1 ? 1 : 64 - __builtin_clzll(static_cast<uint64_t>(n - 1)); }

TEST(RandpermSort, MatchesASortOfKeyIndexPairs) {
  std::mt19937_64 rng(3);
  for (int64_t n : {1, 2, 17, 255, 256, 257, 1000, 4097, 70001, 300000}) {
    std::vector<uint64_t> key(static_cast<size_t>(n));
    for (auto& k : key) k = rng();
    const std::vector<int64_t> want = reference(key);
    for (int extra : {0, 20, 40, 62 - bits_for(n)}) {  // key tops of 64 - L bits, down to 2
      const int index_bits = std::min(62, bits_for(n) + extra);
      EXPECT_EQ(sorted_by_plugin(key, index_bits), want) << "n " << n << ", index bits " << index_bits;
    }
  }
}

TEST(RandpermSort, EqualKeysKeepIndexOrder) {
  std::mt19937_64 rng(5);
  for (int64_t n : {100, 5000, 100000}) {
    std::vector<uint64_t> key(static_cast<size_t>(n));
    for (auto& k : key) k = (rng() % 7) * 0x2492492492492492ull + (rng() % 2);  // 14 distinct keys
    const std::vector<int64_t> want = reference(key);
    EXPECT_EQ(sorted_by_plugin(key, bits_for(n)), want) << n;
    EXPECT_EQ(sorted_by_plugin(key, 60), want) << n;
  }
}

}  // namespace
