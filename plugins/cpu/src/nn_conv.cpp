// conv2d (im2col + OpenBLAS GEMM), its weight gradient (_conv2d_backward_weight)
// and max_pool2d / avg_pool2d (docs/ops/nn.md).
//
// conv2d: per image and group, the input patches are unrolled into a
// [C/g * kH * kW, Ho * Wo] matrix (zeros where a tap falls in the padding), and
// out[g] = weight[g] @ cols + bias by sgemm/dgemm. A dense 1x1, stride-1,
// unpadded convolution skips the unrolling (the image already is that matrix).
// Images are spread over OpenMP threads (each with its own buffer); a single
// image leaves the threads to OpenBLAS. float16/bfloat16 compute in float32.
// float32 goes to oneDNN first where the plugin has it (nn_conv_onednn.hpp);
// im2col is the fallback for what oneDNN refuses and for TESSERA_CPU_ONEDNN=0.
#include "isa.hpp"
#include "blas.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "nn_conv_onednn.hpp"
#include "nn_kernels.hpp"
#include "parallel.hpp"
#include "transpose_copy.hpp"


#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace nn {
namespace {

template <typename T>
using acc_float_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// c += a @ b (b transposed: c += a @ b^T, b being [n, k]).
inline void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc, bool b_transposed = false) {
  blas().sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 1.0f,
              c, static_cast<int>(ldc));
}
inline void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb,
                 double* c, int64_t ldc, bool b_transposed = false) {
  blas().dgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), 1.0, c,
              static_cast<int>(ldc));
}

const int64_t* int_list(const TsrKernelCall& call, size_t i, const char* name, size_t want) {
  const TsrValue& v = arg(call, i, name);
  if (v.tag != TSR_VALUE_INT_LIST || v.as.int_list.size != want)
    invalid(std::string("argument '") + name + "' must be a list of " + std::to_string(want) + " ints");
  return v.as.int_list.data;
}

// The [N, C, H, W] view of a 3-D or 4-D tensor (N = 1 for 3-D).
struct Img {
  int64_t N, C, H, W, sN, sC, sH, sW;
};
Img img_of(const DLTensor& t, const char* name) {
  if (t.ndim == 4) return {t.shape[0], t.shape[1], t.shape[2], t.shape[3], t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
  if (t.ndim == 3) return {1, t.shape[0], t.shape[1], t.shape[2], 0, t.strides[0], t.strides[1], t.strides[2]};
  invalid(std::string("'") + name + "' must be 3-D or 4-D, got shape " + shape_text(t));
}

// Whether [n0, n1, n2, n3] with strides s is the dense row-major layout (a
// size-1 dim's stride does not matter).
bool dense4(const int64_t (&n)[4], const int64_t (&s)[4]) {
  int64_t want = 1;
  for (int d = 3; d >= 0; --d) {
    if (n[d] != 1 && s[d] != want) return false;
    want *= n[d];
  }
  return true;
}

// A dense float32 copy of a 4-D tensor's elements (the tensor itself when dense).
const float* dense_f32(const DLTensor& t, const Img& v, std::vector<float>& buf) {
  const float* p = reinterpret_cast<const float*>(data_ptr(t));
  if (dense4({v.N, v.C, v.H, v.W}, {v.sN, v.sC, v.sH, v.sW})) return p;
  buf.resize(static_cast<size_t>(v.N * v.C * v.H * v.W));
  float* d = buf.data();
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t c = 0; c < v.C; ++c)
      for (int64_t h = 0; h < v.H; ++h) {
        const float* src = p + n * v.sN + c * v.sC + h * v.sH;
        for (int64_t j = 0; j < v.W; ++j) *d++ = src[j * v.sW];
      }
  return buf.data();
}

// float32 through oneDNN. Non-dense input or weight is packed first (one pass,
// cheaper than im2col's strided reads); false: oneDNN is off or refused.
bool conv2d_onednn(const DLTensor& x, const DLTensor& w, const DLTensor* b, const int64_t* p, int64_t groups,
                   DLTensor& out, const Img& in, const Img& o) {
  if (!onednn::conv2d_available()) return false;
  const int64_t O = w.shape[0], kH = w.shape[2], kW = w.shape[3];
  if (in.N * in.C * in.H * in.W == 0 || O * w.shape[1] * kH * kW == 0 || o.N * o.C * o.H * o.W == 0) return false;
  if (!dense4({o.N, o.C, o.H, o.W}, {o.sN, o.sC, o.sH, o.sW})) return false;
  std::vector<float> xbuf, wbuf, bbuf;
  const float* xp = dense_f32(x, in, xbuf);
  const float* wp = dense_f32(w, img_of(w, "weight"), wbuf);
  const float* bp = b ? reinterpret_cast<const float*>(data_ptr(*b)) : nullptr;
  if (b && O > 1 && b->strides[0] != 1) {
    bbuf.resize(static_cast<size_t>(O));
    for (int64_t a = 0; a < O; ++a) bbuf[a] = bp[a * b->strides[0]];
    bp = bbuf.data();
  }
  const onednn::Conv2dShape s{in.N, in.C, in.H, in.W, O, kH, kW, o.H, o.W, p[0], p[1], p[2], p[3], p[4], p[5], groups};
  return onednn::conv2d_f32(s, xp, wp, bp, reinterpret_cast<float*>(data_ptr(out)), &transpose_blocks_f32);
}

