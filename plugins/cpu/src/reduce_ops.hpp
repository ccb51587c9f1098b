// Reduction kernels other than sum: prod, amax/amin, max.dim/min.dim (values
// and indices), any/all, var/std, norm, logsumexp (docs/ops/reduction.md).
//
// Folds (prod, amax, amin, any, all) share one driver over the simplified
// Layout: contiguous runs of the innermost reduced dim use kLanes independent
// accumulators (the loop GCC vectorizes); when the innermost input dim is kept
// (e.g. a reduction over dim 0), tiles of adjacent outputs are folded row by
// row, so every load is used; a few outputs with many elements each (a full
// reduction) split their elements over threads. var, std and norm run per
// output in double, var in two passes (mean, then squared deviations).
// logsumexp takes the max, then sums exp(x - max): float-like inputs with the
// vector exp of nn_softmax.hpp, in float over short blocks whose sums add up
// in double; double inputs with std::exp.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "parallel.hpp"
#include "reduce_layout.hpp"
#include "nn_softmax.hpp"
#include "lane_tree.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace reduce_detail {

/// The type comparisons and folds read elements as: float for float16/bfloat16,
/// 0/1 for bool, else the type itself.
template <typename T>
using cmp_t = std::conditional_t<kIsHalfLike<T>, float, std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;

template <typename T>
inline cmp_t<T> load_cmp(storage_t<T> x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x != 0 ? 1 : 0;
  } else if constexpr (kIsHalfLike<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

template <typename T>
inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// ---- fold ops: A init(); step(A&, C); combine(A&, A); store ----

template <typename T, bool IsMax>
struct ExtremeOp {
  using C = cmp_t<T>;
  using A = C;
  static A init() {
    if constexpr (std::is_floating_point_v<C>) {
      return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    } else {
      return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    }
  }
  // NaN wins and stays (a NaN accumulator compares false with everything).
  static void step(A& a, C x) {
    if constexpr (IsMax) {
      a = (x > a || is_nan(x)) ? x : a;
    } else {
      a = (x < a || is_nan(x)) ? x : a;
    }
  }
  static void combine(A& a, A b) { step(a, b); }
};

template <typename T>
using prod_acc_t = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<kIsFloating<T>, float, uint64_t>>;

template <typename T>
struct ProdOp {
  using A = prod_acc_t<T>;
  using C = A;
  static A init() { return A(1); }
  static void step(A& a, C x) { a *= x; }  // uint64 for integers: wraps, no UB
  static void combine(A& a, A b) { a *= b; }
};

template <typename T, bool IsAny>
struct AnyAllOp {
  using C = cmp_t<T>;
  using A = uint8_t;
  static A init() { return IsAny ? 0 : 1; }
  static void step(A& a, C x) {
    if constexpr (IsAny) {
      a |= static_cast<A>(x != C(0));
    } else {
      a &= static_cast<A>(x != C(0));
    }
  }
  static void combine(A& a, A b) {
    if constexpr (IsAny) {
      a |= b;
    } else {
      a &= b;
    }
  }
};

template <typename T, typename Op>
inline typename Op::C load_op(storage_t<T> x) {
  if constexpr (std::is_same_v<typename Op::C, uint64_t>) {
    if constexpr (std::is_same_v<T, bool>) {
      return x != 0 ? 1u : 0u;
    } else {
      return static_cast<uint64_t>(static_cast<int64_t>(x));  // sign-extend, then wrap
    }
  } else {
    return static_cast<typename Op::C>(load_cmp<T>(x));
  }
}

template <typename Op>
inline constexpr int kLanes = static_cast<int>(std::min<size_t>(64, 128 / sizeof(typename Op::A)));

// Folds n elements at p (stride s) into acc; contiguous runs use kLanes accumulators.
template <typename Op>
inline constexpr bool kIsFloatExtreme = false;
template <typename T, bool IsMax>
inline constexpr bool kIsFloatExtreme<ExtremeOp<T, IsMax>> = std::is_floating_point_v<cmp_t<T>>;

// The bytes of a vector register at this ISA level (32 below AVX2: GCC
// splits the vectors in two), for the float max/min folds' register-sized parts.
#if defined(__AVX512F__)
inline constexpr int kRegisterBytes = 64;
#else
inline constexpr int kRegisterBytes = 32;
#endif

// One register-sized part of PL elements at p into the NaN-blind extreme e
// and the NaN flag sum b (float, double: the bits are the values; the half
// types widen to float).
template <typename T, bool IsMax, int PL, typename V>
inline __attribute__((always_inline)) void fold_part(const storage_t<T>* p, V& e, V& b) {
  using A = cmp_t<T>;
  V x;
  if constexpr (sizeof(storage_t<T>) == sizeof(A)) {
    std::memcpy(&x, p, sizeof x);
  } else {
    A xs[PL];
    for (int j = 0; j < PL; ++j) xs[j] = load_cmp<T>(p[j]);
    std::memcpy(&x, xs, sizeof x);
  }
  e = IsMax ? (x > e ? x : e) : (x < e ? x : e);
  b += x;
}

template <typename Op>
inline constexpr bool kIsProd = false;
template <typename T>
inline constexpr bool kIsProd<ProdOp<T>> = true;

// fold_run's product over R dense rows at once (rows rs elements apart), each
// row with exactly fold_run's multiplications in its order (the same bits):
// kLanes lanes as register-sized vector parts, the lanes' tree with whole
// parts first, then the tail in order. One row at a time through an array of
// lanes, each row waited on its tree's latency (prod over dim 1 of
// [4096, 256] took 1.35x PyTorch's time, [16384, 64] 2.7x); R rows' chains
// run side by side.
template <typename T, int R>
inline void prod_rows(const storage_t<T>* p, int64_t rs, int64_t n, prod_acc_t<T>* acc) {
  using Op = ProdOp<T>;
  using A = typename Op::A;
  constexpr int W = kLanes<Op>;
  constexpr int PL = kRegisterBytes / static_cast<int>(sizeof(A)), P = W / PL;
  using V = typename VecN<A, PL>::type;
  int64_t i = 0;
  if (n >= W) {
    V lane[R][P];
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < P; ++k) lane[r][k] = V{} + Op::init();
    for (; i + W <= n; i += W) {
      for (int r = 0; r < R; ++r) {
        const storage_t<T>* q = p + r * rs + i;
        [[maybe_unused]] float wide[W];
        if constexpr (std::is_same_v<T, sdk::Half>) half_block::widen_half_n<W>(q, wide);
        for (int k = 0; k < P; ++k) {
          V x;
          if constexpr (sizeof(storage_t<T>) == sizeof(A) && std::is_floating_point_v<storage_t<T>>) {
            std::memcpy(&x, q + k * PL, sizeof x);
          } else if constexpr (std::is_same_v<T, sdk::Half>) {
            std::memcpy(&x, wide + k * PL, sizeof x);
          } else {
            A xs[PL];
            for (int j = 0; j < PL; ++j) xs[j] = load_op<T, Op>(q[k * PL + j]);
            std::memcpy(&x, xs, sizeof x);
          }
          lane[r][k] = lane[r][k] * x;
        }
      }
    }
    const auto mul = [](auto& lo, const auto& hi) { lo = lo * hi; };
    for (int r = 0; r < R; ++r) {
      for (int half = P / 2; half >= 1; half /= 2) {
        for (int k = 0; k < half; ++k) mul(lane[r][k], lane[r][k + half]);
      }
      Op::combine(acc[r], tree_lanes<PL, A>(lane[r][0], mul));
    }
  }
  for (; i < n; ++i)
    for (int r = 0; r < R; ++r) Op::step(acc[r], load_op<T, Op>(p[r * rs + i]));
}

