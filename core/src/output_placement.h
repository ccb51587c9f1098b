// Internal: where in its block a new host output starts, so that a streaming
// kernel's loads from its inputs do not run into its own pending stores.
//
// Why: a CPU takes a load for a reload of an earlier store when their
// addresses agree in the low 12 bits ("4K aliasing") and stalls it until the
// store is done. out[j] = f(in[j]) loads in[j] while the stores of the last few
// hundred bytes of out are pending; when in sits d bytes below out modulo
// 4 KiB, in[j] agrees with out[j - d], stored d bytes before. A 1M float32
// reciprocal from an input at d = 64 took 172 us, at 128 138 us, at 256
// 124 us, at 448 and beyond or at d <= 0 114-116 us (AMD Zen 4, docs/memory.md).
// The caching allocator's blocks start on 512-byte boundaries; outputs of our
// own inputs (d a multiple of 512) are never in the window, but NumPy's and
// PyTorch's arrays and views start anywhere.
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::placement {

/// d (bytes, modulo 4 KiB) up to which an input below an output is in the window.
inline constexpr uintptr_t kWindow = 448;
/// Shifts are multiples of the 64-byte alignment every tensor keeps.
inline constexpr uintptr_t kStep = 64;
/// The largest shift: one step short of the caching allocator's 512-byte
/// granule, so that the block's start is the data pointer rounded down to 512.
inline constexpr uintptr_t kMaxShift = 448;
inline constexpr uintptr_t kBlockAlign = 512;

/// Up to three host inputs of the op whose output is being allocated; null
/// entries are skipped.
struct Hint {
  const void* inputs[3] = {nullptr, nullptr, nullptr};
  int count = 0;
  void add(const void* p) {
    if (p != nullptr && count < 3) inputs[count++] = p;
  }
};

/// How badly an output at `out` stalls on loads from an input at `in`: 0
/// outside the window, larger the closer the input sits below the output.
inline uintptr_t cost(uintptr_t out, uintptr_t in) {
  const uintptr_t d = (out - in) & 4095;
  return d >= 1 && d <= kWindow ? kWindow + 1 - d : 0;
}

/// The worst cost of an output at `out` over the hint's inputs.
inline uintptr_t worst_cost(uintptr_t out, const Hint& hint) {
  uintptr_t worst = 0;
  for (int i = 0; i < hint.count; ++i) {
    const uintptr_t c = cost(out, reinterpret_cast<uintptr_t>(hint.inputs[i]));
    if (c > worst) worst = c;
  }
  return worst;
}

/// The shift (a multiple of kStep, at most `max_shift`) of an output in the
/// block at `block` with the least worst cost; the smallest such shift.
inline uintptr_t best_shift(uintptr_t block, const Hint& hint, uintptr_t max_shift) {
  uintptr_t best = 0, best_cost = worst_cost(block, hint);
  for (uintptr_t s = kStep; s <= max_shift && best_cost != 0; s += kStep) {
    const uintptr_t c = worst_cost(block + s, hint);
    if (c < best_cost) {
      best = s;
      best_cost = c;
    }
  }
  return best;
}

}  // namespace tessera::placement
