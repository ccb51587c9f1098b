// Chooses which compilation of the kernels runs (isa.hpp, kernels.hpp).
// Compiled once, for the baseline: it must run on every x86-64.
#include "kernels.hpp"


#include <cstdlib>
#include <cstring>
#include <string>

// Each compilation's entry point. CMakeLists.txt defines TSR_CPU_HAVE_<LEVEL>
// for the levels this build has (TESSERA_CPU_LEVELS).
namespace tessera::cpu::isa_avx2 {
void register_all_kernels(const sdk::Host& host);
}
namespace tessera::cpu::isa_avx512 {
void register_all_kernels(const sdk::Host& host);
}

namespace tessera::cpu {
namespace {

constexpr KernelIsa kLevels[] = {KernelIsa::baseline, KernelIsa::avx2, KernelIsa::avx512};

bool built(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::baseline:
#ifdef TSR_CPU_HAVE_BASELINE
      return true;
#else
      return false;
#endif
    case KernelIsa::avx2:
#ifdef TSR_CPU_HAVE_AVX2
      return true;
#else
      return false;
#endif
    case KernelIsa::avx512:
#ifdef TSR_CPU_HAVE_AVX512
      return true;
#else
      return false;
#endif
  }
  return false;
}



// What the CPU and the OS (which must save the wider registers) support;
// libgcc's __builtin_cpu_supports checks both.
bool supported(KernelIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  switch (isa) {
    case KernelIsa::baseline:
      return true;
    case KernelIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
    case KernelIsa::avx512:
      return supported(KernelIsa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == KernelIsa::baseline;
#endif
}

bool usable(KernelIsa isa) { return built(isa) && supported(isa); }

std::string level_list(bool (*keep)(KernelIsa)) {
  std::string out;
  for (KernelIsa isa : kLevels) {
    if (!keep(isa)) continue;
    if (!out.empty()) out += ", ";
    out += kernel_isa_name(isa);
  }
  return out;
}

}  // namespace

const char* kernel_isa_name(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::baseline:
      return "baseline";
    case KernelIsa::avx2:
      return "avx2";
    case KernelIsa::avx512:
      return "avx512";
  }
  return "unknown";
}

KernelIsa select_kernel_isa() {
  const char* forced = std::getenv("TESSERA_CPU_ISA");
  if (forced == nullptr || forced[0] == '\0') {
    bool found = false;
    KernelIsa best = KernelIsa::baseline;
    for (KernelIsa isa : kLevels) {
      if (usable(isa)) {
        best = isa;
        found = true;
      }
    }
    if (!found) {
      throw sdk::Error(TSR_ERROR_UNAVAILABLE, "cpu: this build of the CPU plugin has kernels for " +
                                                  level_list(&built) + " only, and this CPU supports only " +
                                                  level_list(&supported) +
                                                  " (rebuild with TESSERA_CPU_LEVELS including one of those)");
    }
    return best;
  }
  for (KernelIsa isa : kLevels) {
    if (std::strcmp(forced, kernel_isa_name(isa)) != 0) continue;
    if (!built(isa)) {
      throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, std::string("cpu: TESSERA_CPU_ISA=") + forced +
                                                       ", but this build of the CPU plugin has only: " +
                                                       level_list(&built));
    }
    if (!supported(isa)) {
      throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, std::string("cpu: TESSERA_CPU_ISA=") + forced +
                                                       ", but this CPU supports only: " + level_list(&supported));
    }
    return isa;
  }
  throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, std::string("cpu: TESSERA_CPU_ISA='") + forced +
                                                   "' is not a level; use one of: baseline, avx2, avx512 "
                                                   "(or leave it unset for the best this CPU supports)");
}

void register_kernels(const sdk::Host& host, KernelIsa isa) {
  switch (isa) {
#ifdef TSR_CPU_HAVE_BASELINE
    case KernelIsa::baseline:
      isa_baseline::register_all_kernels(host);
      return;
#endif
#ifdef TSR_CPU_HAVE_AVX2
    case KernelIsa::avx2:
      isa_avx2::register_all_kernels(host);
      return;
#endif
#ifdef TSR_CPU_HAVE_AVX512
    case KernelIsa::avx512:
      isa_avx512::register_all_kernels(host);
      return;
#endif
    default:
      throw sdk::Error(TSR_ERROR_INTERNAL, std::string("cpu: no kernels compiled for ") + kernel_isa_name(isa));
  }
}

}  // namespace tessera::cpu
