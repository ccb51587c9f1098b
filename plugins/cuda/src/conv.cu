// The CUDA plugin's conv2d kernel (docs/ops/nn.md), as the cpu plugin computes
// it (plugins/cpu/src/nn_conv.cpp): a cross-correlation with stride, padding
// (bottom/right implied by the output's size), dilation and groups, plus bias.
//
// With cuDNN (built with TESSERA_CUDA_HAS_CUDNN): cudnnConvolutionForward on
// packed NCHW operands (others are copied packed first), a deterministic
// algorithm from cuDNN's heuristics cached per shape, no TF32 unless
// allow_tf32(). Without cuDNN, for what cuDNN refuses (asymmetric padding,
// sizes past int, ...) and always under TESSERA_CUDA_CONV=fallback: im2col into
// workspace memory, a bounded chunk of images at a time, and gemm() per group
// (a dense 1x1 stride-1 convolution multiplies the image as it lies). Either
// way the output is first filled with the bias and the convolution added to
// it (beta = 1), so float16/bfloat16 round once, as on cpu.
//
// _conv2d_backward_weight (conv2d's weight gradient, docs/ops/nn.md): im2col of
// chunks of images by tap, then one GEMM per group and chunk with the packed
// gradient (no cuDNN backward-filter path yet).
#include "common.cuh"
#include "gemm.cuh"
#include "kernels.hpp"

#if TESSERA_CUDA_HAS_CUDNN
#include <cudnn.h>

#include <array>
#include <map>
#include <mutex>
#include <vector>
#endif

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

/// The [N, C, H, W] view of a 3-D or 4-D tensor (N = 1 for 3-D).
struct Img {
  int64_t N, C, H, W, sN, sC, sH, sW;
};

Img img_of(const DLTensor& t, const char* name) {
  if (t.ndim == 4) return {t.shape[0], t.shape[1], t.shape[2], t.shape[3], t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
  if (t.ndim == 3) return {1, t.shape[0], t.shape[1], t.shape[2], 0, t.strides[0], t.strides[1], t.strides[2]};
  sdk::invalid(std::string("'") + name + "' must be 3-D or 4-D, got shape " + sdk::shape_text(t));
}

/// Whether the strides are those of a packed (contiguous) tensor of these
/// sizes; a size-1 dim's stride does not matter.
bool packed(const int64_t (&size)[4], const int64_t (&stride)[4]) {
  int64_t expect = 1;
  for (int d = 3; d >= 0; --d) {
    if (size[d] != 1 && stride[d] != expect) return false;
    expect *= size[d];
  }
  return true;
}
bool packed(const Img& m) { return packed({m.N, m.C, m.H, m.W}, {m.sN, m.sC, m.sH, m.sW}); }

/// One conv2d call, checked.
struct Conv {
  const DLTensor* x;
  const DLTensor* w;
  const DLTensor* bias;  // null: none
  DLTensor* out;
  Img in, o;
  int64_t O, Cg, kH, kW;  // weight [O, Cg, kH, kW]
  int64_t Og, K, L;       // out channels per group, Cg * kH * kW, Ho * Wo
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t w_s[4];         // weight strides
};

template <typename T>
__global__ void bias_fill_kernel(T* out, const T* bias, int64_t bias_stride, int64_t O, int64_t L, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = bias[(i / L) % O * bias_stride];
}

/// out = bias broadcast over images and positions, or zeros without bias.
template <typename T>
void fill_bias(const TsrKernelCall& call, const Conv& cv) {
  const int64_t total = cv.o.N * cv.O * cv.L;
  T* out = data_as<T>(*cv.out);
  if (cv.bias == nullptr) {
    check_cuda(cudaMemsetAsync(out, 0, static_cast<size_t>(total) * sizeof(T), stream_of(call)), "cudaMemsetAsync");
    return;
  }
  bias_fill_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(call)>>>(out, data_as<const T>(*cv.bias),
                                                                           cv.bias->strides[0], cv.O, cv.L, total);
  check_launch("bias_fill_kernel");
}

// ---- fallback: im2col + gemm ----

/// Unrolls images [n0, n0 + images) and channels [c0, c0 + channels) into
/// cols[image][channel][i][j][position]: zeros where a tap falls in the padding.
template <typename T>
struct Im2col {
  const T* x;
  T* cols;
  Img in;
  int64_t n0, c0, channels;
  int64_t kH, kW, Wo, L;
  int64_t sh, sw, ph, pw, dh, dw;
};

template <typename T>
__global__ void im2col_kernel(Im2col<T> p, int64_t total) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t l = idx % p.L;
    int64_t r = idx / p.L;
    const int64_t j = r % p.kW;
    r /= p.kW;
    const int64_t i = r % p.kH;
    r /= p.kH;
    const int64_t c = r % p.channels, n = r / p.channels;
    const int64_t oh = l / p.Wo, ow = l - oh * p.Wo;
    const int64_t ih = oh * p.sh - p.ph + i * p.dh, iw = ow * p.sw - p.pw + j * p.dw;
    p.cols[idx] = (ih >= 0 && ih < p.in.H && iw >= 0 && iw < p.in.W)
                      ? p.x[(p.n0 + n) * p.in.sN + (p.c0 + c) * p.in.sC + ih * p.in.sH + iw * p.in.sW]
                      : store<T>(compute_t<T>(0));
  }
}