// One image's group of channels xg (Cg channels of `in`) unrolled into cols, a
// dense [Cg * kH * kW, o.H * o.W] matrix: the input each tap of each output
// position reads, 0 where it falls in the padding. p: {sh, sw, ph, pw, dh, dw}.
template <typename T, typename P>
void im2col(const T* xg, const Img& in, const Img& o, int64_t Cg, int64_t kH, int64_t kW, const int64_t* p, P* cols) {
  const int64_t sh = p[0], sw = p[1], ph = p[2], pw = p[3], dh = p[4], dw = p[5], L = o.H * o.W;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t i = 0; i < kH; ++i)
      for (int64_t j = 0; j < kW; ++j) {
        P* row = cols + ((c * kH + i) * kW + j) * L;
        for (int64_t oh = 0; oh < o.H; ++oh) {
          const int64_t ih = oh * sh - ph + i * dh;
          P* r = row + oh * o.W;
          if (ih < 0 || ih >= in.H) {
            std::fill(r, r + o.W, P(0));
            continue;
          }
          const T* src = xg + c * in.sC + ih * in.sH;
          for (int64_t ow = 0; ow < o.W; ++ow) {
            const int64_t iw = ow * sw - pw + j * dw;
            r[ow] = (iw >= 0 && iw < in.W) ? static_cast<P>(static_cast<compute_t<T>>(src[iw * in.sW])) : P(0);
          }
        }
      }
}

template <typename T>
void conv2d_typed(const DLTensor& x, const DLTensor& w, const DLTensor* b, const int64_t* p, int64_t groups,
                  DLTensor& out) {
  using P = acc_float_t<T>;
  const Img in = img_of(x, "input"), o = img_of(out, "out");
  const int64_t sh = p[0], sw = p[1], ph = p[2], pw = p[3];
  const int64_t O = w.shape[0], Cg = w.shape[1], kH = w.shape[2], kW = w.shape[3];
  const int64_t Og = O / groups, K = Cg * kH * kW, L = o.H * o.W;
  if (in.N != o.N || o.C != O || Cg * groups != in.C || O % groups != 0) invalid("conv2d: inconsistent shapes");
  if constexpr (std::is_same_v<T, float>) {
    if (conv2d_onednn(x, w, b, p, groups, out, in, o)) return;
  }
  if (K > INT_MAX || L > INT_MAX || O > INT_MAX) invalid("conv2d: sizes exceed BLAS's int range");
  // Weight as a dense [O, K] matrix of P.
  std::vector<P> wbuf(static_cast<size_t>(O * K));
  const T* wp = reinterpret_cast<const T*>(data_ptr(w));
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j)
          wbuf[((oc * Cg + c) * kH + i) * kW + j] =
              static_cast<P>(static_cast<compute_t<T>>(wp[oc * w.strides[0] + c * w.strides[1] + i * w.strides[2] + j * w.strides[3]]));
  std::vector<P> bias(static_cast<size_t>(O), P(0));
  if (b) {
    const T* bp = reinterpret_cast<const T*>(data_ptr(*b));
    for (int64_t oc = 0; oc < O; ++oc) bias[oc] = static_cast<P>(static_cast<compute_t<T>>(bp[oc * b->strides[0]]));
  }
  const T* xp = reinterpret_cast<const T*>(data_ptr(x));
  T* op = reinterpret_cast<T*>(data_ptr(out));
  // A dense 1x1 convolution reads the image as the [C, H*W] matrix itself.
  const bool direct = std::is_same_v<T, P> && kH == 1 && kW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 &&
                      in.sW == 1 && in.sH == in.W && in.sC == in.H * in.W;
  auto image = [&](int64_t n, std::vector<P>& cols, std::vector<P>& acc) {
    P* dst = std::is_same_v<T, P> ? reinterpret_cast<P*>(op + n * O * L) : acc.data();
    for (int64_t oc = 0; oc < O; ++oc) std::fill(dst + oc * L, dst + (oc + 1) * L, bias[oc]);
    if (K > 0) {  // K = 0 (no input channels): the output is the bias
      for (int64_t g = 0; g < groups; ++g) {
        const T* xg = xp + n * in.sN + g * Cg * in.sC;
        const P* colp;
        if (direct) {
          colp = reinterpret_cast<const P*>(xg);
        } else {
          im2col<T, P>(xg, in, o, Cg, kH, kW, p, cols.data());
          colp = cols.data();
        }
        gemm(Og, L, K, wbuf.data() + g * Og * K, K, colp, L, dst + g * Og * L, L);
      }
    }
    if constexpr (!std::is_same_v<T, P>) {
      T* on = op + n * O * L;
      for (int64_t i = 0; i < O * L; ++i) on[i] = convert<T>(dst[i]);
    }
  };
  auto run = [&](int64_t n0, int64_t n1) {
    std::vector<P> cols(direct ? 0 : static_cast<size_t>(K * L));
    std::vector<P> acc(std::is_same_v<T, P> ? 0 : static_cast<size_t>(O * L));
    for (int64_t n = n0; n < n1; ++n) image(n, cols, acc);
  };
  if (in.N >= 2) {
    parallel_for(in.N, 1, run);
  } else {
    run(0, in.N);
  }
}

