// Neural-network ops: softmax, log_softmax, layer_norm, losses, conv2d, pooling.
//
// Structured (plugin kernel): softmax, log_softmax, layer_norm (and the fused
// backward _layer_norm_backward that its derivative uses), nll_loss (and
// its label-smoothed internal twin _nll_loss_smoothed), conv2d, max_pool2d,
// avg_pool2d. Composite: mse_loss and cross_entropy. docs/ops/nn.md has the
// kernel contracts.
#include <tessera/error.h>

#include <algorithm>

#include "../checked_math.h"
#include "../structured.h"
#include "ops.h"

namespace tessera::ops {

namespace {

extern constinit OpHandle op_nll_loss_smoothed;  // below; cross_entropy calls it

using V = IValue;



void check_floating(const Operator& op, const Tensor& t, const char* what) {
  TSR_CHECK(is_floating_type(t.scalar_type()), TypeError, op.name(), ": expected a floating ", what, ", got ",
            dtype_name(t.scalar_type()));
}

// Reduction codes as the kernels receive them.
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

int64_t reduction_code(const Operator& op, std::string_view r) {
  if (r == "none") return kNone;
  if (r == "mean") return kMean;
  if (r == "sum") return kSum;
  throw ValueError(detail::str(op.name(), ": reduction must be 'none', 'mean' or 'sum', got '", r, "'"));
}
int64_t reduction_arg(const Operator& op, const IValue& v) {
  if (v.is_none()) return kMean;
  TSR_CHECK(v.tag == IValue::Tag::String, TypeError, op.name(), ": reduction must be a string");
  return reduction_code(op, v.string());
}

// ---- softmax, log_softmax ----

void softmax_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  ScalarType dt = self.scalar_type();
  if (!c.arg(2).is_none()) {
    dt = c.arg(2).dtype;
    TSR_CHECK(is_floating_type(dt), TypeError, c.op().name(), ": dtype must be a floating dtype, got ", dtype_name(dt));
  } else {
    TSR_CHECK(is_floating_type(dt), TypeError, c.op().name(), ": expected a floating input, got ", dtype_name(dt),
              " (pass dtype= to compute in a floating dtype)");
  }
  const int64_t dim = wrap_dim(c.op(), c.arg(1).i, self.dim());
  c.add_output(self.sizes(), dt);
  c.set_tensor(0, dt == self.scalar_type() ? self : self.to(dt));
  c.set_int(1, self.dim() == 0 ? 0 : dim);
  c.dispatch_dtype = dt;
}

// ---- layer_norm ----

// input's trailing dims must be normalized_shape; returns its length k.
int64_t check_normalized_shape(const Operator& op, const Tensor& x, IntArrayRef ns) {
  const int64_t k = static_cast<int64_t>(ns.size());
  TSR_CHECK(k >= 1, ValueError, op.name(), ": normalized_shape must have at least one dimension");
  bool match = x.dim() >= k;
  for (int64_t i = 0; match && i < k; ++i) match = x.size(x.dim() - k + i) == ns[i];
  if (!match) [[unlikely]] {
    std::string dims;
    for (int64_t s : ns) dims += ", " + std::to_string(s);
    throw ValueError(detail::str(op.name(), ": expected input with shape [*", dims, "] (normalized_shape=", ns,
                                 "), got input of shape ", x.sizes()));
  }
  return k;
}

// Schema argument `arg` (weight or bias, or None) as kernel argument `slot`:
// contiguous, of normalized_shape, on x's device, in x's dtype.
void set_affine(StructuredCall& c, int arg, int slot, const Tensor& x, IntArrayRef ns, const char* name) {
  const Operator& op = c.op();
  const IValue& a = c.arg(arg);
  if (a.is_none() || !a.tensor->defined()) {
    c.set_none(slot);
    return;
  }
  const Tensor& p = *a.tensor;
  TSR_CHECK(p.device() == x.device(), ValueError, op.name(), ": ", name, " is on ", p.device(), " but input is on ",
            x.device());
  TSR_CHECK(p.sizes().equals(ns), ValueError, op.name(), ": expected ", name, " of shape ", ns, " (normalized_shape), got ",
            p.sizes());
  check_floating(op, p, name);
  c.set_tensor(slot, p.to(x.scalar_type()).contiguous());
}

void layer_norm_meta(StructuredCall& c) {
  const Tensor& x = c.tensor_arg(0);
  c.device = x.device();
  check_floating(c.op(), x, "input");
  const IntArrayRef ns = c.arg(1).int_list();
  const int64_t k = check_normalized_shape(c.op(), x, ns);
  set_affine(c, 2, 1, x, ns, "weight");
  set_affine(c, 3, 2, x, ns, "bias");
  c.add_output(x.sizes(), x.scalar_type());
  c.set_tensor(0, x.contiguous());
  c.set_int(3, k);
  c.set_float(4, c.arg(4).is_none() ? 1e-5 : c.arg(4).d);
  c.dispatch_dtype = x.scalar_type();
}

// _layer_norm_backward(grad_output, input, normalized_shape, weight, eps,
// input_grad, affine_grads): layer_norm's three gradients in one kernel; an
// output not asked for has shape [0].
void layer_norm_backward_meta(StructuredCall& c) {
  const Operator& op = c.op();
  const Tensor& g = c.tensor_arg(0);
  const Tensor& x = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  check_floating(op, x, "input");
  check_floating(op, g, "grad_output");
  TSR_CHECK(g.sizes().equals(x.sizes()), ValueError, op.name(), ": expected grad_output of the input's shape ", x.sizes(),
            ", got ", g.sizes());
  const IntArrayRef ns = c.arg(2).int_list();
  const int64_t k = check_normalized_shape(op, x, ns);
  set_affine(c, 3, 2, x, ns, "weight");
  const bool input_grad = c.arg(5).b;
  const bool affine_grads = c.arg(6).b;
  const ScalarType dt = x.scalar_type();
  static constexpr int64_t kZero = 0;  // shape [0]: an output not asked for
  const IntArrayRef no_grad(&kZero, 1);
  c.add_output(input_grad ? x.sizes() : no_grad, dt);
  c.add_output(affine_grads ? ns : no_grad, dt);
  c.add_output(affine_grads ? ns : no_grad, dt);
  c.set_tensor(0, g.to(dt).contiguous());
  c.set_tensor(1, x.contiguous());
  c.set_int(3, k);
  c.set_float(4, c.arg(4).is_none() ? 1e-5 : c.arg(4).d);
  c.set_bool(5, input_grad);
  c.set_bool(6, affine_grads);
  c.dispatch_dtype = dt;
}

// ---- nll_loss ----

// Shared by nll_loss and _nll_loss_smoothed (arg 5: label_smoothing).
void nll_loss_meta(StructuredCall& c) {
  const Tensor& x = c.tensor_arg(0);
  const Tensor& target = c.tensor_arg(1);
  const Operator& op = c.op();
  c.device = common_device(c, {0, 1});
  check_floating(op, x, "input");
  TSR_CHECK(is_integral_type(target.scalar_type()), TypeError, op.name(),
            ": expected an integer (int64) target of class indices, got ", dtype_name(target.scalar_type()));
  TSR_CHECK(x.dim() >= 1, ValueError, op.name(), ": expected input of shape [C], [N, C] or [N, C, d1, ...], got a 0-d tensor");
  // Expected target shape: [] for [C], [N] for [N, C], [N, d1...] for [N, C, d1...].
  DimVector want;
  if (x.dim() >= 2) {
    want.push_back(x.size(0));
    for (int64_t d = 2; d < x.dim(); ++d) want.push_back(x.size(d));
  }
  TSR_CHECK(target.sizes().equals(want), ValueError, op.name(), ": expected target of shape ", IntArrayRef(want),
            " for input of shape ", x.sizes(), ", got target of shape ", target.sizes());
  const int64_t C = x.dim() == 1 ? x.size(0) : x.size(1);
  const ScalarType dt = x.scalar_type();
  const IValue& w = c.arg(2);
  if (w.is_none() || !w.tensor->defined()) {
    c.set_none(2);
  } else {
    const Tensor& wt = *w.tensor;
    TSR_CHECK(wt.device() == x.device(), ValueError, op.name(), ": weight is on ", wt.device(), " but input is on ",
              x.device());
    TSR_CHECK(wt.dim() == 1 && wt.size(0) == C, ValueError, op.name(), ": expected weight of shape [", C,
              "] (one per class), got ", wt.sizes());
    check_floating(op, wt, "weight");
    c.set_tensor(2, wt.to(dt).contiguous());
  }
  const int64_t red = reduction_arg(op, c.arg(3));
  double smoothing = 0.0;
  if (c.frame().num_args > 5 && !c.arg(5).is_none()) {
    smoothing = c.arg(5).tag == IValue::Tag::Int ? static_cast<double>(c.arg(5).i) : c.arg(5).d;
    TSR_CHECK(smoothing >= 0.0 && smoothing <= 1.0, ValueError, op.name(),
              ": label_smoothing must be between 0.0 and 1.0, got ", smoothing);
  }
  if (red == kNone) {
    c.add_output(target.sizes(), dt);
  } else {
    c.add_output({}, dt);
  }
  c.set_tensor(0, x);
  c.set_tensor(1, target.scalar_type() == kLong ? target : target.to(kLong));
  c.set_int(3, red);
  c.set_int(4, c.arg(4).is_none() ? -100 : c.arg(4).i);
  c.set_float(5, smoothing);
  c.dispatch_dtype = dt;
}

// ---- conv2d ----

// A list of 1 or 2 ints as a pair (ValueError naming the op and the argument).
std::pair<int64_t, int64_t> pair_arg(const Operator& op, const IValue& v, const char* name, int64_t dflt) {
  if (v.is_none()) return {dflt, dflt};
  if (v.tag == IValue::Tag::Int) return {v.i, v.i};
  TSR_CHECK(v.tag == IValue::Tag::IntList, TypeError, op.name(), ": ", name, " must be an int or a list of 2 ints");
  const IntArrayRef l = v.int_list();
  if (l.size() == 1) return {l[0], l[0]};
  TSR_CHECK(l.size() == 2, ValueError, op.name(), ": ", name, " must be an int or a list of 2 ints, got ", l);
  return {l[0], l[1]};
}

void conv2d_meta(StructuredCall& c) {
  const Tensor& x = c.tensor_arg(0);
  const Tensor& w = c.tensor_arg(1);
  const Operator& op = c.op();
  c.device = common_device(c, {0, 1});
  TSR_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op.name(),
            ": expected a 3-D (unbatched) or 4-D (batched) input [N, C, H, W], got shape ", x.sizes());
  TSR_CHECK(w.dim() == 4, ValueError, op.name(), ": expected a 4-D weight [out_channels, in_channels/groups, kH, kW], got shape ",
            w.sizes());
  check_floating(op, x, "input");
  TSR_CHECK(x.scalar_type() == w.scalar_type(), TypeError, op.name(), ": input (", dtype_name(x.scalar_type()),
            ") and weight (", dtype_name(w.scalar_type()), ") must have the same dtype");
  const int64_t groups = c.arg(6).is_none() ? 1 : c.arg(6).i;
  TSR_CHECK(groups > 0, ValueError, op.name(), ": groups must be positive, got ", groups);
  const bool batched = x.dim() == 4;
  const int64_t N = batched ? x.size(0) : 1;
  const int64_t C = x.size(batched ? 1 : 0), H = x.size(batched ? 2 : 1), W = x.size(batched ? 3 : 2);
  const int64_t O = w.size(0), kH = w.size(2), kW = w.size(3);
  TSR_CHECK(O % groups == 0, ValueError, op.name(), ": out_channels (", O, ", weight shape ", w.sizes(),
            ") must be divisible by groups (", groups, ")");
  TSR_CHECK(C % groups == 0, ValueError, op.name(), ": in_channels (", C, ", input shape ", x.sizes(),
            ") must be divisible by groups (", groups, ")");
  const checked::Int want_c = checked::Int(w.size(1)) * groups;
  TSR_CHECK(!want_c.overflowed() && want_c.value() == C, ValueError, op.name(), ": expected input of shape ", x.sizes(),
            " to have ", want_c.overflowed() ? detail::str(w.size(1), " x ", groups) : std::to_string(want_c.value()),
            " channels (weight ", w.sizes(), " with groups=", groups, "), but got ", C, " channels");
  const IValue& b = c.arg(2);
  if (b.is_none() || !b.tensor->defined()) {
    c.set_none(2);
  } else {
    const Tensor& bt = *b.tensor;
    TSR_CHECK(bt.device() == x.device(), ValueError, op.name(), ": bias is on ", bt.device(), " but input is on ",
              x.device());
    TSR_CHECK(bt.dim() == 1 && bt.size(0) == O, ValueError, op.name(), ": expected bias of shape [", O, "], got ",
              bt.sizes());
    TSR_CHECK(bt.scalar_type() == x.scalar_type(), TypeError, op.name(), ": bias (", dtype_name(bt.scalar_type()),
              ") must have the input's dtype (", dtype_name(x.scalar_type()), ")");
    c.set_tensor(2, bt);
  }
  const auto [sh, sw] = pair_arg(op, c.arg(3), "stride", 1);
  const auto [dh, dw] = pair_arg(op, c.arg(5), "dilation", 1);
  TSR_CHECK(sh > 0 && sw > 0, ValueError, op.name(), ": stride must be positive, got [", sh, ", ", sw, "]");
  TSR_CHECK(dh > 0 && dw > 0, ValueError, op.name(), ": dilation must be positive, got [", dh, ", ", dw, "]");
  // Padding: before (top/left) and total over both sides of each dim.
  // Sizes from user numbers (padding, dilation): checked, one test at the end.
  int64_t ph, pw;
  checked::Int th = 0, tw = 0;
  if (c.arg(4).tag == IValue::Tag::String) {
    const std::string_view p = c.arg(4).string();
    if (p == "valid") {
      ph = pw = 0;
    } else if (p == "same") {
      TSR_CHECK(sh == 1 && sw == 1, ValueError, op.name(), ": padding='same' is not supported for strided convolutions");
      th = checked::Int(dh) * (kH - 1);
      tw = checked::Int(dw) * (kW - 1);
      ph = th.value() / 2;  // the extra element of an odd total goes after, as PyTorch does
      pw = tw.value() / 2;
    } else {
      throw ValueError(detail::str(op.name(), ": padding must be an int, a pair of ints, 'valid' or 'same', got '", p, "'"));
    }
  } else {
    std::tie(ph, pw) = pair_arg(op, c.arg(4), "padding", 0);
    TSR_CHECK(ph >= 0 && pw >= 0, ValueError, op.name(), ": padding must be non-negative, got [", ph, ", ", pw, "]");
    th = checked::Int(2) * ph;
    tw = checked::Int(2) * pw;
  }
  const checked::Int ekH = checked::Int(dh) * (kH - 1) + 1, ekW = checked::Int(dw) * (kW - 1) + 1;
  const checked::Int inH = th + H, inW = tw + W;
  TSR_CHECK(!(ekH.overflowed() || ekW.overflowed() || inH.overflowed() || inW.overflowed()), ValueError, op.name(),
            ": padding [", ph, ", ", pw, "] or dilation [", dh, ", ", dw, "] makes sizes beyond int64 (input shape ",
            x.sizes(), ", weight shape ", w.sizes(), ")");
  TSR_CHECK(inH.value() >= ekH.value() && inW.value() >= ekW.value(), ValueError, op.name(), ": kernel size (",
            ekH.value(), " x ", ekW.value(), " with dilation) can't be greater than the padded input size (",
            inH.value(), " x ", inW.value(), "); input shape ", x.sizes(), ", weight shape ", w.sizes());
  // In range: 0 <= in - ek < INT64_MAX and the stride is >= 1.
  const int64_t Ho = (inH.value() - ekH.value()) / sh + 1, Wo = (inW.value() - ekW.value()) / sw + 1;
  if (batched) {
    c.add_output({N, O, Ho, Wo}, x.scalar_type());
  } else {
    c.add_output({O, Ho, Wo}, x.scalar_type());
  }
  c.set_tensor(0, x);
  c.set_tensor(1, w);
  const int64_t params[6] = {sh, sw, ph, pw, dh, dw};
  c.set_int_list(3, IntArrayRef(params, 6));
  c.set_int(4, groups);
  c.dispatch_dtype = x.scalar_type();
}

