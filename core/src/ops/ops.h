// Internal: handles of the declared ops and a helper to call them boxed.
//
// Each op_x() declares its op on first call (a function-local static, so static
// initialization order across files does not matter); declare_all_ops() runs
// them all when libtessera loads, before any plugin registers kernels.
#pragma once

#include <tessera/dispatcher.h>

#include "../operator_slots.h"
#include "../pointwise_lane.h"

#include <atomic>
#include <initializer_list>

namespace tessera::ops {

const Operator& op_add();
const Operator& op_add_();
const Operator& op_sub();
const Operator& op_sub_();
const Operator& op_mul();
const Operator& op_mul_();
const Operator& op_div();
const Operator& op_div_();
const Operator& op_neg();
const Operator& op_neg_();
const Operator& op_exp();
const Operator& op_exp_();
const Operator& op_relu();
const Operator& op_relu_();
const Operator& op_sum();
const Operator& op_mm();
const Operator& op_bmm();
const Operator& op_matmul();
const Operator& op_copy_();
const Operator& op_fill_();
const Operator& op_arange();
const Operator& op_empty();
const Operator& op_view();
const Operator& op_reshape();
const Operator& op_transpose();
const Operator& op_permute();
const Operator& op_narrow();
const Operator& op_slice();
const Operator& op_select();
const Operator& op_squeeze();
const Operator& op_squeeze_dim();
const Operator& op_unsqueeze();
const Operator& op_expand();
const Operator& op_as_strided();
const Operator& op_contiguous();
const Operator& op_clone();
const Operator& op_nonzero();

void declare_all_ops();

// Each op family declares its ops in its own file (called by declare_all_ops).
void declare_unary_ops();      // unary.cpp: unary pointwise ops
void declare_binary_ops();     // binary.cpp: binary pointwise ops
void declare_ternary_ops();    // ternary.cpp: where, clamp, lerp, addcmul, addcdiv
void declare_reduction_ops();  // reduction.cpp: reductions and scans
void declare_linalg_ops();     // linalg.cpp: mm, bmm, matmul, addmm, dot, outer
void declare_shape_ops();      // shape.cpp: cat, stack, split, flip, pad, tril...
void declare_indexing_ops();   // indexing.cpp: gather, scatter, masked ops, nonzero...
void declare_random_ops();     // random.cpp: the Philox generator's ops
void declare_nn_ops();         // nn.cpp: softmax, norms, losses, convolution, pooling

/// An op's handle, resolved on first use: a tiny op then pays one load (no
/// guard, no registers saved for a cold call), the resolution out of line.
template <const Operator& (*Resolve)()>
[[gnu::noinline, gnu::cold]] const Operator* resolve_op(std::atomic<const Operator*>& slot) {
  const Operator* op = &Resolve();
  slot.store(op, std::memory_order_release);
  return op;
}
template <const Operator& (*Resolve)()>
[[gnu::always_inline]] inline const Operator& cached_op() {
  constinit static std::atomic<const Operator*> slot{nullptr};
  const Operator* op = slot.load(std::memory_order_acquire);
  if (op == nullptr) [[unlikely]] op = resolve_op<Resolve>(slot);
  return *op;
}

/// Calls `op` with boxed arguments and returns its single result.
template <size_t N>
inline Tensor call(const Operator& op, const IValue (&args)[N]) {
  Tensor out;
  Frame frame{args, static_cast<int>(N), &out, 1};
  if (const PointwiseLane* lane = detail::OperatorSlots::pointwise_lane(op))
    if (dispatch_pointwise_lane(op, *lane, frame)) return out;
  Dispatcher::instance().call(op, frame);
  return out;
}

/// Calls the in-place op `op` with `self` first and `rest` after, and returns
/// `self` (the C++ API's in-place forms).
inline Tensor& call_inplace(Tensor& self, const Operator& op, std::initializer_list<IValue> rest) {
  IValue args[8];
  args[0] = IValue::of(self);
  int n = 1;
  for (const IValue& v : rest) args[n++] = v;
  Tensor out;
  Frame frame{args, n, &out, 1};
  Dispatcher::instance().call(op, frame);
  return self;
}

/// A contiguous copy of `src` on device `to` (same dtype), moved by the plugins'
/// copy functions, staged through the host when neither side is host memory.
/// Errors name `op`.
Tensor transfer(const Operator& op, const Tensor& src, Device to);

/// The out= form of an op: writes `result` (the op's functional result) into `out`
/// and returns `out`. `out` must be on result's device and have its shape, and
/// result's dtype must cast to out's (PyTorch's can_cast); else a ValueError or
/// TypeError naming `op`. Computing first makes an `out` that overlaps an input
/// safe.
Tensor& assign_out(std::string_view op, const Tensor& result, Tensor& out);

/// A 0-d tensor for a number given in place of a tensor (a + 2), on `device`.
Tensor wrapped_number(const Scalar& s, Device device);

}  // namespace tessera::ops