// conv2d's weight gradient: gw[o, c, a, b] = sum over images n and output
// positions (i, j) of g[n, o, i, j] * x[n, c, i*sh + a*dh - ph, j*sw + b*dw - pw]
// (0 outside the input), per group. float32 through oneDNN's backward-weights
// convolution (where it ran 2.2x faster than the composed im2col + matmul + sum
// of the 64->64 16^2 batch-8 case); otherwise (other dtypes, oneDNN off or
// refusing) im2col and one GEMM per image and group, accumulated over the images
// in order on the calling thread (OpenBLAS threads each GEMM): the result does
// not depend on the thread count.
template <typename T>
void conv2d_backward_weight_typed(const DLTensor& g, const DLTensor& x, const int64_t* p, int64_t groups,
                                  DLTensor& out) {
  using P = acc_float_t<T>;
  if (g.ndim != 4 || x.ndim != 4 || out.ndim != 4) invalid("_conv2d_backward_weight: operands must be 4-D");
  const Img in = img_of(x, "input"), o = img_of(g, "grad_output");
  const int64_t O = out.shape[0], Cg = out.shape[1], kH = out.shape[2], kW = out.shape[3];
  if (in.N != o.N || o.C != O || Cg * groups != in.C || O % groups != 0)
    invalid("_conv2d_backward_weight: inconsistent shapes");
  const Img w = img_of(out, "out");
  const bool out_dense = dense4({O, Cg, kH, kW}, {w.sN, w.sC, w.sH, w.sW});
  if constexpr (std::is_same_v<T, float>) {
    if (out_dense && onednn::conv2d_available() && in.N * in.C * in.H * in.W > 0 && O * Cg * kH * kW > 0 &&
        o.H * o.W > 0) {
      std::vector<float> xbuf, gbuf;
      const onednn::Conv2dShape s{in.N, in.C, in.H, in.W, O, kH, kW, o.H, o.W, p[0], p[1], p[2], p[3], p[4], p[5], groups};
      if (onednn::conv2d_backward_weight_f32(s, dense_f32(g, o, gbuf), dense_f32(x, in, xbuf),
                                             reinterpret_cast<float*>(data_ptr(out)), &transpose_blocks_f32))
        return;
    }
  }
  const int64_t Og = O / groups, K = Cg * kH * kW, L = o.H * o.W;
  if (K > INT_MAX || L > INT_MAX || O > INT_MAX) invalid("_conv2d_backward_weight: sizes exceed BLAS's int range");
  std::vector<P> gw(static_cast<size_t>(O * K), P(0)), cols(static_cast<size_t>(K * L)),
      gbuf(static_cast<size_t>(Og * L));
  const T* xp = reinterpret_cast<const T*>(data_ptr(x));
  const T* gp = reinterpret_cast<const T*>(data_ptr(g));
  if (K > 0 && L > 0) {
    for (int64_t n = 0; n < in.N; ++n) {
      for (int64_t gi = 0; gi < groups; ++gi) {
        im2col<T, P>(xp + n * in.sN + gi * Cg * in.sC, in, o, Cg, kH, kW, p, cols.data());
        for (int64_t oc = 0; oc < Og; ++oc) {
          const T* src = gp + n * o.sN + (gi * Og + oc) * o.sC;
          P* dst = gbuf.data() + oc * L;
          for (int64_t i = 0; i < o.H; ++i)
            for (int64_t j = 0; j < o.W; ++j) dst[i * o.W + j] = static_cast<P>(static_cast<compute_t<T>>(src[i * o.sH + j * o.sW]));
        }
        gemm(Og, K, L, gbuf.data(), L, cols.data(), L, gw.data() + gi * Og * K, K, /*b_transposed=*/true);
      }
    }
  }
  T* op = reinterpret_cast<T*>(data_ptr(out));
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t a = 0; a < kH; ++a)
        for (int64_t b = 0; b < kW; ++b)
          op[oc * w.sN + c * w.sC + a * w.sH + b * w.sW] = convert<T>(gw[((oc * Cg + c) * kH + a) * kW + b]);
}

}  // namespace

void conv2d_backward_weight_kernel(const TsrKernelCall& call) {
  const DLTensor& g = tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = tensor_arg(call, 1, "input", call.dtype);
  const int64_t* p = int_list(call, 3, "params", 6);
  const TsrValue& gv = arg(call, 4, "groups");
  if (gv.tag != TSR_VALUE_INT || gv.as.i <= 0) invalid("groups must be a positive int");
  DLTensor& out = output(call, 0, call.dtype);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("_conv2d_backward_weight needs a floating dtype");
    } else {
      conv2d_backward_weight_typed<T>(g, x, p, gv.as.i, out);
    }
  });
}

