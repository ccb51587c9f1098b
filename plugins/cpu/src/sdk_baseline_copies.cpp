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

// The same for the SDK's inline functions that the kernels call (GCC left
// philox::detail::quarter_turns out of line in an AVX-512 object once
// random.cpp changed): taking each one's address makes this baseline object
// hold an out-of-line copy of it, which the linker keeps.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/philox.hpp>

#include <tuple>

namespace {
namespace ph = tessera::sdk::philox;
using tessera::sdk::BFloat16;
using tessera::sdk::Half;
[[gnu::used]] const auto kSdkInlineCopies = std::make_tuple(
    &Half::to_float, &Half::from_float, &BFloat16::to_float, &BFloat16::from_float, &ph::detail::mulhilo,
    &ph::philox4x32_10, &ph::at, &ph::u64, &ph::uniform_float, &ph::detail::opaque, &ph::mul_rn, &ph::add_rn,
    &ph::sub_rn, &ph::div_rn, &ph::sqrt_rn, &ph::detail::bits_of, &ph::detail::from_bits, &ph::uniform_double,
    &ph::log, &ph::detail::quarter_turns, &ph::detail::reduce_turns, &ph::cos_2pi, &ph::sin_2pi, &ph::uniform_value,
    &ph::box_muller_polar, &ph::standard_normal, &ph::normal_value, &ph::random_int, &ph::bernoulli,
    &ph::randperm_key);
}  // namespace