template <typename T, typename Op>
inline void fold_run(const storage_t<T>* p, int64_t n, int64_t s, typename Op::A& acc) {
  using A = typename Op::A;
  constexpr int W = kLanes<Op>;
  int64_t i = 0;
  if constexpr (kIsFloatExtreme<Op>) {
    // Plain max/min (one vmaxps: NaN-blind) plus a lane sum of x, which is NaN
    // if some x is NaN (or on inf - inf); then the exact NaN-propagating loop
    // runs instead (rare). Two vector ops per load instead of four.
    // The W lanes as register-sized parts, vector variables: arrays copied
    // into vectors after the loop went through the stack at every run's end
    // (amax over rows of 1024 floats: 64 -> 61 us without), and GCC
    // scalarizes a select on a vector wider than a register.
    constexpr int PL = kRegisterBytes / static_cast<int>(sizeof(A)), P = W / PL;
    if (s == 1 && n >= W) {
      constexpr bool kMax = std::is_same_v<Op, ExtremeOp<T, true>>;
      using V = typename VecN<A, PL>::type;
      V lane[P], bad[P];
      for (int k = 0; k < P; ++k) {
        lane[k] = V{} + Op::init();
        bad[k] = V{};
      }
      for (; i + W <= n; i += W) {
        if constexpr (std::is_same_v<T, sdk::Half>) {  // widened in vectors first
          float xs[W];
          half_block::widen_half_n<W>(p + i, xs);
          for (int k = 0; k < P; ++k) fold_part<float, kMax, PL>(xs + k * PL, lane[k], bad[k]);
        } else {
          for (int k = 0; k < P; ++k) fold_part<T, kMax, PL>(p + i + k * PL, lane[k], bad[k]);
        }
      }
      const auto pick = [](auto& lo, const auto& hi) {
        if constexpr (kMax) {
          lo = hi > lo ? hi : lo;
        } else {
          lo = hi < lo ? hi : lo;
        }
      };
      const auto add = [](auto& lo, const auto& hi) { lo = lo + hi; };
      // The tree over all W lanes: its first steps pair whole parts.
      for (int half = P / 2; half >= 1; half /= 2) {
        for (int k = 0; k < half; ++k) {
          pick(lane[k], lane[k + half]);
          add(bad[k], bad[k + half]);
        }
      }
      const A extreme = tree_lanes<PL, A>(lane[0], pick);
      const A sum = tree_lanes<PL, A>(bad[0], add);
      if (sum == sum) {
        Op::combine(acc, extreme);
      } else {
        i = 0;
        for (; i < n - n % W; ++i) Op::step(acc, load_cmp<T>(p[i]));
      }
    }
  } else if constexpr (kIsProd<Op>) {
    if (s == 1) {
      prod_rows<T, 1>(p, 0, n, &acc);
      return;
    }
  } else if (s == 1 && n >= W) {
    A lane[W];
    for (int j = 0; j < W; ++j) lane[j] = Op::init();
    for (; i + W <= n; i += W) {
      for (int j = 0; j < W; ++j) Op::step(lane[j], load_op<T, Op>(p[i + j]));
    }
    for (int w = W / 2; w >= 1; w /= 2) {  // tree: the halves combine as vectors
      for (int j = 0; j < w; ++j) Op::combine(lane[j], lane[j + w]);
    }
    Op::combine(acc, lane[0]);
  }
  for (; i < n; ++i) Op::step(acc, load_op<T, Op>(p[i * s]));
}

/// Calls run(ptr, len, stride) on the runs of the innermost reduced dim that
/// cover the flat reduced elements [begin, end) of the output at `base`.
template <typename S, typename Run>
inline void for_each_run(const Layout& L, const S* base, int64_t begin, int64_t end, const Run& run) {
  if (begin >= end) return;
  if (L.nr == 0) {
    run(base, int64_t{1}, int64_t{1});
    return;
  }
  const int64_t len = L.red[0].size, s0 = L.red[0].in;
  if (L.nr == 1) {
    run(base + begin * s0, end - begin, s0);
    return;
  }
  int64_t index[kMaxDims];
  int64_t rest = begin / len;
  int64_t col = begin % len;
  const S* row = base;
  for (int d = 1; d < L.nr; ++d) {
    index[d] = rest % L.red[d].size;
    rest /= L.red[d].size;
    row += index[d] * L.red[d].in;
  }
  for (int64_t remaining = end - begin; remaining > 0;) {
    const int64_t count = std::min(len - col, remaining);
    run(row + col * s0, count, s0);
    remaining -= count;
    col = 0;
    for (int d = 1; d < L.nr && remaining > 0; ++d) {
      row += L.red[d].in;
      if (++index[d] < L.red[d].size) break;
      row -= L.red[d].size * L.red[d].in;
      index[d] = 0;
    }
  }
}

