// Baseline out-of-line copies of the SDK's StridedIter members, for the linker.
//
// The kernels are compiled once per ISA level (isa.hpp), but the SDK's inline
// functions live outside the level namespaces, so every level's object may
// carry its own copy of one, and the linker keeps the first it meets. The
// plugin links this baseline object before the level objects, so when GCC
// leaves, say, StridedIter<3>::dense out of line in an AVX-512 object only (it
// did, in indexing.cpp), the copy kept is still baseline code and any level
// may call it. cpu_plugin_baseline_code checks the result.
#include <tessera/sdk/iterate.hpp>

template class tessera::sdk::StridedIter<1>;
template class tessera::sdk::StridedIter<2>;
template class tessera::sdk::StridedIter<3>;
template class tessera::sdk::StridedIter<4>;
