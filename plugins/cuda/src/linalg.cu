// The CUDA plugin's linear-algebra kernels (docs/ops/linalg.md): mm, bmm and
// addmm, as the cpu plugin computes them (plugins/cpu/src/linalg.cpp), and the
// GEMM behind them and conv2d's fallback (gemm.cuh).
//
// Floating dtypes go to cuBLAS (row-major C = A B is column-major C^T = B^T A^T),
// each operand as it lies when cuBLAS can describe it (rows or columns dense),
// else copied dense into workspace memory first; a broadcast batch (stride 0)
// stays broadcast. float16/bfloat16 accumulate in float32, float32 in float32
// (TF32 only when allowed), float64 in float64. Integers, float products whose
// output cuBLAS cannot describe, and anything cuBLAS refuses use a tiled
// shared-memory kernel that reads any strides and accumulates integers in the
// unsigned twin, so results wrap exactly as on cpu.
#include "common.cuh"
#include "gemm.cuh"
#include "kernels.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::cuda {

// ---- TF32 switch ----

// Read on every call (a getenv is nothing beside a GEMM), so a program can opt
// in or out at run time; tessera.cuda.set_allow_tf32 sets the variable.
bool allow_tf32() {
  const char* env = std::getenv("TESSERA_CUDA_ALLOW_TF32");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

// ---- strided copy ----

namespace {

template <typename U>
__global__ void copy_strided_kernel(const U* src, U* dst, CopyShape s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, from = 0, to = 0;
#pragma unroll
    for (int d = 3; d >= 0; --d) {
      const int64_t q = rest / s.size[d], idx = rest - q * s.size[d];
      from += idx * s.src[d];
      to += idx * s.dst[d];
      rest = q;
    }
    dst[to] = src[from];
  }
}

template <typename U>
void launch_copy(const TsrKernelCall& call, const void* src, void* dst, const CopyShape& s, int64_t n) {
  copy_strided_kernel<U><<<blocks_for(n), kThreads, 0, stream_of(call)>>>(static_cast<const U*>(src),
                                                                          static_cast<U*>(dst), s, n);
  check_launch("copy_strided_kernel");
}

}  // namespace