// Calls f(row) for the n_red rows (reduced index order) of the tile at base.
template <typename S, typename F>
inline void for_each_row(const Layout& L, const S* base, const F& f) {
  int64_t index[kMaxDims];
  for (int d = 0; d < L.nr; ++d) index[d] = 0;
  const S* row = base;
  for (int64_t r = 0; r < L.n_red; ++r) {
    f(row);
    for (int d = 0; d < L.nr; ++d) {
      row += L.red[d].in;
      if (++index[d] < L.red[d].size) break;
      row -= L.red[d].size * L.red[d].in;
      index[d] = 0;
    }
  }
}

/// f(in_offset, out_offset) for every output, outputs split over threads.
template <typename F>
inline void for_each_output(const Layout& L, int64_t cost_per_output, const F& f, int64_t grain = kStreamGrain) {
  parallel_chunks(L.n_out, cost_per_output, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t io, oo;
      offsets_of(i, L.kept, L.nk, io, oo);
      f(io, oo);
    }
  }, grain);
}

template <typename T, typename Out, typename Op>
void fold_reduce(const Layout& L, const storage_t<T>* in, storage_t<Out>* out) {
  using A = typename Op::A;
  using S = storage_t<T>;
  const auto store = [](A a) { return static_cast<storage_t<Out>>(convert<Out>(static_cast<
                                   std::conditional_t<std::is_same_v<A, uint64_t>, int64_t, A>>(a))); };
  if (L.n_red == 0) {  // a zero-size reduced dim: the identity
    for_each_output(L, 1, [&](int64_t, int64_t oo) { out[oo] = store(Op::init()); });
    return;
  }
  // Long outputs fold fixed chunks of kFoldChunk elements, combined in order,
  // whether threads split one output's chunks or take whole outputs: the
  // result (a float prod's rounding) does not depend on the thread count.
  constexpr int64_t kFoldChunk = int64_t{1} << 16;
  const auto fold_range = [&](int64_t io, int64_t b, int64_t e) {
    A acc = Op::init();
    for_each_run(L, in + io, b, e, [&](const S* p, int64_t n, int64_t s) { fold_run<T, Op>(p, n, s, acc); });
    return acc;
  };
  const auto fold_output = [&](int64_t io) {
    if (L.n_red <= kFoldChunk) return fold_range(io, 0, L.n_red);
    A acc = Op::init();
    for (int64_t b = 0; b < L.n_red; b += kFoldChunk) Op::combine(acc, fold_range(io, b, std::min(L.n_red, b + kFoldChunk)));
    return acc;
  };
  if (L.inner && L.n_out < max_threads() && L.n_red >= 2 * kFoldChunk) {  // few outputs: split each one's chunks
    const int64_t chunks = (L.n_red + kFoldChunk - 1) / kFoldChunk;
    std::vector<A> partial(static_cast<size_t>(chunks));
    for (int64_t i = 0; i < L.n_out; ++i) {
      int64_t io, oo;
      offsets_of(i, L.kept, L.nk, io, oo);
      parallel_chunks(chunks, kFoldChunk, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          partial[static_cast<size_t>(c)] = fold_range(io, c * kFoldChunk, std::min(L.n_red, (c + 1) * kFoldChunk));
        }
      });
      A acc = Op::init();
      for (const A& p : partial) Op::combine(acc, p);
      out[oo] = store(acc);
    }
    return;
  }
  if (L.inner && L.nk == 1 && L.nr == 1 && L.n_red <= kFoldChunk) {
    // Evenly spaced rows, each one run (amax over dim 1 of a matrix): the
    // row's address without for_each_output's division per output.
    const Dim& k = L.kept[0];
    const int64_t rs = L.red[0].in;
    parallel_chunks(L.n_out, L.n_red, [&](int64_t b, int64_t e) {
      int64_t i = b;
      if constexpr (kIsProd<Op>) {
        // Two rows: four measured slower on [4096, 256] (76-81 us against 57-68 us).
        constexpr int kRows = 2;
        if (rs == 1) {
          for (; i + kRows <= e; i += kRows) {
            A acc[kRows];
            for (int r = 0; r < kRows; ++r) acc[r] = Op::init();
            prod_rows<T, kRows>(in + i * k.in, k.in, L.n_red, acc);
            for (int r = 0; r < kRows; ++r) out[(i + r) * k.out] = store(acc[r]);
          }
        }
      }
      for (; i < e; ++i) {
        A acc = Op::init();
        fold_run<T, Op>(in + i * k.in, L.n_red, rs, acc);
        out[i * k.out] = store(acc);
      }
    }, kStreamGrain);
    return;
  }
  if (L.inner) {
    for_each_output(L, L.n_red, [&](int64_t io, int64_t oo) { out[oo] = store(fold_output(io)); });
    return;
  }
  // The innermost input dim is kept: fold tiles of adjacent outputs row by row.
  constexpr int64_t kTileW = 256;
  const Dim& lane = L.kept[0];
  const int64_t tiles = (lane.size + kTileW - 1) / kTileW;
  const int64_t outer = L.n_out / lane.size;
  parallel_chunks(outer * tiles, kTileW * L.n_red, [&](int64_t t0, int64_t t1) {
    A acc[kTileW];
    int64_t index[kMaxDims];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t t = task % tiles;
      int64_t io, oo;
      offsets_of(task / tiles, L.kept + 1, L.nk - 1, io, oo);
      const int64_t width = std::min(kTileW, lane.size - t * kTileW);
      const S* row = in + io + t * kTileW * lane.in;
      for (int64_t w = 0; w < width; ++w) acc[w] = Op::init();
      if constexpr (kIsFloatExtreme<Op>) {
        // As in fold_run: a NaN-blind max/min (vectorizes) plus a sum of x per
        // lane; a lane whose sum is NaN (some NaN, or inf - inf) is refolded
        // exactly.
        constexpr bool kMax = std::is_same_v<Op, ExtremeOp<T, true>>;
        A bad[kTileW];
        for (int64_t w = 0; w < width; ++w) bad[w] = 0;
        const auto fold_row = [&](const S* rp, int64_t ls, int64_t from) {  // columns [from, width)
          for (int64_t w = from; w < width; ++w) {
            const A x = load_cmp<T>(rp[w * ls]);
            acc[w] = kMax ? (x > acc[w] ? x : acc[w]) : (x < acc[w] ? x : acc[w]);
            bad[w] += x;
          }
        };
        if (lane.in == 1) {
          // Chunks of eight (AVX2 and below: four) register-sized parts of
          // columns, each down all the rows in registers: with the tile's accumulators in memory, the
          // row loads waited on the accumulators' stores (4K aliasing: rows
          // of 4 KiB against 4 KiB arrays): amax over dim 0 of 1024^2 at
          // 1 thread 131 -> 88 us.
          constexpr int P = kRegisterBytes == 64 ? 8 : 4;  // 16 of AVX-512's 32 registers, 8 of AVX2's 16
          constexpr int PL = kRegisterBytes / static_cast<int>(sizeof(A)), CW = P * PL;
          using V = typename VecN<A, PL>::type;
          int64_t w0 = 0;
          for (; w0 + CW <= width; w0 += CW) {
            V va[P], vb[P];
            for (int k = 0; k < P; ++k) {
              va[k] = V{} + Op::init();
              vb[k] = V{};
            }
            for_each_row(L, row + w0, [&](const S* rp) {
              for (int k = 0; k < P; ++k) fold_part<T, kMax, PL>(rp + k * PL, va[k], vb[k]);
            });
            std::memcpy(acc + w0, va, sizeof va);
            std::memcpy(bad + w0, vb, sizeof vb);
          }
          if (w0 < width) for_each_row(L, row, [&](const S* rp) { fold_row(rp, 1, w0); });
        } else {
          for_each_row(L, row, [&](const S* rp) { fold_row(rp, lane.in, 0); });
        }
        for (int64_t w = 0; w < width; ++w) {
          if (bad[w] == bad[w]) continue;
          acc[w] = Op::init();
          for_each_row(L, row + w * lane.in, [&](const S* rp) { Op::step(acc[w], load_cmp<T>(*rp)); });
        }
        storage_t<Out>* o = out + oo + t * kTileW * lane.out;
        for (int64_t w = 0; w < width; ++w) o[w * lane.out] = store(acc[w]);
        continue;
      }
      for (int d = 0; d < L.nr; ++d) index[d] = 0;
      for (int64_t r = 0; r < L.n_red; ++r) {
        if (lane.in == 1) {
          for (int64_t w = 0; w < width; ++w) Op::step(acc[w], load_op<T, Op>(row[w]));
        } else {
          for (int64_t w = 0; w < width; ++w) Op::step(acc[w], load_op<T, Op>(row[w * lane.in]));
        }
        for (int d = 0; d < L.nr; ++d) {  // next row
          row += L.red[d].in;
          if (++index[d] < L.red[d].size) break;
          row -= L.red[d].size * L.red[d].in;
          index[d] = 0;
        }
      }
      storage_t<Out>* o = out + oo + t * kTileW * lane.out;
      for (int64_t w = 0; w < width; ++w) o[w * lane.out] = store(acc[w]);
    }
  });
}

