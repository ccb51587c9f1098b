// Helpers shared by meta rules (meta_helpers.h): devices, dtype promotion,
// broadcasting, dims, writability, fill values and memory overlap.
#include "meta_helpers.h"

#include <tessera/error.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "checked_math.h"
#include "structured.h"

namespace tessera {

Device common_device(const StructuredCall& c, std::initializer_list<int> tensor_args) {
  Device d = c.tensor_arg(*tensor_args.begin()).device();
  for (int i : tensor_args) {
    const Tensor& t = c.tensor_arg(i);
    if (t.device() != d) [[unlikely]] {
      // A 0-d wrapped number may live anywhere; it is moved to the device.
      if (t.unsafeGetTensorImpl()->is_wrapped_number()) continue;
      throw ValueError(detail::str(c.op().name(), ": expected all tensors on one device, found ", d.str(), " and ",
                                   t.device().str(), "; call: ", describe_call(c.op(), c.frame())));
    }
  }
  return d;
}

namespace {
ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promote_types(a, b);
}
// PyTorch's combine_categories: the higher-priority result wins unless the lower
// one has a higher category.
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (is_floating_type(higher)) return higher;
  if (higher == kBool || is_floating_type(lower)) return promote_skip_undefined(higher, lower);
  return higher;
}
}  // namespace

namespace {
template <typename Range>
ScalarType result_type_of(const Range& tensors) {
  ScalarType dim_result = ScalarType::Undefined, zero_result = ScalarType::Undefined,
             wrapped_result = ScalarType::Undefined;
  for (const TensorImpl* t : tensors) {
    if (t->is_wrapped_number()) {
      // Numbers count by category only: a float number is "the default float".
      ScalarType cur = t->dtype();
      if (is_floating_type(cur)) cur = kDefaultFloat;
      wrapped_result = promote_skip_undefined(wrapped_result, cur);
    } else if (t->dim() == 0) {
      zero_result = promote_skip_undefined(zero_result, t->dtype());
    } else {
      dim_result = promote_skip_undefined(dim_result, t->dtype());
    }
  }
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}
}  // namespace

ScalarType result_type(std::initializer_list<const TensorImpl*> tensors) { return result_type_of(tensors); }
ScalarType result_type(const std::vector<const TensorImpl*>& tensors) { return result_type_of(tensors); }

DimVector broadcast_shapes(const Operator& op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) [[unlikely]] {
      throw ValueError(detail::str(op.name(), ": shapes ", a, " and ", b, " are not broadcastable (size ", da, " vs ",
                                   db, " at dimension ", i, " of the broadcast shape)"));
    }
    out[i] = da == 1 ? db : da;
  }
  int64_t span = 0;
  if (checked::span(out, span)) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": shapes ", a, " and ", b, " broadcast to ", IntArrayRef(out),
                                 ", which has more elements than int64 can count"));
  }
  return out;
}

Tensor cast_and_expand(const Tensor& t, ScalarType dtype, IntArrayRef shape) {
  Tensor r = t.scalar_type() == dtype ? t : t.to(dtype);
  if (!r.sizes().equals(shape)) r = r.expand(shape);
  return r;
}

int64_t wrap_dim(const Operator& op, int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  if (dim < -n || dim >= n) [[unlikely]] {
    throw IndexError(detail::str(op.name(), ": dimension ", dim, " is out of range for a tensor of ", ndim,
                                 " dimension(s) (expected a value in [", -n, ", ", n - 1, "])"));
  }
  return dim < 0 ? dim + n : dim;
}

namespace {
// The first and one-past-the-last byte a tensor with data and elements can touch.
struct ByteSpan {
  uintptr_t lo, hi;
};
ByteSpan byte_span(const TensorImpl& t) {
  const int64_t es = static_cast<int64_t>(element_size(t.dtype()));
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  int64_t lo = 0, hi = 0;  // in elements, relative to the first element
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t extent = (sizes[i] - 1) * strides[i];
    (extent < 0 ? lo : hi) += extent;
  }
  const auto base = reinterpret_cast<uintptr_t>(t.data());
  return {base + static_cast<uintptr_t>(lo * es), base + static_cast<uintptr_t>((hi + 1) * es)};
}
}  // namespace

MemoryOverlap memory_overlap(const Tensor& a, const Tensor& b) noexcept {
  const TensorImpl* x = a.unsafeGetTensorImpl();
  const TensorImpl* y = b.unsafeGetTensorImpl();
  if (x == nullptr || y == nullptr || x->device() != y->device() || x->numel() == 0 || y->numel() == 0)
    return MemoryOverlap::kNone;
  if (x->data() == nullptr || y->data() == nullptr) return MemoryOverlap::kNone;
  if (x->data() == y->data() && element_size(x->dtype()) == element_size(y->dtype()) &&
      x->sizes().equals(y->sizes()) && x->strides().equals(y->strides()))
    return MemoryOverlap::kFull;
  const ByteSpan p = byte_span(*x), q = byte_span(*y);
  return p.lo < q.hi && q.lo < p.hi ? MemoryOverlap::kPartial : MemoryOverlap::kNone;
}

Tensor snapshot_if_overlapping(const Tensor& in, const Tensor& self) {
  return memory_overlap(in, self) == MemoryOverlap::kNone ? in : in.clone();
}

void check_value_fits(const Operator& op, const Scalar& value, ScalarType dtype) {
  if (dtype == kBool || value.is_bool()) return;
  bool fits = true;
  if (is_floating_type(dtype)) {
    // The least finite magnitude that rounds to inf in each format.
    const double v = value.to_double();
    const double limit = dtype == kHalf ? 65520.0 : dtype == kBFloat16 ? 0x1.ffp127 : dtype == kFloat ? 0x1.ffffffp127 : 0;
    fits = limit == 0 || !std::isfinite(v) || std::fabs(v) < limit;
  } else {
    int64_t lo = 0, hi = 0;
    switch (dtype) {
      case kByte: lo = 0, hi = 255; break;
      case kChar: lo = -128, hi = 127; break;
      case kShort: lo = -32768, hi = 32767; break;
      case kInt: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
      default: lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max(); break;
    }
    if (value.is_integral()) {
      fits = value.to_long() >= lo && value.to_long() <= hi;
    } else {  // truncated toward zero, as the conversion does; 2^63 is exact in double
      const double t = std::trunc(value.to_double());
      fits = t >= static_cast<double>(lo) && t < -static_cast<double>(std::numeric_limits<int64_t>::min()) &&
             static_cast<int64_t>(t) <= hi;
    }
  }
  if (!fits) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": value ", value, " cannot be converted to ", dtype_name(dtype),
                                 " without overflow"));
  }
}

void check_writable(const Operator& op, const Tensor& t) {
  if (t.is_read_only()) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": cannot write into a read-only tensor (", dtype_name(t.scalar_type()),
                                 t.sizes(), " on ", t.device().str(), ", e.g. imported from a read-only DLPack producer)"));
  }
  if (t.numel() == 0) return;  // nothing is written, whatever the strides
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > 1 && strides[i] == 0) [[unlikely]] {
      throw ValueError(detail::str(op.name(), ": cannot write in place into a tensor where several elements share one "
                                   "memory location (shape ", sizes, ", strides ", strides, ", e.g. from expand); clone it first"));
    }
  }
}

}  // namespace tessera
