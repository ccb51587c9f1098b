// Internal: what the op families share — declaring every op, calling ops boxed,
// out= and number arguments.
//
// Each family file holds its ops' handles (op_handle.h), declared on first use;
// declare_all_ops() declares them all when libtessera loads, before any plugin
// registers kernels.
#pragma once

#include <tessera/dispatcher.h>

#include "../operator_slots.h"
#include "../pointwise_lane.h"
#include "op_handle.h"

#include <string_view>

namespace tessera::ops {

void declare_all_ops();

// Each op family declares its ops in its own file (called by declare_all_ops).
void declare_unary_ops();      // unary.cpp: unary pointwise ops
void declare_binary_ops();     // binary.cpp: binary pointwise ops
void declare_ternary_ops();    // ternary.cpp: where, clamp, lerp, addcmul, addcdiv
void declare_reduction_ops();  // reduction.cpp: reductions and scans
void declare_linalg_ops();     // linalg.cpp: mm, bmm, matmul, addmm, dot, outer
void declare_shape_ops();      // shape.cpp: cat, stack, flip, pad, tril...; calls the two below
void declare_shape_view_ops(); // shape_views.cpp: view, reshape, transpose, expand, as_strided, clone...
void declare_shape_copy_ops(); // shape_copy.cpp: copy_, fill_, empty, arange
void declare_indexing_ops();   // indexing.cpp: gather, scatter, masked ops, nonzero...
void declare_random_ops();     // random.cpp: the Philox generator's ops
void declare_nn_ops();         // nn.cpp: softmax, norms, losses, convolution, pooling

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

/// Calls the in-place op `op` with `args` (self first, in schema order) and
/// returns `self` (the C++ API's in-place forms).
template <size_t N>
inline Tensor& call_inplace(Tensor& self, const Operator& op, const IValue (&args)[N]) {
  Tensor out;
  Frame frame{args, static_cast<int>(N), &out, 1};
  Dispatcher::instance().call(op, frame);
  return self;
}

/// layer_norm's gradients in one _layer_norm_backward call (nn.cpp): out[0]
/// for input (shape [0] unless input_grad), out[1] and out[2] for weight and
/// bias (normalized_shape; shape [0] unless affine_grads). `weight` undefined
/// means None. Returns false, computing nothing, when input's device has no
/// kernel for it in input's dtype (the caller composes the gradients instead).
/// Errors as the op's (ValueError/TypeError naming _layer_norm_backward).
bool layer_norm_backward_fused(const Tensor& grad_output, const Tensor& input, IntArrayRef normalized_shape,
                               const Tensor& weight, double eps, bool input_grad, bool affine_grads, Tensor (&out)[3]);

/// Whether a structured `op` can run on `device` in `dtype`: a plugin kernel
/// is registered for them, or the device stores nothing (meta: only the rule
/// runs). Composites and derivatives ask before calling an internal kernel op
/// (_clamp, _layer_norm_backward, _max_pool2d_backward, _conv2d_backward_weight)
/// and compose otherwise.
bool runs_on(const Operator& op, Device device, ScalarType dtype);

/// max_pool2d's input gradient in one _max_pool2d_backward call (nn.cpp),
/// into `out`; the pool's arguments as the forward call gave them. Returns
/// false, computing nothing, when self's device has no kernel for it in self's
/// dtype. Errors as the op's.
bool max_pool2d_backward_fused(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                Tensor& out);

/// conv2d's weight gradient in one _conv2d_backward_weight call (nn.cpp), into
/// `out`: 4-D grad_output and input, the top/left padding. Returns false,
/// computing nothing, when input's device has no kernel for it in input's
/// dtype. Errors as the op's.
bool conv2d_backward_weight_fused(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                                  Tensor& out);

/// A contiguous copy of `src` on device `to` (same dtype), moved by the plugins'
/// copy functions, staged through the host when neither side is host memory.
/// Errors name `op`.
Tensor transfer(std::string_view op, const Tensor& src, Device to, bool non_blocking = false);
/// Copies contiguous `c` into contiguous `out` (same dtype and shape) on
/// another device in one hop (false, nothing done: two device types without
/// host memory between them). Waits for the copy unless it may not (see
/// transfer in shape_copy.cpp).
bool transfer_into(std::string_view op, const Tensor& c, const Tensor& out, bool non_blocking);

/// Copies an op's result into its out= tensor (out_target.h's out_form calls it
/// when the kernel could not write into `out` itself) and returns `out`. `out` must be on result's device and have its shape, and
/// result's dtype must cast to out's (PyTorch's can_cast); else a ValueError or
/// TypeError naming `op`. Computing first makes an `out` that overlaps an input
/// safe.
Tensor& assign_out(std::string_view op, const Tensor& result, Tensor& out);

/// A 0-d tensor for a number given in place of a tensor (a + 2), on `device`.
Tensor wrapped_number(const Scalar& s, Device device);
/// wrapped_number on the device of `like`, the tensor operand next to it.
inline Tensor num(const Scalar& s, const Tensor& like) { return wrapped_number(s, like.device()); }

}  // namespace tessera::ops
