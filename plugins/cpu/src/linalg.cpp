// mm and bmm. mm is bmm with one batch.
//
// float32/float64 go to OpenBLAS (cblas_sgemm/dgemm, row-major). Each operand is
// handed over as it lies in memory when a BLAS layout fits its strides (rows
// dense = no transpose, columns dense = transpose), so transposed views cost no
// copy; only layouts BLAS cannot describe (e.g. both strides > 1, broadcast
// rows, negative strides) are packed first. A broadcast batch (stride 0) stays
// broadcast: one matrix is packed and reused.
// bfloat16 products from kOneDnnMinWork multiply-adds up (mm, bmm, and the
// product inside addmm) go to oneDNN's matmul first where the plugin has it
// (matmul_onednn.hpp: AMX kernels, ~6-10x faster than the float32 path at
// 128^3-512^3, or AVX512-BF16 ones on AMD, ~2x), with float32 accumulation and
// one rounding per output element.
// Otherwise, and for float16 (oneDNN 2.6 has no float16 CPU matmul),
// float16/bfloat16 are converted to float32, multiplied by sgemm (float32
// accumulation) and rounded back. Integer dtypes use a cache-blocked loop with
// wrapping accumulation (uint32 for <= 32-bit types, uint64 for int64).
#include "isa.hpp"
#include "blas.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "kernels.hpp"
#include "matmul_onednn.hpp"
#include "parallel.hpp"
#include "shape_small_sgemm.hpp"


#include <algorithm>
#include <climits>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

// A batch of matrices: element (b, r, c) lives at data + b*sb + r*sr + c*sc
// (strides in elements).
struct Mat {
  char* data;
  int64_t batch, rows, cols;
  int64_t sb, sr, sc;
};

template <typename T>
inline T& at(const Mat& m, int64_t b, int64_t r, int64_t c) {
  return reinterpret_cast<T*>(m.data)[b * m.sb + r * m.sr + c * m.sc];
}

inline bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Batched products of up to this many multiply-adds each are spread over
// threads by batch (each one serial); larger ones thread inside BLAS.
inline constexpr int64_t kBatchParallelMaxWork = int64_t{256} * 256 * 256;
// Batches per thread: at least ~1M multiply-adds each (a thread's wake-up is
// worth a few microseconds).
inline int64_t batch_grain(int64_t work_per_batch) {
  return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, work_per_batch));
}

// Up to this many multiply-adds per matrix, float32 products use small_sgemm
// (measured single-threaded on AVX2 against OpenBLAS 0.3.21: ~1.3x faster at
// 64^3, even at 256^3, slower at 512^3 and beyond, where BLAS's full packing
// and blocking win). With AVX-512, OpenBLAS's SkylakeX kernels win from ~96^3
// (bmm of 16 x 128^3: 2.0x PyTorch's time with small_sgemm, 1.25x with BLAS).
#ifdef __AVX512F__
inline constexpr int64_t kSmallGemmWork = 64 * 64 * 64;
#else
inline constexpr int64_t kSmallGemmWork = 256 * 256 * 256;
#endif

// From this many multiply-adds per product (all batches together), bfloat16
// tries oneDNN (matmul_onednn.hpp) before the float32 path; oneDNN gets one
// thread per kOneDnnWorkPerThread of them (at most the idle cores, as
// parallel_for). Measured on the development machine (2 cores, AMX), bfloat16
// mm through the Python module, oneDNN against TESSERA_CPU_ONEDNN=0, 1 thread:
// with oneDNN tried at every size, 24^3 3.7 vs 2.9 us, 32^3 3.5 vs 2.7 us,
// 8x64x64 3.4 vs 2.1 us (oneDNN's fixed ~2-3 us per call: the plan look-up,
// memory objects, the stream), 40^3 4.2 vs 5.8 us; with this threshold 48^3
// 4.1 vs 4.6 us, 64^3 3.8 vs 7.2 us, 128^3 8.9 vs 48 us, 16 x 16^3 4.8 vs
// 6.3 us. oneDNN alone, 1 thread against 2: 2 threads take twice as long up to
// 96^3 (waking the team), as long at 128^3-192^3, and less from 256^3 (0.7x;
// 0.5x at 512^3).
inline constexpr int64_t kOneDnnMinWork = int64_t{1} << 16;
inline constexpr int64_t kOneDnnWorkPerThread = int64_t{1} << 23;

