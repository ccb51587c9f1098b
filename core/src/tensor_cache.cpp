#include "tensor_cache.h"

#include "device_registry.h"
#include "local_keys.h"
#include "small_block_cache.h"

namespace tessera {

namespace {

using small_blocks::kClasses;
using small_blocks::kMaxTypes;
using small_blocks::kPerClass;

struct Slots {
  TensorImpl* kept[kMaxTypes][kClasses][kPerClass];
  uint8_t count[kMaxTypes][kClasses] = {};
};

enum class State : unsigned char { Fresh, Alive, Dead };
constinit thread_local Slots* tls_slots __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local State tls_state __attribute__((tls_model("initial-exec"))) = State::Fresh;

// Deletes the thread's kept tensors when it exits; tensors dying after that
// (in other thread_locals' destructors) are deleted at once.
struct Owner {
  ~Owner() {
    tls_state = State::Dead;
    Slots* s = tls_slots;
    tls_slots = nullptr;
    if (s == nullptr) return;
    for (int t = 0; t < kMaxTypes; ++t)
      for (int c = 0; c < kClasses; ++c)
        for (int i = 0; i < s->count[t][c]; ++i) delete s->kept[t][c][i];
    delete s;
  }
};

Slots* slots_for_keep() noexcept {
  if (tls_state == State::Alive) [[likely]] return tls_slots;
  if (tls_state == State::Dead) return nullptr;
  static thread_local Owner owner;
  (void)owner;
  tls_slots = new (std::nothrow) Slots();
  tls_state = tls_slots ? State::Alive : State::Dead;
  return tls_slots;
}

}  // namespace

bool TensorCache::keep(TensorImpl* t) noexcept {
  StorageImpl* s = t->storage_.get();
  if (s == nullptr || !s->recyclable() || s->use_count() != 1 || t->autograd_meta_ != nullptr ||
      t->view_base_ != nullptr || t->dims_ != t->inline_dims_)
    return false;
  const DeviceTypeId type = s->device().type();
  if (device_registry::retired(type)) return false;
  Slots* slots = slots_for_keep();
  if (slots == nullptr) return false;
  const int cls = small_blocks::class_of(s->nbytes());
  uint8_t& n = slots->count[type][cls];
  if (n == kPerClass) return false;
  slots->kept[type][cls][n++] = t;
  return true;
}

TensorImpl* TensorCache::reuse(DeviceTypeId type, size_t nbytes, IntArrayRef sizes, int64_t numel,
                               ScalarType dtype) noexcept {
  Slots* slots = tls_slots;
  if (slots == nullptr || sizes.size() > size_t(TensorImpl::kInlineDims)) return nullptr;
  const int cls = small_blocks::class_of(nbytes);
  uint8_t& n = slots->count[type][cls];
  if (n == 0) return nullptr;
  TensorImpl* t = slots->kept[type][cls][--n];
  t->reset_ref_count();
  t->storage_->reuse(nbytes);
  t->set_contiguous_dims(sizes);
  t->numel_ = numel;
  t->offset_ = 0;
  t->dtype_ = dtype;
  t->key_set_ = DispatchKeySet::backend(type);
  t->is_contiguous_ = true;
  t->wrapped_number_ = false;
  t->inference_ = local_keys().inference_mode;
  return t;
}

}  // namespace tessera
