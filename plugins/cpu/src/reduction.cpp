// sum over a list of dims, with keepdim and an output dtype (docs/ops/reduction.md), and
// the registration of every reduction and scan kernel (reduce_ops.hpp, reduce_scan.hpp).
//
// Accuracy: floating sums are pairwise. Each output's reduced elements are cut
// into fixed blocks of kBlock; in a block, leaves of 8 x kLanes elements are
// summed into kLanes interleaved accumulators (8 terms each; four AVX2
// registers), leaves are combined pairwise lane by lane, then the lanes as a
// tree, and block results by a binary cascade: the error grows with log(n),
// not n. float16/bfloat16 accumulate in float32. The block and lane structure
// depends neither on the number of threads nor on the ISA level, so results
// are identical for every OMP_NUM_THREADS and TESSERA_CPU_ISA.
//
// Integers and bool accumulate in uint64 (two's complement wrap, no UB) and are
// converted to the output dtype (int64 unless a dtype was requested).
//
// Two layouts:
//  - inner: the fastest-moving input dim is reduced (e.g. sum over the last
//    dim). Each output is an independent pairwise sum; threads take outputs,
//    or blocks of one output when there are few outputs (a full reduction);
//  - outer: the fastest-moving input dim is kept (e.g. column sums). A tile of
//    up to kTile adjacent outputs is reduced together, row by row, so every
//    load is used; leaves of kLeafRows rows are cascaded pairwise per lane.
#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "elementwise.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "reduce_layout.hpp"
#include "reduce_ops.hpp"
#include "reduce_scan.hpp"
#include "lane_tree.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

constexpr int64_t kBlock = 16384;     // reduced elements per block (inner layout)
constexpr int64_t kTile = 64;         // outputs reduced together (outer layout)
constexpr int64_t kLeafRows = 8;      // rows summed straight into a tile before cascading
constexpr int64_t kBlockRows = 256;   // rows per block (outer layout), a multiple of kLeafRows

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<kIsFloating<T>, float, uint64_t>>;

template <typename T, typename Acc>
inline Acc load_acc(storage_t<T> x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x != 0 ? 1u : 0u;
  } else if constexpr (kIsInteger<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(x));  // sign-extend, then wrap
  } else {
    return static_cast<Acc>(static_cast<compute_t<T>>(x));
  }
}

template <typename Out, typename Acc>
inline storage_t<Out> store_acc(Acc a) {
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    return static_cast<storage_t<Out>>(convert<Out>(static_cast<int64_t>(a)));
  } else {
    return static_cast<storage_t<Out>>(convert<Out>(a));
  }
}

// Lanes of the pairwise leaves: 128 bytes of accumulators (32 floats, 16
// doubles or 64-bit integers), held as kParts 32-byte vectors: four AVX2
// registers (or eight SSE ones), enough independent adds to hide their
// latency. The count is fixed per accumulator type, not per ISA level, and
// there is no FMA, so every level adds the same values in the same order: the
// same bits on every machine.
template <typename Acc>
struct VecOf;  // GCC takes vector_size only on a concrete type
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
  typedef float unaligned __attribute__((vector_size(32), aligned(sizeof(float)), may_alias));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
  typedef double unaligned __attribute__((vector_size(32), aligned(sizeof(double)), may_alias));
};
template <>
struct VecOf<uint64_t> {
  typedef uint64_t type __attribute__((vector_size(32)));
  typedef uint64_t unaligned __attribute__((vector_size(32), aligned(sizeof(uint64_t)), may_alias));
};
template <typename Acc>
using Vec = typename VecOf<Acc>::type;
constexpr int kParts = 4;
template <typename Acc>
inline constexpr int kPartLanes = static_cast<int>(32 / sizeof(Acc));
template <typename Acc>
inline constexpr int kLanes = kParts * kPartLanes<Acc>;
template <typename Acc, int P = kParts>
struct Lanes {
  Vec<Acc> v[P];
};
constexpr int64_t kLeafDepth = 8;  // elements per lane in a leaf (a leaf is 8 * kLanes elements)

#define TSR_RED_INLINE inline __attribute__((always_inline))

// A part's 8 dense float16 elements as floats: in a register where F16C is
// (widening through a stack array cost float16 column sums 17%). The hardware
// quiets a signaling NaN; the sums' first addition would quiet it anyway.
// (An out parameter: a 32-byte vector returned by value draws -Wpsabi at the baseline.)
TSR_RED_INLINE void widen_part(const sdk::Half* p, Vec<float>& v) {
#if defined(__F16C__)
  v = reinterpret_cast<Vec<float>>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  float x[kPartLanes<float>];
  for (int j = 0; j < kPartLanes<float>; ++j) x[j] = static_cast<float>(p[j]);
  std::memcpy(&v, x, sizeof v);
#endif
}