void conv2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "input", call.dtype);
  const DLTensor& w = tensor_arg(call, 1, "weight", call.dtype);
  const DLTensor* b = arg(call, 2, "bias").tag == TSR_VALUE_NONE ? nullptr : &tensor_arg(call, 2, "bias", call.dtype);
  const int64_t* p = int_list(call, 3, "params", 6);
  const TsrValue& gv = arg(call, 4, "groups");
  if (gv.tag != TSR_VALUE_INT || gv.as.i <= 0) invalid("groups must be a positive int");
  DLTensor& out = output(call, 0, call.dtype);
  if (w.ndim != 4 || x.ndim != out.ndim) invalid("conv2d: weight must be 4-D and out of the input's rank");
  if (b && (b->ndim != 1 || b->shape[0] != w.shape[0])) invalid("conv2d: bias must have out_channels elements");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("conv2d needs a floating dtype");
    } else {
      conv2d_typed<T>(x, w, b, p, gv.as.i, out);
    }
  });
}

// ---- pooling ----

namespace {

struct Pool {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// Calls f(plane, oh, in_plane_ptr, out_row_ptr) over every output row, in parallel.
template <typename T, typename F>
void for_rows(const DLTensor& x, DLTensor& out, const F& f) {
  const Img in = img_of(x, "self"), o = img_of(out, "out");
  if (in.N != o.N || in.C != o.C) invalid("pooling: input and output planes differ");
  const T* xp = reinterpret_cast<const T*>(data_ptr(x));
  T* op = reinterpret_cast<T*>(data_ptr(out));
  const int64_t rows = o.N * o.C * o.H;
  parallel_for(rows, std::max<int64_t>(1, kGrainExpensive / std::max<int64_t>(1, o.W)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / o.H, oh = r % o.H;
      const int64_t n = plane / o.C, c = plane % o.C;
      f(in, o, oh, xp + n * in.sN + c * in.sC, op + r * o.W);
    }
  });
}

// The taps i in [lo, hi) of a window starting at `start` (may be negative)
// with `k` taps `d` apart that land in [0, len). The core bounds d * (k - 1)
// and start; the window may still reach far past the input (ceil_mode, huge
// kernels), so the range is computed, not scanned.
struct Taps {
  int64_t lo, hi;
};
inline Taps taps_inside(int64_t start, int64_t k, int64_t d, int64_t len) {
  if (start > len - 1) return {0, 0};
  const int64_t lo = start >= 0 ? 0 : (-start) / d + ((-start) % d != 0);
  const int64_t hi = std::min(k, (len - 1 - start) / d + 1);
  return {lo, std::max(lo, hi)};
}

// The larger of m and v; a NaN v wins (as in PyTorch), and a NaN m stays.
template <typename C>
inline C pool_max(C m, C v) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool take = (v > m) | (v != v);  // no short circuit: a select, which vectorizes
    return take ? v : m;
  } else {
    return v > m ? v : m;
  }
}

// The usual 2x2 pool with stride 2 (no padding, dilation or partial window)
// over rows of unit stride: a thread takes whole planes, and each output row
// is its two input rows' maximum (contiguous) and then that row's pairs, two
// loops GCC vectorizes (one loop over the four taps compiled to scalar
// branches). for_rows' per-row setup (two divisions, a thread_local buffer)
// cost more than the row itself on small planes: 8x64x16x16 took ~200 us at
// 1 thread against oneDNN's 35-77 us. False: not this case.
template <typename T>
bool max_pool22_planes(const DLTensor& x, DLTensor& out, const Pool& p) {
  using C = compute_t<T>;
  const Img in = img_of(x, "self"), o = img_of(out, "out");
  if (p.kh != 2 || p.kw != 2 || p.sh != 2 || p.sw != 2 || p.dh != 1 || p.dw != 1 || p.ph != 0 || p.pw != 0 ||
      in.sW != 1 || in.N != o.N || in.C != o.C || 2 * o.H > in.H || 2 * o.W > in.W || o.W == 0)
    return false;
  const T* xp = reinterpret_cast<const T*>(data_ptr(x));
  T* op = reinterpret_cast<T*>(data_ptr(out));  // dense, as for_rows writes it
  const int64_t plane_out = o.H * o.W, cols = 2 * o.W;
  parallel_for(o.N * o.C, std::max<int64_t>(1, kGrainExpensive / std::max<int64_t>(1, plane_out)),
               [&](int64_t p0, int64_t p1) {
    std::vector<C> rows_max(static_cast<size_t>(cols));
    C* rm = rows_max.data();
    for (int64_t plane = p0; plane < p1; ++plane) {
      const T* src = xp + (plane / o.C) * in.sN + (plane % o.C) * in.sC;
      T* dst = op + plane * plane_out;
      for (int64_t oh = 0; oh < o.H; ++oh, dst += o.W) {
        const T* r0 = src + 2 * oh * in.sH;
        const T* r1 = r0 + in.sH;
        for (int64_t c = 0; c < cols; ++c) rm[c] = pool_max(static_cast<C>(r0[c]), static_cast<C>(r1[c]));
        for (int64_t q = 0; q < o.W; ++q) dst[q] = convert<T>(pool_max(rm[2 * q], rm[2 * q + 1]));
      }
    }
  });
  return true;
}

