// The shape of a reduction problem after simplification: size-1 dims dropped,
// negative input strides flipped, dims ordered by input stride (innermost
// first) and compatible neighbours merged. Shared by the reduction kernels.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

inline constexpr int kMaxDims = sdk::StridedIter<1>::kMaxDims;
/// Work (element-equivalents) worth a second thread for the reductions that
/// compute per element (var, norm, logsumexp). Higher than kGrain: on a busy
/// machine the end of an OpenMP region waits until every woken thread has been
/// scheduled, which can cost milliseconds.
inline constexpr int64_t kReduceGrain = int64_t{1} << 18;
/// The same for streaming reductions (sum, prod, amax, any, max.dim...): 256K
/// elements (1 MiB of float32), where one core takes ~30 us, far more than
/// waking a second thread costs; on a busy machine idle_threads (parallel.hpp)
/// keeps the work on the calling thread. TESSERA_CPU_STREAM_GRAIN (a whole
/// number of elements) overrides it, for measuring.
inline const int64_t kStreamGrain = env::parse_stream_grain(std::getenv("TESSERA_CPU_STREAM_GRAIN"), int64_t{1} << 18);

/// Runs f(begin, end) over [0, n) in chunks of `chunk` items that threads claim
/// one at a time, so a thread the OS starts late (a busy machine) takes fewer
/// chunks instead of holding everyone up with a fixed half of the work. Serial
/// when the work (n * cost items) is below `grain` or inside a parallel
/// region. An exception from f is rethrown after the team joins.
template <typename F>
void parallel_chunks(int64_t n, int64_t cost, const F& f, int64_t grain = kStreamGrain) {
  if (n <= 0) return;
  cost = std::max<int64_t>(1, cost);
  int64_t threads = omp_in_parallel() ? 1 : static_cast<int64_t>(omp_get_max_threads());
  if (threads > 1 && n * cost >= grain) threads = idle_threads(threads);
  if (threads <= 1 || n * cost < grain || n == 1) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, std::min(kReduceGrain / 8 / cost, n / (4 * threads)));
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(std::min(threads, chunks)))
  {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks || failed.load(std::memory_order_relaxed)) break;
      try {
        f(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

struct Dim {
  int64_t size;
  int64_t in;   // input stride, elements
  int64_t out;  // output stride, elements (0 for reduced dims)
  bool reduced;
};

// The problem after dropping size-1 dims, flipping negative input strides,
// ordering dims by input stride and merging compatible neighbours.
struct Layout {
  int64_t in_offset = 0, out_offset = 0;  // elements, from flips
  int nk = 0, nr = 0;                     // kept and reduced dims, innermost first
  Dim kept[kMaxDims];
  Dim red[kMaxDims];
  int64_t n_out = 1, n_red = 1;
  bool inner = true;  // the fastest-moving input dim is reduced (or nothing is kept)
};

inline Layout make_layout(const DLTensor& self, const DLTensor& out, const int64_t* dims, size_t ndims, bool keepdim) {
  Layout L;
  Dim all[kMaxDims];
  int n = 0;
  size_t next = 0;  // dims is sorted: walk it alongside d
  int32_t out_dim = 0;
  for (int32_t d = 0; d < self.ndim; ++d) {
    const bool reduced = next < ndims && dims[next] == d;
    if (reduced) ++next;
    int64_t out_stride = 0;
    if (!reduced) {
      out_stride = out.strides[keepdim ? d : out_dim];
      ++out_dim;
    } else if (keepdim) {
      ++out_dim;
    }
    const int64_t size = self.shape[d];
    if (size == 1) continue;
    if (n == kMaxDims) invalid("more than 64 dimensions of size > 1");
    Dim dim{size, self.strides[d], reduced ? 0 : out_stride, reduced};
    if (dim.in < 0) {  // walk forward in the input; the output follows (same elements)
      L.in_offset += (size - 1) * dim.in;
      L.out_offset += (size - 1) * dim.out;
      dim.in = -dim.in;
      dim.out = -dim.out;
    }
    all[n++] = dim;
  }
  // Innermost first by input stride (stable, so ties keep the logical order).
  std::stable_sort(all, all + n, [](const Dim& a, const Dim& b) { return a.in < b.in; });
  // Merge an outer dim into the previous (inner) one of the same kind when
  // stepping it equals stepping the inner one `size` times.
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (m > 0) {
      Dim& inner = all[m - 1];
      const Dim& outer = all[i];
      if (inner.reduced == outer.reduced && outer.in == inner.in * inner.size &&
          outer.out == inner.out * inner.size) {
        inner.size *= outer.size;
        continue;
      }
    }
    all[m++] = all[i];
  }
  for (int i = 0; i < m; ++i) {
    if (all[i].reduced) {
      L.red[L.nr++] = all[i];
      L.n_red *= all[i].size;
    } else {
      L.kept[L.nk++] = all[i];
      L.n_out *= all[i].size;
    }
  }
  L.inner = L.nk == 0 || (m > 0 && all[0].reduced);
  return L;
}

// Offsets (elements) of flat index `i` over dims[0..n) (innermost first).
inline void offsets_of(int64_t i, const Dim* dims, int n, int64_t& in, int64_t& out) {
  in = 0;
  out = 0;
  for (int d = 0; d < n; ++d) {
    const int64_t idx = i % dims[d].size;
    i /= dims[d].size;
    in += idx * dims[d].in;
    out += idx * dims[d].out;
  }
}


/// Checks a reduction's dims (sorted, unique, in range) and that `out` has the
/// reduced shape; a 0-d input's "dim 0" becomes no dim.
inline void check_reduce_args(const DLTensor& self, const DLTensor& out, const int64_t* dims, size_t& ndims,
                              bool keepdim) {
  if (ndims > 0 && dims == nullptr) invalid("argument 'dim' has a NULL list");
  if (self.ndim == 0 && ndims == 1 && dims[0] == 0) ndims = 0;
  for (size_t i = 0; i < ndims; ++i) {
    if (dims[i] < 0 || dims[i] >= self.ndim || (i > 0 && dims[i] <= dims[i - 1])) {
      invalid("argument 'dim' must hold sorted, unique dims in [0, " + std::to_string(self.ndim) + "), got " +
              std::to_string(dims[i]) + " at position " + std::to_string(i));
    }
  }
  const int32_t expected_ndim = keepdim ? self.ndim : self.ndim - static_cast<int32_t>(ndims);
  bool shape_ok = out.ndim == expected_ndim;
  for (int32_t d = 0, o = 0, next = 0; shape_ok && d < self.ndim; ++d) {
    const bool reduced = static_cast<size_t>(next) < ndims && dims[next] == d;
    if (reduced) ++next;
    if (reduced && !keepdim) continue;
    shape_ok = out.shape[o++] == (reduced ? 1 : self.shape[d]);
  }
  if (!shape_ok) {
    invalid("out has shape " + shape_text(out) + ", which is not the reduced shape of " + shape_text(self));
  }
}

/// The int-list argument `index` (dims) and the bool argument `kd_index` (keepdim).
inline const TsrValue& int_list_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_INT_LIST) invalid(std::string("argument '") + name + "' must be an int list, got " + tag_text(v.tag));
  return v;
}

/// For reductions and scans down the rows of adjacent columns (dim 0 of a
/// row-major matrix): chunk(j0, std::integral_constant<int64_t, W>{}) with W =
/// Cols for each whole chunk of columns from j0, and W = 1 for each column
/// past the last whole chunk; chunks split across threads, `rows` elements
/// per column setting the grain.
template <int64_t Cols, typename F>
inline void for_column_chunks(int64_t cols, int64_t rows, const F& chunk) {
  const int64_t full = cols / Cols;
  parallel_for(full + 1, std::max<int64_t>(1, kReduceGrain / (Cols * std::max<int64_t>(1, rows))),
               [&](int64_t c0, int64_t c1) {
                 for (int64_t c = c0; c < c1; ++c) {
                   if (c < full) {
                     chunk(c * Cols, std::integral_constant<int64_t, Cols>{});
                   } else {
                     for (int64_t j = full * Cols; j < cols; ++j) chunk(j, std::integral_constant<int64_t, 1>{});
                   }
                 }
               });
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
