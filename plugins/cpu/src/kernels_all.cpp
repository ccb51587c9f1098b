// One compilation's entry point: every op family's kernels, compiled for the
// instruction-set level TSR_CPU_ISA (isa.hpp). isa_dispatch.cpp calls the one
// chosen when the plugin loads.
#include "kernels.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

void register_all_kernels(const sdk::Host& host) {
  register_unary_kernels(host);
  register_binary_kernels(host);
  register_ternary_kernels(host);
  register_reduction_kernels(host);
  register_linalg_kernels(host);
  register_shape_kernels(host);
  register_indexing_kernels(host);
  register_random_kernels(host);
  register_nn_kernels(host);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