template <typename T>
void max_pool_typed(const DLTensor& x, DLTensor& out, const Pool& p) {
  using C = compute_t<T>;
  if (max_pool22_planes<T>(x, out, p)) return;
  const Img xi = img_of(x, "self"), xo = img_of(out, "out");
  constexpr C kLowest =
      std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
  // Output columns whose windows lie wholly inside the input: [ow_a, ow_b).
  // There the taps need no clipping, and with unit strides along W each row
  // is first reduced over the window's rows (contiguous, so it vectorizes),
  // then over its columns. Maxima combine in any order to the same value
  // (NaN wins either way), so this is the scan's result.
  const int64_t ow_a = std::min(xo.W, (p.pw + p.sw - 1) / p.sw);
  const int64_t last = xi.W - 1 - (p.kw - 1) * p.dw + p.pw;  // w0 + (kw - 1) * dw <= W - 1
  const int64_t ow_b = std::max(ow_a, last < 0 ? int64_t{0} : std::min(xo.W, last / p.sw + 1));
  const bool unit = xi.sW == 1 && p.dw == 1 && ow_b > ow_a;
  for_rows<T>(x, out, [&](const Img& in, const Img& o, int64_t oh, const T* src, T* dst) {
    const int64_t h0 = oh * p.sh - p.ph;
    const Taps ti = taps_inside(h0, p.kh, p.dh, in.H);
    auto window = [&](int64_t ow, Taps tj) {
      const int64_t w0 = ow * p.sw - p.pw;
      C m = kLowest;
      for (int64_t i = ti.lo; i < ti.hi; ++i) {
        const int64_t ih = h0 + i * p.dh;
        for (int64_t j = tj.lo; j < tj.hi; ++j) m = pool_max(m, static_cast<C>(src[ih * in.sH + (w0 + j * p.dw) * in.sW]));
      }
      dst[ow] = convert<T>(m);
    };
    for (int64_t ow = 0; ow < ow_a; ++ow) window(ow, taps_inside(ow * p.sw - p.pw, p.kw, p.dw, in.W));
    if (unit && ti.hi > ti.lo) {
      // The input columns the interior windows cover, reduced over the rows.
      const int64_t c0 = ow_a * p.sw - p.pw, c1 = (ow_b - 1) * p.sw - p.pw + p.kw;
      thread_local std::vector<C> rows_max;
      if (rows_max.size() < static_cast<size_t>(c1 - c0)) rows_max.resize(static_cast<size_t>(c1 - c0));
      C* rm = rows_max.data();
      const T* r0 = src + (h0 + ti.lo * p.dh) * in.sH + c0;
      for (int64_t c = 0; c < c1 - c0; ++c) rm[c] = static_cast<C>(r0[c]);
      for (int64_t i = ti.lo + 1; i < ti.hi; ++i) {
        const T* r = src + (h0 + i * p.dh) * in.sH + c0;
        for (int64_t c = 0; c < c1 - c0; ++c) rm[c] = pool_max(rm[c], static_cast<C>(r[c]));
      }
      if (p.kw == 2 && p.sw == 2) {  // the usual 2x2 pool: pairs, a loop GCC vectorizes
        T* d = dst + ow_a;
        for (int64_t q = 0; q < ow_b - ow_a; ++q) d[q] = convert<T>(pool_max(rm[2 * q], rm[2 * q + 1]));
      } else {
        for (int64_t ow = ow_a; ow < ow_b; ++ow) {
          const C* w = rm + (ow - ow_a) * p.sw;
          C m = w[0];
          for (int64_t j = 1; j < p.kw; ++j) m = pool_max(m, w[j]);
          dst[ow] = convert<T>(m);
        }
      }
    } else {
      for (int64_t ow = ow_a; ow < ow_b; ++ow) window(ow, Taps{0, p.kw});
    }
    for (int64_t ow = ow_b; ow < o.W; ++ow) window(ow, taps_inside(ow * p.sw - p.pw, p.kw, p.dw, in.W));
  });
}

// The end of a window starting at `start` with `k` taps, clipped to `limit`
// (the end of the right padding) without forming start + k, which a huge
// kernel overflows; start < limit.
inline int64_t window_end(int64_t start, int64_t k, int64_t limit) { return k >= limit - start ? limit : start + k; }