void copy_strided(const TsrKernelCall& call, size_t elem_size, const void* src, void* dst, const CopyShape& shape) {
  if (shape.ndim < 1 || shape.ndim > 4) sdk::fail(TSR_ERROR_INTERNAL, "copy_strided takes 1 to 4 dims");
  // Left-pad to four dims so the kernel's loop has a fixed count.
  CopyShape s{4, {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  int64_t n = 1;
  for (int d = 0; d < shape.ndim; ++d) {
    const int to = 4 - shape.ndim + d;
    s.size[to] = shape.size[d];
    s.src[to] = shape.src[d];
    s.dst[to] = shape.dst[d];
    n *= shape.size[d];
  }
  if (n == 0) return;
  switch (elem_size) {
    case 1: return launch_copy<UintOfSize<1>::type>(call, src, dst, s, n);
    case 2: return launch_copy<UintOfSize<2>::type>(call, src, dst, s, n);
    case 4: return launch_copy<UintOfSize<4>::type>(call, src, dst, s, n);
    case 8: return launch_copy<UintOfSize<8>::type>(call, src, dst, s, n);
    default: sdk::fail(TSR_ERROR_INTERNAL, "copy_strided: element size " + std::to_string(elem_size));
  }
}

namespace {

// ---- the tiled kernel ----

// A block computes a 64 x 64 tile of C with 16 x 16 threads, 4 x 4 elements
// each (rows ty + 16 i, columns tx + 16 j), stepping K 16 at a time through
// shared memory.
constexpr int kTile = 64;
constexpr int kTileK = 16;
constexpr int kSide = 16;
constexpr int kPer = kTile / kSide;
constexpr int kTiledThreads = kSide * kSide;

/// The accumulator: the unsigned twin of an integer (32 bits at least, as on
/// cpu, so products wrap without UB), the compute type of a floating dtype.
template <typename T>
using acc_t = std::conditional_t<kIsInteger<T>, std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>, compute_t<T>>;

template <typename T>
__device__ __forceinline__ acc_t<T> to_acc(T v) {
  if constexpr (kIsInteger<T>) return static_cast<acc_t<T>>(v);
  else return load(v);
}

/// Products that must not fuse into the following add (the cpu plugin builds
/// with -ffp-contract=off; a fused beta*self + p can stay finite where it overflows).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
struct TiledArgs {
  const T* a;
  const T* b;
  T* c;
  const T* self;  // null: no beta * self term
  int64_t a_sb, a_sr, a_sc, b_sb, b_sr, b_sc, c_sb, c_sr, c_sc, s_sb, s_sr, s_sc;
  int64_t batch, M, N, K;  // K = 0: no product term
  compute_t<T> alpha, beta;
};

template <typename T>
__global__ void __launch_bounds__(kTiledThreads) tiled_gemm_kernel(TiledArgs<T> g) {
  using A = acc_t<T>;
  using C = compute_t<T>;
  __shared__ A as[kTileK][kTile + 1];  // A's tile, k-major; +1 spreads the stores over the banks
  __shared__ A bs[kTileK][kTile + 1];
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide;
  const int64_t tiles_m = (g.M + kTile - 1) / kTile, tiles_n = (g.N + kTile - 1) / kTile;
  const int64_t per_batch = tiles_m * tiles_n, total = g.batch * per_batch;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {  // uniform over the block: barriers are safe
    const int64_t bi = t / per_batch, rem = t - bi * per_batch;
    const int64_t m0 = rem / tiles_n * kTile, n0 = rem % tiles_n * kTile;
    const T* a = g.a + bi * g.a_sb;
    const T* b = g.b + bi * g.b_sb;
    A acc[kPer][kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i)
#pragma unroll
      for (int j = 0; j < kPer; ++j) acc[i][j] = A(0);
    for (int64_t k0 = 0; k0 < g.K; k0 += kTileK) {
#pragma unroll
      for (int e = 0; e < kTile * kTileK / kTiledThreads; ++e) {
        const int idx = tid + e * kTiledThreads;
        const int ar = idx / kTileK, ak = idx % kTileK;  // consecutive threads walk A's row
        const int64_t m = m0 + ar, ka = k0 + ak;
        as[ak][ar] = (m < g.M && ka < g.K) ? to_acc(a[m * g.a_sr + ka * g.a_sc]) : A(0);
        const int bk = idx / kTile, bc = idx % kTile;  // consecutive threads walk B's row
        const int64_t kb = k0 + bk, n = n0 + bc;
        bs[bk][bc] = (kb < g.K && n < g.N) ? to_acc(b[kb * g.b_sr + n * g.b_sc]) : A(0);
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTileK; ++k) {
        A av[kPer], bv[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) av[i] = as[k][ty + kSide * i];
#pragma unroll
        for (int j = 0; j < kPer; ++j) bv[j] = bs[k][tx + kSide * j];
#pragma unroll
        for (int i = 0; i < kPer; ++i)
#pragma unroll
          for (int j = 0; j < kPer; ++j) acc[i][j] += av[i] * bv[j];
      }
      __syncthreads();
    }
    const bool product = g.K > 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int64_t m = m0 + ty + kSide * i;
      if (m >= g.M) continue;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int64_t n = n0 + tx + kSide * j;
        if (n >= g.N) continue;
        // Read self before writing c: for addmm_ they are the same element.
        if constexpr (kIsInteger<T>) {
          T v = product ? wrap_mul(g.alpha, static_cast<T>(acc[i][j])) : T(0);
          if (g.self) v = wrap_add(wrap_mul(g.beta, g.self[bi * g.s_sb + m * g.s_sr + n * g.s_sc]), v);
          g.c[bi * g.c_sb + m * g.c_sr + n * g.c_sc] = v;
        } else {
          C v = product ? mul_rn(g.alpha, acc[i][j]) : C(0);
          if (g.self) {
            const C s = mul_rn(g.beta, load(g.self[bi * g.s_sb + m * g.s_sr + n * g.s_sc]));
            v = product ? s + v : s;  // K == 0: exactly beta * self, as cpu (no -0 + 0)
          }
          g.c[bi * g.c_sb + m * g.c_sr + n * g.c_sc] = store<T>(v);
        }
      }
    }
  }
}

template <typename T>
void tiled_gemm(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c, compute_t<T> alpha,
                compute_t<T> beta, const Mat* self, bool product) {
  TiledArgs<T> g{static_cast<const T*>(a.data),
                 static_cast<const T*>(b.data),
                 static_cast<T*>(c.data),
                 self ? static_cast<const T*>(self->data) : nullptr,
                 a.sb, a.sr, a.sc, b.sb, b.sr, b.sc, c.sb, c.sr, c.sc,
                 self ? self->sb : 0, self ? self->sr : 0, self ? self->sc : 0,
                 c.batch, c.rows, c.cols, product ? a.cols : 0, alpha, beta};
  const int64_t tiles = c.batch * ((c.rows + kTile - 1) / kTile) * ((c.cols + kTile - 1) / kTile);
  const int blocks = static_cast<int>(std::min<int64_t>(tiles, int64_t{65535} * 8));
  tiled_gemm_kernel<T><<<blocks, kTiledThreads, 0, stream_of(call)>>>(g);
  check_launch("tiled_gemm_kernel");
}

// ---- cuBLAS ----

[[noreturn]] void fail_cublas(cublasStatus_t s, const char* what) {
  const TsrErrorCode code = s == CUBLAS_STATUS_ALLOC_FAILED ? TSR_ERROR_OUT_OF_MEMORY : TSR_ERROR_INTERNAL;
  throw sdk::Error(code, std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}
void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail_cublas(s, what);
}

cublasHandle_t create_cublas() {
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  // Reductions between split-K slices stay in float for float16/bfloat16.
  const cublasStatus_t s = cublasSetMathMode(
      h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  if (s != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    fail_cublas(s, "cublasSetMathMode");
  }
  return h;
}

/// cuBLAS's recommended workspace: 32 MiB on Hopper and later, 4 MiB before.
size_t cublas_workspace_bytes(int device) {
  int major = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  return (major >= 9 ? 32 : 4) * size_t{1} << 20;
}

template <typename T> constexpr cudaDataType kCudaType = CUDA_R_32F;
template <> constexpr cudaDataType kCudaType<__half> = CUDA_R_16F;
template <> constexpr cudaDataType kCudaType<__nv_bfloat16> = CUDA_R_16BF;
template <> constexpr cudaDataType kCudaType<double> = CUDA_R_64F;

/// An operand as cuBLAS reads it: a column-major matrix, op, leading dimension.
struct BlasOperand {
  const void* data;
  int64_t batch_stride;
  cublasOperation_t op;
  int64_t ld;
};

/// The column-major operand holding the transpose of a row-major rows x cols
/// matrix with strides (sr, sc), if there is one: rows dense read as is
/// (OP_N, ld = sr), columns dense read transposed (OP_T, ld = sc). Strides of
/// size-1 dims do not matter.
bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, cublasOperation_t& op, int64_t& ld) {
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols))) {
    op = CUBLAS_OP_N;
    ld = rows == 1 ? std::max<int64_t>(1, cols) : sr;
    return true;
  }
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows))) {
    op = CUBLAS_OP_T;
    ld = cols == 1 ? std::max<int64_t>(1, rows) : sc;
    return true;
  }
  return false;
}