// ---- max.dim / min.dim: values and the index of the first extreme (first NaN) ----

// First i in [i, n) where p[i] equals m (is NaN when m is NaN): 32-element
// chunks are tested with one vectorizable OR of compares, then the hit chunk
// is walked.
template <typename T>
inline int64_t find_first(const storage_t<T>* p, int64_t i, int64_t n, cmp_t<T> m) {
  constexpr int64_t kChunk = 32;
  const bool nan = is_nan(m);
  if (nan) {
    for (; i + kChunk <= n; i += kChunk) {
      int hit = 0;
      for (int64_t j = 0; j < kChunk; ++j) hit |= is_nan(load_cmp<T>(p[i + j])) ? 1 : 0;
      if (hit) break;
    }
  } else {
    for (; i + kChunk <= n; i += kChunk) {
      int hit = 0;
      for (int64_t j = 0; j < kChunk; ++j) hit |= load_cmp<T>(p[i + j]) == m ? 1 : 0;
      if (hit) break;
    }
  }
  if (nan) {
    while (!is_nan(load_cmp<T>(p[i]))) ++i;
  } else {
    while (load_cmp<T>(p[i]) != m) ++i;
  }
  return i;
}

// max.dim / min.dim over a dim whose steps are s elements apart, for cols
// adjacent outputs (input stride 1, output stride out_s): chunks of kCols
// outputs go down the n rows together, each row's chunk compared in vector
// lanes (walking one output's column at a time touched a new cache line per
// element: argmax over dim 0 of 1024^2 float32 took 4 ms). Same result as
// the scalar walk: the first extreme wins (strict compare), and the first NaN
// wins and stays.
template <typename T, bool IsMax>
void extreme_down_columns(const storage_t<T>* in, int64_t n, int64_t s, int64_t cols, int64_t out_s,
                          storage_t<T>* vo, int64_t* io) {
  using S = storage_t<T>;
  using C = cmp_t<T>;
  using Idx = std::conditional_t<(sizeof(C) >= 8), int64_t, int32_t>;  // lanes as wide as the values'
  constexpr int64_t kCols = 64;
  const auto chunk = [&](int64_t j0, auto width) {
    constexpr int64_t W = decltype(width)::value;
    C m[W];
    Idx at[W];
    for (int64_t j = 0; j < W; ++j) {
      m[j] = load_cmp<T>(in[j0 + j]);
      at[j] = 0;
    }
    for (int64_t i = 1; i < n; ++i) {
      const S* row = in + i * s + j0;
      for (int64_t j = 0; j < W; ++j) {
        const C x = load_cmp<T>(row[j]);
        const bool take = (IsMax ? x > m[j] : x < m[j]) || (is_nan(x) && !is_nan(m[j]));
        m[j] = take ? x : m[j];
        at[j] = take ? static_cast<Idx>(i) : at[j];
      }
    }
    for (int64_t j = 0; j < W; ++j) {
      vo[(j0 + j) * out_s] = static_cast<S>(convert<T>(m[j]));
      io[(j0 + j) * out_s] = at[j];
    }
  };
  for_column_chunks<kCols>(cols, n, chunk);
}

