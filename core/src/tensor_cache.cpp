#include "tensor_cache.h"

namespace tessera {

constinit thread_local TensorCache::Slots* TensorCache::tls_slots __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local TensorCache::State TensorCache::tls_state __attribute__((tls_model("initial-exec"))) =
    TensorCache::State::Fresh;

namespace {
// Deletes the thread's kept tensors when it exits; tensors dying after that
// (in other thread_locals' destructors) are deleted at once.
struct Owner {
  ~Owner() {
    TensorCache::tls_state = TensorCache::State::Dead;
    TensorCache::Slots* s = TensorCache::tls_slots;
    TensorCache::tls_slots = nullptr;
    if (s == nullptr) return;
    for (int t = 0; t < small_blocks::kMaxTypes; ++t)
      for (int c = 0; c < small_blocks::kClasses; ++c)
        for (int i = 0; i < s->count[t][c]; ++i) delete s->kept[t][c][i];
    delete s;
  }
};
}  // namespace

size_t TensorCache::thread_cached_bytes() noexcept {
  const Slots* s = tls_slots;
  if (s == nullptr) return 0;
  size_t n = 0;
  for (int t = 0; t < small_blocks::kMaxTypes; ++t)
    for (int c = 0; c < small_blocks::kClasses; ++c) n += s->count[t][c] * (c + 1) * small_blocks::kGranule;
  return n;
}

size_t TensorCache::release_thread() noexcept {
  Slots* s = tls_slots;
  if (s == nullptr) return 0;
  size_t n = 0;
  for (int t = 0; t < small_blocks::kMaxTypes; ++t)
    for (int c = 0; c < small_blocks::kClasses; ++c)
      while (s->count[t][c] > 0) {
        delete s->kept[t][c][--s->count[t][c]];  // not through on_last_release: nothing is kept again
        n += (c + 1) * small_blocks::kGranule;
      }
  return n;
}

TensorCache::Slots* TensorCache::create_slots() noexcept {
  if (tls_state == State::Alive) return tls_slots;
  if (tls_state == State::Dead) return nullptr;
  static thread_local Owner owner;
  (void)owner;
  tls_slots = new (std::nothrow) Slots();
  tls_state = tls_slots ? State::Alive : State::Dead;
  return tls_slots;
}

}  // namespace tessera