/// Bound on the im2col buffer; a single image and group may still exceed it.
constexpr int64_t kColsBytes = int64_t{256} << 20;

template <typename T>
void conv_fallback(const TsrKernelCall& call, const Conv& cv) {
  const Img& in = cv.in;
  // The weight as [O, K] rows cuBLAS reads as they lie, else a packed copy.
  const T* weight = data_as<const T>(*cv.w);
  int64_t w_row = cv.w_s[0];
  const bool k_dense = (cv.kW == 1 || cv.w_s[3] == 1) && (cv.kH == 1 || cv.w_s[2] == cv.kW) &&
                       (cv.Cg == 1 || cv.w_s[1] == cv.kH * cv.kW);
  if (!k_dense || (cv.Og > 1 && w_row < cv.K)) {
    T* dense = static_cast<T*>(workspace(call, static_cast<size_t>(cv.O * cv.K) * sizeof(T)));
    copy_strided(call, sizeof(T), weight, dense,
                 CopyShape{4, {cv.O, cv.Cg, cv.kH, cv.kW}, {cv.w_s[0], cv.w_s[1], cv.w_s[2], cv.w_s[3]},
                           {cv.K, cv.kH * cv.kW, cv.kW, 1}});
    weight = dense;
    w_row = cv.K;
  }
  T* out = data_as<T>(*cv.out);
  const T* x = data_as<const T>(*cv.x);
  GemmScale scale;
  scale.beta = cv.bias ? 1.0 : 0.0;  // the output holds the bias
  BlasWorkspace blas;
  auto group_gemm = [&](int64_t n0, int64_t images, int64_t g, const Mat& cols) {
    const Mat a{const_cast<T*>(weight + g * cv.Og * w_row), images, cv.Og, cv.K, 0, w_row, 1};
    const Mat c{out + (n0 * cv.O + g * cv.Og) * cv.L, images, cv.Og, cv.L, cv.O * cv.L, cv.L, 1};
    gemm(call, a, cols, c, scale, &c, &blas);
  };

  // A dense 1x1, stride-1, unpadded convolution: each image already is the [C, H*W] matrix.
  const bool positions_dense = (in.W == 1 || in.sW == 1) && (in.H == 1 || in.sH == in.W);
  if (cv.kH == 1 && cv.kW == 1 && cv.sh == 1 && cv.sw == 1 && cv.ph == 0 && cv.pw == 0 && cv.o.H == in.H &&
      cv.o.W == in.W && positions_dense && (cv.Cg == 1 || in.sC >= cv.L) && (in.N == 1 || in.sN >= 0)) {
    for (int64_t g = 0; g < cv.groups; ++g) {
      const Mat cols{const_cast<T*>(x + g * cv.Cg * in.sC), in.N, cv.Cg, cv.L, in.sN, in.sC, 1};
      group_gemm(0, in.N, g, cols);
    }
    return;
  }

  // Chunks of whole images (all groups) when one fits the bound, else one image and group at a time.
  const int64_t image_bytes = cv.groups * cv.K * cv.L * static_cast<int64_t>(sizeof(T));
  const bool whole = image_bytes <= kColsBytes;
  const int64_t chunk = whole ? std::max<int64_t>(1, std::min(in.N, kColsBytes / image_bytes)) : 1;
  const int64_t gchunk = whole ? cv.groups : 1;
  T* cols = static_cast<T*>(workspace(call, static_cast<size_t>(chunk * gchunk * cv.K * cv.L) * sizeof(T)));
  for (int64_t n0 = 0; n0 < in.N; n0 += chunk) {
    const int64_t images = std::min(chunk, in.N - n0);
    for (int64_t g0 = 0; g0 < cv.groups; g0 += gchunk) {
      const Im2col<T> p{x, cols, in, n0, g0 * cv.Cg, gchunk * cv.Cg, cv.kH, cv.kW, cv.o.W, cv.L,
                        cv.sh, cv.sw, cv.ph, cv.pw, cv.dh, cv.dw};
      const int64_t total = images * gchunk * cv.K * cv.L;
      im2col_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(call)>>>(p, total);
      check_launch("im2col_kernel");
      for (int64_t g = g0; g < g0 + gchunk; ++g) {
        const Mat b{cols + (g - g0) * cv.K * cv.L, images, cv.K, cv.L, gchunk * cv.K * cv.L, cv.L, 1};
        group_gemm(n0, images, g, b);
      }
    }
  }
}