/// m as cuBLAS takes it, copied dense into workspace memory when its layout
/// (or a negative batch stride) does not fit; a broadcast batch is copied once.
BlasOperand blas_operand(const TsrKernelCall& call, const Mat& m, size_t elem) {
  BlasOperand o{m.data, m.batch == 1 ? 0 : m.sb, CUBLAS_OP_N, 1};
  if ((m.batch == 1 || m.sb >= 0) && blas_layout(m.rows, m.cols, m.sr, m.sc, o.op, o.ld)) return o;
  const int64_t batches = m.sb == 0 ? 1 : m.batch;
  void* dense = workspace(call, static_cast<size_t>(batches * m.rows * m.cols) * elem);
  copy_strided(call, elem, m.data, dense,
               CopyShape{3, {batches, m.rows, m.cols}, {m.sb, m.sr, m.sc}, {m.rows * m.cols, m.cols, 1}});
  return {dense, batches == 1 ? 0 : m.rows * m.cols, CUBLAS_OP_N, std::max<int64_t>(1, m.cols)};
}

/// Whether cuBLAS can write c as it lies: rows dense, batches apart.
bool rows_dense(const Mat& c) {
  return (c.cols == 1 || c.sc == 1) && (c.rows == 1 || c.sr >= c.cols) && (c.batch == 1 || c.sb > 0);
}

bool same_place(const Mat& x, const Mat& y) {
  return x.data == y.data && (x.batch == 1 || x.sb == y.sb) && (x.rows == 1 || x.sr == y.sr) &&
         (x.cols == 1 || x.sc == y.sc);
}

