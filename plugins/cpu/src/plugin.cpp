// The CPU plugin's entry point: registers the "cpu" device type and a kernel
// for every op of docs/ops.md, each for the dtypes where the op is defined.
#include "common.hpp"
#include "device.hpp"
#include "kernels.hpp"

#include <omp.h>

#include <string>

namespace tessera::cpu {
namespace {

// Copies, fills and factories; each op family registers its own kernels
// (register_*_kernels, next to the kernels). bool is left out of arange: it
// has no bool meaning, and the core then reports a missing kernel.
constexpr KernelRegistration kKernels[] = {
    {"copy_", kAllMask, &kernel_entry<&copy_kernel>},
    {"fill_", kAllMask, &kernel_entry<&fill_kernel>},
    {"arange", kIntMask | kFloatMask, &kernel_entry<&arange_kernel>},
};

void initialize(const sdk::Host& host, void** state) {
  if (state != nullptr) *state = nullptr;  // no plugin state: everything is static
  init_device_info();
  host.register_device_type(cpu_device_desc());
  for (const KernelRegistration& k : kKernels) host.register_kernel(k.op, "cpu", k.dtype_mask, k.fn);
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