// ---- cuDNN ----

#if TESSERA_CUDA_HAS_CUDNN

[[noreturn]] void fail_cudnn(cudnnStatus_t s, const char* what) {
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  // cuDNN 9 reports specific codes (category + detail); ALLOC_FAILED is only the host one.
  const TsrErrorCode code = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                                    s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                                ? TSR_ERROR_OUT_OF_MEMORY
                                : TSR_ERROR_INTERNAL;
  throw sdk::Error(code, std::string(what) + ": " + cudnnGetErrorString(s) +
                             (detail[0] != '\0' ? std::string(" (") + detail + ")" : std::string()));
}
void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) fail_cudnn(s, what);
}

cudnnHandle_t create_cudnn() {
  cudnnHandle_t h = nullptr;
  check_cudnn(cudnnCreate(&h), "cudnnCreate");
  return h;
}

/// Owns one cuDNN descriptor.
template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class Descriptor {
 public:
  Descriptor() { check_cudnn(Create(&d_), "cudnnCreate*Descriptor"); }
  ~Descriptor() { Destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

template <typename T> constexpr cudnnDataType_t kCudnnType = CUDNN_DATA_FLOAT;
template <> constexpr cudnnDataType_t kCudnnType<__half> = CUDNN_DATA_HALF;
template <> constexpr cudnnDataType_t kCudnnType<__nv_bfloat16> = CUDNN_DATA_BFLOAT16;
template <> constexpr cudnnDataType_t kCudnnType<double> = CUDNN_DATA_DOUBLE;

/// Bound on cuDNN's workspace: algorithms wanting more are passed over.
constexpr size_t kCudnnWorkspaceBytes = size_t{256} << 20;

/// The algorithm chosen for one problem, or none (then the fallback runs).
struct Choice {
  bool usable = false;
  cudnnConvolutionFwdAlgo_t algo{};
  cudnnMathType_t math{};
  size_t workspace = 0;
};
using ChoiceKey = std::array<int64_t, 20>;

std::mutex& choice_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: kernels may run during exit
  return *m;
}
std::map<ChoiceKey, Choice>& choices() {
  static auto* c = new std::map<ChoiceKey, Choice>;
  return *c;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/// Algorithms that sum the products of each output's own taps, as cpu does.
/// FFT and Winograd transform whole tiles: a NaN or inf input would spread to
/// outputs whose window does not hold it.
bool direct_algo(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}

/// The first of cuDNN's heuristic ranking that sums directly, is deterministic, keeps float32
/// off TF32 (unless allowed) and off float16 conversion, and fits the
/// workspace bound. Leaves the convolution descriptor's math type set to it.
template <typename T>
Choice choose(cudnnHandle_t h, const TensorDesc& xd, const FilterDesc& wd, const ConvDesc& cd, const TensorDesc& yd) {
  Choice none;
  int max_count = 0;
  if (cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count) != CUDNN_STATUS_SUCCESS || max_count <= 0)
    return none;
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_count));
  int count = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(h, xd.get(), wd.get(), cd.get(), yd.get(), max_count, &count,
                                             perf.data()) != CUDNN_STATUS_SUCCESS)
    return none;
  for (int i = 0; i < count; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC || !direct_algo(p.algo)) continue;
    cudnnMathType_t math = p.mathType;
    if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;  // would round float32 operands to float16
    if constexpr (std::is_same_v<T, float>) {
      if (!allow_tf32()) {
        if (math == CUDNN_TENSOR_OP_MATH) continue;
        math = CUDNN_FMA_MATH;  // DEFAULT_MATH would permit TF32 on Ampere and later
      }
    }
    if (cudnnSetConvolutionMathType(cd.get(), math) != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, xd.get(), wd.get(), cd.get(), yd.get(), p.algo, &bytes) !=
            CUDNN_STATUS_SUCCESS ||
        bytes > kCudnnWorkspaceBytes)
      continue;
    return Choice{true, p.algo, math, bytes};
  }
  return none;
}

