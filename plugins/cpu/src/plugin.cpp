// The CPU plugin's entry point: registers the "cpu" device type and a kernel
// for every op of docs/ops.md, each for the dtypes where the op is defined.
#include "common.hpp"
#include "device.hpp"
#include "kernels.hpp"

#include <omp.h>

#include <string>

namespace tessera::cpu {
namespace {

struct KernelRegistration {
  const char* op;
  uint64_t dtype_mask;
  TsrKernelFn fn;
};

// bool is left out where docs/ops.md says the core never dispatches it (sub,
// neg, mm, bmm) and where the op has no bool meaning in PyTorch either (div,
// relu, exp, arange): the core then reports a missing kernel for that dtype.
constexpr uint64_t kNumericMask = kIntMask | kFloatMask;
constexpr KernelRegistration kKernels[] = {
    {"add", kAllMask, &kernel_entry<&add_kernel>},
    {"sub", kNumericMask, &kernel_entry<&sub_kernel>},
    {"mul", kAllMask, &kernel_entry<&mul_kernel>},
    {"div", kNumericMask, &kernel_entry<&div_kernel>},
    {"neg", kNumericMask, &kernel_entry<&neg_kernel>},
    {"exp", kFloatMask, &kernel_entry<&exp_kernel>},
    {"relu", kNumericMask, &kernel_entry<&relu_kernel>},
    {"sum", kAllMask, &kernel_entry<&sum_kernel>},
    {"mm", kNumericMask, &kernel_entry<&mm_kernel>},
    {"bmm", kNumericMask, &kernel_entry<&bmm_kernel>},
    {"copy_", kAllMask, &kernel_entry<&copy_kernel>},
    {"fill_", kAllMask, &kernel_entry<&fill_kernel>},
    {"arange", kNumericMask, &kernel_entry<&arange_kernel>},
    {"nonzero", kAllMask, &kernel_entry<&nonzero_kernel>},
};

void initialize(const sdk::Host& host, void** state) {
  if (state != nullptr) *state = nullptr;  // no plugin state: everything is static
  init_device_info();
  host.register_device_type(cpu_device_desc());
  for (const KernelRegistration& k : kKernels) host.register_kernel(k.op, "cpu", k.dtype_mask, k.fn);
  const std::string line =
      "cpu plugin: " + cpu_model() + ", " + std::to_string(omp_get_max_threads()) + " OpenMP threads";
  host.log(TSR_LOG_DEBUG, line.c_str());
}

}  // namespace
}  // namespace tessera::cpu

TSR_SDK_PLUGIN("cpu", "0.1.0", "CPU device: strided OpenMP kernels, OpenBLAS matrix multiplication",
               tessera::cpu::initialize, nullptr)
