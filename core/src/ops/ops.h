// Internal: handles of the declared ops and a helper to call them boxed.
//
// Each op_x() declares its op on first call (a function-local static, so static
// initialization order across files does not matter); declare_all_ops() runs
// them all when libtessera loads, before any plugin registers kernels.
#pragma once

#include <tessera/dispatcher.h>

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

/// Calls `op` with boxed arguments and returns its single result.
template <size_t N>
inline Tensor call(const Operator& op, const IValue (&args)[N]) {
  Tensor out;
  Frame frame{args, static_cast<int>(N), &out, 1};
  Dispatcher::instance().call(op, frame);
  return out;
}

/// A contiguous copy of `src` on device `to` (same dtype), moved by the plugins'
/// copy functions, staged through the host when neither side is host memory.
/// Errors name `op`.
Tensor transfer(const Operator& op, const Tensor& src, Device to);

/// A 0-d tensor for a number given in place of a tensor (a + 2), on `device`.
Tensor wrapped_number(const Scalar& s, Device device);

}  // namespace tessera::ops