/// conv2d through cuDNN, the output already holding the bias (beta = 1) or
/// not (beta = 0). False when cuDNN cannot do it; nothing was queued then
/// except, perhaps, packed copies of the operands.
template <typename T>
bool conv_cudnn(const TsrKernelCall& call, const Conv& cv) {
  const Img& in = cv.in;
  const Img& o = cv.o;
  // The legacy API takes ints: every size, parameter and packed extent must fit.
  for (int64_t v : {in.N, in.C, in.H, in.W, in.N * in.C * in.H * in.W, cv.O, cv.kH, cv.kW, cv.O * cv.K,
                    o.N * o.C * o.H * o.W, cv.ph, cv.pw, cv.sh, cv.sw, cv.dh, cv.dw, cv.groups})
    if (!fits_int(v)) return false;

  const bool tf32 = std::is_same_v<T, float> && allow_tf32();
  const ChoiceKey key{call.device_index, call.dtype, in.N,   in.C,   in.H,   in.W,   cv.O,  cv.kH,     cv.kW, o.H,
                      o.W,               cv.sh,      cv.sw,  cv.ph,  cv.pw,  cv.dh,  cv.dw, cv.groups, tf32,  0};
  Choice choice;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(choice_mutex());
    auto it = choices().find(key);
    if (it != choices().end()) {
      choice = it->second;
      known = true;
    }
  }
  if (known && !choice.usable) return false;

  HandleLease<cudnnHandle_t> lease(call.device_index, create_cudnn);
  const cudnnHandle_t h = lease.get();
  // Before any use of the handle: it may still name a finished call's stream.
  check_cudnn(cudnnSetStream(h, stream_of(call)), "cudnnSetStream");
  constexpr cudnnDataType_t type = kCudnnType<T>;
  constexpr cudnnDataType_t compute = std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  auto i = [](int64_t v) { return static_cast<int>(v); };
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  if constexpr (std::is_same_v<T, float>) math = tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  if constexpr (kIsHalf<T>) math = CUDNN_TENSOR_OP_MATH;
  int n = 0, c = 0, ho = 0, wo = 0;
  const bool described =
      cudnnSetTensor4dDescriptor(xd.get(), CUDNN_TENSOR_NCHW, type, i(in.N), i(in.C), i(in.H), i(in.W)) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetFilter4dDescriptor(wd.get(), type, CUDNN_TENSOR_NCHW, i(cv.O), i(cv.Cg), i(cv.kH), i(cv.kW)) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetTensor4dDescriptor(yd.get(), CUDNN_TENSOR_NCHW, type, i(o.N), i(o.C), i(o.H), i(o.W)) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolution2dDescriptor(cd.get(), i(cv.ph), i(cv.pw), i(cv.sh), i(cv.sw), i(cv.dh), i(cv.dw),
                                      CUDNN_CROSS_CORRELATION, compute) == CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolutionGroupCount(cd.get(), i(cv.groups)) == CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolutionMathType(cd.get(), math) == CUDNN_STATUS_SUCCESS &&
      cudnnGetConvolution2dForwardOutputDim(cd.get(), xd.get(), wd.get(), &n, &c, &ho, &wo) == CUDNN_STATUS_SUCCESS;
  if (!known) {
    // cuDNN pads symmetrically: an output whose size implies more padding at
    // the bottom/right ("same" with an odd total) is the fallback's.
    if (described && n == o.N && c == o.C && ho == o.H && wo == o.W) choice = choose<T>(h, xd, wd, cd, yd);
    std::lock_guard<std::mutex> lock(choice_mutex());
    choices()[key] = choice;
  }
  if (!described || !choice.usable) return false;
  if (cudnnSetConvolutionMathType(cd.get(), choice.math) != CUDNN_STATUS_SUCCESS) return false;

  // Operands as cuDNN takes them: packed NCHW.
  const void* x = data_as<const T>(*cv.x);
  if (!packed(in)) {
    void* dense = workspace(call, static_cast<size_t>(in.N * in.C * in.H * in.W) * sizeof(T));
    copy_strided(call, sizeof(T), x, dense,
                 CopyShape{4, {in.N, in.C, in.H, in.W}, {in.sN, in.sC, in.sH, in.sW},
                           {in.C * in.H * in.W, in.H * in.W, in.W, 1}});
    x = dense;
  }
  const void* w = data_as<const T>(*cv.w);
  if (!packed({cv.O, cv.Cg, cv.kH, cv.kW}, cv.w_s)) {
    void* dense = workspace(call, static_cast<size_t>(cv.O * cv.K) * sizeof(T));
    copy_strided(call, sizeof(T), w, dense,
                 CopyShape{4, {cv.O, cv.Cg, cv.kH, cv.kW}, {cv.w_s[0], cv.w_s[1], cv.w_s[2], cv.w_s[3]},
                           {cv.K, cv.kH * cv.kW, cv.kW, 1}});
    w = dense;
  }
  void* ws = workspace(call, choice.workspace);
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Scale alpha = 1, beta = cv.bias ? 1 : 0;
  const cudnnStatus_t s = cudnnConvolutionForward(h, &alpha, xd.get(), x, wd.get(), w, cd.get(), choice.algo, ws,
                                                  choice.workspace, &beta, yd.get(), data_as<T>(*cv.out));
  // Refused before any launch; cuDNN 9 returns specific codes (NOT_SUPPORTED_SHAPE,
  // BAD_PARAM_MISALIGNED_POINTER, ...) within these categories.
  if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM)
    return false;
  check_cudnn(s, "cudnnConvolutionForward");
  return true;
}