template <typename T, bool IsMax>
void extreme_dim(const DLTensor& self, DLTensor& values, DLTensor& indices, const int64_t* dims, size_t ndims,
                 bool keepdim) {
  using S = storage_t<T>;
  using Op = ExtremeOp<T, IsMax>;
  using C = typename Op::C;
  // Kept dims keep their signed strides, so indices count in logical order.
  Layout L;
  const int64_t d = ndims == 1 ? dims[0] : -1;
  for (int32_t k = 0, o = 0; k < self.ndim; ++k) {
    if (k == d) {
      if (keepdim) ++o;
      continue;
    }
    if (self.shape[k] != 1) L.kept[L.nk++] = Dim{self.shape[k], self.strides[k], values.strides[o], false};
    L.n_out *= self.shape[k];
    ++o;
  }
  const int64_t n = d >= 0 ? self.shape[d] : 1;
  const int64_t s = d >= 0 ? self.strides[d] : 1;
  const S* in = reinterpret_cast<const S*>(data_ptr(self));
  S* vo = reinterpret_cast<S*>(data_ptr(values));
  int64_t* io_ = reinterpret_cast<int64_t*>(data_ptr(indices));
  if (n == 0) invalid("reduction over a zero-size dim has no identity");
  if (s != 1 && L.nk == 1 && L.kept[0].in == 1 && n <= INT32_MAX) {
    extreme_down_columns<T, IsMax>(in, n, s, L.kept[0].size, L.kept[0].out, vo, io_);
    return;
  }
  for_each_output(L, n, [&](int64_t io, int64_t oo) {
    const S* p = in + io;
    C m = Op::init();
    int64_t idx = 0;
    if (s == 1) {
      // Vectorized block maxima; only the first block holding the winner is
      // then scanned for its position (in cache, at most kArgBlock elements).
      constexpr int64_t kArgBlock = 256;  // block folds hide under the memory stream; short scans
      int64_t best = 0;
      for (int64_t b = 0; b < n; b += kArgBlock) {
        C bm = Op::init();
        fold_run<T, Op>(p + b, std::min(kArgBlock, n - b), 1, bm);
        const bool better = IsMax ? bm > m : bm < m;
        if (b == 0 || better || is_nan(bm)) {
          m = bm;
          best = b;
          if (is_nan(bm)) break;  // the first NaN wins
        }
      }
      idx = find_first<T>(p, best, std::min(n, best + kArgBlock), m);
    } else {
      m = load_cmp<T>(p[0]);
      for (int64_t i = 1; i < n && !is_nan(m); ++i) {
        const C x = load_cmp<T>(p[i * s]);
        if (IsMax ? (x > m || is_nan(x)) : (x < m || is_nan(x))) {
          m = x;
          idx = i;
        }
      }
    }
    vo[oo] = static_cast<S>(convert<T>(m));
    io_[oo] = idx;
  });
}

// ---- statistics, per output in double ----

template <typename T>
inline double load_f64(storage_t<T> x) {
  return static_cast<double>(load_cmp<T>(x));
}

// lane[i % 16] += term(x_i) over a run, in double (term takes and returns
// float or double); the lanes stay in
// registers and the loop vectorizes (a double sum in one accumulator would
// not: its order must be kept).
// Dense runs of float32 and the half types go through blocked_lane_sum instead
// (float lanes, block totals in double, added to lane[0]): half the vector
// work of double lanes (norm dim=1 of 1024^2 float32 was 1.16x PyTorch's time).
template <typename T, typename Term>
inline void sum_lanes(const storage_t<T>* q, int64_t len, int64_t s, double* lane, const Term& term) {
  if constexpr (!std::is_same_v<T, double>) {
    if (s == 1) {
      lane[0] += blocked_lane_sum<float>(
          len, [q](int64_t i) { return static_cast<float>(load_cmp<T>(q[i])); },
          [&term](float x) { return term(x); });
      return;
    }
  }
  constexpr int W = 16;
  double acc[W];
  for (int j = 0; j < W; ++j) acc[j] = lane[j];
  int64_t i = 0;
  if (s == 1) {
    for (; i + W <= len; i += W) {
      for (int j = 0; j < W; ++j) acc[j] += term(load_f64<T>(q[i + j]));
    }
  } else {
    for (; i + W <= len; i += W) {
      for (int j = 0; j < W; ++j) acc[j] += term(load_f64<T>(q[(i + j) * s]));
    }
  }
  for (int j = 0; i < len; ++i, ++j) acc[j] += term(load_f64<T>(q[i * s]));
  for (int j = 0; j < W; ++j) lane[j] = acc[j];
}

// The 16 lanes of sum_lanes added as a tree.
inline double total_lanes(double* lane) {
  for (int w = 8; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
  }
  return lane[0];
}

// var (or std) from the sum of squared deviations of n elements; NaN for no element.
inline double var_finish(double ss, double n, double correction, bool take_sqrt) {
  double v = ss / std::max(0.0, n - correction);
  if (n == 0) v = std::numeric_limits<double>::quiet_NaN();
  return take_sqrt ? std::sqrt(v) : v;
}