// The bfloat16 product c = a @ b on oneDNN, c bfloat16 or (f32_out) float32
// with c's strides. False: not tried (too small, oneDNN unavailable) or
// refused; nothing of c that matters was written.
bool onednn_bf16(const Mat& a, const Mat& b, const Mat& c, bool f32_out) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  // In double: the product of the sizes may pass int64 (oneDNN refuses those).
  const double work = static_cast<double>(c.batch) * static_cast<double>(M) * static_cast<double>(N) *
                      static_cast<double>(K);
  if (work < kOneDnnMinWork || !onednn::matmul_available()) return false;
  const double want = std::min(static_cast<double>(max_threads()), work / static_cast<double>(kOneDnnWorkPerThread));
  const int threads = static_cast<int>(idle_threads(std::max<int64_t>(1, static_cast<int64_t>(want))));
  const onednn::MatmulProblem p{c.batch, M, N, K, a.sb, a.sr, a.sc, b.sb, b.sr, b.sc, c.sb, c.sr, c.sc};
  return onednn::matmul_bf16(p, a.data, b.data, c.data, f32_out, threads);
}

// The float32 product c = a @ b (every matrix pair of the batch in one oneDNN
// call) from kSmallGemmWork multiply-adds per pair (smaller ones are
// small_sgemm's); threads by the whole batch's work. False: not tried or
// refused (matmul_f32); nothing of c that matters was written.
bool onednn_f32(const Mat& a, const Mat& b, const Mat& c) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  if (!onednn::matmul_f32_enabled()) return false;
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (work < static_cast<double>(kSmallGemmWork)) return false;
  const double all = work * static_cast<double>(c.batch);
  const double want = std::min(static_cast<double>(max_threads()), all / static_cast<double>(kOneDnnWorkPerThread));
  const int threads = static_cast<int>(idle_threads(std::max<int64_t>(1, static_cast<int64_t>(want))));
  const onednn::MatmulProblem p{c.batch, M, N, K, a.sb, a.sr, a.sc, b.sb, b.sr, b.sc, c.sb, c.sr, c.sc};
  return onednn::matmul_f32(p, reinterpret_cast<const float*>(a.data), reinterpret_cast<const float*>(b.data),
                            reinterpret_cast<float*>(c.data), threads);
}

// An operand as BLAS reads it: row-major with leading dimension ld, possibly
// transposed, consecutive batches batch_stride elements apart.
template <typename P>
struct BlasOperand {
  const P* data;
  int64_t batch_stride;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};

// The row-major BLAS description of a rows x cols matrix with strides (sr, sc),
// if there is one. Strides of size-1 dims are irrelevant and ignored.
bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, CBLAS_TRANSPOSE& trans, int64_t& ld) {
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols))) {
    trans = CblasNoTrans;  // rows are dense
    ld = rows == 1 ? std::max<int64_t>(1, cols) : sr;
    return fits_int(ld);
  }
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows))) {
    trans = CblasTrans;  // columns are dense: the transpose is row-major
    ld = cols == 1 ? std::max<int64_t>(1, rows) : sc;
    return fits_int(ld);
  }
  return false;
}

// Copies m (one matrix if its batch is broadcast) into dense row-major P.
template <typename T, typename P>
void pack(const Mat& m, int64_t batches, P* dst) {
  const int64_t rows = batches * m.rows;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, m.cols)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / m.rows, i = r % m.rows;
      P* out = dst + r * m.cols;
      if constexpr (kIsHalfLike<T> && std::is_same_v<P, float>) {
        if (m.sc == 1 || m.cols == 1) {  // a dense row: vector conversion
          widen_block(&at<T>(m, b, i, 0), out, m.cols);
          continue;
        }
      }
      for (int64_t j = 0; j < m.cols; ++j) out[j] = convert<P>(at<T>(m, b, i, j));
    }
  });
}