/// c = alpha * (a @ b) + beta * c through cuBLAS (c's rows dense; beta == 0:
/// c not read). Returns cuBLAS's status when it is NOT_SUPPORTED (nothing was
/// queued), throws for any other failure.
template <typename T>
cublasStatus_t blas_gemm(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c, compute_t<T> alpha,
                         compute_t<T> beta, BlasWorkspace& ws) {
  const BlasOperand A = blas_operand(call, a, sizeof(T));
  const BlasOperand B = blas_operand(call, b, sizeof(T));
  const int64_t M = c.rows, N = c.cols, K = a.cols;
  const int64_t ldc = M == 1 ? std::max<int64_t>(1, N) : c.sr;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if constexpr (std::is_same_v<T, double>) compute = CUBLAS_COMPUTE_64F;
  if constexpr (std::is_same_v<T, float>) compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  constexpr cudaDataType type = kCudaType<T>;

  HandleLease<cublasHandle_t> lease(call.device_index, create_cublas);
  const cublasHandle_t h = lease.get();
  check_cublas(cublasSetStream(h, stream_of(call)), "cublasSetStream");  // also resets the workspace
  if (ws.data == nullptr) {
    ws.bytes = cublas_workspace_bytes(call.device_index);
    ws.data = workspace(call, ws.bytes);
  }
  check_cublas(cublasSetWorkspace(h, ws.data, ws.bytes), "cublasSetWorkspace");
  // C^T (N x M, column-major) = B^T A^T.
  cublasStatus_t s;
  if (c.batch == 1) {
    s = cublasGemmEx_64(h, B.op, A.op, N, M, K, &alpha, B.data, type, B.ld, A.data, type, A.ld, &beta, c.data, type,
                        ldc, compute, CUBLAS_GEMM_DEFAULT);
  } else {
    s = cublasGemmStridedBatchedEx_64(h, B.op, A.op, N, M, K, &alpha, B.data, type, B.ld, B.batch_stride, A.data,
                                      type, A.ld, A.batch_stride, &beta, c.data, type, ldc, c.sb, c.batch, compute,
                                      CUBLAS_GEMM_DEFAULT);
  }
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) return s;
  check_cublas(s, c.batch == 1 ? "cublasGemmEx_64" : "cublasGemmStridedBatchedEx_64");
  return s;
}

/// gemm() through cuBLAS where it can write c (rows or columns dense);
/// false when the tiled kernel must do it.
template <typename T>
bool try_blas(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c, compute_t<T> alpha,
              compute_t<T> beta, const Mat* self, BlasWorkspace& ws) {
  Mat A = a, B = b, Cm = c, St{};
  const Mat* S = self;
  if (!rows_dense(c)) {
    if (!rows_dense(c.t())) return false;
    // Columns dense: compute c^T = b^T a^T instead.
    A = b.t();
    B = a.t();
    Cm = c.t();
    if (self) {
      St = self->t();
      S = &St;
    }
  }
  if (S && !same_place(*S, Cm)) {  // GEMM's beta adds self in place
    copy_strided(call, sizeof(T), S->data, Cm.data,
                 CopyShape{3, {Cm.batch, Cm.rows, Cm.cols}, {S->sb, S->sr, S->sc}, {Cm.sb, Cm.sr, Cm.sc}});
  }
  return blas_gemm<T>(call, A, B, Cm, alpha, S ? beta : compute_t<T>(0), ws) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace

void gemm(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c, const GemmScale& scale,
          const Mat* self, BlasWorkspace* ws) {
  if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows || a.batch != c.batch || b.batch != c.batch ||
      (self && (self->rows != c.rows || self->cols != c.cols || self->batch != c.batch)))
    sdk::fail(TSR_ERROR_INTERNAL, "gemm: inconsistent operand shapes");
  if (c.batch == 0 || c.rows == 0 || c.cols == 0) return;
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid("matrix multiplication is not defined for bool tensors");
    } else {
      C alpha, beta;
      bool with_self;
      if constexpr (kIsInteger<T>) {
        alpha = static_cast<T>(scale.int_alpha);
        beta = static_cast<T>(scale.int_beta);
        with_self = self != nullptr && scale.int_beta != 0;
      } else {
        alpha = static_cast<C>(scale.alpha);
        beta = static_cast<C>(scale.beta);
        with_self = self != nullptr && beta != C(0);  // cpu's test, after the conversion
      }
      const Mat* s = with_self ? self : nullptr;
      // No product for K == 0, nor for a floating alpha == 0: BLAS then skips
      // a @ b (cpu's OpenBLAS too), so a NaN or inf there does not propagate.
      bool product = a.cols > 0;
      if constexpr (kIsFloating<T>) {
        product = product && alpha != C(0);
        BlasWorkspace own;
        if (product && try_blas<T>(call, a, b, c, alpha, beta, s, ws ? *ws : own)) return;
      }
      tiled_gemm<T>(call, a, b, c, alpha, beta, s, product);
    }
  });
}