// _conv2d_backward_weight(grad_output, input, weight_size, stride, padding,
// dilation, groups): conv2d's weight gradient in one kernel, for 4-D (batched)
// operands. padding is the top/left padding; the bottom/right padding follows
// from grad_output's size (elements outside the input count as 0).
void conv2d_backward_weight_meta(StructuredCall& c) {
  const Tensor& g = c.tensor_arg(0);
  const Tensor& x = c.tensor_arg(1);
  const Operator& op = c.op();
  c.device = common_device(c, {0, 1});
  check_floating(op, x, "input");
  TSR_CHECK(g.scalar_type() == x.scalar_type(), TypeError, op.name(), ": grad_output (", dtype_name(g.scalar_type()),
            ") and input (", dtype_name(x.scalar_type()), ") must have the same dtype");
  TSR_CHECK(x.dim() == 4 && g.dim() == 4, ValueError, op.name(),
            ": expected a 4-D input [N, C, H, W] and grad_output [N, O, Ho, Wo], got shapes ", x.sizes(), " and ",
            g.sizes());
  const IValue& wsv = c.arg(2);
  TSR_CHECK(wsv.tag == IValue::Tag::IntList && wsv.int_list().size() == 4, ValueError, op.name(),
            ": weight_size must be a list of 4 ints [out_channels, in_channels/groups, kH, kW]");
  const IntArrayRef ws = wsv.int_list();
  const int64_t groups = c.arg(6).is_none() ? 1 : c.arg(6).i;
  TSR_CHECK(groups > 0, ValueError, op.name(), ": groups must be positive, got ", groups);
  TSR_CHECK(ws[0] >= 0 && ws[1] >= 0 && ws[2] > 0 && ws[3] > 0, ValueError, op.name(),
            ": weight_size must have non-negative channels and positive kernel sizes, got ", ws);
  TSR_CHECK(ws[0] % groups == 0, ValueError, op.name(), ": out_channels (", ws[0], ") must be divisible by groups (",
            groups, ")");
  const checked::Int want_c = checked::Int(ws[1]) * groups;
  TSR_CHECK(!want_c.overflowed() && want_c.value() == x.size(1), ValueError, op.name(), ": input of shape ", x.sizes(),
            " must have in_channels/groups x groups = ", ws[1], " x ", groups, " channels");
  TSR_CHECK(g.size(0) == x.size(0) && g.size(1) == ws[0], ValueError, op.name(), ": grad_output of shape ", g.sizes(),
            " must have the input's batch (", x.size(0), ") and out_channels (", ws[0], ")");
  const auto [sh, sw] = pair_arg(op, c.arg(3), "stride", 1);
  const auto [ph, pw] = pair_arg(op, c.arg(4), "padding", 0);
  const auto [dh, dw] = pair_arg(op, c.arg(5), "dilation", 1);
  TSR_CHECK(sh > 0 && sw > 0, ValueError, op.name(), ": stride must be positive, got [", sh, ", ", sw, "]");
  TSR_CHECK(dh > 0 && dw > 0, ValueError, op.name(), ": dilation must be positive, got [", dh, ", ", dw, "]");
  TSR_CHECK(ph >= 0 && pw >= 0, ValueError, op.name(), ": padding must be non-negative, got [", ph, ", ", pw, "]");
  c.add_output(ws, x.scalar_type());
  c.set_tensor(0, g);
  c.set_tensor(1, x);
  c.set_int_list(2, ws);
  const int64_t params[6] = {sh, sw, ph, pw, dh, dw};
  c.set_int_list(3, IntArrayRef(params, 6));
  c.set_int(4, groups);
  c.dispatch_dtype = x.scalar_type();
}