template <typename T, typename P>
BlasOperand<P> prepare(const Mat& m, std::vector<P>& buffer) {
  if constexpr (std::is_same_v<T, P>) {
    BlasOperand<P> op{reinterpret_cast<const P*>(m.data), m.sb, CblasNoTrans, 0};
    if (blas_layout(m.rows, m.cols, m.sr, m.sc, op.trans, op.ld)) return op;
  }
  const int64_t batches = m.sb == 0 ? 1 : m.batch;
  buffer.resize(static_cast<size_t>(batches * m.rows * m.cols));
  if constexpr (kIsHalfLike<T>) {
    CBLAS_TRANSPOSE trans;
    int64_t ld;
    if (m.rows > 1 && m.sc != 1 && blas_layout(m.rows, m.cols, m.sr, m.sc, trans, ld) && trans == CblasTrans) {
      // Dense columns (a transposed view): widen them as the rows of the
      // transpose and let BLAS transpose, rather than gather element by element.
      const Mat t{m.data, m.batch, m.cols, m.rows, m.sb, m.sc, m.sr};
      pack<T, P>(t, batches, buffer.data());
      return {buffer.data(), batches == 1 ? 0 : m.rows * m.cols, CblasTrans, m.rows};
    }
  }
  pack<T, P>(m, batches, buffer.data());
  return {buffer.data(), batches == 1 ? 0 : m.rows * m.cols, CblasNoTrans, std::max<int64_t>(1, m.cols)};
}

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
}

// c = a @ b by loops: integer dtypes, and float ones whose sizes exceed BLAS's
// int. Rows of c are split over threads; for each block of kCols output
// columns, a row accumulates sum_k a[i,k] * b[k, block] in registers/L1 while
// the b block is reused across the thread's rows.
template <typename T, typename Acc>
void gemm_loop(const Mat& a, const Mat& b, const Mat& c) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  // The inner loop wants b's rows dense; pack b otherwise.
  std::vector<T> packed;
  const T* bdata = reinterpret_cast<const T*>(b.data);
  int64_t b_sb = b.sb, b_sr = b.sr;
  if (!(b.sc == 1 || N == 1)) {
    const int64_t batches = b.sb == 0 ? 1 : b.batch;
    packed.resize(static_cast<size_t>(batches * K * N));
    pack<T, T>(b, batches, packed.data());
    bdata = packed.data();
    b_sb = batches == 1 ? 0 : K * N;
    b_sr = N;
  }
  constexpr int64_t kCols = 256;
  const int64_t work_per_row = std::max<int64_t>(1, N * K);
  parallel_for(c.batch * M, std::max<int64_t>(1, kGrain / work_per_row), [&](int64_t r0, int64_t r1) {
    Acc acc[kCols];
    for (int64_t j0 = 0; j0 < N; j0 += kCols) {
      const int64_t jn = std::min(kCols, N - j0);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / M, i = r % M;
        std::fill(acc, acc + jn, Acc{});
        const T* bmat = bdata + bi * b_sb + j0;
        for (int64_t k = 0; k < K; ++k) {
          const Acc av = static_cast<Acc>(at<T>(a, bi, i, k));
          const T* brow = bmat + k * b_sr;
          for (int64_t j = 0; j < jn; ++j) acc[j] += av * static_cast<Acc>(brow[j]);
        }
        for (int64_t j = 0; j < jn; ++j) at<T>(c, bi, i, j0 + j) = static_cast<T>(acc[j]);
      }
    }
  });
}

