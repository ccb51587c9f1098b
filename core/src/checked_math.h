// Internal: checked int64 arithmetic for sizes, strides, extents and offsets.
//
// Every size, stride, extent, offset and byte count the core computes from
// numbers a user gave goes through these helpers (docs/architecture.md, "Sizes,
// strides and overflow"). They are inline, built on the compiler's overflow
// builtins, and cost one flag test on the path where nothing overflows. Like the
// builtins, the bool helpers return true when the exact result does not fit
// int64 (the out value is then unspecified); callers turn that into a
// ValueError naming the op and the shapes, or call check_shape, which throws it.
//
// The rule for every tensor's shape (TensorImpl enforces it; ops check first
// so their errors name the op): at most kMaxDims dims, sizes are >= 0, and the product of the sizes
// counting 0 as 1 (the shape's span), times the element size, fits int64. So
// the element count, the byte size, every contiguous stride and any product of
// some of the sizes of an existing tensor fit int64 and need no further check.
//
// The SDK has its own copy (sdk/include/tessera/sdk/checked.hpp) for the
// plugins: they may include only abi/ and sdk/ headers, and the core does not
// depend on the SDK.
//
// Thread-safe (pure functions).
#pragma once

#include <tessera/array_ref.h>
#include <tessera/dtype.h>
#include <tessera/error.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace tessera::checked {

/// The most dims a tensor may have: NumPy's limit, the DLPack importer's
/// (kDLPackMaxDims) and the SDK iterators' (sdk::StridedIter::kMaxDims), so
/// every tensor crosses to them; it also bounds every walk over the dims
/// (printing, tolist) that recurses.
inline constexpr size_t kMaxDims = 64;

[[nodiscard]] inline bool mul(int64_t a, int64_t b, int64_t& out) noexcept { return __builtin_mul_overflow(a, b, &out); }
[[nodiscard]] inline bool add(int64_t a, int64_t b, int64_t& out) noexcept { return __builtin_add_overflow(a, b, &out); }
[[nodiscard]] inline bool sub(int64_t a, int64_t b, int64_t& out) noexcept { return __builtin_sub_overflow(a, b, &out); }

/// An int64 that remembers whether any operation on the way to it overflowed:
/// for formulas (an output size from kernel, stride, padding, dilation) that
/// read better with one check at the end.
class Int {
 public:
  constexpr Int(int64_t v) noexcept : v_(v) {}  // NOLINT: implicit, so formulas take plain numbers
  friend Int operator+(Int a, Int b) noexcept {
    a.bad_ |= b.bad_ | __builtin_add_overflow(a.v_, b.v_, &a.v_);
    return a;
  }
  friend Int operator-(Int a, Int b) noexcept {
    a.bad_ |= b.bad_ | __builtin_sub_overflow(a.v_, b.v_, &a.v_);
    return a;
  }
  friend Int operator*(Int a, Int b) noexcept {
    a.bad_ |= b.bad_ | __builtin_mul_overflow(a.v_, b.v_, &a.v_);
    return a;
  }
  /// Division rounding toward zero; b must not be 0 (INT64_MIN / -1 overflows).
  friend Int operator/(Int a, Int b) noexcept {
    const bool bad = b.v_ == -1 && a.v_ == std::numeric_limits<int64_t>::min();
    a.bad_ |= b.bad_ | bad;
    a.v_ = bad ? 0 : a.v_ / b.v_;
    return a;
  }
  bool overflowed() const noexcept { return bad_; }
  /// The exact value; meaningful only when !overflowed().
  int64_t value() const noexcept { return v_; }

 private:
  int64_t v_;
  bool bad_ = false;
};

/// The span of a shape of sizes >= 0: the product of its sizes counting 0 as
/// 1. It bounds the element count, every contiguous stride and every product
/// of some of the sizes. True on overflow.
[[nodiscard]] inline bool span(IntArrayRef sizes, int64_t& out) noexcept {
  int64_t acc = 1;
  bool bad = false;
  for (int64_t s : sizes) bad |= __builtin_mul_overflow(acc, s > 1 ? s : 1, &acc);
  out = acc;
  return bad;
}

