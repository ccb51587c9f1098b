// softmax, log_softmax, layer_norm and its backward, nll_loss (docs/ops/nn.md); conv2d and the
// pools are in nn_conv.cpp.
#include "isa.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "kernels.hpp"
#include "nn_kernels.hpp"
#include "nn_softmax.hpp"
#include "lane_tree.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#ifdef __linux__
#endif

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

// float for float16/bfloat16/float32, double for float64.
template <typename T>
using acc_float_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// An optional tensor argument: NULL for none.
const DLTensor* opt_tensor(const TsrKernelCall& call, size_t i, const char* name, TsrDType dtype) {
  if (arg(call, i, name).tag == TSR_VALUE_NONE) return nullptr;
  return &tensor_arg(call, i, name, dtype);
}
bool is_dense(const DLTensor& t) {
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

// ---- softmax / log_softmax ----

template <bool Log>
void softmax_impl(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(x, "self", out, "out");
  const int64_t dim = int_arg(call, 1, "dim");
  if (x.ndim > 64) invalid("tensors of more than 64 dims are not supported");
  if (x.ndim > 0 && (dim < 0 || dim >= x.ndim)) invalid("dim " + std::to_string(dim) + " is out of range");
  const int64_t n = x.ndim == 0 ? 1 : x.shape[dim];
  const int64_t total = sdk::numel(x);
  if (total == 0) return;
  const int64_t rows = total / n;
  const int64_t in_step = x.ndim == 0 ? 1 : x.strides[dim];
  int64_t inner = 1;  // output stride along dim (out is contiguous)
  for (int32_t d = static_cast<int32_t>(dim) + 1; d < x.ndim; ++d) inner *= x.shape[d];
  // Elements per thread: a softmax costs ~1 ns per element, so a team pays off
  // from a few hundred thousand elements, as for the reductions. On a busy
  // machine idle_threads() (parallel.hpp) keeps the work on the calling thread,
  // which used to need a 1M grain here (2M elements ran 3x slower on two
  // threads under load before the plugin became load-aware).
  constexpr int64_t kSoftmaxGrain = int64_t{1} << 18;
  const int64_t grain = std::max<int64_t>(1, kSoftmaxGrain / n);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("softmax needs a floating dtype");
    } else {
      using A = acc_float_t<T>;
      const T* in = reinterpret_cast<const T*>(data_ptr(x));
      T* o = reinterpret_cast<T*>(data_ptr(out));
      if constexpr (std::is_same_v<T, A>) {
        if (inner == 1 && is_dense(x)) {  // rows are dense and back to back: no copies
          parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) nn::softmax_row<Log>(in + r * n, o + r * n, n);
          });
          return;
        }
        if (is_dense(x)) {  // dense, dim not last: [outer, n, inner], columns of inner at once
          const int64_t chunks = (inner + nn::kCols - 1) / nn::kCols, outer = rows / inner;
          parallel_for(outer * chunks, std::max<int64_t>(1, kSoftmaxGrain / (n * std::min(inner, nn::kCols))),
                       [&](int64_t t0, int64_t t1) {
                         for (int64_t t = t0; t < t1; ++t) {
                           const int64_t ob = t / chunks, i0 = (t % chunks) * nn::kCols;
                           const int64_t off = ob * n * inner + i0;
                           nn::softmax_cols<Log>(in + off, o + off, n, std::min(nn::kCols, inner - i0), inner);
                         }
                       });
          return;
        }
      }
      // General: gather each row into a buffer of A, compute, scatter. Row r is
      // (outer index r / inner, inner index r % inner) of the output.
      parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
        std::vector<A> buf(static_cast<size_t>(n));
        int64_t idx[64];
        for (int64_t r = r0; r < r1; ++r) {
          // Input offset of row r: its coordinates in every dim but `dim`.
          int64_t rem = r, off = 0;
          for (int32_t d = x.ndim - 1; d >= 0; --d) {
            if (d == dim) continue;
            idx[d] = rem % x.shape[d];
            rem /= x.shape[d];
            off += idx[d] * x.strides[d];
          }
          for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<A>(static_cast<compute_t<T>>(in[off + i * in_step]));
          nn::softmax_row<Log>(buf.data(), buf.data(), n);
          T* orow = o + (r / inner) * n * inner + (r % inner);
          for (int64_t i = 0; i < n; ++i) orow[i * inner] = convert<T>(buf[i]);
        }
      });
    }
  });
}