inline void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const float* a, int64_t lda, const float* x,
                 int64_t incx, float* y, int64_t incy) {
  blas().sgemv(CblasRowMajor, t, static_cast<int>(rows), static_cast<int>(cols), 1.0f, a, static_cast<int>(lda), x,
               static_cast<int>(incx), 0.0f, y, static_cast<int>(incy));
}
inline void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const double* a, int64_t lda, const double* x,
                 int64_t incx, double* y, int64_t incy) {
  blas().dgemv(CblasRowMajor, t, static_cast<int>(rows), static_cast<int>(cols), 1.0, a, static_cast<int>(lda), x,
               static_cast<int>(incx), 0.0, y, static_cast<int>(incy));
}

inline float dot(int64_t n, const float* x, int64_t incx, const float* y, int64_t incy) {
  return blas().sdot(static_cast<int>(n), x, static_cast<int>(incx), y, static_cast<int>(incy));
}
inline double dot(int64_t n, const double* x, int64_t incx, const double* y, int64_t incy) {
  return blas().ddot(static_cast<int>(n), x, static_cast<int>(incx), y, static_cast<int>(incy));
}

// From this many multiply-adds a GEMV runs on OpenBLAS's threads; below, on the
// calling thread. Measured (Zen 4 VM, 1 against 2 threads, idle workers
// sleeping as under OMP_WAIT_POLICY=passive): 512^2 14 vs 52 us, 1024^2 55 vs
// 78 us, 2048^2 303 vs 165 us. OpenBLAS itself threads from 9216.
inline constexpr int64_t kGemvThreadWork = int64_t{1} << 21;

// Matrix x vector (N == 1) and vector x matrix (M == 1) of float32/float64 as
// BLAS GEMVs, reading the vector and writing the result through their strides.
// False (nothing done) when a layout has no GEMV form (a zero or negative
// stride, a matrix with neither dense rows nor dense columns, sizes past int).
template <typename T>
bool matvec(const Mat& a, const Mat& b, const Mat& c) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  if (M == 0 || N == 0 || c.batch == 0) return true;  // no element (BLAS would refuse a zero leading dim)
  if (!fits_int(M) || !fits_int(N) || !fits_int(K)) return false;
  const T* ad = reinterpret_cast<const T*>(a.data);
  const T* bd = reinterpret_cast<const T*>(b.data);
  T* cd = reinterpret_cast<T*>(c.data);
  CBLAS_TRANSPOSE trans;
  int64_t ld;
  const ThreadLimit threads(M * N * K < kGemvThreadWork ? 1 : idle_threads(max_threads()));
  if (M == 1 && N == 1) {  // c[0, 0] = a[0, :] . b[:, 0]: BLAS's dot, not a one-row GEMV (1M float32: 1.4x faster)
    const int64_t incx = K == 1 ? 1 : a.sc, incy = K == 1 ? 1 : b.sr;
    if (incx > 0 && incy > 0 && fits_int(incx) && fits_int(incy)) {
      for (int64_t bi = 0; bi < c.batch; ++bi) cd[bi * c.sb] = dot(K, ad + bi * a.sb, incx, bd + bi * b.sb, incy);
      return true;
    }
  }
  if (N == 1) {  // c[:, 0] = a @ b[:, 0]
    const int64_t incx = K == 1 ? 1 : b.sr, incy = M == 1 ? 1 : c.sr;
    if (incx <= 0 || incy <= 0 || !fits_int(incx) || !fits_int(incy) || !blas_layout(M, K, a.sr, a.sc, trans, ld))
      return false;
    for (int64_t bi = 0; bi < c.batch; ++bi) {
      if (trans == CblasNoTrans) {
        gemv(CblasNoTrans, M, K, ad + bi * a.sb, ld, bd + bi * b.sb, incx, cd + bi * c.sb, incy);
      } else {  // a's transpose is row-major K x M
        gemv(CblasTrans, K, M, ad + bi * a.sb, ld, bd + bi * b.sb, incx, cd + bi * c.sb, incy);
      }
    }
    return true;
  }
  // M == 1: c[0, :] = b^T @ a[0, :]
  const int64_t incx = K == 1 ? 1 : a.sc, incy = N == 1 ? 1 : c.sc;
  if (incx <= 0 || incy <= 0 || !fits_int(incx) || !fits_int(incy) || !blas_layout(K, N, b.sr, b.sc, trans, ld))
    return false;
  for (int64_t bi = 0; bi < c.batch; ++bi) {
    if (trans == CblasNoTrans) {
      gemv(CblasTrans, K, N, bd + bi * b.sb, ld, ad + bi * a.sb, incx, cd + bi * c.sb, incy);
    } else {  // b's transpose is row-major N x K
      gemv(CblasNoTrans, N, K, bd + bi * b.sb, ld, ad + bi * a.sb, incx, cd + bi * c.sb, incy);
    }
  }
  return true;
}