#endif  // TESSERA_CUDA_HAS_CUDNN

template <typename T>
void conv2d_typed(const TsrKernelCall& call, const Conv& cv) {
  DeviceScope scope(call.device_index);
  // Without bias every output element is written by the convolution (beta = 0),
  // except when there are no input channels (K == 0): then out = bias or zeros.
  if (cv.bias != nullptr || cv.K == 0) fill_bias<T>(call, cv);
  if (cv.K == 0) return;
#if TESSERA_CUDA_HAS_CUDNN
  const char* mode = std::getenv("TESSERA_CUDA_CONV");  // "fallback": skip cuDNN (tests the fallback anywhere)
  if (!(mode != nullptr && std::strcmp(mode, "fallback") == 0) && conv_cudnn<T>(call, cv)) return;
#endif
  conv_fallback<T>(call, cv);
}

void conv2d_kernel(const TsrKernelCall& call) {
  const DLTensor& x = sdk::tensor_arg(call, 0, "input", call.dtype);
  const DLTensor& w = sdk::tensor_arg(call, 1, "weight", call.dtype);
  const DLTensor* bias = sdk::optional_tensor_arg(call, 2, "bias", call.dtype);
  const sdk::IntList p = sdk::int_list_arg(call, 3, "params");
  if (p.size != 6) sdk::invalid("argument 'params' must be a list of 6 ints [sh, sw, pad_top, pad_left, dh, dw]");
  const TsrValue& groups = sdk::arg(call, 4, "groups");
  if (groups.tag != TSR_VALUE_INT || groups.as.i <= 0) sdk::invalid("groups must be a positive int");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (w.ndim != 4 || x.ndim != out.ndim) sdk::invalid("conv2d: weight must be 4-D and out of the input's rank");
  if (bias && (bias->ndim != 1 || bias->shape[0] != w.shape[0]))
    sdk::invalid("conv2d: bias must have out_channels elements");

  Conv cv{};
  cv.x = &x;
  cv.w = &w;
  cv.bias = bias;
  cv.out = &out;
  cv.in = img_of(x, "input");
  cv.o = img_of(out, "out");
  cv.O = w.shape[0];
  cv.Cg = w.shape[1];
  cv.kH = w.shape[2];
  cv.kW = w.shape[3];
  cv.groups = groups.as.i;
  cv.sh = p[0];
  cv.sw = p[1];
  cv.ph = p[2];
  cv.pw = p[3];
  cv.dh = p[4];
  cv.dw = p[5];
  for (int d = 0; d < 4; ++d) cv.w_s[d] = w.strides[d];
  if (cv.in.N != cv.o.N || cv.o.C != cv.O || cv.Cg * cv.groups != cv.in.C || cv.O % cv.groups != 0)
    sdk::invalid("conv2d: inconsistent shapes: input " + sdk::shape_text(x) + ", weight " + sdk::shape_text(w) +
                 ", groups " + std::to_string(cv.groups) + ", out " + sdk::shape_text(out));
  if (cv.sh <= 0 || cv.sw <= 0 || cv.dh <= 0 || cv.dw <= 0 || cv.ph < 0 || cv.pw < 0)
    sdk::invalid("conv2d: stride and dilation must be positive and padding non-negative");
  if (!packed(cv.o)) sdk::invalid("conv2d: out must be contiguous");
  cv.Og = cv.O / cv.groups;
  cv.K = cv.Cg * cv.kH * cv.kW;
  cv.L = cv.o.H * cv.o.W;
  if (cv.o.N * cv.O * cv.L == 0) return;

  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("conv2d needs a floating dtype");
    } else {
      conv2d_typed<T>(call, cv);
    }
  });
}