// ---- layer_norm ----

// A row's mean and 1/sqrt(var + eps), in two passes (an approximate mean,
// then the deviations from it and their squares: no cancellation, unlike
// E[x^2] - E[x]^2), blocked_lane_sum and blocked_shifted_sums (lane_tree.hpp). Lanes of A where these were lanes of
// double: 256x1024 float32 forward 1.13x PyTorch's time before, 0.92x after
// (AMD Zen 4, 1 thread).
// The mean comes as centre + delta (centre, a first estimate in A; delta, the
// rest, rounded to A): x - centre is exact for x near the mean, so
// (x - centre) - delta keeps the digits that x - mean rounded to A would lose
// when the spread is far below the mean (a row of 1e4 + 1e-2 noise).
template <typename A>
struct RowStats {
  A centre, delta, rstd;
};
template <typename T, typename A>
inline RowStats<A> row_stats(const T* xr, int64_t m, double eps) {
  const auto load = [xr](int64_t i) { return static_cast<A>(xr[i]); };
  const double n = static_cast<double>(m);
  const A centre = static_cast<A>(blocked_lane_sum<A>(m, load, [](A x) { return x; }) / n);
  const ShiftedSums d = blocked_shifted_sums<A>(m, load, centre);
  const double ss = std::max(0.0, d.s2 - d.s1 * d.s1 / n);
  return {centre, static_cast<A>(d.s1 / n), static_cast<A>(1.0 / std::sqrt(ss / n + eps))};
}

// Number of normalized elements per row (the trailing k dims of x).
int64_t normalized_size(const DLTensor& x, int64_t k) {
  if (k < 1 || k > x.ndim) invalid("normalized_ndim " + std::to_string(k) + " out of range");
  if (!is_dense(x)) invalid("input must be contiguous");
  int64_t m = 1;
  for (int32_t d = x.ndim - static_cast<int32_t>(k); d < x.ndim; ++d) m *= x.shape[d];
  return m;
}

void layer_norm_kernel(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "input", call.dtype);
  const DLTensor* w = opt_tensor(call, 1, "weight", call.dtype);
  const DLTensor* b = opt_tensor(call, 2, "bias", call.dtype);
  const int64_t k = int_arg(call, 3, "normalized_ndim");
  const double eps = float_arg(call, 4, "eps");
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(x, "input", out, "out");
  const int64_t m = normalized_size(x, k);
  const int64_t total = sdk::numel(x);
  if (total == 0) return;
  for (const DLTensor* p : {w, b}) {
    if (p && (sdk::numel(*p) != m || !is_dense(*p))) invalid("weight and bias must be dense with normalized_shape's size");
  }
  const int64_t rows = total / m;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("layer_norm needs a floating dtype");
    } else {
      using A = acc_float_t<T>;
      const T* in = reinterpret_cast<const T*>(data_ptr(x));
      const T* wp = w ? reinterpret_cast<const T*>(data_ptr(*w)) : nullptr;
      const T* bp = b ? reinterpret_cast<const T*>(data_ptr(*b)) : nullptr;
      T* o = reinterpret_cast<T*>(data_ptr(out));
      parallel_for(rows, std::max<int64_t>(1, kGrain / m), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* xr = in + r * m;
          T* yr = o + r * m;
          const RowStats<A> st = row_stats<T, A>(xr, m, eps);
          for (int64_t i = 0; i < m; ++i) {
            A v = ((static_cast<A>(xr[i]) - st.centre) - st.delta) * st.rstd;
            if (wp) v *= static_cast<A>(wp[i]);
            if (bp) v += static_cast<A>(bp[i]);
            yr[i] = convert<T>(v);
          }
        }
      });
    }
  });
}