// 16 dense float16/bfloat16 elements as floats, for the column sums' tiles: one
// AVX-512 register (16 lanes of float vectors are added lane by lane, so the
// width changes no result). Signaling NaNs quieted, as in widen_part.
using Vec16 = VecN<float, 16>::type;
#pragma GCC diagnostic push  // GCC 12's AVX-512 intrinsics start from undefined vectors (see convert.hpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <typename T>
TSR_RED_INLINE void widen16_part(const storage_t<T>* p, Vec16& v) {
  static_assert(kIsHalfLike<T>);
#if defined(__AVX512F__)
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (std::is_same_v<T, sdk::Half>) {
    v = reinterpret_cast<Vec16>(_mm512_cvtph_ps(h));
  } else {
    v = reinterpret_cast<Vec16>(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
#else
  float x[16];
  if constexpr (std::is_same_v<T, sdk::Half>) {
    Vec<float> lo, hi;
    widen_part(p, lo);
    widen_part(p + 8, hi);
    std::memcpy(x, &lo, sizeof lo);
    std::memcpy(x + 8, &hi, sizeof hi);
  } else {
    half_block::widen_bf16(half_block::raw(p), x, 16);
  }
  std::memcpy(&v, x, sizeof v);
#endif
}
#pragma GCC diagnostic pop

// a = the kLanes elements at p (stride s; Dense: 1). Elements whose bits are
// their accumulator's (float, double, 64-bit integers) are copied straight.
template <typename T, typename Acc, bool Dense>
TSR_RED_INLINE void load_lanes(const storage_t<T>* p, int64_t s, Lanes<Acc>& a) {
  using S = storage_t<T>;
  if constexpr (Dense && sizeof(S) == sizeof(Acc) && !kIsHalfLike<T> &&
                std::is_floating_point_v<S> == std::is_floating_point_v<Acc>) {
    using U = typename VecOf<Acc>::unaligned;  // an unaligned vector load
    for (int k = 0; k < kParts; ++k) a.v[k] = *reinterpret_cast<const U*>(p + k * kPartLanes<Acc>);
  } else if constexpr (Dense && std::is_same_v<T, sdk::Half> && std::is_same_v<Acc, float>) {
    for (int k = 0; k < kParts; ++k) widen_part(p + k * kPartLanes<Acc>, a.v[k]);
  } else {
    for (int k = 0; k < kParts; ++k) {  // a part built in an array: element inserts drew GCC 12's -Wmaybe-uninitialized
      Acc part[kPartLanes<Acc>];
      for (int j = 0; j < kPartLanes<Acc>; ++j) {
        const int64_t e = k * kPartLanes<Acc> + j;
        part[j] = load_acc<T, Acc>(p[Dense ? e : e * s]);
      }
      std::memcpy(&a.v[k], part, sizeof part);
    }
  }
}
template <typename Acc, int P>
TSR_RED_INLINE void add_lanes(const Lanes<Acc, P>& a, Lanes<Acc, P>& b) {  // b = a + b
  for (int k = 0; k < P; ++k) b.v[k] = a.v[k] + b.v[k];
}

// The lanes of r as a tree: whole parts first (w >= one part's lanes, in
// registers: through memory, each step's reload of the previous step's stores
// stalled), then a[j] += a[j + w] within the first part, w = kPartLanes / 2, ..., 1.
template <typename Acc, int P>
TSR_RED_INLINE Acc tree_total(Lanes<Acc, P> r) {
  for (int half = P / 2; half >= 1; half /= 2) {
    for (int k = 0; k < half; ++k) r.v[k] = r.v[k] + r.v[k + half];
  }
  Acc a[kPartLanes<Acc>];
  std::memcpy(a, &r.v[0], sizeof a);
  for (int w = kPartLanes<Acc> / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) a[j] = a[j] + a[j + w];
  }
  return a[0];
}

// Pairwise combination of leaf lane vectors: level l holds the lane-wise sum
// of 2^l pushed leaves, so n leaves cost n - 1 vector additions and the tree
// stays balanced. total() adds the levels, then the lanes as a tree.
template <typename Acc, int P = kParts>
class LaneCascade {
 public:
  static constexpr int kWidth = P * kPartLanes<Acc>;
  TSR_RED_INLINE void push(Lanes<Acc, P>& v) {  // v is clobbered
    uint64_t c = count_++;
    int l = 0;
    for (; (c & 1u) != 0; c >>= 1, ++l) add_lanes(level_[l], v);
    for (int k = 0; k < P; ++k) level_[l].v[k] = v.v[k];  // per part: a struct copy goes through memory
  }
  // The lane-wise total into out[kWidth] (zeros when nothing was pushed).
  void total_lanes(Acc* out) const {
    const Lanes<Acc, P> r = lane_total();
    std::memcpy(out, &r, sizeof r);
  }
  Acc total() const {  // lane-wise total, then the lanes as a tree (tree_total)
    if (count_ == 0) return Acc{};
    return tree_total<Acc, P>(lane_total());
  }

 private:
  TSR_RED_INLINE Lanes<Acc, P> lane_total() const {
    Lanes<Acc, P> r{};
    bool first = true;
    for (uint64_t c = count_; c != 0; c &= c - 1) {  // the levels in use, lowest first
      const int l = __builtin_ctzll(c);
      if (first) {
        // Part by part: a struct copy went through the stack as two 64-byte
        // moves whose 32-byte reloads missed store forwarding (a fifth of a
        // 1024-float row sum's time).
        for (int k = 0; k < P; ++k) r.v[k] = level_[l].v[k];
      } else {
        add_lanes(level_[l], r);
      }
      first = false;
    }
    return r;
  }

  Lanes<Acc, P> level_[64];
  uint64_t count_ = 0;
};

// The leaf of the kLeafDepth rows of kLanes elements from element i of p
// (stride s): each lane summed in order.
template <typename T, typename Acc, bool Dense>
TSR_RED_INLINE void whole_leaf(const storage_t<T>* p, int64_t i, int64_t s, Lanes<Acc>& lane) {
  constexpr int W = kLanes<Acc>;
  load_lanes<T, Acc, Dense>(p + (Dense ? i : i * s), s, lane);
  for (int64_t r = 1; r < kLeafDepth; ++r) {
    Lanes<Acc> x;
    load_lanes<T, Acc, Dense>(p + (Dense ? i + r * W : (i + r * W) * s), s, x);
    add_lanes(x, lane);
  }
}

// The partial leaf of elements [i, n), fewer than a leaf: from zeros, whole
// rows, then the last few elements into the first lanes (always added, zeros
// when none are left).
template <typename T, typename Acc, bool Dense>
TSR_RED_INLINE void partial_leaf(const storage_t<T>* p, int64_t i, int64_t n, int64_t s, Lanes<Acc>& lane) {
  constexpr int W = kLanes<Acc>;
  lane = Lanes<Acc>{};
  Lanes<Acc> x;
  for (; i + W <= n; i += W) {
    load_lanes<T, Acc, Dense>(p + (Dense ? i : i * s), s, x);
    add_lanes(x, lane);
  }
  Acc rest[W] = {};
  for (int j = 0; i < n; ++i, ++j) rest[j] = load_acc<T, Acc>(p[Dense ? i : i * s]);
  std::memcpy(&x, rest, sizeof x);
  add_lanes(x, lane);
}

// Pairwise sum of n elements at p with stride s: leaves of kLeafDepth rows of
// kLanes elements, each lane summed in order, leaves combined pairwise per
// lane, then the lanes as a tree. The error grows with log(n). The tail is
// one partial leaf; runs shorter than kLanes are summed in order.
template <typename T, typename Acc, bool Dense>
Acc lane_sum(const storage_t<T>* p, int64_t n, int64_t s) {
  constexpr int W = kLanes<Acc>;
  constexpr int64_t kLeaf = W * kLeafDepth;
  if (n < W) {
    Acc t{};
    for (int64_t i = 0; i < n; ++i) t += load_acc<T, Acc>(p[Dense ? i : i * s]);
    return t;
  }
  LaneCascade<Acc> c;
  Lanes<Acc> lane;
  int64_t i = 0;
  for (; i + kLeaf <= n; i += kLeaf) {
    whole_leaf<T, Acc, Dense>(p, i, s, lane);
    c.push(lane);
  }
  if (i < n) {
    partial_leaf<T, Acc, Dense>(p, i, n, s, lane);
    c.push(lane);
  }
  return c.total();
}

// lane_sum of R dense rows of n < two leaves' elements each (rows rs elements
// apart), every row with exactly lane_sum's operations (the same bits): a
// whole leaf if n reaches one, then a partial leaf from zero (its rest vector
// always added, zeros when n % W == 0: -0 + 0 is +0), the two added as the
// cascade adds them, then the tree; below kLanes elements a serial sum. The
// rows' chains run side by side (four rows; two with a whole leaf, whose
// extra lanes spilled registers at four): one row at a time, the tree's
// latency, not the loads, set the pace (sum over dim 1 of [16384, 64] float32
// took 2.3x PyTorch's time, [4096, 256] 1.1x).
template <typename T, typename Acc, int R, bool WholeLeaf>
TSR_RED_INLINE void short_rows_sum_of(const storage_t<T>* p, int64_t rs, int64_t n, Acc* out) {
  constexpr int W = kLanes<Acc>;
  constexpr int64_t kLeaf = W * kLeafDepth;
  // Zeroed part by part: `part[R]{}` became a rep stos through the stack.
  Lanes<Acc> leaf[R], part[R];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < kParts; ++k) part[r].v[k] = Vec<Acc>{};
  int64_t i = 0;
  if constexpr (WholeLeaf) {
    for (int r = 0; r < R; ++r) load_lanes<T, Acc, true>(p + r * rs, 1, leaf[r]);
    for (int64_t g = 1; g < kLeafDepth; ++g) {
      for (int r = 0; r < R; ++r) {
        Lanes<Acc> x{};
        load_lanes<T, Acc, true>(p + r * rs + g * W, 1, x);
        add_lanes(x, leaf[r]);
      }
    }
    i = kLeaf;
    if (i == n) {
      for (int r = 0; r < R; ++r) out[r] = tree_total<Acc, kParts>(leaf[r]);
      return;
    }
  }
  for (; i + W <= n; i += W) {
    for (int r = 0; r < R; ++r) {
      Lanes<Acc> x{};
      load_lanes<T, Acc, true>(p + r * rs + i, 1, x);
      add_lanes(x, part[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    Lanes<Acc> x{};
    if (i < n) {
      Acc rest[W] = {};
      for (int64_t k = i, j = 0; k < n; ++k, ++j) rest[j] = load_acc<T, Acc>(p[r * rs + k]);
      std::memcpy(&x, rest, sizeof x);
    }
    add_lanes(x, part[r]);
    if constexpr (WholeLeaf) add_lanes(leaf[r], part[r]);  // the cascade's level 0 (the leaf) + the partial leaf
  }
  for (int r = 0; r < R; ++r) out[r] = tree_total<Acc, kParts>(part[r]);
}

// Inlined into its callers: out of line (two callers), its lanes lived on the
// stack and sum over dim 1 of [16384, 64] float32 went from 66 us to 108 us.
template <typename T, typename Acc, int R>
TSR_RED_INLINE void short_rows_sum(const storage_t<T>* p, int64_t rs, int64_t n, Acc* out) {
  constexpr int W = kLanes<Acc>;
  if (n < W) {
    Acc t[R] = {};
    for (int64_t i = 0; i < n; ++i)
      for (int r = 0; r < R; ++r) t[r] += load_acc<T, Acc>(p[r * rs + i]);
    for (int r = 0; r < R; ++r) out[r] = t[r];
  } else if (n < W * kLeafDepth) {
    short_rows_sum_of<T, Acc, R, false>(p, rs, n, out);
  } else {
    static_assert(R % 2 == 0);
    for (int r = 0; r < R; r += 2) short_rows_sum_of<T, Acc, 2, true>(p + r * rs, rs, n, out + r);
  }
}

// lane_sum of one dense row of 2 to 4 leaves' elements (the last one may be
// partial), with the cascade's additions in registers: (L0 + L1), then + L2,
// or + (L2 + L3), exactly as LaneCascade adds 2, 3 or 4 pushed leaves. Through
// LaneCascade, each row's levels went to memory and back and its total was an
// out-of-line call: rows of 1024 floats took 15% longer than the same data
// summed whole.
template <typename T, typename Acc>
TSR_RED_INLINE Acc few_leaves_sum(const storage_t<T>* p, int64_t n) {
  constexpr int W = kLanes<Acc>;
  constexpr int64_t kLeaf = W * kLeafDepth;
  const auto leaf_or_partial = [p, n](int64_t i, Lanes<Acc>& lane) {
    if (i + kLeaf <= n) {
      whole_leaf<T, Acc, true>(p, i, 1, lane);
    } else {
      partial_leaf<T, Acc, true>(p, i, n, 1, lane);
    }
  };
  Lanes<Acc> a, b;
  whole_leaf<T, Acc, true>(p, 0, 1, a);
  leaf_or_partial(kLeaf, b);
  add_lanes(a, b);  // level 1 = L0 + L1
  if (n > 2 * kLeaf) {
    Lanes<Acc> c;
    leaf_or_partial(2 * kLeaf, c);
    if (n > 3 * kLeaf) {
      Lanes<Acc> d;
      leaf_or_partial(3 * kLeaf, d);
      add_lanes(c, d);  // L2 + L3
      add_lanes(b, d);  // level 1 + (L2 + L3)
      return tree_total<Acc, kParts>(d);
    }
    add_lanes(b, c);  // level 1 + level 0
    return tree_total<Acc, kParts>(c);
  }
  return tree_total<Acc, kParts>(b);
}

template <typename T, typename Acc>
Acc pairwise_sum(const storage_t<T>* p, int64_t n, int64_t s) {
  return s == 1 ? lane_sum<T, Acc, true>(p, n, 1) : lane_sum<T, Acc, false>(p, n, s);
}

// Streaming pairwise combination: level l holds the sum of 2^l pushed values,
// so pushing n values costs n - 1 additions and keeps the tree balanced.
template <typename Acc>
class Cascade {
 public:
  void push(Acc x) {
    uint64_t c = count_++;
    int l = 0;
    for (; (c & 1u) != 0; c >>= 1, ++l) x = level_[l] + x;
    level_[l] = x;
  }
  Acc total() const {
    Acc r{};
    bool first = true;
    for (uint64_t c = count_; c != 0; c &= c - 1) {  // the levels in use, lowest first
      const int l = __builtin_ctzll(c);
      r = first ? level_[l] : level_[l] + r;
      first = false;
    }
    return r;
  }

 private:
  Acc level_[64];
  uint64_t count_ = 0;
};

// The same over vectors of `width` lanes (tiles of the outer layout).
template <typename Acc>
class VecCascade {
 public:
  void reset(int64_t width) {
    width_ = width;
    count_ = 0;
  }
  void push(const Acc* v) {
    uint64_t c = count_++;
    int l = 0;
    std::copy(v, v + width_, carry_);
    for (; (c & 1u) != 0; c >>= 1, ++l) {
      const Acc* lv = slot(l);
      for (int64_t w = 0; w < width_; ++w) carry_[w] = lv[w] + carry_[w];
    }
    std::copy(carry_, carry_ + width_, slot(l));
  }
  void total(Acc* out) {
    bool first = true;
    for (uint64_t c = count_; c != 0; c &= c - 1) {  // the levels in use, lowest first
      const Acc* lv = slot(__builtin_ctzll(c));
      for (int64_t w = 0; w < width_; ++w) out[w] = first ? lv[w] : lv[w] + out[w];
      first = false;
    }
    if (first) std::fill(out, out + width_, Acc{});
  }

 private:
  Acc* slot(int l) {
    if (levels_.size() < static_cast<size_t>((l + 1) * kTile)) levels_.resize(static_cast<size_t>((l + 1) * kTile));
    return levels_.data() + l * kTile;
  }
  int64_t width_ = 0;
  uint64_t count_ = 0;
  Acc carry_[kTile];
  std::vector<Acc> levels_;
};

template <typename T, typename Acc>
struct Reducer {
  using S = storage_t<T>;
  const Layout& L;

  // Sum of the reduced elements [begin, end) (flat, innermost fastest) of the
  // output whose input elements start at base.
  Acc sum_range(const S* base, int64_t begin, int64_t end) const {
    if (L.nr == 1) return pairwise_sum<T, Acc>(base + begin * L.red[0].in, end - begin, L.red[0].in);
    Cascade<Acc> acc;
    reduce_detail::for_each_run(L, base, begin, end, [&acc](const S* run, int64_t len, int64_t stride) {
      acc.push(pairwise_sum<T, Acc>(run, len, stride));
    });
    return acc.total();
  }

  int64_t blocks() const { return (L.n_red + kBlock - 1) / kBlock; }

  Acc block(const S* base, int64_t b) const { return sum_range(base, b * kBlock, std::min(L.n_red, (b + 1) * kBlock)); }

  // One output, on this thread.
  Acc sum_all(const S* base) const {
    const int64_t nb = blocks();
    if (nb == 1) return block(base, 0);
    Cascade<Acc> acc;
    for (int64_t b = 0; b < nb; ++b) acc.push(block(base, b));
    return acc.total();
  }

  // One output, its blocks spread over threads; same result as sum_all.
  Acc sum_all_parallel(const S* base) const {
    const int64_t nb = blocks();
    std::vector<Acc> partial(static_cast<size_t>(nb));
    parallel_chunks(nb, kBlock, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) partial[static_cast<size_t>(b)] = block(base, b);
    });
    Cascade<Acc> acc;
    for (const Acc& p : partial) acc.push(p);
    return acc.total();
  }

  // Outer layout: sums rows [r0, r1) of a tile of `width` lanes (lane stride
  // ls): leaves of kLeafRows rows are added straight, leaves are cascaded, and
  // the block's total goes to `result`.
  void tile_block(const S* base, int64_t width, int64_t ls, int64_t r0, int64_t r1, VecCascade<Acc>& vc,
                  Acc* result) const {
    int64_t index[kMaxDims];
    const S* row = base;
    int64_t rest = r0;
    for (int d = 0; d < L.nr; ++d) {
      index[d] = rest % L.red[d].size;
      rest /= L.red[d].size;
      row += index[d] * L.red[d].in;
    }
    vc.reset(width);
    Acc leaf[kTile];
    const S* rows[kLeafRows];
    // Whole float32 (or float16/bfloat16, widened) tiles of dense lanes: the
    // same additions in the same order as sum_leaf + VecCascade below, with
    // the tile held in eight registers (float16 column sums took 4.1x
    // PyTorch's time through sum_leaf).
    constexpr bool kFastType = (std::is_same_v<T, float> || kIsHalfLike<T>) && std::is_same_v<Acc, float>;
    constexpr int kTileParts = static_cast<int>(kTile / kPartLanes<float>);
    const bool fast = kFastType && ls == 1 && width == kTile;
    LaneCascade<float, kTileParts> tile_cascade;
    for (int64_t r = r0; r < r1;) {
      const int64_t nrows = std::min(kLeafRows, r1 - r);
      for (int64_t i = 0; i < nrows; ++i) {
        rows[i] = row;
        for (int d = 0; d < L.nr; ++d) {  // next row
          row += L.red[d].in;
          if (++index[d] < L.red[d].size) break;
          row -= L.red[d].size * L.red[d].in;
          index[d] = 0;
        }
      }
      r += nrows;
      if constexpr (kFastType) {
        if (fast) {
          using U = typename VecOf<float>::unaligned;
          Lanes<float, kTileParts> acc{};
          Vec16 wide[kTile / 16] = {};  // the half types' accumulators: the same lanes, 16 at a time
          for (int64_t i = 0; i < nrows; ++i) {
            if constexpr (std::is_same_v<T, float>) {
              for (int k = 0; k < kTileParts; ++k) {
                acc.v[k] = acc.v[k] + *reinterpret_cast<const U*>(rows[i] + k * kPartLanes<float>);
              }
            } else {
              for (int q = 0; q < kTile / 16; ++q) {
                Vec16 x;
                widen16_part<T>(rows[i] + q * 16, x);
                wide[q] = wide[q] + x;
              }
            }
          }
          if constexpr (kIsHalfLike<T>) std::memcpy(acc.v, wide, sizeof wide);
          tile_cascade.push(acc);
          continue;
        }
      }
      sum_leaf(rows, nrows, width, ls, leaf);
      vc.push(leaf);
    }
    if constexpr (kFastType) {
      if (fast) {
        tile_cascade.total_lanes(result);
        return;
      }
    }
    vc.total(result);
  }

  // leaf[w] = sum of rows[i][w * ls] over the leaf's rows, in row order. With
  // dense lanes, kChunk lanes at a time stay in registers across the rows.
  static void sum_leaf(const S* const* rows, int64_t nrows, int64_t width, int64_t ls, Acc* leaf) {
    constexpr int64_t kChunk = 16;
    int64_t w = 0;
    if (ls == 1) {
      for (; w + kChunk <= width; w += kChunk) {
        Acc a[kChunk] = {};
        for (int64_t i = 0; i < nrows; ++i) {
          const S* p = rows[i] + w;
          for (int64_t j = 0; j < kChunk; ++j) a[j] += load_acc<T, Acc>(p[j]);
        }
        for (int64_t j = 0; j < kChunk; ++j) leaf[w + j] = a[j];
      }
    }
    for (; w < width; ++w) {
      Acc a{};
      for (int64_t i = 0; i < nrows; ++i) a += load_acc<T, Acc>(rows[i][w * ls]);
      leaf[w] = a;
    }
  }
};

// Outputs whose reduced elements are dense runs with the kept dim between
// them (sum over dims (0, 2) of [64, 128, 128]: each output 64 runs of 128
// floats, 64 KB apart), in one block: the runs in memory order, run q of every
// output before run q + 1, each run's pairwise sum pushed to its output's
// cascade: the same pushes in the same order as sum_range's, so the same bits.
// Output by output, each run began a new 64 KB jump the prefetchers could not
// follow (1.6x PyTorch's time, which accumulates in memory order).
template <typename T, typename Out>
void runs_in_memory_order(const Layout& L, const storage_t<T>* in, storage_t<Out>* out) {
  using Acc = acc_t<T>;
  using S = storage_t<T>;
  const Dim& k = L.kept[0];
  const int64_t len = L.red[0].size, runs = L.red[1].size, run_stride = L.red[1].in;
  constexpr int kRows = 4;
  constexpr int64_t kLeaf = kLanes<Acc> * kLeafDepth;
  parallel_chunks(L.n_out, L.n_red, [&](int64_t b, int64_t e) {
    std::vector<Cascade<Acc>> acc(static_cast<size_t>(e - b));
    for (int64_t q = 0; q < runs; ++q) {
      const S* base = in + q * run_stride;
      int64_t j = b;
      if (len < 2 * kLeaf) {
        for (; j + kRows <= e; j += kRows) {
          Acc r[kRows];
          short_rows_sum<T, Acc, kRows>(base + j * k.in, k.in, len, r);
          for (int i = 0; i < kRows; ++i) acc[static_cast<size_t>(j - b + i)].push(r[i]);
        }
      }
      for (; j < e; ++j) acc[static_cast<size_t>(j - b)].push(pairwise_sum<T, Acc>(base + j * k.in, len, 1));
    }
    for (int64_t j = b; j < e; ++j) out[j * k.out] = store_acc<Out, Acc>(acc[static_cast<size_t>(j - b)].total());
  });
}

template <typename T, typename Out>
void reduce_inner(const Layout& L, const storage_t<T>* in, storage_t<Out>* out) {
  using Acc = acc_t<T>;
  using S = storage_t<T>;
  using O = storage_t<Out>;
  const Reducer<T, Acc> red{L};
  const int64_t threads = max_threads();
  const bool few_outputs = L.n_out < threads && L.n_red >= kStreamGrain;
  if (few_outputs && threads > 1) {  // e.g. a full reduction: split each output's blocks
    for (int64_t i = 0; i < L.n_out; ++i) {
      int64_t io, oo;
      offsets_of(i, L.kept, L.nk, io, oo);
      out[oo] = store_acc<Out, Acc>(red.sum_all_parallel(in + io));
    }
    return;
  }
  if (L.nr == 2 && L.nk == 1 && L.red[0].in == 1 && L.n_red <= kBlock && L.kept[0].in < L.red[1].in) {
    runs_in_memory_order<T, Out>(L, in, out);
    return;
  }
  // Threads take outputs; the kept dims are walked by the SDK iterator.
  int64_t shape[kMaxDims], in_strides[kMaxDims], out_strides[kMaxDims];
  for (int d = 0; d < L.nk; ++d) {  // the iterator wants outermost first
    shape[d] = L.kept[L.nk - 1 - d].size;
    in_strides[d] = L.kept[L.nk - 1 - d].in;
    out_strides[d] = L.kept[L.nk - 1 - d].out;
  }
  const sdk::StridedIter<2> it(
      L.nk, shape,
      {sdk::IterOperand{reinterpret_cast<char*>(out), out_strides, static_cast<int64_t>(sizeof(O))},
       sdk::IterOperand{reinterpret_cast<char*>(const_cast<S*>(in)), in_strides, static_cast<int64_t>(sizeof(S))}},
      sdk::IterOrder::kRowMajor);
  // Short dense rows (less than two leaves, e.g. sum over a last dim of 64 or
  // 256 floats) go four at a time, where the iterator's run holds them evenly
  // spaced.
  constexpr int kRows = 4;
  constexpr int64_t kLeaf = kLanes<Acc> * kLeafDepth;
  const bool dense_rows = L.nr == 1 && L.red[0].in == 1 && L.n_red > 0;
  const bool short_rows = dense_rows && L.n_red < 2 * kLeaf;
  const bool few_leaves = dense_rows && L.n_red >= 2 * kLeaf && L.n_red <= 4 * kLeaf;
  const auto loop = [&red, &L, short_rows, few_leaves](char** p, const int64_t* s, int64_t n) {
    int64_t i = 0;
    if (few_leaves) {
      for (; i < n; ++i) {
        *reinterpret_cast<O*>(p[0] + i * s[0]) =
            store_acc<Out, Acc>(few_leaves_sum<T, Acc>(reinterpret_cast<const S*>(p[1] + i * s[1]), L.n_red));
      }
      return;
    }
    if (short_rows && s[1] % static_cast<int64_t>(sizeof(S)) == 0) {
      for (; i + kRows <= n; i += kRows) {
        Acc r[kRows];
        short_rows_sum<T, Acc, kRows>(reinterpret_cast<const S*>(p[1] + i * s[1]), s[1] / static_cast<int64_t>(sizeof(S)),
                                      L.n_red, r);
        for (int k = 0; k < kRows; ++k) *reinterpret_cast<O*>(p[0] + (i + k) * s[0]) = store_acc<Out, Acc>(r[k]);
      }
    }
    for (; i < n; ++i) {
      *reinterpret_cast<O*>(p[0] + i * s[0]) = store_acc<Out, Acc>(red.sum_all(reinterpret_cast<const S*>(p[1] + i * s[1])));
    }
  };
  parallel_chunks(L.n_out, L.n_red, [&](int64_t b, int64_t e) { it.for_range(b, e, loop); });
}

template <typename T, typename Out>
void reduce_outer(const Layout& L, const storage_t<T>* in, storage_t<Out>* out) {
  using Acc = acc_t<T>;
  using S = storage_t<T>;
  const Reducer<T, Acc> red{L};
  const Dim& lane = L.kept[0];  // the fastest-moving kept dim: tiles run along it
  const int64_t tiles = (lane.size + kTile - 1) / kTile;
  const int64_t outer = L.n_out / lane.size;  // combinations of the other kept dims
  const int64_t row_blocks = (L.n_red + kBlockRows - 1) / kBlockRows;
  const auto width_of = [&](int64_t t) { return std::min(kTile, lane.size - t * kTile); };
  const auto store = [&](storage_t<Out>* o, int64_t width, const Acc* sums) {
    for (int64_t w = 0; w < width; ++w) o[w * lane.out] = store_acc<Out, Acc>(sums[w]);
  };

  if (row_blocks == 1) {  // few rows: every (outer, tile) pair is one independent task
    const int64_t tasks = outer * tiles;
    parallel_for(tasks, std::max<int64_t>(1, kStreamGrain / (kTile * L.n_red)), [&](int64_t t0, int64_t t1) {
      VecCascade<Acc> vc;
      Acc sums[kTile];
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t t = task % tiles;
        int64_t io, oo;
        offsets_of(task / tiles, L.kept + 1, L.nk - 1, io, oo);
        red.tile_block(in + io + t * kTile * lane.in, width_of(t), lane.in, 0, L.n_red, vc, sums);
        store(out + oo + t * kTile * lane.out, width_of(t), sums);
      }
    });
    return;
  }

  // Many rows. Phase 1: each block of kBlockRows rows is summed for every tile
  // while those rows are hot in cache and TLB (walking one tile down all rows
  // would touch a new page per row). Phase 2: each tile cascades its block
  // partials in block order, so the result does not depend on the threads.
  std::vector<Acc> partial(static_cast<size_t>(row_blocks * lane.size));  // [block][lane]
  for (int64_t o = 0; o < outer; ++o) {
    int64_t io, oo;
    offsets_of(o, L.kept + 1, L.nk - 1, io, oo);
    const S* base = in + io;
    parallel_for(row_blocks, std::max<int64_t>(1, kStreamGrain / (kBlockRows * lane.size)), [&](int64_t b0, int64_t b1) {
      VecCascade<Acc> vc;
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * kBlockRows, r1 = std::min(L.n_red, r0 + kBlockRows);
        for (int64_t t = 0; t < tiles; ++t) {
          red.tile_block(base + t * kTile * lane.in, width_of(t), lane.in, r0, r1, vc,
                         partial.data() + b * lane.size + t * kTile);
        }
      }
    });
    parallel_for(tiles, std::max<int64_t>(1, kStreamGrain / (kTile * row_blocks)), [&](int64_t t0, int64_t t1) {
      VecCascade<Acc> vc;
      Acc sums[kTile];
      for (int64_t t = t0; t < t1; ++t) {
        vc.reset(width_of(t));
        for (int64_t b = 0; b < row_blocks; ++b) vc.push(partial.data() + b * lane.size + t * kTile);
        vc.total(sums);
        store(out + oo + t * kTile * lane.out, width_of(t), sums);
      }
    });
  }
}