// ---- _conv2d_backward_weight: im2col + one GEMM per group and chunk of images ----

/// Unrolls images [n0, n0 + images) of one group's channels into cols
/// [K][images][L] (K = Cg * kH * kW, L = Ho * Wo): a [K, images * L] matrix
/// whose columns run over the images' output positions, zeros where a tap
/// falls in the padding.
template <typename T>
__global__ void im2col_by_tap_kernel(Im2col<T> p, int64_t images, int64_t total) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t l = idx % p.L;
    int64_t r = idx / p.L;
    const int64_t n = r % images;
    r /= images;
    const int64_t j = r % p.kW;
    r /= p.kW;
    const int64_t i = r % p.kH;
    const int64_t c = r / p.kH;
    const int64_t oh = l / p.Wo, ow = l - oh * p.Wo;
    const int64_t ih = oh * p.sh - p.ph + i * p.dh, iw = ow * p.sw - p.pw + j * p.dw;
    p.cols[idx] = (ih >= 0 && ih < p.in.H && iw >= 0 && iw < p.in.W)
                      ? p.x[(p.n0 + n) * p.in.sN + (p.c0 + c) * p.in.sC + ih * p.in.sH + iw * p.in.sW]
                      : store<T>(compute_t<T>(0));
  }
}

/// conv2d's weight gradient gw[g] = g_pack[g] @ cols[g]^T, with g_pack the
/// group's gradient as [Og, images * L] (packed into the workspace) and cols
/// from im2col_by_tap_kernel: the sum over images and positions is one GEMM's
/// inner dimension, so float16/bfloat16 round once unless the images come in
/// more than one chunk (each chunk's product is then added to the last one's
/// rounded result, beta = 1).
template <typename T>
void conv_backward_weight_typed(const TsrKernelCall& call, const DLTensor& gout, const DLTensor& x, DLTensor& out,
                                const int64_t* p, int64_t groups) {
  DeviceScope scope(call.device_index);
  const Img in = img_of(x, "input"), o = img_of(gout, "grad_output");
  const int64_t O = out.shape[0], Cg = out.shape[1], kH = out.shape[2], kW = out.shape[3];
  const int64_t Og = O / groups, K = Cg * kH * kW, L = o.H * o.W;
  T* gw = data_as<T>(out);
  if (in.N == 0 || L == 0 || K == 0) {
    check_cuda(cudaMemsetAsync(gw, 0, static_cast<size_t>(O * K) * sizeof(T), stream_of(call)), "cudaMemsetAsync");
    return;
  }
  const int64_t per_image = std::max(K, Og) * L * static_cast<int64_t>(sizeof(T));
  const int64_t chunk = std::max<int64_t>(1, std::min(in.N, kColsBytes / per_image));
  T* cols = static_cast<T*>(workspace(call, static_cast<size_t>(K * chunk * L) * sizeof(T)));
  T* gpack = static_cast<T*>(workspace(call, static_cast<size_t>(Og * chunk * L) * sizeof(T)));
  const T* xp = data_as<const T>(x);
  const T* gp = data_as<const T>(gout);
  BlasWorkspace blas;
  for (int64_t n0 = 0; n0 < in.N; n0 += chunk) {
    const int64_t images = std::min(chunk, in.N - n0);
    GemmScale scale;
    scale.beta = n0 == 0 ? 0.0 : 1.0;
    for (int64_t g = 0; g < groups; ++g) {
      const Im2col<T> ip{xp, cols, in, n0, g * Cg, Cg, kH, kW, o.W, L, p[0], p[1], p[2], p[3], p[4], p[5]};
      const int64_t total = K * images * L;
      im2col_by_tap_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(call)>>>(ip, images, total);
      check_launch("im2col_by_tap_kernel");
      // gpack[oc][n][h * Wo + w] = gout[n0 + n, g * Og + oc, h, w]
      copy_strided(call, sizeof(T), gp + n0 * o.sN + g * Og * o.sC, gpack,
                   CopyShape{4, {Og, images, o.H, o.W}, {o.sC, o.sN, o.sH, o.sW}, {images * L, L, o.W, 1}});
      const Mat a{gpack, 1, Og, images * L, 0, images * L, 1};
      const Mat b = Mat{cols, 1, K, images * L, 0, images * L, 1}.t();
      const Mat c{gw + g * Og * K, 1, Og, K, 0, K, 1};
      gemm(call, a, b, c, scale, &c, &blas);
    }
  }
}