// _layer_norm_backward. Per row, with xc = x - mean, xhat = xc * rstd and
// gh = grad * weight (or grad):
//   grad_input = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))
//              = rstd * gh - rstd^3 * mean(gh * xc) * xc - rstd * mean(gh)
// and over rows grad_weight = sum grad * xhat, grad_bias = sum grad. The row
// statistics are recomputed (two passes, in float for float16/bfloat16/float32:
// they differ from the forward's double ones by rounding only). Sums use
// `omp simd` reductions: fixed for a build and ISA level, not across levels.
// The rows are cut into a fixed number of blocks (independent of the thread
// count, so are the sums' order and bits); each block sums its rows' weight and
// bias gradients into its own buffer, and the buffers are added in block order.
template <typename T, bool kWeight, bool kAffine, bool kInput>
void layer_norm_backward_rows(const T* gp, const T* xp, const T* wp, T* gxp, acc_float_t<T>* partial, int64_t m,
                              int64_t r0, int64_t r1, double eps) {
  using A = acc_float_t<T>;
  A* pw = partial;
  A* pb = kAffine ? partial + m : nullptr;
  const A inv_m = A(1) / static_cast<A>(m);
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = xp + r * m;
    const T* gr = gp + r * m;
    A sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < m; ++i) sum += static_cast<A>(xr[i]);
    const A mean = sum * inv_m;
    A ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < m; ++i) {
      const A d = static_cast<A>(xr[i]) - mean;
      ss += d * d;
    }
    const A rstd = static_cast<A>(1.0 / std::sqrt(static_cast<double>(ss * inv_m) + eps));
    A t1 = 0, t2 = 0;
#pragma omp simd reduction(+ : t1, t2)
    for (int64_t i = 0; i < m; ++i) {
      const A gv = static_cast<A>(gr[i]);
      const A xc = static_cast<A>(xr[i]) - mean;
      if constexpr (kAffine) {
        pw[i] += gv * (xc * rstd);
        pb[i] += gv;
      }
      const A gh = kWeight ? gv * static_cast<A>(wp[i]) : gv;
      t1 += gh;
      t2 += gh * xc;
    }
    if constexpr (kInput) {
      const A cx = -rstd * rstd * rstd * t2 * inv_m;
      const A c0 = -rstd * t1 * inv_m;
      T* gxr = gxp + r * m;
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) {
        const A gv = static_cast<A>(gr[i]);
        const A gh = kWeight ? gv * static_cast<A>(wp[i]) : gv;
        gxr[i] = convert<T>(rstd * gh + cx * (static_cast<A>(xr[i]) - mean) + c0);
      }
    }
  }
}