template <typename T>
void fill_zero(const Mat& c) {
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < c.rows; ++i) {
      for (int64_t j = 0; j < c.cols; ++j) at<T>(c, b, i, j) = T(0.0f);
    }
  }
}

template <typename T>
void matmul_floating(const Mat& a, const Mat& b, const Mat& c) {
  using P = compute_t<T>;  // float32 for the half types
  const int64_t M = a.rows, K = a.cols, N = b.cols, batch = c.batch;
  if (K == 0) {
    fill_zero<T>(c);
    return;
  }
  if constexpr (std::is_same_v<T, sdk::BFloat16>) {
    if (onednn_bf16(a, b, c, false)) return;
  }
  if (!fits_int(M) || !fits_int(N) || !fits_int(K)) {
    gemm_loop<T, P>(a, b, c);
    return;
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if ((N == 1 || M == 1) && matvec<T>(a, b, c)) return;
  }
  if constexpr (std::is_same_v<T, float> && small_sgemm::kAvailable) {
    // Small and medium float32 products: a register-blocked kernel beats BLAS's
    // fixed costs (packing both operands, thread wake-up) there.
    constexpr int64_t kSide = int64_t{1} << 20;  // keeps M * N * K from overflowing
    // A read down its columns (a transposed view) costs the kernel a cache line
    // per element beyond ~128^3, where BLAS (which packs A) is faster.
    const int64_t limit = (a.sc == 1 || K == 1) ? kSmallGemmWork : kSmallGemmWork / 8;
    if (M <= kSide && N <= kSide && K <= kSide && M * N * K <= limit && (b.sc == 1 || N == 1) &&
        (c.sc == 1 || N == 1)) {
      const float* ad = reinterpret_cast<const float*>(a.data);
      const float* bd = reinterpret_cast<const float*>(b.data);
      float* cd = reinterpret_cast<float*>(c.data);
      parallel_for(batch, batch_grain(M * N * K), [&](int64_t b0, int64_t b1) {
        for (int64_t bi = b0; bi < b1; ++bi)
          small_sgemm::gemm(M, N, K, ad + bi * a.sb, a.sr, a.sc, bd + bi * b.sb, b.sr, cd + bi * c.sb, c.sr);
      });
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_f32(a, b, c)) return;
  }
  std::vector<P> abuf, bbuf, cbuf;
  const BlasOperand<P> A = prepare<T, P>(a, abuf);
  const BlasOperand<P> B = prepare<T, P>(b, bbuf);
  // Write straight into c when its rows are dense, else into a dense buffer.
  bool direct = false;
  P* cdata = nullptr;
  int64_t c_sb = 0, ldc = 0;
  if constexpr (std::is_same_v<T, P>) {
    if ((N == 1 || c.sc == 1) && (M == 1 || c.sr >= N)) {
      ldc = M == 1 ? N : c.sr;
      direct = fits_int(ldc);
      cdata = reinterpret_cast<P*>(c.data);
      c_sb = c.sb;
    }
  }
  if (!direct) {
    cbuf.resize(static_cast<size_t>(batch * M * N));
    cdata = cbuf.data();
    c_sb = M * N;
    ldc = N;
  }
  auto products = [&](int64_t b0, int64_t b1) {
    for (int64_t bi = b0; bi < b1; ++bi) {
      gemm(A.trans, B.trans, M, N, K, A.data + bi * A.batch_stride, A.ld, B.data + bi * B.batch_stride, B.ld,
           cdata + bi * c_sb, ldc);
    }
  };
  // Many small products: one thread per group of batches, each GEMM on one
  // thread (OpenBLAS's OpenMP build stays serial inside a parallel region).
  // Waking BLAS's team for every 128^3 product of a bmm cost 2x PyTorch's time
  // at 2 threads. Large products keep BLAS's own threads.
  if (batch > 1 && M * N * K <= kBatchParallelMaxWork) {
    parallel_for(batch, batch_grain(M * N * K), products);
  } else {
    products(0, batch);
  }
  if (!direct) {
    parallel_for(batch * M, std::max<int64_t>(1, kGrain / N), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const P* row = cbuf.data() + r * N;
        if constexpr (kIsHalfLike<T>) {
          if (c.sc == 1 || N == 1) {
            narrow_block(row, &at<T>(c, r / M, r % M, 0), N);
            continue;
          }
        }
        for (int64_t j = 0; j < N; ++j) at<T>(c, r / M, r % M, j) = convert<T>(row[j]);
      }
    });
  }
}

