// Derivative formulas of the nn ops (core/src/ops/nn.cpp).
//
// Everything is written with dispatched ops: convolution and pooling gradients
// are themselves convolutions (a transposed convolution is a conv2d of the
// zero-dilated, padded gradient with the flipped kernel), so they run on every
// device that has conv2d and are differentiable again.
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "../checked_math.h"
#include "../ops/ops.h"
#include "formulas.h"

namespace tessera::autograd {
namespace {
using C = BackwardContext;

// ---- argument parsing (the forward call's arguments, as given) ----

// An int[2] argument given as None, [], an int, [a] or [a, b].
std::pair<int64_t, int64_t> pair_of(const C& c, int arg, int64_t dflt_h, int64_t dflt_w) {
  if (c.is_none(arg)) return {dflt_h, dflt_w};
  const IntArrayRef l = c.int_list(arg);
  if (l.empty()) return {dflt_h, dflt_w};
  if (l.size() == 1) return {l[0], l[0]};
  return {l[0], l[1]};
}

std::string_view reduction_of(const C& c, int arg) { return c.is_none(arg) ? "mean" : c.string_arg(arg); }

// ---- placing a small grid into a larger one ----

// A zero tensor whose last two dims are [H, W], with t's element (i, j) of the
// last two dims at (top + i*sh, left + j*sw); the caller makes sure it fits.
// One pad of [.., Ho, 1, Wo, 1] does the zero insertion and the shift at once:
// writing top = q*sh + r, row i lands in block q + i at phase r.
Tensor place_strided(const Tensor& t, int64_t sh, int64_t sw, int64_t top, int64_t left, int64_t H, int64_t W) {
  const int64_t n = t.dim();
  const int64_t Ho = t.size(n - 2), Wo = t.size(n - 1);
  // A step past the frame only occurs with one row (column): any step places
  // it, and one the size of the frame keeps the blocks small.
  sh = std::min(sh, H);
  sw = std::min(sw, W);
  const int64_t Hq = (H + sh - 1) / sh, Wq = (W + sw - 1) / sw;  // blocks covering the frame
  const int64_t qh = top / sh, rh = top % sh, qw = left / sw, rw = left % sw;
  DimVector s6(t.sizes().begin(), t.sizes().end() - 2);
  DimVector s2 = s6;
  for (int64_t v : {Ho, int64_t(1), Wo, int64_t(1)}) s6.push_back(v);
  s2.push_back(Hq * sh);
  s2.push_back(Wq * sw);
  const int64_t p[8] = {rw, sw - 1 - rw, qw, Wq - Wo - qw, rh, sh - 1 - rh, qh, Hq - Ho - qh};
  Tensor u = pad(t.reshape(s6), IntArrayRef(p, 8)).reshape(s2);
  if (Hq * sh != H) u = u.narrow(n - 2, 0, H);
  if (Wq * sw != W) u = u.narrow(n - 1, 0, W);
  return u;
}

// ---- softmax, log_softmax ----

variable_list softmax_backward(C& c) {
  const Tensor g = c.grad(), y = c.result();
  if (y.dim() == 0) return {g * 0.0};  // softmax of one element is constant 1
  const int64_t d = c.int_arg(1);
  return {y * (g - (g * y).sum({d}, true))};
}

variable_list log_softmax_backward(C& c) {
  const Tensor g = c.grad(), y = c.result();
  if (y.dim() == 0) return {g * 0.0};
  const int64_t d = c.int_arg(1);
  return {addcmul(g, y.exp(), g.sum({d}, true), -1)};  // g - exp(y) sum(g): one pass fewer
}

// ---- layer_norm ----

variable_list layer_norm_backward(C& c) {
  const Tensor x = c.saved(0);
  const int64_t k = static_cast<int64_t>(c.int_list(1).size());
  const double eps = c.is_none(4) ? 1e-5 : c.double_arg(4);
  DimVector dims;
  int64_t n = 1;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) {
    dims.push_back(d);
    n *= x.size(d);
  }
  const IntArrayRef rd(dims.data(), dims.size());
  const double inv_n = 1.0 / static_cast<double>(n);
  const Tensor g = c.grad();
  // One fused kernel when this backward need not be differentiable again
  // (no create_graph) and the device has it; else the composition below.
  if (!is_grad_enabled()) {
    const Tensor w = c.is_none(2) ? Tensor() : c.saved(2);
    Tensor out[3];
    if (ops::layer_norm_backward_fused(g, x, c.int_list(1), w, eps, c.needs_grad(0), c.needs_grad(1) || c.needs_grad(2),
                                       out)) {
      return {c.needs_grad(0) ? out[0] : Tensor(), c.needs_grad(1) ? out[1] : Tensor(),
              c.needs_grad(2) ? out[2] : Tensor()};
    }
  }
  const Tensor xc = x - x.sum(rd, true) * inv_n;
  const Tensor rstd = ((xc * xc).sum(rd, true) * inv_n + eps).rsqrt();
  const Tensor xhat = xc * rstd;
  Tensor gx, gw, gb;
  if (c.needs_grad(0)) {
    Tensor gxh = g;
    if (!c.is_none(2)) {
      const Tensor w = c.saved(2);
      if (w.defined()) gxh = g * w.to(x.scalar_type());
    }
    // d/dx of (x - mean) * rstd, applied to gxh.
    gx = rstd * (gxh - gxh.sum(rd, true) * inv_n - xhat * ((gxh * xhat).sum(rd, true) * inv_n));
  }
  // The engine sums these [.., normalized_shape] gradients down to weight's / bias's shape.
  if (c.needs_grad(1)) gw = g * xhat;
  if (c.needs_grad(2)) gb = g;
  return {gx, gw, gb};
}

// ---- nll_loss, _nll_loss_smoothed ----

// loss[i] = valid[i] * ((1 - e) * -w[t[i]] * x[i, t[i]] + e / C * -sum_c w[c] * x[i, c]);
// 'mean' divides by sum_i valid[i] * w[t[i]]. The gradient is linear in the
// incoming gradient and constant in x (weight and target get none, as in PyTorch).
variable_list nll_backward(C& c, double e) {
  if (!c.needs_grad(0)) return {Tensor()};
  const IntArrayRef xs = c.input_sizes(0);
  const ScalarType dt = c.input_dtype(0);
  const int64_t nd = static_cast<int64_t>(xs.size());
  const int64_t cdim = nd == 1 ? 0 : 1;
  const int64_t ncls = xs[static_cast<size_t>(cdim)];
  const int64_t ignore = c.is_none(4) ? -100 : c.int_arg(4);
  const Tensor t = c.saved(1).to(kLong);
  const Tensor valid = t.ne(ignore);
  const Tensor ts = t.masked_fill(valid.logical_not(), 0);  // ignored targets: any class, weight 0
  const Tensor vw = valid.to(dt);
  Tensor w;
  if (!c.is_none(2)) {
    w = c.saved(2);
    if (w.defined()) w = w.to(dt);
  }
  const Tensor wt = w.defined() ? w.index_select(0, ts.reshape({-1})).reshape(t.sizes()) * vw : vw;
  Tensor g = c.grad();
  const std::string_view red = reduction_of(c, 3);
  if (red == "mean") {
    // Every target ignored: the forward is NaN, the gradient 0 (as PyTorch), not 0 * inf.
    const Tensor total = wt.sum();
    g = g / (total + total.eq(0).to(dt));
  }
  // Per-sample factors broadcast along the class dim.
  auto along = [&](const Tensor& per_sample) { return per_sample.unsqueeze(cdim); };
  const Tensor gs = red == "none" ? along(g) : g;
  if (e == 0.0) {
    // Only the target class of each sample has a gradient: one zero fill and a
    // scatter of N values, not products of N x C one-hot tensors (1M-element
    // gradients: several times faster).
    Tensor grad = zeros(xs, TensorOptions(dt).device(g.device()));
    grad.scatter_(cdim, along(ts), along(-(g * wt)));
    return {grad};
  }
  // Label smoothing: every class gets -g * valid * w[c] * e / C, the target
  // class -g * w[t] * (1 - e) more; a dense term and one scatter_add_.
  Tensor grad;
  const double spread = -e / static_cast<double>(ncls);
  if (w.defined()) {
    DimVector shape(static_cast<size_t>(nd - cdim), 1);
    shape[0] = ncls;
    grad = (gs * along(vw)) * (w.reshape(shape) * spread);
  } else {
    grad = ((gs * along(vw)) * spread).expand(xs).contiguous();
  }
  grad.scatter_add_(cdim, along(ts), along((g * wt) * (e - 1.0)));
  return {grad};
}

// ---- conv2d ----

struct Conv {
  int64_t sh, sw, ph, pw, th, tw, dh, dw, groups;  // th/tw: total padding of each dim
};

Conv conv_of(const C& c, int64_t kH, int64_t kW) {
  Conv p{};
  std::tie(p.sh, p.sw) = pair_of(c, 3, 1, 1);
  std::tie(p.dh, p.dw) = pair_of(c, 5, 1, 1);
  p.groups = c.is_none(6) ? 1 : c.int_arg(6);
  const std::string_view mode = c.is_none(4) ? std::string_view() : c.string_arg(4);
  if (mode == "same") {
    p.th = p.dh * (kH - 1);
    p.tw = p.dw * (kW - 1);
    p.ph = p.th / 2;  // the odd element goes after, as the forward
    p.pw = p.tw / 2;
  } else if (mode == "valid") {
    p.th = p.tw = p.ph = p.pw = 0;
  } else {
    std::tie(p.ph, p.pw) = pair_of(c, 4, 0, 0);
    p.th = 2 * p.ph;
    p.tw = 2 * p.pw;
  }
  return p;
}

// One output phase of a strided transposed convolution along one dim: the
// padded-input positions hp = m*s + rho receive g[m - q] * w[a] from the taps
// a with a*d = q*s + rho. Those taps are a strided run a0, a0 + step, ... and
// their q an arithmetic run q0, q0 + dil, ..., so the phase is a stride-1
// convolution of g with that run of taps (flipped), dilation `dil`.
struct Phase {
  int64_t a0 = 0, taps = 0, step = 1, q0 = 0, dil = 1, len = 0;  // len: positions with this phase
};

Phase phase_of(int64_t rho, int64_t k, int64_t s, int64_t d, int64_t extent) {
  Phase ph;
  ph.len = extent > rho ? (extent - rho + s - 1) / s : 0;
  std::vector<int64_t> as;
  for (int64_t a = 0; a < k; ++a)
    if ((a * d) % s == rho) as.push_back(a);
  ph.taps = static_cast<int64_t>(as.size());
  if (ph.taps == 0) return ph;
  ph.a0 = as[0];
  ph.q0 = as[0] * d / s;
  if (ph.taps > 1) {
    ph.step = as[1] - as[0];
    ph.dil = (as[1] * d - as[0] * d) / s;
  }
  return ph;
}

// grad of conv2d's input: the transposed convolution. Stride 1: a conv2d of the
// gradient padded by the dilated kernel extent with the kernel flipped and its
// in/out channels swapped per group. Stride > 1: one such conv2d per output
// phase (polyphase), so no work is spent on the zeros a dilated gradient would
// hold; the phases are interleaved by stack + reshape. g: [N, O, Ho, Wo].
Tensor conv2d_grad_input(const Tensor& g, const Tensor& w, IntArrayRef xs, const Conv& p) {
  const int64_t N = xs[0], Cin = xs[1], H = xs[2], W = xs[3];
  const int64_t O = w.size(0), Cg = w.size(1), kH = w.size(2), kW = w.size(3), G = p.groups, Og = O / G;
  const TensorOptions opts = TensorOptions(g.scalar_type()).device(g.device());
  if (g.numel() == 0 || w.numel() == 0) return zeros({N, Cin, H, W}, opts);
  const int64_t Hp = H + p.th, Wp = W + p.tw, Ho = g.size(2), Wo = g.size(3);
  // [O, Cg, th, tw] taps -> the transposed conv's weight [C, O/G, th, tw], flipped.
  auto transposed = [&](const Tensor& taps) {
    const int64_t th = taps.size(2), tw = taps.size(3);
    return taps.reshape({G, Og, Cg, th, tw}).transpose(1, 2).reshape({Cin, Og, th, tw}).flip({2, 3});
  };
  const int64_t one[1] = {1}, zero[1] = {0};
  if (p.sh == 1 && p.sw == 1) {
    const int64_t eh = (kH - 1) * p.dh, ew = (kW - 1) * p.dw;
    const int64_t dil[2] = {p.dh, p.dw};
    if (p.th == 2 * p.ph && p.tw == 2 * p.pw && p.ph <= eh && p.pw <= ew) {
      // Symmetric forward padding within the kernel's reach: the convolution's
      // own padding (eh - ph) yields exactly [H, W], with no padded copy of g
      // and no narrowed (strided) result.
      const int64_t inner[2] = {eh - p.ph, ew - p.pw};
      return conv2d(g, transposed(w), std::nullopt, IntArrayRef(one, 1), IntArrayRef(inner, 2), IntArrayRef(dil, 2),
                    G);
    }
    const int64_t pd[4] = {ew, Wp - Wo, eh, Hp - Ho};  // output [Hp, Wp]
    const Tensor gxp = conv2d(pad(g, IntArrayRef(pd, 4)), transposed(w), std::nullopt, IntArrayRef(one, 1),
                              IntArrayRef(zero, 1), IntArrayRef(dil, 2), G);
    return gxp.narrow(2, p.ph, H).narrow(3, p.pw, W);
  }
  const int64_t Mh = (Hp + p.sh - 1) / p.sh, Mw = (Wp + p.sw - 1) / p.sw;  // phase 0 has the most positions
  std::vector<Tensor> rows;
  for (int64_t rh = 0; rh < p.sh; ++rh) {
    const Phase fh = phase_of(rh, kH, p.sh, p.dh, Hp);
    std::vector<Tensor> cols;
    for (int64_t rw = 0; rw < p.sw; ++rw) {
      const Phase fw = phase_of(rw, kW, p.sw, p.dw, Wp);
      if (fh.taps == 0 || fw.taps == 0 || fh.len == 0 || fw.len == 0) {
        cols.push_back(zeros({N, Cin, Mh, Mw}, opts));
        continue;
      }
      const Tensor taps = w.slice(2, fh.a0, fh.a0 + (fh.taps - 1) * fh.step + 1, fh.step)
                              .slice(3, fw.a0, fw.a0 + (fw.taps - 1) * fw.step + 1, fw.step);
      // Output m needs g[m - q0 - t*dil] for t < taps: pad the front by the run's
      // reach; the back to len positions (negative: those g reach no position).
      const int64_t lh = fh.q0 + (fh.taps - 1) * fh.dil, lw = fw.q0 + (fw.taps - 1) * fw.dil;
      const int64_t pd[4] = {lw, fw.len - fw.q0 - Wo, lh, fh.len - fh.q0 - Ho};
      const int64_t dil[2] = {fh.dil, fw.dil};
      const Tensor out = conv2d(pad(g, IntArrayRef(pd, 4)), transposed(taps), std::nullopt, IntArrayRef(one, 1),
                                IntArrayRef(zero, 1), IntArrayRef(dil, 2), G);  // [N, C, len_h, len_w]
      const int64_t fill[4] = {0, Mw - fw.len, 0, Mh - fh.len};
      cols.push_back(fill[1] == 0 && fill[3] == 0 ? out : pad(out, IntArrayRef(fill, 4)));
    }
    rows.push_back(stack(cols, 4));  // [N, C, Mh, Mw, sw]
  }
  const Tensor gxp = stack(rows, 3).reshape({N, Cin, Mh * p.sh, Mw * p.sw});  // [N, C, Mh, sh, Mw, sw]
  return gxp.narrow(2, p.ph, H).narrow(3, p.pw, W);
}

// grad of conv2d's weight: im2col of the (padded) input, one strided view per
// kernel offset, then a matmul per sample and group with the gradient:
// gw[o, c, a, b] = sum_{n, i, j} g[n, o, i, j] * xpad[n, c, i*sh + a*dh, j*sw + b*dw].
Tensor conv2d_grad_weight(const Tensor& g, const Tensor& x, IntArrayRef ws, const Conv& p) {
  const int64_t N = x.size(0);
  const int64_t O = ws[0], Cg = ws[1], kH = ws[2], kW = ws[3], G = p.groups;
  const int64_t Ho = g.size(2), Wo = g.size(3);
  if (g.numel() == 0 || x.numel() == 0) return zeros({O, Cg, kH, kW}, TensorOptions(g.scalar_type()).device(g.device()));
  // One fused kernel when this backward need not be differentiable again
  // (no create_graph) and the device has it; else the composition below.
  if (!is_grad_enabled()) {
    const int64_t st[2] = {p.sh, p.sw}, pd[2] = {p.ph, p.pw}, dl[2] = {p.dh, p.dw};
    Tensor out;
    if (ops::conv2d_backward_weight_fused(g, x, ws, IntArrayRef(st, 2), IntArrayRef(pd, 2), IntArrayRef(dl, 2), G,
                                          out))
      return out;
  }
  Tensor xp = x;
  if (p.th != 0 || p.tw != 0) {
    const int64_t pd[4] = {p.pw, p.tw - p.pw, p.ph, p.th - p.ph};
    xp = pad(x, IntArrayRef(pd, 4));
  }
  std::vector<Tensor> cols;
  cols.reserve(static_cast<size_t>(kH * kW));
  for (int64_t a = 0; a < kH; ++a)
    for (int64_t b = 0; b < kW; ++b)
      cols.push_back(xp.slice(2, a * p.dh, a * p.dh + (Ho - 1) * p.sh + 1, p.sh)
                         .slice(3, b * p.dw, b * p.dw + (Wo - 1) * p.sw + 1, p.sw));  // [N, C, Ho, Wo]
  const int64_t Og = O / G;
  // [N, C, kH*kW, Ho, Wo] (rows read along W) -> [N, G, Cg*kH*kW, Ho*Wo]: rows ordered as
  // the weight's [Cg, kH, kW]. One matmul per sample and group, then a sum over samples.
  const Tensor col = stack(cols, 2).reshape({N, G, Cg * kH * kW, Ho * Wo});
  const Tensor g2 = g.reshape({N, G, Og, Ho * Wo});
  return g2.matmul(col.transpose(2, 3)).sum({0}).reshape({O, Cg, kH, kW});
}

variable_list conv2d_backward(C& c) {
  const IntArrayRef ws = c.input_sizes(1);
  const Conv p = conv_of(c, ws[2], ws[3]);
  const bool batched = c.input_sizes(0).size() == 4;
  Tensor g = c.grad();
  if (!batched) g = g.unsqueeze(0);
  Tensor gx, gw, gb;
  if (c.needs_grad(0)) {
    DimVector xs(c.input_sizes(0).begin(), c.input_sizes(0).end());
    if (!batched) xs.insert(xs.begin(), 1);
    gx = conv2d_grad_input(g, c.saved(1), IntArrayRef(xs.data(), xs.size()), p);
    if (!batched) gx = gx.squeeze(0);
  }
  if (c.needs_grad(1)) {
    Tensor x = c.saved(0);
    if (!batched) x = x.unsqueeze(0);
    gw = conv2d_grad_weight(g, x, ws, p);
  }
  if (c.needs_grad(2)) gb = g.sum({0, 2, 3});
  return {gx, gw, gb};
}

// ---- pooling ----

struct Pool {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

Pool pool_of(const C& c, bool max) {
  Pool p{};
  std::tie(p.kh, p.kw) = pair_of(c, 1, 1, 1);
  std::tie(p.sh, p.sw) = pair_of(c, 2, p.kh, p.kw);
  std::tie(p.ph, p.pw) = pair_of(c, 3, 0, 0);
  p.dh = p.dw = 1;
  if (max) std::tie(p.dh, p.dw) = pair_of(c, 4, 1, 1);
  return p;
}

// The taps that can land in the input: a tap a (frame offset a * d from a
// window's start, which is >= 0 in the frame) reaches the input only while
// a * d < pad + len. Windows may run far past it (ceil_mode, kernels larger
// than the input); the taps beyond hold padding only, so they are dropped
// before anything is sized by the kernel. The forward checked d * (k - 1).
int64_t taps_reaching_input(int64_t k, int64_t d, int64_t pad, int64_t len) {
  return std::min(k, (pad + len - 1) / d + 1);
}

// The extent of the padded frame holding every window: the input plus left
// padding, and at least up to the end of the last window (ceil_mode windows may
// run past the right padding).
std::pair<int64_t, int64_t> pool_frame(const Pool& p, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
  return {std::max(H + 2 * p.ph, (Ho - 1) * p.sh + (p.kh - 1) * p.dh + 1),
          std::max(W + 2 * p.pw, (Wo - 1) * p.sw + (p.kw - 1) * p.dw + 1)};
}

// The gradient is built in the padded frame (plus `extra` rows and columns);
// padding so large that the frame cannot be indexed is refused with the
// reason (the forward needs no frame, so it accepts such padding).
void check_frame(std::string_view op, const Pool& p, int64_t H, int64_t W, int64_t extra_h, int64_t extra_w) {
  using checked::Int;
  // A bound on what the frame and place_strided's blocks (at most twice the frame) hold.
  const Int rows = Int(2) * (Int(H) + Int(2) * p.ph + Int(p.kh - 1) * p.dh + 1 + extra_h);
  const Int cols = Int(2) * (Int(W) + Int(2) * p.pw + Int(p.kw - 1) * p.dw + 1 + extra_w);
  TSR_CHECK(!(rows * cols * 8).overflowed(), ValueError, op, " backward: padding [", p.ph, ", ", p.pw,
            "] makes the padded frame the gradient is built in (", H, " + 2 * ", p.ph, " rows, ", W, " + 2 * ", p.pw,
            " columns) too large to index");
}

// Which of the n_out windows along one dim have their tap at `off` (padded
// frame) inside the input: [n_out] bool, or undefined when all do.
Tensor inside_mask(int64_t off, int64_t s, int64_t pad_before, int64_t len, int64_t n_out, Device device) {
  std::vector<double> v(static_cast<size_t>(n_out));
  bool all = true;
  for (int64_t i = 0; i < n_out; ++i) {
    const int64_t pos = i * s + off - pad_before;
    v[static_cast<size_t>(i)] = pos >= 0 && pos < len ? 1.0 : 0.0;
    all = all && v[static_cast<size_t>(i)] != 0.0;
  }
  if (all) return Tensor();
  return tensor(ArrayRef<double>(v.data(), v.size())).to(device).ne(0);
}

// The gradient goes to one input per window, the one the forward's scan
// (row-major, `v > max || isnan(v)`, padding skipped) ends on: the first
// maximum, or the last NaN when a NaN won; overlapping windows add up.
variable_list max_pool2d_backward(C& c) {
  const Tensor x = c.saved(0), y = c.result(), g = c.grad();
  Pool p = pool_of(c, true);
  // One fused kernel when this backward need not be differentiable again
  // (no create_graph) and the device has it; else the composition below.
  if (!is_grad_enabled()) {
    const int64_t ks[2] = {p.kh, p.kw}, st[2] = {p.sh, p.sw}, pd[2] = {p.ph, p.pw}, dl[2] = {p.dh, p.dw};
    const bool ceil_mode = !c.is_none(5) && c.bool_arg(5);
    Tensor out;
    if (ops::max_pool2d_backward_fused(g, x, IntArrayRef(ks, 2), IntArrayRef(st, 2), IntArrayRef(pd, 2),
                                       IntArrayRef(dl, 2), ceil_mode, out))
      return {out};
  }
  const int64_t n = x.dim();
  const int64_t H = x.size(n - 2), W = x.size(n - 1), Ho = y.size(n - 2), Wo = y.size(n - 1);
  p.kh = taps_reaching_input(p.kh, p.dh, p.ph, H);
  p.kw = taps_reaching_input(p.kw, p.dw, p.pw, W);
  check_frame("max_pool2d", p, H, W, 0, 0);
  const auto [Hb, Wb] = pool_frame(p, H, W, Ho, Wo);
  const int64_t pd[4] = {p.pw, Wb - W - p.pw, p.ph, Hb - H - p.ph};
  const Tensor xb = pad(x, IntArrayRef(pd, 4), "constant", -std::numeric_limits<double>::infinity());
  const int64_t K = p.kh * p.kw;
  // Per tap (a, b): the windows' input at that tap, and whether it is inside the input.
  std::vector<Tensor> tap(static_cast<size_t>(K)), inside(static_cast<size_t>(K));
  for (int64_t a = 0; a < p.kh; ++a) {
    const Tensor rows = inside_mask(a * p.dh, p.sh, p.ph, H, Ho, x.device());
    for (int64_t b = 0; b < p.kw; ++b) {
      const size_t k = static_cast<size_t>(a * p.kw + b);
      tap[k] = xb.slice(n - 2, a * p.dh, a * p.dh + (Ho - 1) * p.sh + 1, p.sh)
                   .slice(n - 1, b * p.dw, b * p.dw + (Wo - 1) * p.sw + 1, p.sw);
      const Tensor cols = inside_mask(b * p.dw, p.sw, p.pw, W, Wo, x.device());
      if (rows.defined() && cols.defined()) inside[k] = rows.reshape({Ho, 1}).logical_and(cols);
      else if (rows.defined()) inside[k] = rows.reshape({Ho, 1});
      else if (cols.defined()) inside[k] = cols;
    }
  }
  // Claims in scan order: `first(hit)` keeps the hits of taps no earlier tap took.
  // Maxima: first in scan order; NaNs: last, so scanned in reverse. Masks only,
  // no host read of the data (no device sync; meta tensors work too).
  std::vector<Tensor> wins(static_cast<size_t>(K));
  Tensor taken;
  auto claim = [&](Tensor hit, size_t k) {
    if (inside[k].defined()) hit = hit.logical_and(inside[k]);
    const Tensor first = taken.defined() ? hit.logical_and(taken.logical_not()) : hit;
    taken = taken.defined() ? taken.logical_or(hit) : hit;
    wins[k] = wins[k].defined() ? wins[k].logical_or(first) : first;
  };
  for (size_t k = 0; k < size_t(K); ++k) claim(tap[k].eq(y), k);  // never true where y is NaN
  taken = Tensor();
  for (size_t k = size_t(K); k-- > 0;) claim(tap[k].isnan(), k);
  Tensor total;
  for (int64_t a = 0; a < p.kh; ++a) {
    for (int64_t b = 0; b < p.kw; ++b) {
      const Tensor& win = wins[static_cast<size_t>(a * p.kw + b)];
      const Tensor part = place_strided(g * win.to(g.scalar_type()), p.sh, p.sw, a * p.dh, b * p.dw, Hb, Wb);
      total = total.defined() ? total + part : part;
    }
  }
  return {total.narrow(n - 2, p.ph, H).narrow(n - 1, p.pw, W)};
}

// Each window spreads grad / divisor over its elements (a transposed
// convolution with a kernel of ones, done as kh + kw shifted sums).
variable_list avg_pool2d_backward(C& c) {
  const IntArrayRef xs = c.input_sizes(0);
  const Tensor g = c.grad();
  Pool p = pool_of(c, false);
  const bool include_pad = c.is_none(5) ? true : c.bool_arg(5);
  const int64_t divisor = c.is_none(6) ? 0 : c.int_arg(6);
  const int64_t n = static_cast<int64_t>(xs.size());
  const int64_t H = xs[size_t(n - 2)], W = xs[size_t(n - 1)], Ho = g.size(n - 2), Wo = g.size(n - 1);
  // 1 / divisor of each window, as the forward computes it (shapes only).
  std::vector<double> rdiv(static_cast<size_t>(Ho * Wo));
  // A window's end, clipped to the right padding without forming start + k
  // (a huge kernel overflows it); start < limit.
  auto window_end = [](int64_t start, int64_t k, int64_t limit) { return k >= limit - start ? limit : start + k; };
  for (int64_t i = 0; i < Ho; ++i) {
    int64_t h0 = i * p.sh - p.ph, h1 = window_end(h0, p.kh, H + p.ph);
    const int64_t hpad = h1 - h0;
    h0 = std::max<int64_t>(h0, 0);
    h1 = std::min(h1, H);
    for (int64_t j = 0; j < Wo; ++j) {
      int64_t w0 = j * p.sw - p.pw, w1 = window_end(w0, p.kw, W + p.pw);
      const int64_t wpad = w1 - w0;
      w0 = std::max<int64_t>(w0, 0);
      w1 = std::min(w1, W);
      // In floating point: the padded window's area can pass int64.
      const double div = divisor != 0 ? static_cast<double>(divisor)
                         : include_pad ? static_cast<double>(hpad) * static_cast<double>(wpad)
                                       : static_cast<double>((h1 - h0) * (w1 - w0));
      rdiv[static_cast<size_t>(i * Wo + j)] = 1.0 / div;
    }
  }
  // Only the taps that reach the input matter from here on (see taps_reaching_input).
  p.kh = taps_reaching_input(p.kh, 1, p.ph, H);
  p.kw = taps_reaching_input(p.kw, 1, p.pw, W);
  check_frame("avg_pool2d", p, H, W, p.kh - 1, p.kw - 1);
  const Tensor scale = tensor(ArrayRef<double>(rdiv.data(), rdiv.size())).reshape({Ho, Wo}).to(g.device(), g.scalar_type());
  const auto [Hb, Wb] = pool_frame(p, H, W, Ho, Wo);
  // Input row h (frame row ph + h) sums the windows' values placed at frame
  // rows ph + h - a for a < kh: shifted views of one placed tensor, then the same along W.
  const Tensor d = place_strided(g * scale, p.sh, p.sw, p.kh - 1, p.kw - 1, Hb + p.kh - 1, Wb + p.kw - 1);
  Tensor rows, out;
  for (int64_t a = 0; a < p.kh; ++a) {
    const Tensor v = d.narrow(n - 2, p.ph + a, H);
    rows = rows.defined() ? rows + v : v;
  }
  for (int64_t b = 0; b < p.kw; ++b) {
    const Tensor v = rows.narrow(n - 1, p.pw + b, W);
    out = out.defined() ? out + v : v;
  }
  return {out};
}

// ---- mse_loss ----

// d/dx of mean((x - y)^2) is 2 (x - y) g / n: one subtraction and one product
// with a 0-d factor (reductions mean and sum). Composed from mse_loss's own
// pieces, autograd saved x - y and ran two products and an add instead.
variable_list mse_loss_backward(C& c) {
  const std::string_view red = reduction_of(c, 2);
  const Tensor d = c.saved(0) - c.saved(1);
  const Tensor g = c.grad();
  const Tensor gd = d * (red == "mean" ? g * (2.0 / static_cast<double>(d.numel())) : g * 2.0);
  return {c.needs_grad(0) ? gd : none(), c.needs_grad(1) ? -gd : none()};
}

}  // namespace

void define_nn_derivatives() {
  define_derivative("softmax", {{0}, {}, {0}, &softmax_backward});
  define_derivative("log_softmax", {{0}, {}, {0}, &log_softmax_backward});
  define_derivative("layer_norm", {{0, 2, 3}, {0, 2}, {}, &layer_norm_backward});
  // layer_norm's, max_pool2d's and conv2d's derivatives call these only when
  // no graph is recorded; a graph through a direct call cannot be differentiated, and
  // says so in backward.
  define_derivative("_layer_norm_backward", {{0, 1, 3}, {}, {}, [](C&) -> variable_list {
                      throw NotImplementedError(
                          "_layer_norm_backward: has no derivative (layer_norm's own backward with create_graph=True "
                          "composes differentiable ops instead)");
                    }});
  define_derivative("_conv2d_backward_weight", {{0, 1}, {}, {}, [](C&) -> variable_list {
                      throw NotImplementedError(
                          "_conv2d_backward_weight: has no derivative (conv2d's own backward with create_graph=True "
                          "composes differentiable ops instead)");
                    }});
  define_derivative("_max_pool2d_backward", {{0, 1}, {}, {}, [](C&) -> variable_list {
                      throw NotImplementedError(
                          "_max_pool2d_backward: has no derivative (max_pool2d's own backward with create_graph=True "
                          "composes differentiable ops instead)");
                    }});
  define_derivative("nll_loss", {{0}, {1, 2}, {}, [](C& c) { return nll_backward(c, 0.0); }});
  define_derivative("_nll_loss_smoothed", {{0}, {1, 2}, {}, [](C& c) {
                      const double e = c.is_none(5) ? 0.0 : c.double_arg(5);
                      return nll_backward(c, e);
                    }});
  define_derivative("mse_loss", {{0, 1}, {0, 1}, {}, &mse_loss_backward});
  // Composites of dispatched ops: autograd records their building blocks.
  define_decomposed("cross_entropy");
  define_derivative("conv2d", {{0, 1, 2}, {0, 1}, {}, &conv2d_backward});
  define_derivative("max_pool2d", {{0}, {0}, {0}, &max_pool2d_backward});
  define_derivative("avg_pool2d", {{0}, {}, {}, &avg_pool2d_backward});
}

}  // namespace tessera::autograd
