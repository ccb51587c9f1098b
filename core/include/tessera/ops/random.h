// tessera/ops/random.h — random numbers (the Philox generator, rand, randn, randint, uniform_, normal_, bernoulli, randperm, dropout): free functions.
// Included by tessera/tensor.h; the method forms are in random_methods.inc.
//
// Every random op draws from a Generator: a counter-based Philox4x32-10 stream
// identified by (seed, offset). A call producing n elements uses counters
// offset .. offset + n - 1 (element i in row-major order uses offset + i) and
// advances the offset by n, so results depend only on the seed and the
// sequence of calls — not on thread counts or devices. Ops take an optional
// generator; without one they use the default generator.
#pragma once

#include <tessera/tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace tessera {

/// A handle to Philox generator state; copies share the state (like a Python
/// torch.Generator object). Thread-safe: concurrent ops reserve disjoint counters.
class Generator {
 public:
  /// PyTorch's default seed.
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;
  explicit Generator(uint64_t seed = kDefaultSeed);
  /// Sets the seed and resets the offset to 0; returns *this.
  Generator& manual_seed(uint64_t seed);
  /// Reseeds from a non-deterministic source; returns the new seed.
  uint64_t seed();
  /// The seed last set.
  uint64_t initial_seed() const;
  /// The next unused counter.
  uint64_t offset() const;
  void set_offset(uint64_t offset);
  /// The state as a uint8 [16] cpu tensor: seed then offset, little-endian.
  Tensor get_state() const;
  /// Restores a state from get_state() (ValueError for anything else).
  Generator& set_state(const Tensor& state);
  /// Reserves n counters: returns the (seed, offset) to use and advances the offset by n.
  std::pair<uint64_t, uint64_t> reserve(uint64_t n);
  bool is_same(const Generator& other) const { return state_ == other.state_; }

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// The process-wide default generator.
Generator& default_generator();
/// Seeds the default generator (offset back to 0); returns it.
Generator& manual_seed(uint64_t seed);
/// Reseeds the default generator non-deterministically; returns the seed.
uint64_t seed();
/// The default generator's seed.
uint64_t initial_seed();

/// Uniform on [0, 1); floating dtypes only (float32 default; TypeError otherwise).
Tensor rand(IntArrayRef size, std::optional<Generator> generator = std::nullopt, const TensorOptions& options = {});
/// Standard normal (Box-Muller on Philox outputs); floating dtypes only.
Tensor randn(IntArrayRef size, std::optional<Generator> generator = std::nullopt, const TensorOptions& options = {});
/// Uniform integers in [low, high) (int64 default; any numeric dtype whose range holds them).
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator = std::nullopt,
               const TensorOptions& options = {});
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> generator = std::nullopt,
               const TensorOptions& options = {});
/// A random permutation of 0 .. n-1 (int64 default), reproducible for a seed.
Tensor randperm(int64_t n, std::optional<Generator> generator = std::nullopt, const TensorOptions& options = {});
/// 0/1 samples with probabilities `self` (floating, values in [0, 1]); same shape and dtype.
Tensor bernoulli(const Tensor& self, std::optional<Generator> generator = std::nullopt);
/// 0/1 samples with probability p, shaped and typed like self.
Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator = std::nullopt);
/// Zeroes each element with probability p and scales the rest by 1 / (1 - p).
/// train=false, p=0 or an empty input: returns input itself. p=1: all zeros.
/// ValueError unless 0 <= p <= 1; floating inputs only.
Tensor dropout(const Tensor& input, double p = 0.5, bool train = true,
               std::optional<Generator> generator = std::nullopt);

}  // namespace tessera