template <typename T>
void avg_pool_typed(const DLTensor& x, DLTensor& out, const Pool& p, bool include_pad, int64_t divisor) {
  using A = acc_float_t<T>;
  // The outputs [ow_a, ow_b) of a row whose windows lie wholly inside it
  // (none unless its elements are dense), the same for every row.
  const Img xin = img_of(x, "self"), xout = img_of(out, "out");
  int64_t ow_a = 0, ow_b = 0;
  if (xin.sW == 1 && xin.W + p.pw >= p.kw) {
    ow_a = std::min(xout.W, (p.pw + p.sw - 1) / p.sw);
    ow_b = std::max(ow_a, std::min(xout.W, (xin.W + p.pw - p.kw) / p.sw + 1));
  }
  for_rows<T>(x, out, [&](const Img& in, const Img& o, int64_t oh, const T* src, T* dst) {
    int64_t h0 = oh * p.sh - p.ph;
    int64_t h1 = window_end(h0, p.kh, in.H + p.ph);
    const int64_t hpad = h1 - h0;
    h0 = std::max<int64_t>(h0, 0);
    h1 = std::min(h1, in.H);
    // Windows wholly inside the row span [ow_a, ow_b): taps outer, eight
    // outputs inner, so the adds vectorize across outputs; each output still
    // gets 0 + its taps in the scalar loop's order, then one division (the
    // same bits). One window at a time took 0.8x-1.0x PyTorch's time.
    if (ow_b > ow_a) {
      const A div = divisor != 0 ? static_cast<A>(divisor)
                    : include_pad ? static_cast<A>(hpad) * static_cast<A>(p.kw)
                                  : static_cast<A>((h1 - h0) * p.kw);
      const auto interior = [&](auto sw_tag) {
        constexpr int64_t kSw = decltype(sw_tag)::value;  // 0: p.sw at run time
        const int64_t sw = kSw != 0 ? kSw : p.sw;
        const auto outputs = [&](int64_t q0, auto n_tag) {  // n_tag: 8, or 0 for the rest of the span
          constexpr int64_t kN = decltype(n_tag)::value;
          const int64_t n = kN != 0 ? kN : ow_b - q0;
          A acc[8];
          for (int64_t j = 0; j < n; ++j) acc[j] = A(0);
          for (int64_t ih = h0; ih < h1; ++ih) {
            const T* r = src + ih * in.sH + q0 * sw - p.pw;
            for (int64_t iw = 0; iw < p.kw; ++iw)
              for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<A>(static_cast<compute_t<T>>(r[j * sw + iw]));
          }
          for (int64_t j = 0; j < n; ++j) dst[q0 + j] = convert<T>(acc[j] / div);
        };
        int64_t q0 = ow_a;
        for (; q0 + 8 <= ow_b; q0 += 8) outputs(q0, std::integral_constant<int64_t, 8>{});
        if (q0 < ow_b) outputs(q0, std::integral_constant<int64_t, 0>{});
      };
      if (p.sw == 2) {
        interior(std::integral_constant<int64_t, 2>{});
      } else if (p.sw == 1) {
        interior(std::integral_constant<int64_t, 1>{});
      } else {
        interior(std::integral_constant<int64_t, 0>{});
      }
    }
    for (int64_t ow = 0; ow < o.W; ++ow) {
      if (ow == ow_a && ow_b > ow_a) ow = ow_b;  // done above
      if (ow >= o.W) break;
      int64_t w0 = ow * p.sw - p.pw;
      int64_t w1 = window_end(w0, p.kw, in.W + p.pw);
      const int64_t wpad = w1 - w0;
      w0 = std::max<int64_t>(w0, 0);
      w1 = std::min(w1, in.W);
      A s = 0;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) s += static_cast<A>(static_cast<compute_t<T>>(src[ih * in.sH + iw * in.sW]));
      // In floating point: the padded window's area can pass int64.
      const A div = divisor != 0 ? static_cast<A>(divisor)
                    : include_pad ? static_cast<A>(hpad) * static_cast<A>(wpad)
                                  : static_cast<A>((h1 - h0) * (w1 - w0));
      dst[ow] = convert<T>(s / div);
    }
  });
}