template <typename T>
using int_acc_t = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

void matmul(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c) {
  if (c.batch == 0 || c.rows == 0 || c.cols == 0) return;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("matrix multiplication is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      gemm_loop<T, int_acc_t<T>>(a, b, c);  // unsigned accumulation wraps without UB
    } else {
      matmul_floating<T>(a, b, c);
    }
  });
}

// ---- addmm: out = beta * self + alpha * (a @ b) ----

inline void gemm_ab(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
inline void gemm_ab(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// out[i, j] = f(i, j) over the rows of out, in parallel.
template <typename F>
void for_each_row(const Mat& c, const F& f) {
  parallel_for(c.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, c.cols)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < c.cols; ++j) f(i, j);
  });
}

template <typename T>
void addmm_floating(const Mat& self, const Mat& a, const Mat& b, const Mat& c, double beta_d, double alpha_d) {
  using P = compute_t<T>;
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  const P beta = static_cast<P>(beta_d), alpha = static_cast<P>(alpha_d);
  if (!fits_int(M) || !fits_int(N) || !fits_int(K)) invalid("matrix sizes beyond the BLAS int range");
  const bool c_is_self = c.data == self.data && c.sr == self.sr && c.sc == self.sc;
  if (K == 0) {  // the product is zero: out = beta * self
    for_each_row(c, [&](int64_t i, int64_t j) {
      at<T>(c, 0, i, j) = beta == P(0) ? convert<T>(P(0)) : convert<T>(beta * convert<P>(at<T>(self, 0, i, j)));
    });
    return;
  }
  std::vector<P> abuf, bbuf, cbuf;
  // out = beta * self + prod, prod = alpha * (a @ b) in cbuf (dense M x N).
  auto finish = [&] {
    if constexpr (kIsHalfLike<T>) {
      if (c.sc == 1 || N == 1) {  // dense rows of out: finish each row in float32, round it at once
        parallel_for(M, std::max<int64_t>(1, kGrain / N), [&](int64_t r0, int64_t r1) {
          for (int64_t i = r0; i < r1; ++i) {
            P* row = cbuf.data() + i * N;
            if (beta != P(0))
              for (int64_t j = 0; j < N; ++j) row[j] = beta * convert<P>(at<T>(self, 0, i, j)) + row[j];
            narrow_block(row, &at<T>(c, 0, i, 0), N);
          }
        });
        return;
      }
    }
    for_each_row(c, [&](int64_t i, int64_t j) {
      const P prod = cbuf[static_cast<size_t>(i * N + j)];
      at<T>(c, 0, i, j) = convert<T>(beta == P(0) ? prod : beta * convert<P>(at<T>(self, 0, i, j)) + prod);
    });
  };
  bool try_onednn = std::is_same_v<T, sdk::BFloat16>;
  if constexpr (std::is_same_v<T, float>) {
    try_onednn = onednn::matmul_f32_enabled() && static_cast<double>(M) * N * K >= static_cast<double>(kSmallGemmWork);
    // The product straight into out's dense rows (out never overlaps mat1 or
    // mat2, and is self itself or apart from it), then alpha and beta * self
    // in place, row by row: no product buffer and no pass copying it out.
    if (try_onednn && alpha != P(0) && c.sc == 1 && (beta == P(0) || !c_is_self) && onednn_f32(a, b, c)) {
      parallel_for(M, std::max<int64_t>(1, kGrain / N), [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
          float* row = &at<float>(c, 0, i, 0);
          if (alpha != P(1))
            for (int64_t j = 0; j < N; ++j) row[j] *= alpha;
          if (beta == P(0)) continue;
          const float* s = &at<float>(self, 0, i, 0);
          if (self.sc == 1) {
            for (int64_t j = 0; j < N; ++j) row[j] = beta * s[j] + row[j];
          } else if (self.sc == 0) {
            const float bs = beta * s[0];
            for (int64_t j = 0; j < N; ++j) row[j] = bs + row[j];
          } else {
            for (int64_t j = 0; j < N; ++j) row[j] = beta * s[j * self.sc] + row[j];
          }
        }
      });
      return;
    }
  }
  if (try_onednn) {
    // oneDNN writes the float32 product; alpha and beta * self are applied
    // below in float32 as on the BLAS path, and out is rounded once. alpha 0:
    // BLAS computes no product (inf and nan in mat1, mat2 do not propagate).
    cbuf.resize(static_cast<size_t>(M * N));
    const Mat prod{reinterpret_cast<char*>(cbuf.data()), 1, M, N, 0, N, 1};
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      done = alpha != P(0) && onednn_f32(a, b, prod);
    } else {
      done = alpha != P(0) && onednn_bf16(a, b, prod, true);
    }
    if (done) {
      if (alpha != P(1)) {
        parallel_for(M, std::max<int64_t>(1, kGrain / N), [&](int64_t r0, int64_t r1) {
          for (int64_t k = r0 * N; k < r1 * N; ++k) cbuf[static_cast<size_t>(k)] *= alpha;
        });
      }
      finish();
      return;
    }
  }
  const BlasOperand<P> A = prepare<T, P>(a, abuf);
  const BlasOperand<P> B = prepare<T, P>(b, bbuf);
  if constexpr (std::is_same_v<T, P>) {
    // out's rows are dense: GEMM's beta does the addition in place.
    if ((N == 1 || c.sc == 1) && (M == 1 || c.sr >= N) && fits_int(M == 1 ? N : c.sr)) {
      if (beta != P(0) && !c_is_self) for_each_row(c, [&](int64_t i, int64_t j) { at<T>(c, 0, i, j) = at<T>(self, 0, i, j); });
      gemm_ab(A.trans, B.trans, M, N, K, alpha, A.data, A.ld, B.data, B.ld, beta, reinterpret_cast<P*>(c.data),
              M == 1 ? N : c.sr);
      return;
    }
  }
  cbuf.resize(static_cast<size_t>(M * N));
  gemm_ab(A.trans, B.trans, M, N, K, alpha, A.data, A.ld, B.data, B.ld, P(0), cbuf.data(), N);
  finish();
}

