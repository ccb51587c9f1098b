// The CPU plugin's entry point: registers the "cpu" device type, then has each
// op family register its kernels (kernels.hpp), each for the dtypes where the
// op is defined.
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
  init_device_info();
  (void)blas();  // OpenBLAS now, while the plugin loads: a missing one fails the load, not a matmul
  host.register_device_type(cpu_device_desc());
  register_unary_kernels(host);
  register_binary_kernels(host);
  register_ternary_kernels(host);
  register_reduction_kernels(host);
  register_linalg_kernels(host);
  register_shape_kernels(host);
  register_indexing_kernels(host);
  register_random_kernels(host);
  register_nn_kernels(host);
  const std::string line =
      "cpu plugin: " + cpu_model() + ", " + std::to_string(omp_get_max_threads()) + " OpenMP threads";
  host.log(TSR_LOG_DEBUG, line.c_str());
}

}  // namespace
}  // namespace tessera::cpu

TSR_SDK_PLUGIN("cpu", "0.1.0", "CPU device: strided OpenMP kernels, OpenBLAS matrix multiplication",
               tessera::cpu::initialize, nullptr)
