// Internal: the slots of an Operator that only the core fills — its plugin
// kernel tables (plugin_kernels.h), its autograd rule (autograd/rules.h), its
// pointwise lane (pointwise_lane.h) and its family (ops/op_handle.h). Kept out
// of the public header so that users of tessera/dispatcher.h cannot replace them.
//
// Reads are lock-free (acquire); the kernel tables and the rule are published
// with release stores by their owners, which serialize their own writers; the
// lane is set once, at declaration, before any call.
#pragma once

#include <tessera/dispatcher.h>

namespace tessera::detail {

struct OperatorSlots {
  /// Plugin kernels for device type t (a BackendKernels), or null.
  [[gnu::always_inline]] static const void* backend_kernels(const Operator& op, DeviceTypeId t) {
    return op.backend_kernels_[t].load(std::memory_order_acquire);
  }
  static void set_backend_kernels(Operator& op, DeviceTypeId t, const void* k) {
    op.backend_kernels_[t].store(k, std::memory_order_release);
  }
  /// The op's autograd rule (an autograd Rule), or null.
  [[gnu::always_inline]] static const void* autograd_rule(const Operator& op) {
    return op.autograd_rule_.load(std::memory_order_acquire);
  }
  static void set_autograd_rule(Operator& op, const void* rule) {
    op.autograd_rule_.store(rule, std::memory_order_release);
  }
  /// For a pointwise structured op: what its unboxed fast lane needs, or null.
  [[gnu::always_inline]] static const PointwiseLane* pointwise_lane(const Operator& op) { return op.pointwise_lane_; }
  static void set_pointwise_lane(Operator& op, const PointwiseLane* lane) { op.pointwise_lane_ = lane; }
  /// For an op a plugin defined (and its in-place variant): its definition
  /// (a plugin_ops::Definition), or null. Replaced when the plugin reloads.
  [[gnu::always_inline]] static const void* plugin_op(const Operator& op) {
    return op.plugin_op_.load(std::memory_order_acquire);
  }
  static void set_plugin_op(Operator& op, const void* def) { op.plugin_op_.store(def, std::memory_order_release); }
  /// Set once, at declaration, by the op's handle (ops/op_handle.h).
  static void set_family(Operator& op, const char* family) { op.family_ = family; }
};

}  // namespace tessera::detail