// ---- pooling ----

// The output size along one dim, exact for any user numbers (kernel size,
// stride, padding, dilation); false if the window itself leaves int64.
bool pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode, int64_t& out) {
  using checked::Int;
  const Int span = Int(in) + Int(2) * pad - Int(dil) * (k - 1) - 1;
  const Int limit = Int(in) + pad;
  if (span.overflowed() || limit.overflowed()) return false;
  // Floor or ceiling division by stride >= 1, written so nothing overflows.
  const int64_t s = span.value();
  int64_t q = s >= 0 ? s / stride : -((-(s + 1)) / stride) - 1;  // floor
  if (ceil_mode && s % stride != 0) ++q;
  out = q + 1;
  // With ceil_mode the last window must start inside the input or left padding
  // (limit > 0); a start beyond int64 is beyond it too.
  if (ceil_mode && q > 0) {
    const Int start = Int(q) * stride;
    if (start.overflowed() || start.value() >= limit.value()) --out;
  }
  return true;
}

// A pool's checked parameters {kh, kw, sh, sw, ph, pw, dh, dw} (the kernels'
// INT_LIST) and output shape, from the schema's arguments after self
// (kernel_size at c.arg(base + 1), ...; dilation only for max pooling).
struct PoolDims {
  int64_t params[8];
  DimVector out;
};