namespace {

// ---- the kernels ----

void mm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mat2 = sdk::tensor_arg(call, 1, "mat2", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (self.ndim != 2 || mat2.ndim != 2 || out.ndim != 2 || self.shape[1] != mat2.shape[0] ||
      out.shape[0] != self.shape[0] || out.shape[1] != mat2.shape[1]) {
    sdk::invalid("expected self [M, K], mat2 [K, N], out [M, N]; got " + sdk::shape_text(self) + ", " +
                 sdk::shape_text(mat2) + ", " + sdk::shape_text(out));
  }
  DeviceScope scope(call.device_index);
  gemm(call, mat_of(self), mat_of(mat2), mat_of(out), GemmScale{}, nullptr);
}

void bmm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& mat2 = sdk::tensor_arg(call, 1, "mat2", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (self.ndim != 3 || mat2.ndim != 3 || out.ndim != 3 || self.shape[0] != mat2.shape[0] ||
      out.shape[0] != self.shape[0] || self.shape[2] != mat2.shape[1] || out.shape[1] != self.shape[1] ||
      out.shape[2] != mat2.shape[2]) {
    sdk::invalid("expected self [B, M, K], mat2 [B, K, N], out [B, M, N]; got " + sdk::shape_text(self) + ", " +
                 sdk::shape_text(mat2) + ", " + sdk::shape_text(out));
  }
  DeviceScope scope(call.device_index);
  gemm(call, mat_of(self), mat_of(mat2), mat_of(out), GemmScale{}, nullptr);
}

/// An integer beta/alpha (INT or BOOL; FLOAT is refused, as on cpu).
int64_t int_scale(const TsrValue& v) { return v.tag == TSR_VALUE_BOOL ? (v.as.b != 0) : v.as.i; }

void addmm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& m1 = sdk::tensor_arg(call, 1, "mat1", call.dtype);
  const DLTensor& m2 = sdk::tensor_arg(call, 2, "mat2", call.dtype);
  const TsrValue& beta = sdk::arg(call, 3, "beta");
  const TsrValue& alpha = sdk::arg(call, 4, "alpha");
  sdk::check_scalar(beta, "beta");
  sdk::check_scalar(alpha, "alpha");
  DLTensor& out = sdk::output(call, 0, call.dtype);
  if (self.ndim != 2 || m1.ndim != 2 || m2.ndim != 2 || out.ndim != 2 || m1.shape[1] != m2.shape[0] ||
      out.shape[0] != m1.shape[0] || out.shape[1] != m2.shape[1] || !sdk::same_shape(self, out)) {
    sdk::invalid("expected self [M, N], mat1 [M, K], mat2 [K, N], out [M, N]; got " + sdk::shape_text(self) + ", " +
                 sdk::shape_text(m1) + ", " + sdk::shape_text(m2) + ", " + sdk::shape_text(out));
  }
  GemmScale scale;
  if (call.dtype == TSR_DTYPE_BOOL) sdk::invalid("matrix multiplication is not defined for bool tensors");
  if (call.dtype == TSR_DTYPE_FLOAT16 || call.dtype == TSR_DTYPE_BFLOAT16 || call.dtype == TSR_DTYPE_FLOAT32 ||
      call.dtype == TSR_DTYPE_FLOAT64) {
    scale.beta = sdk::scalar_as<double>(beta);
    scale.alpha = sdk::scalar_as<double>(alpha);
  } else {
    if (beta.tag == TSR_VALUE_FLOAT || alpha.tag == TSR_VALUE_FLOAT)
      sdk::invalid("integer addmm takes integer beta and alpha");
    scale.int_beta = int_scale(beta);
    scale.int_alpha = int_scale(alpha);
  }
  const Mat s = mat_of(self);
  DeviceScope scope(call.device_index);
  gemm(call, mat_of(m1), mat_of(m2), mat_of(out), scale, &s);
}

}  // namespace

void register_linalg(const sdk::Host& host) {
  host.register_kernel("mm", "cuda", kNumericMask, &sdk::kernel_entry<kCuda, mm_kernel>);
  host.register_kernel("bmm", "cuda", kNumericMask, &sdk::kernel_entry<kCuda, bmm_kernel>);
  host.register_kernel("addmm", "cuda", kNumericMask, &sdk::kernel_entry<kCuda, addmm_kernel>);
}

}  // namespace tessera::cuda
