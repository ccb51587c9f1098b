// Lanes of independent accumulators combined as a tree, in vector registers.
#pragma once

#include "isa.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

// GCC vectors of N elements of A (any power of two N).
template <typename A, int N>
struct VecN {
  typedef A type __attribute__((vector_size(N * sizeof(A))));
};

// The lanes of v combined as a tree, v[j] = f(v[j], v[j + w]) for w = N / 2,
// ..., 1, then v[0]: halves of vector registers, where the same steps over an
// array went through memory and stalled on each step's reload of the
// previous step's stores.
// f(lo, hi) sets lo = f(lo, hi) lane by lane. (Vectors pass by reference: by
// value, a vector wider than the level's registers draws GCC's -Wpsabi note.)
// The halves are taken with shuffles: copied out with memcpy, GCC stored a
// 64-byte vector to the stack and reloaded its upper 32 bytes (a store
// forwarding miss per row in prod over rows of 256 floats).
template <int N, typename A, typename F>
A tree_lanes(const typename VecN<A, N>::type& v, const F& f);
template <int N, typename A, typename F, size_t... I>
inline __attribute__((always_inline)) A tree_halves(const typename VecN<A, N>::type& v, const F& f,
                                                      std::index_sequence<I...>) {
  typename VecN<A, N / 2>::type lo = __builtin_shufflevector(v, v, static_cast<int>(I)...);
  const typename VecN<A, N / 2>::type hi = __builtin_shufflevector(v, v, static_cast<int>(I + N / 2)...);
  f(lo, hi);
  return tree_lanes<N / 2, A>(lo, f);
}
template <int N, typename A, typename F>
inline __attribute__((always_inline)) A tree_lanes(const typename VecN<A, N>::type& v, const F& f) {
  if constexpr (N == 1) {
    return v[0];
  } else {
    return tree_halves<N, A>(v, f, std::make_index_sequence<N / 2>{});
  }
}

/// The sum of lanes[0..N) as the tree above.
template <int N, typename A>
inline __attribute__((always_inline)) A tree_sum(const A* lanes) {
  typename VecN<A, N>::type v;
  std::memcpy(&v, lanes, sizeof v);
  return tree_lanes<N, A>(v, [](auto& lo, const auto& hi) { lo = lo + hi; });
}

/// sum f(load(i)) for i in [0, n): blocks of kSumBlock elements in
/// kSumLanes<A> lanes of A (float for float32 and the half types: the
/// additions of one or two vector instructions), each block's lanes added as a
/// tree and the block totals in double. A block's error is that of a ~40-term
/// sum in A; the order is fixed, so are the bits (any thread count, any level).
template <typename A>
inline constexpr int kSumLanes = static_cast<int>(256 / sizeof(A));
inline constexpr int64_t kSumBlock = 1024;
template <typename A, typename Load, typename F>
inline __attribute__((always_inline)) double blocked_lane_sum(int64_t n, const Load& load, const F& f) {
  constexpr int64_t L = kSumLanes<A>;
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t e = std::min(n, b + kSumBlock), body = b + (e - b) / L * L;
    A lane[L] = {};
    for (int64_t i = b; i < body; i += L) {
      for (int64_t j = 0; j < L; ++j) lane[j] += f(load(i + j));
    }
    for (int64_t i = body; i < e; ++i) lane[i - body] += f(load(i));
    total += static_cast<double>(tree_sum<L, A>(lane));
  }
  return total;
}

/// sum (x - c) and sum (x - c)^2 over x = load(i), i in [0, n), blocked as
/// blocked_lane_sum. With c near the mean (a first pass's, rounded to A),
/// sum (x - mean)^2 = s2 - s1^2 / n without cancellation: the deviations are
/// taken from c, and the mean's own rounding (to A, or a float lane sum's
/// error) enters only through s1. Subtracting a float-rounded mean directly
/// lost the variance of data whose spread is below the mean's rounding error.
struct ShiftedSums {
  double s1, s2;
};
template <typename A, typename Load>
inline __attribute__((always_inline)) ShiftedSums blocked_shifted_sums(int64_t n, const Load& load, A c) {
  constexpr int64_t L = kSumLanes<A>;
  ShiftedSums t{0, 0};
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t e = std::min(n, b + kSumBlock), body = b + (e - b) / L * L;
    A l1[L] = {}, l2[L] = {};
    for (int64_t i = b; i < body; i += L) {
      for (int64_t j = 0; j < L; ++j) {
        const A d = load(i + j) - c;
        l1[j] += d;
        l2[j] += d * d;
      }
    }
    for (int64_t i = body; i < e; ++i) {
      const A d = load(i) - c;
      l1[i - body] += d;
      l2[i - body] += d * d;
    }
    t.s1 += static_cast<double>(tree_sum<L, A>(l1));
    t.s2 += static_cast<double>(tree_sum<L, A>(l2));
  }
  return t;
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
