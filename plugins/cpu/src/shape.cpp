// cat, flip, roll, tril, triu and the other shape ops that need a kernel.
#include "common.hpp"
#include "kernels.hpp"

namespace tessera::cpu {

void register_shape_kernels(const sdk::Host&) {}

}  // namespace tessera::cpu
