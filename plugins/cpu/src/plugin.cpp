// The CPU plugin's entry point: registers the "cpu" device type, then has each
// op family register its kernels (kernels.hpp), each for the dtypes where the
// op is defined, from the compilation for the best instruction-set level this
// CPU supports (or TESSERA_CPU_ISA's).
#include "blas.hpp"
#include "common.hpp"
#include "device.hpp"
#include "kernels.hpp"

#include <omp.h>

#include <string>

namespace tessera::cpu {
namespace {

void initialize(const sdk::Host& host, void** state) {
  if (state != nullptr) *state = nullptr;  // no plugin state: everything is static
  const KernelIsa isa = select_kernel_isa();  // first: a bad TESSERA_CPU_ISA fails the load
  init_device_info(kernel_isa_name(isa));
  (void)blas();  // OpenBLAS now, while the plugin loads: a missing one fails the load, not a matmul
  host.register_device_type(cpu_device_desc());
  register_kernels(host, isa);
  const std::string line =
      "cpu plugin: " + cpu_model() + ", " + std::to_string(omp_get_max_threads()) +
                           " OpenMP threads, " + kernel_isa_name(isa) + " kernels";
  host.log(TSR_LOG_DEBUG, line.c_str());
}

}  // namespace
}  // namespace tessera::cpu

TSR_SDK_PLUGIN("cpu", "0.1.0", "CPU device: strided OpenMP kernels, OpenBLAS matrix multiplication",
               tessera::cpu::initialize, nullptr)
