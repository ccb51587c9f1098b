// alloc_trace.h — a generator of allocation traces of a transformer-like
// training loop with variable sequence lengths, for the allocator's
// fragmentation benchmark (bench_allocator.cpp). Deterministic for a seed.
//
// The model: L decoder layers of width d (fp32), batch B, a sequence length
// drawn per step from [min_seq, max_seq] in steps of 8. Per step:
//  - forward: per layer, saved activations (layer input, qkv, attention
//    scores B*heads*seq^2, attention output, MLP hidden and its activation)
//    plus a temporary freed at once; then logits and the loss temporaries;
//  - backward, layers in reverse: gradient temporaries; the layer's saved
//    activations freed; weight gradients allocated once (kept across steps);
//  - optimizer: Adam state allocated at the first step (kept), a temporary per
//    parameter tensor.
// Weights are allocated before the first step and live throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace bench {

struct TraceOp {
  bool alloc;     // else free
  uint32_t id;    // the allocation this op makes or frees
  size_t bytes;   // allocations only
};

struct TraceShape {
  int layers = 8, hidden = 1024, heads = 16, batch = 4, vocab = 16384;
  int min_seq = 64, max_seq = 1024, steps = 40;
  uint64_t seed = 2024;
};

inline std::vector<TraceOp> transformer_trace(const TraceShape& s) {
  std::vector<TraceOp> ops;
  uint32_t next = 0;
  auto alloc = [&](size_t bytes) {
    ops.push_back({true, next, bytes});
    return next++;
  };
  auto release = [&](uint32_t id) { ops.push_back({false, id, 0}); };
  const size_t d = static_cast<size_t>(s.hidden), f = 4;  // fp32
  // Weights: per layer qkv (d x 3d), out (d x d), mlp (d x 4d, 4d x d), two norms; embedding.
  std::vector<size_t> param_bytes;
  for (int l = 0; l < s.layers; ++l)
    for (size_t n : {d * 3 * d, d * d, d * 4 * d, 4 * d * d, d, d}) param_bytes.push_back(n * f);
  param_bytes.push_back(static_cast<size_t>(s.vocab) * d * f);
  for (size_t b : param_bytes) alloc(b);
  std::vector<uint32_t> grads, adam;
  std::mt19937_64 rng(s.seed);
  const int seq_steps = (s.max_seq - s.min_seq) / 8 + 1;
  for (int step = 0; step < s.steps; ++step) {
    const size_t seq = static_cast<size_t>(s.min_seq + 8 * static_cast<int>(rng() % seq_steps));
    const size_t tokens = static_cast<size_t>(s.batch) * seq;
    const size_t act = tokens * d * f;
    const size_t scores = static_cast<size_t>(s.batch) * s.heads * seq * seq * f;
    std::vector<std::vector<uint32_t>> saved(static_cast<size_t>(s.layers));
    uint32_t x = alloc(act);  // embedding output
    for (int l = 0; l < s.layers; ++l) {
      auto& keep = saved[static_cast<size_t>(l)];
      keep.push_back(x);
      keep.push_back(alloc(3 * act));            // qkv
      keep.push_back(alloc(scores));             // softmax(q k^T)
      const uint32_t tmp = alloc(scores);        // pre-softmax scores, freed at once
      release(tmp);
      keep.push_back(alloc(act));                // attention output
      keep.push_back(alloc(4 * act));            // mlp hidden
      keep.push_back(alloc(4 * act));            // gelu(hidden)
      x = alloc(act);                            // layer output
    }
    const uint32_t logits = alloc(tokens * static_cast<size_t>(s.vocab) * f);
    const uint32_t probs = alloc(tokens * static_cast<size_t>(s.vocab) * f);
    release(x);
    uint32_t grad_x = alloc(act);
    release(logits);
    release(probs);
    size_t p = param_bytes.size();
    for (int l = s.layers - 1; l >= 0; --l) {
      const uint32_t g_hidden = alloc(4 * act);
      const uint32_t g_scores = alloc(scores);
      const uint32_t g_in = alloc(act);
      for (uint32_t id : saved[static_cast<size_t>(l)]) release(id);
      release(g_scores);
      release(g_hidden);
      release(grad_x);
      grad_x = g_in;
      (void)p;
    }
    release(grad_x);
    if (grads.empty())
      for (size_t b : param_bytes) grads.push_back(alloc(b));
    if (adam.empty())
      for (size_t b : param_bytes) adam.push_back(alloc(b)), adam.push_back(alloc(b));
    for (size_t b : param_bytes) release(alloc(b));  // Adam's update temporary
  }
  return ops;
}

}  // namespace bench