template <bool Max>
PoolDims pool_dims(StructuredCall& c, const Tensor& x, int base) {
  const Operator& op = c.op();
  TSR_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op.name(),
            ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ", x.sizes());
  const ScalarType dt = x.scalar_type();
  if constexpr (Max) {
    TSR_CHECK(dt != kBool, TypeError, op.name(), ": not supported for bool tensors");
  } else {
    check_floating(op, x, "input");
  }
  const int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  TSR_CHECK(H > 0 && W > 0, ValueError, op.name(), ": expected non-empty spatial dims, got input of shape ", x.sizes());
  const IValue& ks = c.arg(base + 1);
  TSR_CHECK(ks.tag == IValue::Tag::Int || (ks.tag == IValue::Tag::IntList && !ks.int_list().empty()), ValueError,
            op.name(), ": kernel_size must be an int or a list of 2 ints");
  const auto [kh, kw] = pair_arg(op, ks, "kernel_size", 1);
  const IValue& st = c.arg(base + 2);
  const bool stride_default = st.is_none() || (st.tag == IValue::Tag::IntList && st.int_list().empty());
  const auto [sh, sw] = stride_default ? std::pair{kh, kw} : pair_arg(op, st, "stride", 1);
  const auto [ph, pw] = pair_arg(op, c.arg(base + 3), "padding", 0);
  int64_t dh = 1, dw = 1;
  bool ceil_mode;
  if constexpr (Max) {
    std::tie(dh, dw) = pair_arg(op, c.arg(base + 4), "dilation", 1);
    ceil_mode = c.arg(base + 5).is_none() ? false : c.arg(base + 5).b;
  } else {
    ceil_mode = c.arg(base + 4).is_none() ? false : c.arg(base + 4).b;
  }
  TSR_CHECK(kh > 0 && kw > 0, ValueError, op.name(), ": kernel_size must be positive, got [", kh, ", ", kw, "]");
  TSR_CHECK(sh > 0 && sw > 0, ValueError, op.name(), ": stride must be positive, got [", sh, ", ", sw, "]");
  TSR_CHECK(dh > 0 && dw > 0, ValueError, op.name(), ": dilation must be positive, got [", dh, ", ", dw, "]");
  TSR_CHECK(ph >= 0 && pw >= 0, ValueError, op.name(), ": padding must be non-negative, got [", ph, ", ", pw, "]");
  TSR_CHECK(ph <= kh / 2 && pw <= kw / 2, ValueError, op.name(),
            ": padding should be at most half of kernel size, got padding [", ph, ", ", pw, "] and kernel_size [", kh,
            ", ", kw, "]");
  int64_t Ho = 0, Wo = 0;
  TSR_CHECK(pool_out_size(H, kh, ph, sh, dh, ceil_mode, Ho) && pool_out_size(W, kw, pw, sw, dw, ceil_mode, Wo),
            ValueError, op.name(), ": kernel_size [", kh, ", ", kw, "], stride [", sh, ", ", sw, "], padding [", ph,
            ", ", pw, "] or dilation [", dh, ", ", dw, "] makes sizes beyond int64 (input shape ", x.sizes(), ")");
  TSR_CHECK(Ho > 0 && Wo > 0, ValueError, op.name(), ": output size is too small: input of shape ", x.sizes(),
            " gives an output of ", Ho, " x ", Wo, " (kernel_size [", kh, ", ", kw, "], dilation [", dh, ", ", dw,
            "], padding [", ph, ", ", pw, "])");
  PoolDims d{{kh, kw, sh, sw, ph, pw, dh, dw}, DimVector(x.sizes().begin(), x.sizes().end())};
  d.out[d.out.size() - 2] = Ho;
  d.out[d.out.size() - 1] = Wo;
  return d;
}

