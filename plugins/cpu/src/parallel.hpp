// OpenMP work splitting for the CPU plugin. The SDK's iterator is thread-free;
// this is where threads come in. Kernels call parallel_for with a grain: below it
// the work runs on the calling thread (no OpenMP region at all, which keeps small
// ops cheap), above it [0, n) is cut into one contiguous chunk per thread, using
// only the threads the machine has cores for (idle_threads).
#pragma once

#include "isa.hpp"
#include <omp.h>

#include <cstdlib>
#include <ctime>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

#include "env_settings.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

/// Elements of cheap elementwise work (a load, an add, a store) worth a thread:
/// below this, waking a team costs more than it saves.
inline constexpr int64_t kGrain = 32768;
/// Grain for work that costs tens of cycles per element (exp, integer division,
/// float<->half conversion).
inline constexpr int64_t kGrainExpensive = 4096;

/// Threads a parallel region would use (OMP_NUM_THREADS, default: all cores).
inline int64_t max_threads() { return omp_in_parallel() ? 1 : static_cast<int64_t>(omp_get_max_threads()); }

/// Threads worth waking, at most `want`: the calling thread plus the cores the
/// machine's 1-minute load average leaves idle (libgomp's OMP_DYNAMIC uses the
/// same signal). The end of an OpenMP region waits until every woken thread has
/// run; on a busy machine a worker can wait milliseconds for a core, turning a
/// 10 us op into a 10 ms one, so there we stay on the calling thread. The load
/// is re-read at most every 250 ms. TESSERA_CPU_LOAD_AWARE=0 turns this off
/// (tests that must exercise the threaded paths on a busy machine set it).
inline int64_t idle_threads(int64_t want) {
  static const bool aware = env::parse_load_aware(std::getenv("TESSERA_CPU_LOAD_AWARE"));
  if (want <= 1 || !aware) return want;
  static std::atomic<int64_t> cached_at_ms{-1000};
  static std::atomic<int> cached_busy{0};
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  const int64_t ms = static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
  if (ms - cached_at_ms.load(std::memory_order_relaxed) > 250) {
    double load = 0;
    cached_busy.store(getloadavg(&load, 1) == 1 ? static_cast<int>(load + 0.5) : 0, std::memory_order_relaxed);
    cached_at_ms.store(ms, std::memory_order_relaxed);
  }
  // +1: the calling thread is itself part of the load.
  const int64_t idle = static_cast<int64_t>(omp_get_num_procs()) - cached_busy.load(std::memory_order_relaxed) + 1;
  return std::clamp<int64_t>(idle, 1, want);
}

/// Sets the calling thread's OpenMP thread count (omp_set_num_threads: what the
/// libraries on its team size their work by, OpenBLAS's and oneDNN's OpenMP
/// builds) to `threads` (clamped to 1..omp_get_max_threads()) while alive, and
/// restores it after. Nothing changes when the count is already that.
class ThreadLimit {
 public:
  explicit ThreadLimit(int64_t threads)
      : saved_(omp_get_max_threads()),
        now_(static_cast<int>(std::clamp<int64_t>(threads, 1, saved_))) {
    if (now_ != saved_) omp_set_num_threads(now_);
  }
  ~ThreadLimit() {
    if (now_ != saved_) omp_set_num_threads(saved_);
  }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int saved_, now_;
};

/// Runs f(begin, end) on chunks covering [0, n). Uses at most one thread per
/// `grain` items, and the calling thread only when n <= grain or when already
/// inside a parallel region (no nested teams, no oversubscription). An
/// exception thrown by f on any thread is rethrown here after the team joins
/// (OpenMP would otherwise call std::terminate).
template <typename F>
void parallel_for(int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
  // One serial call site, not one per reason to stay serial: with two inlined
  // copies of f GCC 12 left the second (the one-thread path of a long input)
  // scalar, and 1M-element neg/relu/abs ran 2-3x slower at OMP_NUM_THREADS=1.
  const int64_t threads = n <= grain || omp_in_parallel()
                              ? 1
                              : idle_threads(std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain));
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

}}  // namespace tessera::cpu::TSR_CPU_ISA
