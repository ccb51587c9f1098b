// Internal: the unboxed fast lane of pointwise structured ops.
//
// Most pointwise calls need nothing from their meta rule: the tensors are on one
// device, of one dtype the op computes in, of one shape. For those, the lane
// skips the StructuredCall machinery — it allocates the output and calls the
// plugin kernel straight from the frame — and the kernel sees exactly what the
// meta rule would have given it. Any other call (promotion, broadcasting, a
// wrapped number, an empty or meta tensor, a missing kernel, tracing on)
// returns false untouched and takes the meta rule, which also reports errors.
#pragma once

#include <tessera/dispatcher.h>

#include <cstdint>

namespace tessera {

struct PointwiseLane {
  /// What follows the tensor arguments in the schema.
  enum class Trailing : uint8_t {
    Nothing,   // nothing
    Alpha,     // one Scalar (add/sub's alpha), handed over in the form the dtype wants
    NoneOnly,  // one optional argument; the lane takes the call only when it is None
  };
  uint8_t num_tensors = 1;  // the leading 1 or 2 arguments
  Trailing trailing = Trailing::Nothing;
  uint16_t dtypes = 0;       // bit d set: inputs of dtype d compute (and return) in d
  bool bool_result = false;  // the output is bool instead (comparisons, isnan, ...)
};

/// Runs `op` through its lane when the call qualifies (frame.outputs[0] set,
/// true); returns false having done nothing otherwise. Throws what the plugin
/// kernel's error becomes (the same message as the meta-rule path).
bool run_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame);

/// The C++ API's entry (ops::call): makes Dispatcher::call's choice of kernel
/// for the frame without boxing overhead, and when that is the op's structured
/// kernel runs the lane as run_pointwise_lane would. False, having done
/// nothing, when the call goes elsewhere (autograd, another kernel, no lane).
bool dispatch_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame);

/// Calls `op` from the C++ API with typed arguments and no boxing on its fast
/// path — op(a, b, alpha), op(a, b) or op(a), all borrowed for the call — and
/// returns the result. Takes the lane when op has one of that shape and the
/// call qualifies (as dispatch_pointwise_lane), else boxes the arguments for
/// Dispatcher::call. Throws what that call throws.
Tensor call_pointwise(const Operator& op, const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor call_pointwise(const Operator& op, const Tensor& a, const Tensor& b);
Tensor call_pointwise(const Operator& op, const Tensor& a);

}  // namespace tessera