void layer_norm_backward_kernel(const TsrKernelCall& call) {
  const DLTensor& g = tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = tensor_arg(call, 1, "input", call.dtype);
  const DLTensor* w = opt_tensor(call, 2, "weight", call.dtype);
  const int64_t k = int_arg(call, 3, "normalized_ndim");
  const double eps = float_arg(call, 4, "eps");
  const bool input_grad = bool_arg(call, 5, "input_grad");
  const bool affine_grads = bool_arg(call, 6, "affine_grads");
  DLTensor& gx = output(call, 0, call.dtype);
  DLTensor& gw = output(call, 1, call.dtype);
  DLTensor& gb = output(call, 2, call.dtype);
  check_same_shape(g, "grad_output", x, "input");
  if (k < 1 || k > x.ndim) invalid("normalized_ndim " + std::to_string(k) + " out of range");
  int64_t m = 1;
  for (int32_t d = x.ndim - static_cast<int32_t>(k); d < x.ndim; ++d) m *= x.shape[d];
  const int64_t total = sdk::numel(x);
  // Without elements the strides say nothing (contiguous() keeps any).
  if (total != 0 && (!is_dense(x) || !is_dense(g))) invalid("input and grad_output must be contiguous");
  if (input_grad) check_same_shape(gx, "grad_input", x, "input");
  if (w && (sdk::numel(*w) != m || !is_dense(*w))) invalid("weight must be dense with normalized_shape's size");
  for (const DLTensor* p : {&gx, &gw, &gb}) {
    if (sdk::numel(*p) != 0 && !is_dense(*p)) invalid("outputs must be contiguous");
  }
  if (affine_grads && (sdk::numel(gw) != m || sdk::numel(gb) != m))
    invalid("grad_weight and grad_bias must have normalized_shape's size");
  const int64_t rows = m == 0 ? 0 : total / m;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("_layer_norm_backward needs a floating dtype");
    } else {
      using A = acc_float_t<T>;
      const T* gp = reinterpret_cast<const T*>(data_ptr(g));
      const T* xp = reinterpret_cast<const T*>(data_ptr(x));
      const T* wp = w ? reinterpret_cast<const T*>(data_ptr(*w)) : nullptr;
      T* gxp = input_grad ? reinterpret_cast<T*>(data_ptr(gx)) : nullptr;
      // At most 16 blocks, fewer when their buffers (2 m values each) would
      // pass 64 MiB; without weight and bias gradients, one block per row.
      const int64_t blocks =
          affine_grads ? std::max<int64_t>(1, std::min<int64_t>({rows, 16, (int64_t{4} << 20) / std::max<int64_t>(m, 1)}))
                       : std::max<int64_t>(1, rows);
      std::vector<A> partial(affine_grads ? static_cast<size_t>(2 * blocks * m) : 0, A(0));
      const int64_t rows_per_block = rows == 0 ? 1 : (rows + blocks - 1) / blocks;
      const int64_t used = rows == 0 ? 0 : (rows + rows_per_block - 1) / rows_per_block;
      const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, m * rows_per_block));
      auto run = [&](auto weight, auto affine, auto input) {
        parallel_for(used, grain, [&](int64_t b0, int64_t b1) {
          for (int64_t blk = b0; blk < b1; ++blk) {
            layer_norm_backward_rows<T, decltype(weight)::value, decltype(affine)::value, decltype(input)::value>(
                gp, xp, wp, gxp, affine_grads ? partial.data() + 2 * blk * m : nullptr, m, blk * rows_per_block,
                std::min(rows, (blk + 1) * rows_per_block), eps);
          }
        });
      };
      using Yes = std::true_type;
      using No = std::false_type;
      if (affine_grads) {
        if (input_grad) {
          wp ? run(Yes{}, Yes{}, Yes{}) : run(No{}, Yes{}, Yes{});
        } else {
          run(No{}, Yes{}, No{});  // the weight only scales grad_input
        }
      } else if (input_grad) {
        wp ? run(Yes{}, No{}, Yes{}) : run(No{}, No{}, Yes{});
      }
      if (affine_grads) {
        T* gwp = reinterpret_cast<T*>(data_ptr(gw));
        T* gbp = reinterpret_cast<T*>(data_ptr(gb));
        parallel_for(m, kGrain, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            A sw = 0, sb = 0;
            for (int64_t blk = 0; blk < used; ++blk) {
              sw += partial[static_cast<size_t>(2 * blk * m + i)];
              sb += partial[static_cast<size_t>(2 * blk * m + m + i)];
            }
            gwp[i] = convert<T>(sw);
            gbp[i] = convert<T>(sb);
          }
        });
      }
    }
  });
}

// ---- nll_loss (and its label-smoothed form) ----