template <bool Max>
void pool2d_meta(StructuredCall& c) {
  const Tensor& x = c.tensor_arg(0);
  const Operator& op = c.op();
  c.device = x.device();
  const PoolDims d = pool_dims<Max>(c, x, 0);
  c.add_output(d.out, x.scalar_type());
  c.set_tensor(0, x);
  c.set_int_list(1, IntArrayRef(d.params, 8));
  if constexpr (Max) {
    c.set_none(2);
  } else {
    const bool include_pad = c.arg(5).is_none() ? true : c.arg(5).b;
    int64_t divisor = 0;
    if (!c.arg(6).is_none()) {
      divisor = c.arg(6).i;
      TSR_CHECK(divisor != 0, ValueError, op.name(), ": divisor_override must be non-zero");
    }
    TsrValue b{};
    b.tag = TSR_VALUE_BOOL;
    b.as.b = include_pad ? 1 : 0;
    c.set_value(2, b);
    c.set_int(3, divisor);
  }
  c.dispatch_dtype = x.scalar_type();
}

// _max_pool2d_backward(grad_output, self, kernel_size, stride, padding,
// dilation, ceil_mode): max_pool2d's input gradient in one kernel.
void max_pool2d_backward_meta(StructuredCall& c) {
  const Tensor& g = c.tensor_arg(0);
  const Tensor& x = c.tensor_arg(1);
  const Operator& op = c.op();
  c.device = common_device(c, {0, 1});
  check_floating(op, x, "input");
  check_floating(op, g, "grad_output");
  const PoolDims d = pool_dims<true>(c, x, 1);
  TSR_CHECK(g.sizes().equals(IntArrayRef(d.out.data(), d.out.size())), ValueError, op.name(),
            ": expected grad_output of the pooled shape ", IntArrayRef(d.out.data(), d.out.size()), ", got ", g.sizes());
  c.add_output(x.sizes(), x.scalar_type());
  c.set_tensor(0, g.to(x.scalar_type()));
  c.set_tensor(1, x);
  c.set_int_list(2, IntArrayRef(d.params, 8));
  c.dispatch_dtype = x.scalar_type();
}

