// tessera/sdk/checked.hpp — checked int64 arithmetic for sizes, strides and
// byte offsets in plugin code. Header-only, C++17, no dependencies.
//
// Each function returns true when the exact result does not fit int64 (the
// out value is then unspecified), like the compiler builtins it is built on;
// on the path where nothing overflows it costs one flag test. The iterators
// (iterate.hpp) use it to refuse operands whose extent would overflow; a kernel
// computing its own offsets from a DLTensor can use it the same way.
//
// Why the core has its own copy (core/src/checked_math.h): the layering is
// abi <- sdk <- plugins and abi <- core; plugins never see core headers and the
// core does not depend on the SDK, so each side keeps a small helper.
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>

namespace tessera::sdk::checked {

inline bool mul(int64_t a, int64_t b, int64_t* out) noexcept { return __builtin_mul_overflow(a, b, out); }
inline bool add(int64_t a, int64_t b, int64_t* out) noexcept { return __builtin_add_overflow(a, b, out); }

/// The element count of `shape` (ndim entries): 0 if a size is 0, whatever
/// the others, else their product. True if a size is negative, or if no size
/// is 0 and the product overflows int64.
inline bool numel(int32_t ndim, const int64_t* shape, int64_t* out) noexcept {
  int64_t n = 1;
  bool negative = false, zero = false, overflow = false;
  for (int32_t d = 0; d < ndim; ++d) {
    negative |= shape[d] < 0;
    zero |= shape[d] == 0;
    if (shape[d] > 0) overflow |= __builtin_mul_overflow(n, shape[d], &n);
  }
  *out = zero ? 0 : n;
  return negative || (overflow && !zero);
}

/// The byte extent of a strided operand with at least one element: the sum of
/// (size - 1) * |stride| * elem_size over its dims, i.e. the distance between
/// its lowest and highest element. `strides` in elements (nullptr: row-major
/// contiguous). True if any step overflows int64. Once this fits, every byte
/// offset of an element relative to the first one fits int64 too.
inline bool byte_extent(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t elem_size,
                        int64_t* out) noexcept {
  int64_t total = 0, contiguous = elem_size;
  bool bad = false;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (shape[d] <= 1) continue;  // never stepped: its stride may be anything
    int64_t step = contiguous, reach = 0;
    if (strides != nullptr) {
      bad |= __builtin_mul_overflow(strides[d], elem_size, &step);
      if (step < 0) bad |= __builtin_sub_overflow(int64_t{0}, step, &step);
    } else if (d > 0) {
      bad |= __builtin_mul_overflow(contiguous, shape[d], &contiguous);
    }
    bad |= __builtin_mul_overflow(shape[d] - 1, step, &reach);
    bad |= __builtin_add_overflow(total, reach, &total);
  }
  *out = total;
  return bad;
}

}  // namespace tessera::sdk::checked