template <typename T>
void addmm_integer(const Mat& self, const Mat& a, const Mat& b, const Mat& c, int64_t beta, int64_t alpha) {
  const int64_t M = a.rows, N = b.cols;
  std::vector<T> prod(static_cast<size_t>(M * N));
  const Mat p{reinterpret_cast<char*>(prod.data()), 1, M, N, 0, N, 1};
  if (a.cols > 0) {
    gemm_loop<T, int_acc_t<T>>(a, b, p);
  }
  const T tb = static_cast<T>(beta), ta = static_cast<T>(alpha);
  for_each_row(c, [&](int64_t i, int64_t j) {
    const T x = wrap_mul(ta, prod[static_cast<size_t>(i * N + j)]);
    at<T>(c, 0, i, j) = beta == 0 ? x : wrap_add(wrap_mul(tb, at<T>(self, 0, i, j)), x);
  });
}

Mat mat3(const DLTensor& t) {
  return {data_ptr(t), t.shape[0], t.shape[1], t.shape[2], t.strides[0], t.strides[1], t.strides[2]};
}
Mat mat2(const DLTensor& t) {
  return {data_ptr(t), 1, t.shape[0], t.shape[1], 0, t.strides[0], t.strides[1]};
}


void mm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  if (self.ndim != 2 || other.ndim != 2 || out.ndim != 2 || self.shape[1] != other.shape[0] ||
      out.shape[0] != self.shape[0] || out.shape[1] != other.shape[1]) {
    invalid("expected self [M, K], other [K, N], out [M, N]; got " + shape_text(self) + ", " + shape_text(other) +
            ", " + shape_text(out));
  }
  matmul(call, mat2(self), mat2(other), mat2(out));
}

