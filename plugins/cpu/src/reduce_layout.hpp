// The shape of a reduction problem after simplification: size-1 dims dropped,
// negative input strides flipped, dims ordered by input stride (innermost
// first) and compatible neighbours merged. Shared by the reduction kernels.
#pragma once

#include "common.hpp"

#include <algorithm>
#include <string>

namespace tessera::cpu {

inline constexpr int kMaxDims = sdk::StridedIter<1>::kMaxDims;
/// Elements of reduction work worth a second thread. Higher than kGrain: a
/// reduction streams its input once (about a cycle per element), and on a busy
/// machine waking a sleeping OpenMP thread can cost far more than the work.
inline constexpr int64_t kReduceGrain = int64_t{1} << 18;

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
inline bool bool_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_BOOL) invalid(std::string("argument '") + name + "' must be a bool, got " + tag_text(v.tag));
  return v.as.b != 0;
}
inline double float_arg(const TsrKernelCall& call, size_t index, const char* name) {
  const TsrValue& v = arg(call, index, name);
  if (v.tag != TSR_VALUE_FLOAT) invalid(std::string("argument '") + name + "' must be a float, got " + tag_text(v.tag));
  return v.as.f;
}

}  // namespace tessera::cpu
