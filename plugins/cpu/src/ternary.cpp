// where, clamp, lerp, addcmul, addcdiv.
#include "common.hpp"
#include "kernels.hpp"

namespace tessera::cpu {

void register_ternary_kernels(const sdk::Host&) {}

}  // namespace tessera::cpu