template <typename T, typename Out>
void sum_typed(const DLTensor& self, DLTensor& out, const Layout& L) {
  const storage_t<T>* in = reinterpret_cast<const storage_t<T>*>(data_ptr(self)) + L.in_offset;
  storage_t<Out>* o = reinterpret_cast<storage_t<Out>*>(data_ptr(out)) + L.out_offset;
  if (L.inner) {
    reduce_inner<T, Out>(L, in, o);
  } else {
    reduce_outer<T, Out>(L, in, o);
  }
}


void sum_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const TsrValue& dim = arg(call, 1, "dim");
  if (dim.tag != TSR_VALUE_INT_LIST) invalid("argument 'dim' must be an int list, got " + tag_text(dim.tag));
  const TsrValue& keepdim_v = arg(call, 2, "keepdim");
  if (keepdim_v.tag != TSR_VALUE_BOOL) invalid("argument 'keepdim' must be a bool, got " + tag_text(keepdim_v.tag));
  const bool keepdim = keepdim_v.as.b != 0;
  // args[3] (dtype) is already reflected in the output's dtype.
  DLTensor& out = output(call, 0);

  const int64_t* dims = dim.as.int_list.data;
  size_t ndims = dim.as.int_list.size;
  check_reduce_args(self, out, dims, ndims, keepdim);  // a 0-d input's "dim 0" becomes no dim

  const TsrDType out_dtype = dtype_of(out, "out");
  const bool integral_in = !(kFloatMask & TSR_DTYPE_BIT(call.dtype));
  if (out_dtype != call.dtype && !(integral_in && out_dtype == TSR_DTYPE_INT64)) {
    invalid(std::string("output dtype ") + sdk::dtype_name(out_dtype) + " is not " + sdk::dtype_name(call.dtype) +
            (integral_in ? " or int64" : ""));
  }
  const Layout L = make_layout(self, out, dims, ndims, keepdim);

  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto run = [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      using Acc = acc_t<T>;
      if (sdk::numel(self) == 0) {  // not called by the core; defined anyway: zeros
        run_elementwise<1>(out.ndim, out.shape, {sdk::IterOperand::of(out)}, kGrain,
                           sdk::basic_loop<storage_t<Out>>([] { return store_acc<Out, Acc>(Acc{}); }));
        return;
      }
      if (L.nr == 0) {  // only size-1 dims are reduced: convert element by element
        int64_t out_strides[kMaxDims];
        std::vector<int64_t> big;
        int64_t* os = out_strides;
        if (self.ndim > kMaxDims) {
          big.resize(static_cast<size_t>(self.ndim));
          os = big.data();
        }
        size_t next = 0;
        for (int32_t d = 0, o = 0; d < self.ndim; ++d) {
          const bool reduced = next < ndims && dims[next] == d;
          if (reduced) ++next;
          os[d] = reduced ? 0 : out.strides[keepdim ? d : o];
          if (!reduced || keepdim) ++o;
        }
        sdk::IterOperand o_op{data_ptr(out), os, static_cast<int64_t>(sizeof(storage_t<Out>))};
        run_elementwise<2>(self.ndim, self.shape, {o_op, sdk::IterOperand::of(self)}, kGrain,
                           sdk::basic_loop<storage_t<Out>, storage_t<T>>(
                               [](storage_t<T> x) { return store_acc<Out, Acc>(load_acc<T, Acc>(x)); }));
        return;
      }
      sum_typed<T, Out>(self, out, L);
    };
    if (out_dtype == call.dtype) {
      run(sdk::TypeTag<T>{});
    } else if constexpr (!kIsFloating<T>) {
      run(sdk::TypeTag<int64_t>{});
    }
  });
}

}  // namespace

void register_reduction_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"sum", kAllMask, &kernel_entry<&sum_kernel>},
      {"prod", kAllMask, &kernel_entry<&prod_kernel>},
      {"amax", kAllMask, &kernel_entry<&amax_kernel<true>>},
      {"amin", kAllMask, &kernel_entry<&amax_kernel<false>>},
      {"max.dim", kAllMask, &kernel_entry<&max_dim_kernel<true>>},
      {"min.dim", kAllMask, &kernel_entry<&max_dim_kernel<false>>},
      {"any", kAllMask, &kernel_entry<&any_kernel<true>>},
      {"all", kAllMask, &kernel_entry<&any_kernel<false>>},
      {"var", kFloatMask, &kernel_entry<&var_kernel<false>>},
      {"std", kFloatMask, &kernel_entry<&var_kernel<true>>},
      {"norm", kFloatMask, &kernel_entry<&norm_kernel>},
      {"logsumexp", kFloatMask, &kernel_entry<&logsumexp_kernel>},
      {"cumsum", kAllMask, &kernel_entry<&scan_kernel<true>>},
      {"cumprod", kAllMask, &kernel_entry<&scan_kernel<false>>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