// ---- composites ----

void mse_loss_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& x = *f.args[0].tensor;
  const Tensor& y = *f.args[1].tensor;
  TSR_CHECK(x.defined() && y.defined(), ValueError, op.name(), ": undefined tensor argument");
  const int64_t red = reduction_arg(op, f.args[2]);
  TSR_CHECK(x.device() == y.device(), ValueError, op.name(), ": input is on ", x.device(), " but target is on ",
            y.device());
  const ScalarType dt = result_type({x.unsafeGetTensorImpl(), y.unsafeGetTensorImpl()});
  TSR_CHECK(is_floating_type(dt), TypeError, op.name(), ": expected floating input and target, got ",
            dtype_name(x.scalar_type()), " and ", dtype_name(y.scalar_type()));
  broadcast_shapes(op, x.sizes(), y.sizes());  // a ValueError naming mse_loss
  // Squared in place: mse_loss has a derivative of its own (formulas_nn.cpp),
  // so these pieces run below autograd, record nothing, and d is ours alone.
  // A second temporary cost mse_loss of 1M float32 1.26x PyTorch's time.
  Tensor d = sub(x, y);
  const Tensor sq = d.mul_(d);
  if (red == kNone) {
    f.outputs[0] = sq;
    return;
  }
  // Half types accumulate and divide in float32, then round once.
  const bool half = dt == kHalf || dt == kBFloat16;
  Tensor total = half ? sq.sum(kFloat) : sq.sum();
  if (red == kMean) total = total.div(Scalar(static_cast<double>(sq.numel())));
  f.outputs[0] = half ? total.to(dt) : total;
}

