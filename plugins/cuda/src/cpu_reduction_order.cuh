// The cpu plugin's order of a floating sum (plugins/cpu/src/reduction.cpp:
// lane_sum and Cascade for the inner layout, tile_block's leaves and blocks for
// the outer one) and of a floating product's run (reduce_ops.hpp: fold_run),
// for host and device. The CUDA plugin sums and multiplies at most kExactMax
// elements per output in this order, so that cancellations such as
// (max + x) - max give cpu's bits; tests/cuda holds this copy to the cpu
// plugin's results on the host, so a change to either order fails a test
// without a GPU.
#pragma once

#include <cstdint>

namespace tessera::cuda::cpu_order {

constexpr int kLeafDepth = 8;       // cpu's kLeafDepth: elements per lane in a leaf
constexpr int64_t kLeafRows = 8;    // cpu's kLeafRows: rows summed straight before cascading (outer layout)
constexpr int64_t kBlockRows = 256;  // cpu's kBlockRows: rows per block (outer layout)
constexpr int kCascadeLevels = 16;  // 2^16 - 1 pushes at most
/// cpu's kLanes: 128 bytes of accumulators (32 floats, 16 doubles).
template <typename A>
constexpr int kLanes = static_cast<int>(128 / sizeof(A));
/// cpu's kPartLanes: the lanes of one 32-byte part (the tree's first stage adds whole parts).
template <typename A>
constexpr int kPartLanes = static_cast<int>(32 / sizeof(A));

/// cpu's Cascade: level l holds the sum of 2^l pushed values; zero-initialise.
template <typename A>
struct Cascade {
  A level[kCascadeLevels];
  uint64_t count;
  __host__ __device__ void push(A x) {
    uint64_t c = count++;
    int l = 0;
    for (; (c & 1u) != 0; c >>= 1, ++l) x = level[l] + x;
    level[l] = x;
  }
  /// The levels in use, lowest first; 0 when nothing was pushed.
  __host__ __device__ A total() const {
    A r{};
    bool first = true;
    for (int l = 0; l < kCascadeLevels; ++l) {
      if (((count >> l) & 1u) == 0) continue;
      r = first ? level[l] : level[l] + r;
      first = false;
    }
    return r;
  }
};

/// cpu's lane_sum of n elements, load(i) giving element i as an A: below
/// kLanes elements a sum in order from 0; else leaves of kLeafDepth rows of
/// kLanes elements, each lane summed in order (a whole leaf from its first
/// row, the partial last leaf from 0, its rest padded with zeros and always
/// added), each lane's leaves cascaded, then the lanes as cpu's tree: whole
/// 32-byte parts first, then halves within the first part. Lane by lane here
/// (the lanes are independent until the tree): the same additions, in the
/// same order, with one cascade live instead of kLanes.
template <typename A, typename Load>
__host__ __device__ A lane_sum(const Load& load, int64_t n) {
  constexpr int W = kLanes<A>, PL = kPartLanes<A>;
  static_assert(W == 4 * PL, "cpu's tree adds four parts");
  if (n < W) {
    A t{};
    for (int64_t i = 0; i < n; ++i) t += load(i);
    return t;
  }
  constexpr int64_t kLeaf = int64_t{W} * kLeafDepth;
  const int64_t whole_end = n / kLeaf * kLeaf;
  A lane[W];
  for (int j = 0; j < W; ++j) {
    Cascade<A> c{};
    for (int64_t i = 0; i < whole_end; i += kLeaf) {
      A v = load(i + j);
      for (int r = 1; r < kLeafDepth; ++r) v = load(i + r * W + j) + v;
      c.push(v);
    }
    if (whole_end < n) {
      A v{};
      int64_t i = whole_end;
      for (; i + W <= n; i += W) v = load(i + j) + v;
      const A rest = i + j < n ? load(i + j) : A{};
      c.push(rest + v);
    }
    lane[j] = c.total();
  }
  for (int j = 0; j < PL; ++j) lane[j] = (lane[j] + lane[j + 2 * PL]) + (lane[j + PL] + lane[j + 3 * PL]);
  for (int w = PL / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] = lane[j] + lane[j + w];
  }
  return lane[0];
}

/// cpu's column sum (the outer layout: the fastest-moving input dim is kept)
/// of n reduced rows, row(r) giving row r's element as an A: blocks of
/// kBlockRows rows; in a block, leaves of kLeafRows rows summed in order from
/// 0, the leaves cascaded; the blocks' totals cascaded.
template <typename A, typename Load>
__host__ __device__ A outer_sum(const Load& row, int64_t n) {
  Cascade<A> blocks{};
  for (int64_t b0 = 0; b0 < n; b0 += kBlockRows) {
    const int64_t b1 = b0 + kBlockRows < n ? b0 + kBlockRows : n;
    Cascade<A> leaves{};
    for (int64_t l0 = b0; l0 < b1; l0 += kLeafRows) {
      const int64_t l1 = l0 + kLeafRows < b1 ? l0 + kLeafRows : b1;
      A a{};
      for (int64_t r = l0; r < l1; ++r) a += row(r);
      leaves.push(a);
    }
    blocks.push(leaves.total());
  }
  return blocks.total();
}

/// cpu's fold_run for prod: multiplies the n elements of a run into acc. A
/// dense run (unit stride) of at least kLanes elements goes through kLanes
/// lanes from 1, each multiplied in order by its elements of every whole
/// group of kLanes, the lanes combined as a tree of halves (lane j by lane
/// j + w, w = kLanes / 2, ..., 1) into acc; the rest, or a strided run,
/// multiplies acc in order.
template <typename A, typename Load>
__host__ __device__ void lane_prod(const Load& load, int64_t n, bool dense, A& acc) {
  constexpr int W = kLanes<A>;
  int64_t i = 0;
  if (dense && n >= W) {
    A lane[W];
    for (int j = 0; j < W; ++j) lane[j] = A(1);
    for (; i + W <= n; i += W) {
      for (int j = 0; j < W; ++j) lane[j] *= load(i + j);
    }
    for (int w = W / 2; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) lane[j] *= lane[j + w];
    }
    acc *= lane[0];
  }
  for (; i < n; ++i) acc *= load(i);
}

}  // namespace tessera::cuda::cpu_order