void conv2d_backward_weight_kernel(const TsrKernelCall& call) {
  const DLTensor& gout = sdk::tensor_arg(call, 0, "grad_output", call.dtype);
  const DLTensor& x = sdk::tensor_arg(call, 1, "input", call.dtype);
  const sdk::IntList p = sdk::int_list_arg(call, 3, "params");
  if (p.size != 6) sdk::invalid("argument 'params' must be a list of 6 ints [sh, sw, pad_top, pad_left, dh, dw]");
  const TsrValue& groups = sdk::arg(call, 4, "groups");
  if (groups.tag != TSR_VALUE_INT || groups.as.i <= 0) sdk::invalid("groups must be a positive int");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (gout.ndim != 4 || x.ndim != 4 || out.ndim != 4) sdk::invalid("_conv2d_backward_weight: operands must be 4-D");
  const int64_t O = out.shape[0], Cg = out.shape[1];
  if (gout.shape[0] != x.shape[0] || gout.shape[1] != O || Cg * groups.as.i != x.shape[1] || O % groups.as.i != 0)
    sdk::invalid("_conv2d_backward_weight: inconsistent shapes: grad_output " + sdk::shape_text(gout) + ", input " +
                 sdk::shape_text(x) + ", groups " + std::to_string(groups.as.i) + ", out " + sdk::shape_text(out));
  if (p[0] <= 0 || p[1] <= 0 || p[4] <= 0 || p[5] <= 0 || p[2] < 0 || p[3] < 0)
    sdk::invalid("_conv2d_backward_weight: stride and dilation must be positive and padding non-negative");
  if (!packed({out.shape[0], out.shape[1], out.shape[2], out.shape[3]},
              {out.strides[0], out.strides[1], out.strides[2], out.strides[3]}))
    sdk::invalid("_conv2d_backward_weight: out must be contiguous");
  if (sdk::numel(out) == 0) return;
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("_conv2d_backward_weight needs a floating dtype");
    } else {
      conv_backward_weight_typed<T>(call, gout, x, out, p.data, groups.as.i);
    }
  });
}

}  // namespace

void register_conv(const sdk::Host& host) {
  host.register_kernel("conv2d", "cuda", kFloatMask, &sdk::kernel_entry<kCuda, conv2d_kernel>);
  host.register_kernel("_conv2d_backward_weight", "cuda", kFloatMask,
                       &sdk::kernel_entry<kCuda, conv2d_backward_weight_kernel>);
}

}  // namespace tessera::cuda