// var/std in two passes (the mean, then the squared deviations from it), in double.
template <typename T>
void var_reduce(const Layout& L, const storage_t<T>* in, storage_t<T>* out, double correction, bool take_sqrt) {
  using S = storage_t<T>;
  const double n = static_cast<double>(L.n_red);
  if (L.inner) {
    // Per output: the mean (sum_lanes), then the deviations.
    for_each_output(L, 2 * L.n_red, [&](int64_t io, int64_t oo) {
      double lane[16] = {};
      for_each_run(L, in + io, 0, L.n_red, [&](const S* p, int64_t len, int64_t s) {
        sum_lanes<T>(p, len, s, lane, [](auto x) { return x; });
      });
      const double mean = total_lanes(lane) / n;
      // The deviations d from c, the mean rounded to the lanes' type, and their
      // sum: sum (x - mean)^2 = sum d^2 - (sum d)^2 / n takes the data's own
      // mean, so neither the rounding of c nor the first pass's error enters
      // (blocked_shifted_sums). Dense float-like runs in float lanes, the rest
      // (strided, float64) in double lanes.
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C c = static_cast<C>(mean);
      ShiftedSums sums{0, 0};
      for_each_run(L, in + io, 0, L.n_red, [&](const S* p, int64_t len, int64_t s) {
        if constexpr (std::is_same_v<C, float>) {
          if (s == 1) {
            const ShiftedSums d = blocked_shifted_sums<float>(
                len, [p](int64_t i) { return static_cast<float>(load_cmp<T>(p[i])); }, c);
            sums.s1 += d.s1;
            sums.s2 += d.s2;
            return;
          }
        }
        double l1[16] = {}, l2[16] = {};
        const auto add = [&](int64_t i, int j) {
          const double d = load_f64<T>(p[i * s]) - static_cast<double>(c);
          l1[j] += d;
          l2[j] += d * d;
        };
        int64_t i = 0;
        for (; i + 16 <= len; i += 16)
          for (int j = 0; j < 16; ++j) add(i + j, j);
        for (int j = 0; i < len; ++i, ++j) add(i, j);
        sums.s1 += total_lanes(l1);
        sums.s2 += total_lanes(l2);
      });
      const double ss = std::max(0.0, sums.s2 - sums.s1 * sums.s1 / n);
      out[oo] = static_cast<S>(convert<T>(var_finish(ss, n, correction, take_sqrt)));
    }, kReduceGrain);
    return;
  }
  // The innermost input dim is kept (e.g. var over dim 0): tiles of adjacent
  // outputs, each pass row by row, so every cache line loaded is used (one
  // output at a time walked a 1024^2 float matrix's columns 4 KiB apart: 1.7x
  // PyTorch's time).
  constexpr int64_t kTileW = 256;
  const Dim& lane = L.kept[0];
  const int64_t tiles = (lane.size + kTileW - 1) / kTileW;
  const int64_t outer = L.n_out / lane.size;
  parallel_chunks(outer * tiles, 2 * kTileW * L.n_red, [&](int64_t t0, int64_t t1) {
    double mean[kTileW], ss[kTileW];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t t = task % tiles;
      int64_t io, oo;
      offsets_of(task / tiles, L.kept + 1, L.nk - 1, io, oo);
      const int64_t width = std::min(kTileW, lane.size - t * kTileW);
      const S* row = in + io + t * kTileW * lane.in;
      const int64_t ls = lane.in;
      for (int64_t w = 0; w < width; ++w) mean[w] = ss[w] = 0;
      if (ls == 1) {
        for_each_row(L, row, [&](const S* rp) {
          for (int64_t w = 0; w < width; ++w) mean[w] += load_f64<T>(rp[w]);
        });
      } else {
        for_each_row(L, row, [&](const S* rp) {
          for (int64_t w = 0; w < width; ++w) mean[w] += load_f64<T>(rp[w * ls]);
        });
      }
      for (int64_t w = 0; w < width; ++w) mean[w] /= n;
      const auto deviations = [&](const S* rp, int64_t step) {
        for (int64_t w = 0; w < width; ++w) {
          const double d = load_f64<T>(rp[w * step]) - mean[w];
          ss[w] += d * d;
        }
      };
      if (ls == 1) {
        for_each_row(L, row, [&](const S* rp) { deviations(rp, 1); });
      } else {
        for_each_row(L, row, [&](const S* rp) { deviations(rp, ls); });
      }
      storage_t<T>* o = out + oo + t * kTileW * lane.out;
      for (int64_t w = 0; w < width; ++w) {
        o[w * lane.out] = static_cast<S>(convert<T>(var_finish(ss[w], n, correction, take_sqrt)));
      }
    }
  });
}

// norm with p = 1 or 2 over one strided dim for adjacent outputs (dim 0 of a
// row-major matrix): chunks of kCols outputs go down the rows together, row i
// into lane i % 16 of each output as sum_lanes puts it, then total_lanes: the
// same operations per output as one output at a time (the same bits), without
// a new cache line per element (norm over dim 0 of 1024^2 float32: 3.8 ms).
template <typename T>
void norm_down_columns(const Layout& L, const storage_t<T>* in, storage_t<T>* out, bool squares) {
  using S = storage_t<T>;
  constexpr int64_t kCols = 32, kLanesPerOutput = 16;
  const int64_t cols = L.kept[0].size, out_s = L.kept[0].out, n = L.red[0].size, s = L.red[0].in;
  const auto chunk = [&](int64_t j0, auto width) {
    constexpr int64_t W = decltype(width)::value;
    double acc[kLanesPerOutput][W] = {};
    for (int64_t i = 0; i < n; ++i) {
      const S* row = in + i * s + j0;
      double* a = acc[i % kLanesPerOutput];
      for (int64_t c = 0; c < W; ++c) {
        const double x = load_f64<T>(row[c]);
        a[c] += squares ? x * x : std::fabs(x);
      }
    }
    for (int64_t c = 0; c < W; ++c) {
      double lane[kLanesPerOutput];
      for (int64_t j = 0; j < kLanesPerOutput; ++j) lane[j] = acc[j][c];
      const double total = total_lanes(lane);
      out[(j0 + c) * out_s] = static_cast<S>(convert<T>(squares ? std::sqrt(total) : total));
    }
  };
  for_column_chunks<kCols>(cols, n, chunk);
}