void cross_entropy_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& x = *f.args[0].tensor;
  const Tensor& target = *f.args[1].tensor;
  TSR_CHECK(x.defined() && target.defined(), ValueError, op.name(), ": undefined tensor argument");
  TSR_CHECK(x.dim() >= 1, ValueError, op.name(), ": expected input of shape [C], [N, C] or [N, C, d1, ...], got a 0-d tensor");
  TSR_CHECK(is_floating_type(x.scalar_type()), TypeError, op.name(), ": expected floating logits, got ",
            dtype_name(x.scalar_type()));
  const IValue& w = f.args[2];
  const bool has_w = !w.is_none() && w.tensor->defined();
  const int64_t red = reduction_arg(op, f.args[3]);
  const int64_t ignore_index = f.args[4].is_none() ? -100 : f.args[4].i;
  const double eps = f.args[5].is_none() ? 0.0 : (f.args[5].tag == IValue::Tag::Int ? f.args[5].i : f.args[5].d);
  TSR_CHECK(eps >= 0.0 && eps <= 1.0, ValueError, op.name(), ": label_smoothing must be between 0.0 and 1.0, got ", eps);
  const int64_t cdim = x.dim() == 1 ? 0 : 1;
  const Tensor logp = log_softmax(x, cdim);
  if (!is_floating_type(target.scalar_type())) {
    const std::optional<Tensor> wt = has_w ? std::optional<Tensor>(*w.tensor) : std::nullopt;
    const std::string_view rs = red == kNone ? "none" : red == kSum ? "sum" : "mean";
    if (eps == 0.0) {
      f.outputs[0] = nll_loss(logp, target, wt, rs, ignore_index);
    } else {
      const IValue args[] = {V::of(logp), V::of(target), has_w ? V::of(*w.tensor) : V::none(), V::of(rs),
                             V::of(ignore_index), V::of(eps)};
      f.outputs[0] = call(op_nll_loss_smoothed(), args);
    }
    return;
  }
  // Class probabilities: target has the input's shape.
  TSR_CHECK(target.sizes().equals(x.sizes()), ValueError, op.name(),
            ": expected a floating target of class probabilities with the input's shape ", x.sizes(),
            ", got target of shape ", target.sizes());
  const int64_t C = x.size(cdim);
  Tensor t = target;
  if (eps > 0.0) t = t.mul(Scalar(1.0 - eps)).add(Scalar(eps / static_cast<double>(C)));
  Tensor prod = logp.mul(t);
  if (has_w) {
    const Tensor& wt = *w.tensor;
    TSR_CHECK(wt.dim() == 1 && wt.size(0) == C, ValueError, op.name(), ": expected weight of shape [", C,
              "] (one per class), got ", wt.sizes());
    DimVector shape(static_cast<size_t>(x.dim() - cdim), 1);
    shape[0] = C;
    prod = prod.mul(wt.view(shape));
  }
  Tensor loss = prod.sum({cdim}).neg();
  if (red == kNone) {
    f.outputs[0] = loss;
  } else {
    Tensor total = loss.sum();
    if (red == kMean) total = total.div(Scalar(static_cast<double>(C == 0 ? 0 : x.numel() / C)));
    f.outputs[0] = total;
  }
}

constexpr char kFamily[] = "nn";

#define TSR_NN_STRUCTURED(fn, schema, meta) constinit OpHandle op_##fn{structured(kFamily, schema, 0, meta)};
TSR_NN_STRUCTURED(softmax, "softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", &softmax_meta)
TSR_NN_STRUCTURED(log_softmax, "log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", &softmax_meta)
TSR_NN_STRUCTURED(layer_norm,
                  "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
                  "float eps=1e-05) -> Tensor",
                  &layer_norm_meta)
TSR_NN_STRUCTURED(layer_norm_backward,
                  "_layer_norm_backward(Tensor grad_output, Tensor input, int[] normalized_shape, Tensor? weight, "
                  "float eps, bool input_grad, bool affine_grads) -> (Tensor grad_input, Tensor grad_weight, "
                  "Tensor grad_bias)",
                  &layer_norm_backward_meta)
TSR_NN_STRUCTURED(nll_loss,
                  "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction=\"mean\", "
                  "int ignore_index=-100) -> Tensor",
                  &nll_loss_meta)
TSR_NN_STRUCTURED(nll_loss_smoothed,
                  "_nll_loss_smoothed(Tensor self, Tensor target, Tensor? weight, str reduction, int ignore_index, "
                  "float label_smoothing) -> Tensor",
                  &nll_loss_meta)
TSR_NN_STRUCTURED(conv2d,
                  "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
                  "int[2] dilation=1, int groups=1) -> Tensor",
                  &conv2d_meta)
TSR_NN_STRUCTURED(conv2d_backward_weight,
                  "_conv2d_backward_weight(Tensor grad_output, Tensor input, int[] weight_size, int[2] stride=1, "
                  "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
                  &conv2d_backward_weight_meta)
TSR_NN_STRUCTURED(max_pool2d,
                  "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
                  "bool ceil_mode=False) -> Tensor",
                  &pool2d_meta<true>)
TSR_NN_STRUCTURED(max_pool2d_backward,
                  "_max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride=[], "
                  "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                  &max_pool2d_backward_meta)
TSR_NN_STRUCTURED(avg_pool2d,
                  "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
                  "bool count_include_pad=True, int? divisor_override=None) -> Tensor",
                  &pool2d_meta<false>)
#undef TSR_NN_STRUCTURED

constinit OpHandle op_mse_loss{composite(kFamily,
    "mse_loss(Tensor self, Tensor target, str reduction=\"mean\") -> Tensor", 0, &mse_loss_kernel)};
constinit OpHandle op_cross_entropy{composite(kFamily,
    "cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction=\"mean\", int ignore_index=-100, "
    "float label_smoothing=0.0) -> Tensor",
    0, &cross_entropy_kernel)};

}  // namespace

