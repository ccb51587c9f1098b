// Loading OpenBLAS (blas.hpp).
#include "blas.hpp"

#include <tessera/sdk/plugin.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#ifndef TESSERA_OPENBLAS_PATH
#define TESSERA_OPENBLAS_PATH ""
#endif

namespace tessera::cpu {
namespace {

// OpenBLAS's name for the widest kernel family this CPU runs, or null (leave
// OpenBLAS's own detection alone).
const char* core_type_for_this_cpu() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

Blas load() {
  // Only for the load, and only when the user chose nothing: OPENBLAS_CORETYPE
  // is read by OpenBLAS's constructor. (setenv is not thread-safe against a
  // concurrent getenv; this runs once, while the plugin initializes.)
  const char* core = std::getenv("OPENBLAS_CORETYPE") == nullptr ? core_type_for_this_cpu() : nullptr;
  if (core != nullptr) setenv("OPENBLAS_CORETYPE", core, 0);
  void* lib = nullptr;
  std::string tried;
  for (const char* path : {TESSERA_OPENBLAS_PATH, "libopenblas.so.0"}) {
    if (*path == '\0') continue;
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + path + ": " + (why ? why : "not found");
  }
  if (core != nullptr) unsetenv("OPENBLAS_CORETYPE");
  if (lib == nullptr) throw sdk::Error(TSR_ERROR_UNAVAILABLE, "cpu plugin: cannot load OpenBLAS (" + tried + ")");
  Blas b{reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm")),
         reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(lib, "cblas_dgemm")),
         reinterpret_cast<decltype(&cblas_sgemv)>(dlsym(lib, "cblas_sgemv")),
         reinterpret_cast<decltype(&cblas_dgemv)>(dlsym(lib, "cblas_dgemv")),
         reinterpret_cast<decltype(&cblas_sdot)>(dlsym(lib, "cblas_sdot")),
         reinterpret_cast<decltype(&cblas_ddot)>(dlsym(lib, "cblas_ddot"))};
  if (b.sgemm == nullptr || b.dgemm == nullptr || b.sgemv == nullptr || b.dgemv == nullptr || b.sdot == nullptr ||
      b.ddot == nullptr)
    throw sdk::Error(TSR_ERROR_UNAVAILABLE,
                     "cpu plugin: the OpenBLAS it loaded lacks one of cblas_sgemm, cblas_dgemm, cblas_sgemv, cblas_dgemv, "
                     "cblas_sdot, cblas_ddot");
  return b;  // never closed: kernels may run until the process ends
}

}  // namespace

const Blas& blas() {
  static const Blas loaded = load();
  return loaded;
}

}  // namespace tessera::cpu