template <typename T>
void norm_reduce(const Layout& L, const storage_t<T>* in, storage_t<T>* out, double p) {
  using S = storage_t<T>;
  if ((p == 1 || p == 2) && L.nk == 1 && L.nr == 1 && L.kept[0].in == 1 && L.red[0].in != 1 && L.n_red > 0) {
    norm_down_columns<T>(L, in, out, p == 2);
    return;
  }
  for_each_output(L, 2 * L.n_red, [&](int64_t io, int64_t oo) {
    double acc;
    const auto each = [&](auto f) {
      for_each_run(L, in + io, 0, L.n_red, [&](const S* q, int64_t len, int64_t s) {
        for (int64_t i = 0; i < len; ++i) f(std::fabs(load_f64<T>(q[i * s])));
      });
    };
    if (std::isinf(p)) {
      acc = p > 0 ? 0.0 : std::numeric_limits<double>::infinity();
      if (p > 0) {
        each([&](double a) { acc = (a > acc || a != a) ? a : acc; });
      } else {
        each([&](double a) { acc = (a < acc || a != a) ? a : acc; });
      }
    } else if (p == 0) {
      acc = 0;
      each([&](double a) { acc += a != 0 ? 1.0 : 0.0; });
    } else if (p == 1 || p == 2) {
      double lane[16] = {};
      for_each_run(L, in + io, 0, L.n_red, [&](const S* q, int64_t len, int64_t s) {
        if (p == 2) {
          sum_lanes<T>(q, len, s, lane, [](auto x) { return x * x; });
        } else {
          sum_lanes<T>(q, len, s, lane, [](auto x) { return std::fabs(x); });
        }
      });
      const double total = total_lanes(lane);
      acc = p == 2 ? std::sqrt(total) : total;
    } else {
      acc = 0;
      each([&](double a) { acc += std::pow(a, p); });
      acc = std::pow(acc, 1.0 / p);
    }
    out[oo] = static_cast<S>(convert<T>(acc));
  }, kReduceGrain);
}

// m + log(sum), or m itself when it is NaN or infinite (all -inf gives -inf,
// any +inf gives +inf).
inline double lse_finish(double m, double sum) { return std::isfinite(m) ? m + std::log(sum) : m; }

// Elements of exp(x - max) summed in float before the block sum goes to a
// double: few enough that the float sums stay within an ulp or two.
inline constexpr int64_t kLseBlock = 256;

template <typename T>
void logsumexp_reduce(const Layout& L, const storage_t<T>* in, storage_t<T>* out) {
  using S = storage_t<T>;
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // float for float16/bfloat16 too
  if (L.inner || L.nk == 0) {
    // Per output: the max (a vectorized NaN-propagating fold), then the sum
    // of exp(x - max). float: vector exp over blocks of kLseBlock.
    for_each_output(L, 3 * L.n_red, [&](int64_t io, int64_t oo) {
      A m = ExtremeOp<T, true>::init();
      for_each_run(L, in + io, 0, L.n_red,
                   [&](const S* p, int64_t len, int64_t s) { fold_run<T, ExtremeOp<T, true>>(p, len, s, m); });
      double sum = 0;
      if (std::isfinite(m)) {
        for_each_run(L, in + io, 0, L.n_red, [&](const S* p, int64_t len, int64_t s) {
          if constexpr (std::is_same_v<A, double>) {
            for (int64_t i = 0; i < len; ++i) sum += std::exp(p[i * s] - m);
          } else {
            A buf[kLseBlock];
            for (int64_t b = 0; b < len; b += kLseBlock) {
              const int64_t n = std::min(kLseBlock, len - b);
              const A* x = buf;
              if (std::is_same_v<S, A> && s == 1) {
                x = reinterpret_cast<const A*>(p + b);
              } else {
                for (int64_t i = 0; i < n; ++i) buf[i] = load_cmp<T>(p[(b + i) * s]);
              }
              sum += nn::exp_sum<false>(x, nullptr, n, m);
            }
          }
        });
      }
      out[oo] = static_cast<S>(convert<T>(lse_finish(m, sum)));
    }, kReduceGrain);
    return;
  }
  // The innermost input dim is kept (e.g. over dim 0): tiles of adjacent
  // outputs, row by row (rows of the tile are contiguous when lane.in == 1):
  // the column maxima, then the sums of exp(x - max) per column in double.
  constexpr int64_t kTileW = nn::kCols;
  const Dim& lane = L.kept[0];
  const int64_t tiles = (lane.size + kTileW - 1) / kTileW;
  const int64_t outer = L.n_out / lane.size;
  parallel_chunks(outer * tiles, 3 * kTileW * L.n_red, [&](int64_t t0, int64_t t1) {
    A m[kTileW], x[kTileW], e[kTileW];
    double sum[kTileW];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t t = task % tiles;
      int64_t io, oo;
      offsets_of(task / tiles, L.kept + 1, L.nk - 1, io, oo);
      const int64_t width = std::min(kTileW, lane.size - t * kTileW);
      const S* base = in + io + t * kTileW * lane.in;
      const auto load_row = [&](const S* row) -> const A* {
        if (std::is_same_v<S, A> && lane.in == 1) return reinterpret_cast<const A*>(row);
        for (int64_t w = 0; w < width; ++w) x[w] = load_cmp<T>(row[w * lane.in]);
        return x;
      };
      for (int64_t w = 0; w < width; ++w) {
        m[w] = -std::numeric_limits<A>::infinity();
        sum[w] = 0;
      }
      // NaN-blind max plus a sum of x per column (vectorizes); a column whose
      // sum is NaN (some NaN, or inf - inf) is rescanned for a NaN.
      for (int64_t w = 0; w < width; ++w) e[w] = 0;
      for_each_row(L, base, [&](const S* row) {
        const A* r = load_row(row);
        for (int64_t w = 0; w < width; ++w) {
          m[w] = r[w] > m[w] ? r[w] : m[w];
          e[w] += r[w];
        }
      });
      for (int64_t w = 0; w < width; ++w) {
        if (e[w] != e[w]) {
          for_each_row(L, base + w * lane.in, [&](const S* p) {
            const A v = load_cmp<T>(*p);
            if (v != v) m[w] = v;
          });
        }
      }
      for_each_row(L, base, [&](const S* row) {
        nn::exp_diff(load_row(row), m, e, width);  // garbage where m is not finite: unused
        for (int64_t w = 0; w < width; ++w) sum[w] += e[w];
      });
      storage_t<T>* o = out + oo + t * kTileW * lane.out;
      for (int64_t w = 0; w < width; ++w) o[w * lane.out] = static_cast<S>(convert<T>(lse_finish(m[w], sum[w])));
    }
  });
}

}  // namespace reduce_detail