/// The element count of a shape of sizes >= 0: 0 if a size is 0, else the
/// product. True when the span overflows (such a shape is refused even with a 0).
[[nodiscard]] inline bool numel(IntArrayRef sizes, int64_t& out) noexcept {
  int64_t acc = 1;
  bool bad = false, zero = false;
  for (int64_t s : sizes) {
    bad |= __builtin_mul_overflow(acc, s > 1 ? s : 1, &acc);
    zero |= s == 0;
  }
  out = zero ? 0 : acc;
  return bad;
}

/// The lowest and highest element offsets, relative to the first element,
/// that a strided view of sizes > 0 touches: the sums of (size - 1) * stride
/// over its negative and its positive strides. True on overflow.
[[nodiscard]] inline bool extent(IntArrayRef sizes, IntArrayRef strides, int64_t& lo, int64_t& hi) noexcept {
  int64_t l = 0, h = 0;
  bool bad = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t reach = 0;
    bad |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &reach);
    bad |= reach < 0 ? __builtin_add_overflow(l, reach, &l) : __builtin_add_overflow(h, reach, &h);
  }
  lo = l;
  hi = h;
  return bad;
}

/// Decimal text of an unsigned 128-bit number (byte counts beyond int64 in messages).
inline std::string u128_text(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

/// Throws the ValueError check_shape reports for `sizes` of `dtype` (sizes
/// that are not a valid tensor shape): "op: negative size ...", "op: shape
/// [...] has more elements than int64 can count" or "op: shape [...] of
/// float64 is N bytes, more than int64 can index".
[[noreturn, gnu::cold, gnu::noinline]] inline void fail_shape(std::string_view op, IntArrayRef sizes,
                                                                ScalarType dtype) {
  if (sizes.size() > kMaxDims) {
    throw ValueError(detail::str(op, ": a shape of ", sizes.size(), " dims; tensors have at most ", kMaxDims, " dims"));
  }
  bool zero = false;
  for (int64_t s : sizes) {
    if (s < 0) throw ValueError(detail::str(op, ": negative size ", s, " in shape ", sizes));
    zero |= s == 0;
  }
  int64_t n = 0;
  if (span(sizes, n)) {
    throw ValueError(detail::str(op, ": shape ", sizes, " has more elements than int64 can count (the product of its sizes",
                                 zero ? ", counting the 0s as 1," : "", " exceeds 9223372036854775807)"));
  }
  const unsigned __int128 bytes = static_cast<unsigned __int128>(n) * element_size(dtype);
  throw ValueError(detail::str(op, ": shape ", sizes, " of ", dtype_name(dtype), zero ? " would span " : " is ",
                               u128_text(bytes), " bytes, more than int64 can index"));
}

/// The element count of a new tensor of `sizes` and `dtype`, checked against
/// the shape rule above (ValueError naming `op` and the shape otherwise).
[[nodiscard]] inline int64_t check_shape(std::string_view op, IntArrayRef sizes, ScalarType dtype) {
  int64_t acc = 1;
  bool bad = sizes.size() > kMaxDims, zero = false;
  for (int64_t s : sizes) {
    bad |= s < 0;
    bad |= __builtin_mul_overflow(acc, s > 1 ? s : 1, &acc);
    zero |= s == 0;
  }
  int64_t bytes = 0;
  bad |= __builtin_mul_overflow(acc, static_cast<int64_t>(element_size(dtype)), &bytes);
  if (bad) [[unlikely]] fail_shape(op, sizes, dtype);
  return zero ? 0 : acc;
}

/// check_shape without a dtype (broadcast shapes, view shapes): sizes >= 0 and
/// a span that fits int64 (ValueError naming `op` otherwise). Returns the numel.
[[nodiscard]] inline int64_t check_numel(std::string_view op, IntArrayRef sizes) {
  return check_shape(op, sizes, ScalarType::Bool);  // one byte per element: only the count can overflow
}

}  // namespace tessera::checked
