// OpenMP work splitting for the CPU plugin. The SDK's iterator is thread-free;
// this is where threads come in. Kernels call parallel_for with a grain: below it
// the work runs on the calling thread (no OpenMP region at all, which keeps small
// ops cheap), above it [0, n) is cut into one contiguous chunk per thread.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

namespace tessera::cpu {

/// Elements of cheap elementwise work (a load, an add, a store) worth a thread:
/// below this, waking a team costs more than it saves.
inline constexpr int64_t kGrain = 32768;
/// Grain for work that costs tens of cycles per element (exp, integer division,
/// float<->half conversion).
inline constexpr int64_t kGrainExpensive = 4096;

/// Threads a parallel region would use (OMP_NUM_THREADS, default: all cores).
inline int64_t max_threads() { return omp_in_parallel() ? 1 : static_cast<int64_t>(omp_get_max_threads()); }

/// Runs f(begin, end) on chunks covering [0, n). Uses at most one thread per
/// `grain` items, and the calling thread only when n <= grain or when already
/// inside a parallel region (no nested teams, no oversubscription). An
/// exception thrown by f on any thread is rethrown here after the team joins
/// (OpenMP would otherwise call std::terminate).
template <typename F>
void parallel_for(int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
  if (n <= grain || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t threads = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain);
  if (threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
  std::exception_ptr error;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    const int64_t team = omp_get_num_threads();
    const int64_t chunk = (n + team - 1) / team;
    const int64_t begin = omp_get_thread_num() * chunk;
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end && !failed.load(std::memory_order_relaxed)) {
      try {
        f(begin, end);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();  // first error wins
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tessera::cpu
