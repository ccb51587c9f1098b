// The largest single heap allocation made while a probe is armed, so a harness
// can assert that untrusted input never makes the code allocate more than the
// input justifies, even when the allocation fails or is freed before a refusal.
//
// Under AddressSanitizer the sanitizer's allocation hook reports sizes; without
// it (the replay build), the harness executable interposes malloc (glibc's
// __libc_malloc does the work), which every library's malloc and operator new
// reach. Include this header in exactly one file of a harness executable.
#pragma once

#include <atomic>
#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TSR_FUZZ_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define TSR_FUZZ_NO_PROBE 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TSR_FUZZ_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TSR_FUZZ_NO_PROBE 1  // TSan owns malloc and has no allocation hook: sizes are not observed
#endif

#ifdef TSR_FUZZ_ASAN
// From <sanitizer/allocator_interface.h>, which gcc does not ship (its libasan
// has the function).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                          void (*free_hook)(const volatile void*));
#endif

namespace tessera::fuzz {

inline std::atomic<bool> g_probe_armed{false};
inline std::atomic<size_t> g_probe_largest{0};

inline void probe_note(size_t n) {
  if (!g_probe_armed.load(std::memory_order_relaxed)) return;
  size_t cur = g_probe_largest.load(std::memory_order_relaxed);
  while (n > cur && !g_probe_largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
  }
}

#ifdef TSR_FUZZ_ASAN
extern "C" inline void tsr_fuzz_malloc_hook(const volatile void*, size_t n) { probe_note(n); }
extern "C" inline void tsr_fuzz_free_hook(const volatile void*) {}
#endif

/// Arms the probe until destroyed; largest() is the biggest request meanwhile.
/// Not reentrant; the harnesses are single-threaded.
class AllocProbe {
 public:
  AllocProbe() {
#ifdef TSR_FUZZ_ASAN
    static const bool installed = [] {
      __sanitizer_install_malloc_and_free_hooks(&tsr_fuzz_malloc_hook, &tsr_fuzz_free_hook);
      return true;
    }();
    (void)installed;
#endif
    g_probe_largest = 0;
    g_probe_armed = true;
  }
  ~AllocProbe() { g_probe_armed = false; }
  size_t largest() const { return g_probe_largest.load(); }
  /// False where sizes are not observed (ThreadSanitizer builds).
  static constexpr bool observes() {
#ifdef TSR_FUZZ_NO_PROBE
    return false;
#else
    return true;
#endif
  }
};

}  // namespace tessera::fuzz

#if !defined(TSR_FUZZ_ASAN) && !defined(TSR_FUZZ_NO_PROBE)
// Interposes malloc for the whole process (the executable's definition wins).
extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t n) {
  tessera::fuzz::probe_note(n);
  return __libc_malloc(n);
}
#endif