void declare_nn_ops() {
  declare_now({&op_softmax, &op_log_softmax, &op_layer_norm, &op_layer_norm_backward, &op_nll_loss, &op_nll_loss_smoothed, &op_conv2d,
               &op_conv2d_backward_weight, &op_max_pool2d, &op_max_pool2d_backward, &op_avg_pool2d, &op_mse_loss, &op_cross_entropy});
}

bool max_pool2d_backward_fused(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                Tensor& out) {
  const Operator& op = op_max_pool2d_backward();
  if (!runs_on(op, self.device(), self.scalar_type())) return false;
  const IValue args[7] = {V::of(grad_output), V::of(self),    V::of(kernel_size), V::of(stride),
                          V::of(padding),     V::of(dilation), V::of(ceil_mode)};
  Frame frame{args, 7, &out, 1};
  Dispatcher::instance().call(op, frame);
  return true;
}

bool conv2d_backward_weight_fused(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                                  Tensor& out) {
  const Operator& op = op_conv2d_backward_weight();
  if (!runs_on(op, input.device(), input.scalar_type())) return false;
  const IValue args[7] = {V::of(grad_output), V::of(input),    V::of(weight_size), V::of(stride),
                          V::of(padding),     V::of(dilation), V::of(groups)};
  Frame frame{args, 7, &out, 1};
  Dispatcher::instance().call(op, frame);
  return true;
}

bool layer_norm_backward_fused(const Tensor& grad_output, const Tensor& input, IntArrayRef normalized_shape,
                               const Tensor& weight, double eps, bool input_grad, bool affine_grads, Tensor (&out)[3]) {
  const Operator& op = op_layer_norm_backward();
  if (!runs_on(op, input.device(), input.scalar_type())) return false;
  const IValue args[7] = {V::of(grad_output), V::of(input), V::of(normalized_shape),
                          weight.defined() ? V::of(weight) : V::none(), V::of(eps), V::of(input_grad),
                          V::of(affine_grads)};
  Frame frame{args, 7, out, 3};
  Dispatcher::instance().call(op, frame);
  return true;
}

}  // namespace tessera::ops

// ---- C++ API ----

namespace tessera {
using ops::call;
using V = IValue;

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return call(ops::op_softmax(), {V::of(self), V::of(dim), dtype ? V::of(*dtype) : V::none()});
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return call(ops::op_log_softmax(), {V::of(self), V::of(dim), dtype ? V::of(*dtype) : V::none()});
}
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return tessera::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return tessera::log_softmax(*this, dim, dtype);
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  const Tensor w = weight ? *weight : Tensor(), b = bias ? *bias : Tensor();
  return call(ops::op_layer_norm(), {V::of(input), V::of(normalized_shape), weight ? V::of(w) : V::none(),
                                     bias ? V::of(b) : V::none(), V::of(eps)});
}
Tensor mse_loss(const Tensor& self, const Tensor& target, std::string_view reduction) {
  return call(ops::op_mse_loss(), {V::of(self), V::of(target), V::of(reduction)});
}
Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                std::string_view reduction, int64_t ignore_index) {
  const Tensor w = weight ? *weight : Tensor();
  return call(ops::op_nll_loss(),
              {V::of(self), V::of(target), weight ? V::of(w) : V::none(), V::of(reduction), V::of(ignore_index)});
}
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     std::string_view reduction, int64_t ignore_index, double label_smoothing) {
  const Tensor w = weight ? *weight : Tensor();
  return call(ops::op_cross_entropy(), {V::of(self), V::of(target), weight ? V::of(w) : V::none(), V::of(reduction),
                                        V::of(ignore_index), V::of(label_smoothing)});
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const Tensor b = bias ? *bias : Tensor();
  return call(ops::op_conv2d(), {V::of(input), V::of(weight), bias ? V::of(b) : V::none(), V::of(stride),
                                 V::of(padding), V::of(dilation), V::of(groups)});
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              std::string_view padding, IntArrayRef dilation, int64_t groups) {
  const Tensor b = bias ? *bias : Tensor();
  return call(ops::op_conv2d(), {V::of(input), V::of(weight), bias ? V::of(b) : V::none(), V::of(stride),
                                 V::of(padding), V::of(dilation), V::of(groups)});
}
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return call(ops::op_max_pool2d(), {V::of(self), V::of(kernel_size), V::of(stride), V::of(padding),
                                     V::of(dilation), V::of(ceil_mode)});
}
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return call(ops::op_avg_pool2d(), {V::of(self), V::of(kernel_size), V::of(stride), V::of(padding), V::of(ceil_mode),
                                     V::of(count_include_pad), divisor_override ? V::of(*divisor_override) : V::none()});
}

}  // namespace tessera
