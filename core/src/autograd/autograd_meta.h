// Internal: the autograd state of a TensorImpl (null until autograd touches it).
#pragma once

#include <tessera/autograd/node.h>

#include <memory>
#include <mutex>

namespace tessera::autograd {

/// A non-leaf's retained .grad, shared with the node that fills it (weakly:
/// once the tensor is gone nothing is retained).
struct RetainedGrad {
  std::mutex mu;
  Tensor grad;
};

struct AutogradMeta {
  bool requires_grad = false;  // leaves only; non-leaves require grad through grad_fn
  bool is_view = false;        // made by a view op from a tensor that required grad
  uint32_t view_version = 0;   // its storage's version when the view got its history
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // leaves: the AccumulateGrad node, while a graph uses it
  std::mutex accumulator_mu;             // creating grad_accumulator from several threads
  std::shared_ptr<TensorHookList> leaf_hooks;                // leaves; non-leaf hooks live on grad_fn
  std::shared_ptr<PostAccumulateHookList> post_acc_hooks;  // leaves
  std::shared_ptr<RetainedGrad> retained;                  // non-leaves after retain_grad()
};

inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? t.unsafeGetTensorImpl()->autograd_meta() : nullptr;
}
/// t's meta, created if absent.
AutogradMeta& materialize_meta(const Tensor& t);
/// requires_grad without the undefined check.
inline bool requires_grad_impl(const TensorImpl* impl) {
  const AutogradMeta* m = impl->autograd_meta();
  return m != nullptr && (m->requires_grad || m->grad_fn != nullptr);
}
/// The AccumulateGrad node of leaf t (created on first use).
std::shared_ptr<Node> grad_accumulator(const Tensor& t);

/// A new TensorImpl over t's storage and view metadata, with no autograd state.
Tensor shallow_alias(const Tensor& t);

/// Recomputes whether this thread's dispatches skip the Autograd key (grad
/// mode off, inference mode, or inside an autograd kernel's redispatch).
void refresh_exclusion(LocalDispatchKeySet& tls);

/// RAII: ops called in scope skip the Autograd key. Used by the autograd
/// kernel around the op it records, independent of grad mode changes inside.
class BelowAutogradGuard {
 public:
  BelowAutogradGuard() : tls_(tls_local_dispatch_key_set()) {
    ++tls_.below_autograd;
    refresh_exclusion(tls_);
  }
  ~BelowAutogradGuard() {
    --tls_.below_autograd;
    refresh_exclusion(tls_);
  }
  BelowAutogradGuard(const BelowAutogradGuard&) = delete;
  BelowAutogradGuard& operator=(const BelowAutogradGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
};

}  // namespace tessera::autograd