void nll_loss_kernel(const TsrKernelCall& call) {
  const DLTensor& x = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& t = tensor_arg(call, 1, "target", TSR_DTYPE_INT64);
  const DLTensor* w = opt_tensor(call, 2, "weight", call.dtype);
  const int64_t reduction = int_arg(call, 3, "reduction");
  const int64_t ignore = int_arg(call, 4, "ignore_index");
  const double eps = call.num_args > 5 ? float_arg(call, 5, "label_smoothing") : 0.0;
  DLTensor& out = output(call, 0, call.dtype);
  if (x.ndim < 1 || x.ndim > 64 || t.ndim != (x.ndim == 1 ? 0 : x.ndim - 1)) invalid("input and target ranks do not match");
  const int64_t C = x.ndim == 1 ? x.shape[0] : x.shape[1];
  const int64_t cstride = x.ndim == 1 ? x.strides[0] : x.strides[1];
  if (w && (w->ndim != 1 || w->shape[0] != C)) invalid("weight must have one element per class");
  const int64_t count = sdk::numel(t);
  if (reduction == 0 && sdk::numel(out) != count) invalid("out must have the target's shape");
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("nll_loss needs a floating dtype");
    } else {
      const T* in = reinterpret_cast<const T*>(data_ptr(x));
      const int64_t* tg = reinterpret_cast<const int64_t*>(data_ptr(t));
      const T* wp = w ? reinterpret_cast<const T*>(data_ptr(*w)) : nullptr;
      const int64_t wst = w ? w->strides[0] : 0;
      T* o = reinterpret_cast<T*>(data_ptr(out));
      auto weight = [&](int64_t c) { return wp ? static_cast<double>(static_cast<compute_t<T>>(wp[c * wst])) : 1.0; };
      double total = 0.0, total_weight = 0.0;
      int64_t idx[64] = {};
      for (int64_t k = 0; k < count; ++k) {
        // Target coordinates (n, d1, ...) -> input (n, :, d1, ...).
        int64_t rem = k, toff = 0, xoff = 0;
        for (int32_t d = t.ndim - 1; d >= 0; --d) {
          idx[d] = rem % t.shape[d];
          rem /= t.shape[d];
          toff += idx[d] * t.strides[d];
          xoff += idx[d] * x.strides[d == 0 ? 0 : d + 1];
        }
        const int64_t c = tg[toff];
        double loss = 0.0;
        if (c != ignore) {
          if (c < 0 || c >= C) {
            fail(TSR_ERROR_OUT_OF_RANGE,
                 "target " + std::to_string(c) + " is out of bounds for " + std::to_string(C) + " classes");
          }
          const double wc = weight(c);
          loss = -(1.0 - eps) * wc * static_cast<double>(static_cast<compute_t<T>>(in[xoff + c * cstride]));
          if (eps > 0.0) {
            // sum_j w_j x_j in lanes (blocked_lane_sum): a serial double sum over
            // the classes was a third of cross_entropy(label_smoothing) fwd+bwd.
            using A = acc_float_t<T>;
            const T* row = in + xoff;
            const auto id = [](A v) { return v; };
            const double smooth =
                wp ? blocked_lane_sum<A>(C, [&](int64_t j) { return static_cast<A>(wp[j * wst]) * static_cast<A>(row[j * cstride]); }, id)
                   : blocked_lane_sum<A>(C, [&](int64_t j) { return static_cast<A>(row[j * cstride]); }, id);
            loss -= eps / static_cast<double>(C) * smooth;
          }
          total_weight += wc;
        }
        if (reduction == 0) {
          o[k] = convert<T>(loss);
        } else {
          total += loss;
        }
      }
      if (reduction == 1) o[0] = convert<T>(total / total_weight);  // 0/0: NaN, as PyTorch
      if (reduction == 2) o[0] = convert<T>(total);
    }
  });
}

}  // namespace

void register_nn_kernels(const sdk::Host& host) {
  static const KernelRegistration kTable[] = {
      {"softmax", kFloatMask, &kernel_entry<&softmax_impl<false>>},
      {"log_softmax", kFloatMask, &kernel_entry<&softmax_impl<true>>},
      {"layer_norm", kFloatMask, &kernel_entry<&layer_norm_kernel>},
      {"_layer_norm_backward", kFloatMask, &kernel_entry<&layer_norm_backward_kernel>},
      {"nll_loss", kFloatMask, &kernel_entry<&nll_loss_kernel>},
      {"_nll_loss_smoothed", kFloatMask, &kernel_entry<&nll_loss_kernel>},
      {"conv2d", kFloatMask, &kernel_entry<&nn::conv2d_kernel>},
      {"_conv2d_backward_weight", kFloatMask, &kernel_entry<&nn::conv2d_backward_weight_kernel>},
      {"max_pool2d", kFloatMask | kIntMask, &kernel_entry<&nn::max_pool2d_kernel>},
      {"_max_pool2d_backward", kFloatMask, &kernel_entry<&nn::max_pool2d_backward_kernel>},
      {"avg_pool2d", kFloatMask, &kernel_entry<&nn::avg_pool2d_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