void bmm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  if (self.ndim != 3 || other.ndim != 3 || out.ndim != 3 || self.shape[0] != other.shape[0] ||
      out.shape[0] != self.shape[0] || self.shape[2] != other.shape[1] || out.shape[1] != self.shape[1] ||
      out.shape[2] != other.shape[2]) {
    invalid("expected self [B, M, K], other [B, K, N], out [B, M, N]; got " + shape_text(self) + ", " +
            shape_text(other) + ", " + shape_text(out));
  }
  matmul(call, mat3(self), mat3(other), mat3(out));
}

void addmm_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& m1 = tensor_arg(call, 1, "mat1", call.dtype);
  const DLTensor& m2 = tensor_arg(call, 2, "mat2", call.dtype);
  const TsrValue& beta = arg(call, 3, "beta");
  const TsrValue& alpha = arg(call, 4, "alpha");
  check_scalar(beta, "beta");
  check_scalar(alpha, "alpha");
  DLTensor& out = output(call, 0, call.dtype);
  if (self.ndim != 2 || m1.ndim != 2 || m2.ndim != 2 || out.ndim != 2 || m1.shape[1] != m2.shape[0] ||
      out.shape[0] != m1.shape[0] || out.shape[1] != m2.shape[1] || !same_shape(self, out)) {
    invalid("expected self [M, N], mat1 [M, K], mat2 [K, N], out [M, N]; got " + shape_text(self) + ", " +
            shape_text(m1) + ", " + shape_text(m2) + ", " + shape_text(out));
  }
  const Mat s = mat2(self), a = mat2(m1), b = mat2(m2), c = mat2(out);
  if (c.rows == 0 || c.cols == 0) return;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("matrix multiplication is not defined for bool tensors");
    } else if constexpr (kIsInteger<T>) {
      if (beta.tag == TSR_VALUE_FLOAT || alpha.tag == TSR_VALUE_FLOAT) invalid("integer addmm takes integer beta and alpha");
      addmm_integer<T>(s, a, b, c, beta.tag == TSR_VALUE_BOOL ? beta.as.b : beta.as.i,
                       alpha.tag == TSR_VALUE_BOOL ? alpha.as.b : alpha.as.i);
    } else {
      addmm_floating<T>(s, a, b, c, scalar_to<double>(beta, "beta"), scalar_to<double>(alpha, "alpha"));
    }
  });
}

}  // namespace

void register_linalg_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"mm", kNumericMask, &kernel_entry<&mm_kernel>},
      {"bmm", kNumericMask, &kernel_entry<&bmm_kernel>},
      {"addmm", kNumericMask, &kernel_entry<&addmm_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