// The 2x2 / stride 2 backward over 8 windows at a time, for float32, with
// GCC/Clang vector types (lowered to each ISA level's registers; GCC 12 does
// not vectorize the scalar loop below: its compare chain mixes masks and
// values). The same selects as that loop, so the same result. Returns the
// windows done (a multiple of 8).
using V8f = float __attribute__((vector_size(32)));
using V8i = int32_t __attribute__((vector_size(32)));
[[gnu::always_inline]] inline int64_t pool22_backward_float8(const float* r0, const float* r1, const float* gr, float* a0, float* a1,
                                      int64_t nq) {
  const V8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = {1, 3, 5, 7, 9, 11, 13, 15};
  const V8i lo = {0, 8, 1, 9, 2, 10, 3, 11}, hi = {4, 12, 5, 13, 6, 14, 7, 15};
  const V8f zero = {};
  int64_t q = 0;
  // Loads and stores through memcpy: unaligned, and no V8f crosses a call
  // (passing one by value changes the ABI where AVX is off).
  V8f x0, x1, y0, y1, gv, a[4];
  for (; q + 8 <= nq; q += 8) {
    std::memcpy(&x0, r0 + 2 * q, 32);
    std::memcpy(&x1, r0 + 2 * q + 8, 32);
    std::memcpy(&y0, r1 + 2 * q, 32);
    std::memcpy(&y1, r1 + 2 * q + 8, 32);
    std::memcpy(&gv, gr + q, 32);
    const V8f t0 = __builtin_shuffle(x0, x1, even), t1 = __builtin_shuffle(x0, x1, odd);
    const V8f t2 = __builtin_shuffle(y0, y1, even), t3 = __builtin_shuffle(y0, y1, odd);
    const V8i k1 = (t1 > t0) | (t1 != t1);
    const V8f m1 = k1 ? t1 : t0;
    const V8i k2 = (t2 > m1) | (t2 != t2);
    const V8f m2 = k2 ? t2 : m1;
    const V8i k3 = (t3 > m2) | (t3 != t3);
    const V8f c0 = (k1 | k2 | k3) == 0 ? gv : zero, c1 = (k1 & ~(k2 | k3)) != 0 ? gv : zero;
    const V8f c2 = (k2 & ~k3) != 0 ? gv : zero, c3 = k3 != 0 ? gv : zero;
    float* dst[4] = {a0 + 2 * q, a0 + 2 * q + 8, a1 + 2 * q, a1 + 2 * q + 8};
    for (int i = 0; i < 4; ++i) std::memcpy(&a[i], dst[i], 32);
    a[0] += __builtin_shuffle(c0, c1, lo);
    a[1] += __builtin_shuffle(c0, c1, hi);
    a[2] += __builtin_shuffle(c2, c3, lo);
    a[3] += __builtin_shuffle(c2, c3, hi);
    for (int i = 0; i < 4; ++i) std::memcpy(dst[i], &a[i], 32);
  }
  return q;
}

// max_pool2d's input gradient: each window's gradient goes to the tap its
// scan ends on (row-major, `v > max || isnan(v)`, padding skipped): the first
// maximum, the last NaN when a NaN won, the first tap inside the input when
// every tap is -inf (or the integer minimum). A thread owns whole planes and
// adds overlapping windows' gradients in window order (A: float, double for
// float64), so the sums do not depend on the thread count.
template <typename T>
void max_pool_backward_typed(const DLTensor& g, const DLTensor& x, DLTensor& gx, const Pool& p) {
  using C = compute_t<T>;
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Img in = img_of(x, "self"), go = img_of(g, "grad_output"), gi = img_of(gx, "grad_input");
  if (go.N != in.N || go.C != in.C || gi.N != in.N || gi.C != in.C || gi.H != in.H || gi.W != in.W)
    invalid("max_pool2d backward: grad_output, self and grad_input planes differ");
  const T* xp = reinterpret_cast<const T*>(data_ptr(x));
  const T* gp = reinterpret_cast<const T*>(data_ptr(g));
  T* op = reinterpret_cast<T*>(data_ptr(gx));
  const int64_t plane_size = in.H * in.W;
  // Output columns whose windows lie inside the input (no clipping): [ow_a, ow_b).
  const int64_t ow_a = std::min(go.W, (p.pw + p.sw - 1) / p.sw);
  const int64_t last = in.W - 1 - (p.kw - 1) * p.dw + p.pw;
  const int64_t ow_b = std::max(ow_a, last < 0 ? int64_t{0} : std::min(go.W, last / p.sw + 1));
  // The usual 2x2 pool with stride 2 over dense rows: windows tile the input,
  // and a window's four taps are two pairs of neighbours; the scan is written
  // as selects over the pairs of a row (vectorized), not per window.
  const bool pool22 = p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.dh == 1 && p.dw == 1 && in.sW == 1;
  parallel_for(in.N * in.C, std::max<int64_t>(1, kGrainExpensive / std::max<int64_t>(1, plane_size)),
               [&](int64_t p0, int64_t p1) {
    // Per call, not thread_local: a plane can be large, and a kept buffer
    // would hold the largest one ever seen for the life of the thread.
    std::vector<A> acc(static_cast<size_t>(plane_size)), grow(static_cast<size_t>(go.W));
    for (int64_t plane = p0; plane < p1; ++plane) {
      const int64_t n = plane / in.C, c = plane % in.C;
      const T* xs = xp + n * in.sN + c * in.sC;
      const T* gs = gp + n * go.sN + c * go.sC;
      A* ac = acc.data();
      std::fill(ac, ac + plane_size, A(0));
      for (int64_t oh = 0; oh < go.H; ++oh) {
        const int64_t h0 = oh * p.sh - p.ph;
        const Taps ti = taps_inside(h0, p.kh, p.dh, in.H);
        if (ti.hi <= ti.lo) continue;
        // One window, tap by tap.
        auto window = [&](int64_t ow, Taps tj) {
          if (tj.hi <= tj.lo) return;
          const int64_t w0 = ow * p.sw - p.pw;
          int64_t best = (h0 + ti.lo * p.dh) * in.W + (w0 + tj.lo * p.dw);
          C m = static_cast<C>(xs[(h0 + ti.lo * p.dh) * in.sH + (w0 + tj.lo * p.dw) * in.sW]);
          for (int64_t i = ti.lo; i < ti.hi; ++i) {
            const int64_t ih = h0 + i * p.dh;
            for (int64_t j = tj.lo; j < tj.hi; ++j) {
              const int64_t iw = w0 + j * p.dw;
              const C v = static_cast<C>(xs[ih * in.sH + iw * in.sW]);
              const bool take = (v > m) | (v != v);
              m = take ? v : m;
              best = take ? ih * in.W + iw : best;
            }
          }
          ac[best] += static_cast<A>(static_cast<C>(gs[oh * go.sH + ow * go.sW]));
        };
        if (pool22 && ti.lo == 0 && ti.hi == 2 && ow_b > ow_a) {
          const int64_t nq = ow_b - ow_a, c0 = ow_a * 2 - p.pw;
          A* gr = grow.data();
          for (int64_t q = 0; q < nq; ++q) gr[q] = static_cast<A>(static_cast<C>(gs[oh * go.sH + (ow_a + q) * go.sW]));
          const T* r0 = xs + h0 * in.sH + c0;
          const T* r1 = r0 + in.sH;
          A* a0 = ac + h0 * in.W + c0;
          A* a1 = a0 + in.W;
          int64_t q = 0;
          if constexpr (std::is_same_v<T, float>) q = pool22_backward_float8(r0, r1, gr, a0, a1, nq);
          for (; q < nq; ++q) {
            const C t0 = static_cast<C>(r0[2 * q]), t1 = static_cast<C>(r0[2 * q + 1]);
            const C t2 = static_cast<C>(r1[2 * q]), t3 = static_cast<C>(r1[2 * q + 1]);
            // k: the tap beats the taps before it; the winner is the last tap that does.
            const bool k1 = (t1 > t0) | (t1 != t1);
            const C m1 = k1 ? t1 : t0;
            const bool k2 = (t2 > m1) | (t2 != t2);
            const C m2 = k2 ? t2 : m1;
            const bool k3 = (t3 > m2) | (t3 != t3);
            const A gv = gr[q];
            a0[2 * q] += !(k1 | k2 | k3) ? gv : A(0);
            a0[2 * q + 1] += (k1 & !(k2 | k3)) ? gv : A(0);
            a1[2 * q] += (k2 & !k3) ? gv : A(0);
            a1[2 * q + 1] += k3 ? gv : A(0);
          }
          for (int64_t ow = 0; ow < ow_a; ++ow) window(ow, taps_inside(ow * p.sw - p.pw, p.kw, p.dw, in.W));
          for (int64_t ow = ow_b; ow < go.W; ++ow) window(ow, taps_inside(ow * p.sw - p.pw, p.kw, p.dw, in.W));
          continue;
        }
        for (int64_t ow = 0; ow < go.W; ++ow) {
          const bool interior = ow >= ow_a && ow < ow_b;
          window(ow, interior ? Taps{0, p.kw} : taps_inside(ow * p.sw - p.pw, p.kw, p.dw, in.W));
        }
      }
      T* os = op + n * gi.sN + c * gi.sC;
      for (int64_t ih = 0; ih < in.H; ++ih)
        for (int64_t iw = 0; iw < in.W; ++iw) os[ih * gi.sH + iw * gi.sW] = convert<T>(ac[ih * in.W + iw]);
    }
  });
}

