// What linalg.cu (mm, bmm, addmm) and conv.cu (conv2d) share: a strided batch
// of matrices (Mat), the one GEMM entry point both use (cuBLAS for floating
// dtypes, an exact tiled kernel for integers and whatever cuBLAS refuses;
// defined in linalg.cu), the TF32 switch, a strided copy by element size, and
// a pool of library handles (cuBLAS, cuDNN) leased per call.
#pragma once

#include "common.cuh"

#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tessera::cuda {

/// A batch of matrices: element (b, r, c) lies at data + b*sb + r*sr + c*sc
/// elements (strides may be 0 or negative).
struct Mat {
  void* data;
  int64_t batch, rows, cols;
  int64_t sb, sr, sc;
  /// The same elements read as the transposed matrices.
  Mat t() const { return {data, batch, cols, rows, sb, sc, sr}; }
};

/// The 2-D (batch 1) or 3-D ([batch, rows, cols]) tensor t as a Mat.
inline Mat mat_of(const DLTensor& t) {
  if (t.ndim == 3) return {sdk::data_ptr(t), t.shape[0], t.shape[1], t.shape[2], t.strides[0], t.strides[1], t.strides[2]};
  return {sdk::data_ptr(t), 1, t.shape[0], t.shape[1], 0, t.strides[0], t.strides[1]};
}

/// alpha and beta of c = alpha * (a @ b) + beta * self: the floating ones for
/// floating dtypes (converted to the compute type), the integer ones otherwise.
struct GemmScale {
  double alpha = 1, beta = 0;
  int64_t int_alpha = 1, int_beta = 0;
};

/// The cuBLAS workspace of one kernel call, allocated by the first gemm()
/// that needs it: workspace() memory lasts until the kernel returns, so a
/// kernel calling gemm() in a loop passes one of these to reuse it.
struct BlasWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};

/// c = alpha * (a @ b) + beta * self per batch, in the call's dtype on its
/// stream (a [B, M, K], b [B, K, N], c and self [B, M, N]; a, b and self may
/// have any strides, batch stride 0 included; c must not overlap a or b).
/// self may be null or c itself; with beta == 0 it is not read (a NaN there
/// does not propagate) and with K == 0 the product is not formed (c = beta *
/// self, or zeros). Integers wrap modulo 2^bits; float16/bfloat16 accumulate in
/// float and round once; float32 uses TF32 only when allow_tf32(). Runs on
/// the current device (the caller's DeviceScope).
void gemm(const TsrKernelCall& call, const Mat& a, const Mat& b, const Mat& c, const GemmScale& scale,
          const Mat* self, BlasWorkspace* ws = nullptr);

/// Whether float32 products (mm, bmm, addmm, conv2d) may use TF32 tensor
/// cores: off unless the environment holds TESSERA_CUDA_ALLOW_TF32=1 at the
/// call (as PyTorch's allow_tf32 for matmul, off by default).
bool allow_tf32();

/// Up to four dims of a strided copy (innermost last).
struct CopyShape {
  int ndim;
  int64_t size[4];
  int64_t src[4];  // element strides of the source
  int64_t dst[4];  // element strides of the destination
};

/// dst[i] = src[i] over `shape`, elements of `elem_size` bytes (1, 2, 4 or 8)
/// moved as bits, on the call's stream.
void copy_strided(const TsrKernelCall& call, size_t elem_size, const void* src, void* dst, const CopyShape& shape);

/// Library handles cost a lot to create and are not safe for two threads at
/// once: a call leases one of its device's from a process-wide pool (creating
/// one when none is free) and returns it when done. Pooled handles are never
/// destroyed: at exit the CUDA runtime they belong to may already be gone.
template <typename H>
class HandleLease {
 public:
  /// Leases a handle of the current device (`device`), made by create() when none is free.
  template <typename Create>
  HandleLease(int device, Create&& create) : device_(device) {
    {
      std::lock_guard<std::mutex> lock(pool().mutex);
      std::vector<H>& free = pool().free[device];
      if (!free.empty()) {
        handle_ = free.back();
        free.pop_back();
        return;
      }
    }
    handle_ = create();
  }
  ~HandleLease() {
    try {
      std::lock_guard<std::mutex> lock(pool().mutex);
      pool().free[device_].push_back(handle_);
    } catch (...) {  // out of memory for the list: the handle leaks, nothing breaks
    }
  }
  HandleLease(const HandleLease&) = delete;
  HandleLease& operator=(const HandleLease&) = delete;

  H get() const { return handle_; }

 private:
  struct Pool {
    std::mutex mutex;
    std::unordered_map<int, std::vector<H>> free;
  };
  static Pool& pool() {
    static Pool* p = new Pool;  // never destroyed (see above)
    return *p;
  }
  int device_;
  H handle_{};
};

}  // namespace tessera::cuda
