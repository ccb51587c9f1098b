// Internal: helpers shared by the meta rules of structured ops (and the ops
// around them): the common device, PyTorch's dtype promotion, broadcasting,
// dim wrapping, writability and fill-value checks, and memory overlap judged by
// addresses. Each throws the op's error naming it; none keeps state.
#pragma once

#include <tessera/dispatcher.h>
#include <tessera/tensor.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace tessera {

class StructuredCall;

/// All tensor arguments are on one device (ValueError naming op, args, devices otherwise); returns it.
Device common_device(const StructuredCall& c, std::initializer_list<int> tensor_args);
/// PyTorch's result_type over tensors (wrapped numbers and 0-d tensors rank lower).
ScalarType result_type(std::initializer_list<const TensorImpl*> tensors);
ScalarType result_type(const std::vector<const TensorImpl*>& tensors);
/// Broadcast shape of a and b (ValueError naming op and shapes if incompatible).
DimVector broadcast_shapes(const Operator& op, IntArrayRef a, IntArrayRef b);
/// `t` cast to dtype (if needed) and expanded to `shape` (if needed).
Tensor cast_and_expand(const Tensor& t, ScalarType dtype, IntArrayRef shape);
/// Wraps dim into [0, ndim) (IndexError naming the op otherwise). ndim 0 takes dims -1 and 0.
int64_t wrap_dim(const Operator& op, int64_t dim, int64_t ndim);
/// Checks that `t` may be written in place by `op` (not read-only, no internal overlap).
void check_writable(const Operator& op, const Tensor& t);
/// Checks that the number `value` can be stored in `dtype` as a fill value
/// (fill_, full, masked_fill): an integer dtype takes the integers in its range
/// (a float value truncates toward zero first; NaN and inf never fit), a
/// floating dtype any value that does not round to inf from a finite number,
/// bool anything. Otherwise ValueError naming `op`, the value and the dtype, as
/// PyTorch refuses them (arithmetic with a number still converts modulo 2^bits).
void check_value_fits(const Operator& op, const Scalar& value, ScalarType dtype);

/// How the memory of two tensors relates, judged by addresses, not by storage:
/// tensors over one buffer made separately (two DLPack imports, from_blob, a
/// view) alias exactly when views of one storage would.
enum class MemoryOverlap : uint8_t {
  kNone,     // no byte in common: other devices, no data, empty, or disjoint byte ranges
  kFull,     // the same elements: same first byte, element size, sizes and strides
  kPartial,  // otherwise, the spans [lowest byte, highest byte] intersect (conservative:
             // interleaved views that share no element count too)
};
/// Compares `a` and `b` as above: a few integers per dimension, no allocation.
/// Tensors on different devices never overlap (ops refuse mixing them; moves
/// between devices go through a fresh contiguous copy). Thread-safe, no throw.
MemoryOverlap memory_overlap(const Tensor& a, const Tensor& b) noexcept;
/// `in`, or a copy of it (clone) when it shares any memory with `self`:
/// for an in-place op whose kernel may read an element of `in` after writing
/// another of `self` (matmul, scatter, index_add...).
Tensor snapshot_if_overlapping(const Tensor& in, const Tensor& self);

}  // namespace tessera