// The INT_LIST of 8 pool parameters at argument `index` (1 for the pools).
Pool pool_params(const TsrKernelCall& call, size_t index = 1) {
  const int64_t* v = int_list(call, index, "params", 8);
  const Pool p{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  if (p.kh <= 0 || p.kw <= 0 || p.sh <= 0 || p.sw <= 0 || p.dh <= 0 || p.dw <= 0 || p.ph < 0 || p.pw < 0)
    invalid("pooling: kernel_size, stride and dilation must be positive and padding non-negative");
  return p;
}

}  // namespace

void max_pool2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  const Pool p = pool_params(call);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("max_pool2d is not defined for bool tensors");
    } else {
      max_pool_typed<T>(x, out, p);
    }
  });
}

void max_pool2d_backward_kernel(const TsrKernelCall& call) {
  const DLTensor& g = tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = tensor_arg(call, 1, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(x, "self", out, "grad_input");
  const Pool p = pool_params(call, 2);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("_max_pool2d_backward needs a floating dtype");
    } else {
      max_pool_backward_typed<T>(g, x, out, p);
    }
  });
}

void avg_pool2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  const Pool p = pool_params(call);
  const TsrValue& inc = arg(call, 2, "count_include_pad");
  const TsrValue& dv = arg(call, 3, "divisor_override");
  if (inc.tag != TSR_VALUE_BOOL || dv.tag != TSR_VALUE_INT) invalid("avg_pool2d: bad count_include_pad or divisor");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("avg_pool2d needs a floating dtype");
    } else {
      avg_pool_typed<T>(x, out, p, inc.as.b != 0, dv.as.i);
    }
  });
}

}}}  // namespace tessera::cpu::TSR_CPU_ISA::nn
