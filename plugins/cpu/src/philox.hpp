// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. Output block = f(counter, key), so any
// element's random bits are computed directly from its index: the stream does
// not depend on how the work is split across threads (or devices).
//
// Tessera's convention (docs/ops/random.md): key = the generator's 64-bit seed
// (low word first), counter = the 64-bit value (offset + i) for element i of a
// call (low word first, upper two words 0).
#pragma once

#include <cstdint>

namespace tessera::cpu::philox {

struct Block {
  uint32_t v[4];
};

inline Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  constexpr uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = kM0 * c0;
    const uint64_t p1 = kM1 * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;  // the key schedule; the bump after the last round is unused
    k1 += kW1;
  }
  return Block{{c0, c1, c2, c3}};
}

/// The block of counter value `counter` under key `seed`.
inline Block at(uint64_t seed, uint64_t counter) {
  return philox4x32_10(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// Uniform in [0, 1) with 24 random bits (exactly representable in float).
inline float uniform_float(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
/// Uniform in [0, 1) with 53 random bits.
inline double uniform_double(uint32_t lo, uint32_t hi) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}
inline uint64_t u64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

}  // namespace tessera::cpu::philox