// ---- kernel bodies ----

/// Parsed arguments of a reduction over a dim list.
struct ReduceSetup {
  const DLTensor* self;
  DLTensor* out;
  const int64_t* dims;
  size_t ndims;
  bool keepdim;
  Layout L;
};

inline ReduceSetup reduce_setup(const TsrKernelCall& call, size_t dims_index, size_t keepdim_index,
                                TsrDType out_dtype) {
  ReduceSetup r;
  r.self = &tensor_arg(call, 0, "self", call.dtype);
  const TsrValue& dim = int_list_arg(call, dims_index, "dim");
  r.keepdim = bool_arg(call, keepdim_index, "keepdim");
  r.out = &output(call, 0, out_dtype);
  r.dims = dim.as.int_list.data;
  r.ndims = dim.as.int_list.size;
  check_reduce_args(*r.self, *r.out, r.dims, r.ndims, r.keepdim);
  r.L = make_layout(*r.self, *r.out, r.dims, r.ndims, r.keepdim);
  return r;
}

template <typename T>
inline const storage_t<T>* in_ptr(const ReduceSetup& r) {
  return reinterpret_cast<const storage_t<T>*>(data_ptr(*r.self)) + r.L.in_offset;
}
template <typename T>
inline storage_t<T>* out_ptr(const ReduceSetup& r) {
  return reinterpret_cast<storage_t<T>*>(data_ptr(*r.out)) + r.L.out_offset;
}

// prod: (self, dim, keepdim, dtype); out is self's dtype, or int64 for bool/integers.
inline void prod_kernel(const TsrKernelCall& call) {
  const DLTensor& self0 = tensor_arg(call, 0, "self", call.dtype);
  const TsrDType out_dtype = dtype_of(output(call, 0), "out");
  const bool integral_in = !(kFloatMask & TSR_DTYPE_BIT(call.dtype));
  if (out_dtype != call.dtype && !(integral_in && out_dtype == TSR_DTYPE_INT64)) {
    invalid(std::string("output dtype ") + sdk::dtype_name(out_dtype) + " is not " + sdk::dtype_name(call.dtype) +
            (integral_in ? " or int64" : ""));
  }
  (void)self0;
  const ReduceSetup r = reduce_setup(call, 1, 2, out_dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (out_dtype == call.dtype) {
      reduce_detail::fold_reduce<T, T, reduce_detail::ProdOp<T>>(r.L, in_ptr<T>(r), out_ptr<T>(r));
    } else if constexpr (!kIsFloating<T>) {
      reduce_detail::fold_reduce<T, int64_t, reduce_detail::ProdOp<T>>(r.L, in_ptr<T>(r), out_ptr<int64_t>(r));
    }
  });
}

template <bool IsMax>
void amax_kernel(const TsrKernelCall& call) {
  const ReduceSetup r = reduce_setup(call, 1, 2, call.dtype);
  if (r.L.n_red == 0) invalid("reduction over a zero-size dim has no identity");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_detail::fold_reduce<T, T, reduce_detail::ExtremeOp<T, IsMax>>(r.L, in_ptr<T>(r), out_ptr<T>(r));
  });
}

template <bool IsAny>
void any_kernel(const TsrKernelCall& call) {
  const TsrDType out_dtype = call.dtype == TSR_DTYPE_UINT8 ? TSR_DTYPE_UINT8 : TSR_DTYPE_BOOL;
  const ReduceSetup r = reduce_setup(call, 1, 2, out_dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_detail::fold_reduce<T, bool, reduce_detail::AnyAllOp<T, IsAny>>(r.L, in_ptr<T>(r), out_ptr<bool>(r));
  });
}

// max.dim / min.dim: (self, [dim] or [], keepdim) -> values (self's dtype), indices (int64).
template <bool IsMax>
void max_dim_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const TsrValue& dim = int_list_arg(call, 1, "dim");
  const bool keepdim = bool_arg(call, 2, "keepdim");
  DLTensor& values = output(call, 0, call.dtype);
  DLTensor& indices = output(call, 1, TSR_DTYPE_INT64);
  size_t ndims = dim.as.int_list.size;
  if (ndims > 1) invalid("argument 'dim' must hold at most one dim");
  check_reduce_args(self, values, dim.as.int_list.data, ndims, keepdim);
  check_same_shape(values, "values", indices, "indices");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_detail::extreme_dim<T, IsMax>(self, values, indices, dim.as.int_list.data, ndims, keepdim);
  });
}

// var / std: (self, dim, correction, keepdim), floating dtypes.
template <bool Sqrt>
void var_kernel(const TsrKernelCall& call) {
  const double correction = float_arg(call, 2, "correction");
  const ReduceSetup r = reduce_setup(call, 1, 3, call.dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      reduce_detail::var_reduce<T>(r.L, in_ptr<T>(r), out_ptr<T>(r), correction, Sqrt);
    } else {
      invalid("var/std need a floating dtype");
    }
  });
}

// norm: (self, p, dim, keepdim), floating dtypes.
inline void norm_kernel(const TsrKernelCall& call) {
  const double p = float_arg(call, 1, "p");
  const ReduceSetup r = reduce_setup(call, 2, 3, call.dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      reduce_detail::norm_reduce<T>(r.L, in_ptr<T>(r), out_ptr<T>(r), p);
    } else {
      invalid("norm needs a floating dtype");
    }
  });
}

// logsumexp: (self, dim, keepdim), floating dtypes.
inline void logsumexp_kernel(const TsrKernelCall& call) {
  const ReduceSetup r = reduce_setup(call, 1, 2, call.dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      reduce_detail::logsumexp_reduce<T>(r.L, in_ptr<T>(r), out_ptr<T>(r));
    } else {
      invalid("logsumexp needs a floating dtype");
    }
  });
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
