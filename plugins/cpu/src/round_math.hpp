// floor, ceil, trunc and round-half-even on whole vectors: one rounding
// instruction per vector at the AVX2 (vroundps/pd) and AVX-512 (vrndscaleps/pd)
// levels. vec_math.hpp's scalar forms (add and subtract 2^mant, then fix up)
// took ~10 instructions per vector and ran floor of 1M float32 at 1.37x
// PyTorch's time; GCC will not turn std::floor into the instruction under the
// default -ftrapping-math. The SSE2 baseline has no rounding instruction and
// keeps vec_math.hpp's forms (TSR_ROUND_VECTOR 0).
//
// Results are C's: exact, signed zeros kept (ceil(-0.5) = -0.0), inf passes,
// NaN stays NaN (quieted); no floating-point exception flags (_MM_FROUND_NO_EXC).
#pragma once

#include "isa.hpp"
#include "sleef_math.hpp"

namespace tessera::cpu { inline namespace TSR_CPU_ISA { namespace roundmath {

#if defined(__AVX512F__) || defined(__AVX2__)
#define TSR_ROUND_VECTOR 1
using sleef::VecD;
using sleef::VecF;

// (The masked forms with every lane set: GCC 12's unmasked macro starts from an
// undefined vector and warns -Wmaybe-uninitialized.)
template <int Mode, typename V>
TSR_SLEEF_INLINE V round_to(V x) {
  constexpr int kMode = Mode | _MM_FROUND_NO_EXC;
  if constexpr (sizeof(x[0]) == sizeof(float)) {  // (not is_same<V, VecF>: V's attributes would be dropped)
#if defined(__AVX512F__)
    return _mm512_mask_roundscale_ps(x, __mmask16(0xffff), x, kMode);
#else
    return _mm256_round_ps(x, kMode);
#endif
  } else {
#if defined(__AVX512F__)
    return _mm512_mask_roundscale_pd(x, __mmask8(0xff), x, kMode);
#else
    return _mm256_round_pd(x, kMode);
#endif
  }
}

template <typename V>
TSR_SLEEF_INLINE V floor(V x) { return round_to<_MM_FROUND_TO_NEG_INF>(x); }
template <typename V>
TSR_SLEEF_INLINE V ceil(V x) { return round_to<_MM_FROUND_TO_POS_INF>(x); }
template <typename V>
TSR_SLEEF_INLINE V trunc(V x) { return round_to<_MM_FROUND_TO_ZERO>(x); }
template <typename V>
TSR_SLEEF_INLINE V round_even(V x) { return round_to<_MM_FROUND_TO_NEAREST_INT>(x); }
#else
#define TSR_ROUND_VECTOR 0
#endif

}}}  // namespace tessera::cpu::TSR_CPU_ISA::roundmath
