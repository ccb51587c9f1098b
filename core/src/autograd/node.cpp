// Nodes, edges, the leaf accumulator and the autograd state of tensors.
#include <tessera/autograd.h>
#include <tessera/error.h>

#include "accumulate_grad.h"
#include "autograd_meta.h"

#include <vector>

namespace tessera::autograd {

// ---- AutogradMeta lifetime ----

void destroy_autograd_meta(AutogradMeta* meta) noexcept { delete meta; }

AutogradMeta& materialize_meta(const Tensor& t) {
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->autograd_meta() == nullptr) impl->set_autograd_meta(new AutogradMeta());
  return *impl->autograd_meta();
}

Tensor shallow_alias(const Tensor& t) {
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  return Tensor(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(impl->storage(), impl->dtype(), impl->sizes(), impl->strides(), impl->storage_offset())));
}

// ---- Node ----

namespace {
thread_local uint64_t t_next_sequence_nr = 0;
}  // namespace

struct Node::PerInputHooks {
  std::shared_ptr<TensorHookList> hooks;
  std::weak_ptr<RetainedGrad> retained;
};

Node::Node() : sequence_nr_(t_next_sequence_nr++) {}

// Freeing a long chain through shared_ptr destructors would recurse once per
// node. Instead the outermost ~Node collects the next nodes of every node it
// frees in a per-thread list and drops them one at a time.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  if (pending != nullptr) {  // inside an outer ~Node: let it free our children
    for (Edge& e : next_edges_)
      if (e.function) pending->push_back(std::move(e.function));
    return;
  }
  std::vector<std::shared_ptr<Node>> list;
  for (Edge& e : next_edges_)
    if (e.function) list.push_back(std::move(e.function));
  if (list.empty()) return;
  pending = &list;
  while (!list.empty()) {
    std::shared_ptr<Node> next = std::move(list.back());
    list.pop_back();
    next.reset();  // if it was the last reference, its ~Node appends its children
  }
  pending = nullptr;
}

Tensor InputMetadata::zeros() const { return tessera::zeros(sizes, TensorOptions(dtype).device(device)); }

uint32_t Node::add_input_metadata(const Tensor& t, bool differentiable) {
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  InputMetadata m;
  m.sizes.assign(impl->sizes().begin(), impl->sizes().end());
  m.dtype = impl->dtype();
  m.device = impl->device();
  m.differentiable = differentiable;
  return add_input_metadata(std::move(m));
}

uint32_t Node::add_input_metadata(InputMetadata m) {
  input_metadata_.push_back(std::move(m));
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

std::shared_ptr<TensorHookList> Node::tensor_hooks(uint32_t input_nr) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (hooks_.size() <= input_nr) hooks_.resize(input_nr + 1);
  if (!hooks_[input_nr]) hooks_[input_nr] = std::make_unique<PerInputHooks>();
  if (!hooks_[input_nr]->hooks) hooks_[input_nr]->hooks = std::make_shared<TensorHookList>();
  return hooks_[input_nr]->hooks;
}

void Node::set_retained_grad(uint32_t input_nr, const std::shared_ptr<RetainedGrad>& slot) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (hooks_.size() <= input_nr) hooks_.resize(input_nr + 1);
  if (!hooks_[input_nr]) hooks_[input_nr] = std::make_unique<PerInputHooks>();
  hooks_[input_nr]->retained = slot;
}

namespace {
// Whether nothing but g can reach g's memory, so .grad may take it uncopied:
// g is its only handle and a contiguous tensor without autograd state, and
// its storage is held by g alone or, for a view spanning all of it (a
// Linear weight's gradient leaves transpose's backward as one), also by the
// view's base, which only g keeps alive.
bool sole_owner(const Tensor& g) {
  const TensorImpl* impl = g.unsafeGetTensorImpl();
  if (g.use_count() != 1 || !impl->is_contiguous() || impl->autograd_meta() != nullptr) return false;
  const TensorImpl* base = impl->view_base();
  if (base == nullptr) return impl->storage()->use_count() == 1;
  return base->use_count() == 1 && base->storage() == impl->storage() && impl->storage()->use_count() == 2 &&
         impl->storage_offset() == 0 &&
         impl->storage()->nbytes() == static_cast<size_t>(impl->numel()) * element_size(impl->dtype());
}

// Adds `g` into `slot` (a .grad): stored as is when nothing else holds it,
// else copied, so that a later in-place accumulation cannot write into a
// tensor the user (or another .grad) still sees.
void accumulate_into(Tensor& slot, const Tensor& g, bool create_graph) {
  if (!slot.defined()) {
    if (create_graph) {
      slot = g;
    } else if (!sole_owner(g)) {
      slot = g.detach().clone();
    } else {
      // A view gets a fresh handle: .grad holds no base (the base and g go when
      // the engine drops g).
      slot = g.unsafeGetTensorImpl()->view_base() != nullptr ? shallow_alias(g) : g;
    }
  } else if (create_graph || requires_grad_impl(slot.unsafeGetTensorImpl())) {
    slot = slot + g;
  } else {
    NoGradGuard no_grad;
    slot.add_(g);
  }
}
}  // namespace

Tensor Node::run_tensor_hooks(uint32_t input_nr, Tensor grad) {
  if (input_nr >= hooks_.size() || !hooks_[input_nr]) return grad;
  PerInputHooks& h = *hooks_[input_nr];
  if (h.hooks)
    for (const TensorHook& hook : h.hooks->snapshot()) {
      Tensor r = hook(grad);
      if (r.defined()) grad = std::move(r);
    }
  if (std::shared_ptr<RetainedGrad> slot = h.retained.lock()) {
    if (grad.defined()) {
      std::lock_guard<std::mutex> lock(slot->mu);
      accumulate_into(slot->grad, grad, is_grad_enabled());
    }
  }
  return grad;
}

// ---- AccumulateGrad ----

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  add_input_metadata(variable_);
}

Tensor AccumulateGrad::run_tensor_hooks(uint32_t, Tensor grad) {
  AutogradMeta* m = meta_of(variable_);
  if (m == nullptr || !m->leaf_hooks) return grad;
  for (const TensorHook& hook : m->leaf_hooks->snapshot()) {
    Tensor r = hook(grad);
    if (r.defined()) grad = std::move(r);
  }
  return grad;
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  AutogradMeta& m = materialize_meta(variable_);
  accumulate_into(m.grad, grads[0], is_grad_enabled());
  if (m.post_acc_hooks)
    for (const PostAccumulateHook& hook : m.post_acc_hooks->snapshot()) hook(variable_);
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = materialize_meta(t);
  std::lock_guard<std::mutex> lock(m.accumulator_mu);
  if (std::shared_ptr<Node> acc = m.grad_accumulator.lock()) return acc;
  std::shared_ptr<Node> acc = make_node<AccumulateGrad>(t);
  m.grad_accumulator = acc;
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (m == nullptr) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (m->requires_grad) return {grad_accumulator(t), 0};
  return {};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t input_nr) {
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = fn;
  m.output_nr = input_nr;
  m.requires_grad = false;  // requires grad through grad_fn
  m.grad_accumulator.reset();
  t.unsafeGetTensorImpl()->set_autograd_meta(t.unsafeGetTensorImpl()->autograd_meta());  // refresh the key
}

}  // namespace tessera::autograd

namespace tessera {

void TensorImpl::set_autograd_meta(autograd::AutogradMeta* meta) {
  if (meta != autograd_meta_) {
    autograd::AutogradMeta* old = autograd_meta_;
    autograd_meta_ = meta;
    if (old != nullptr) autograd::destroy_autograd_meta(old);
  }
  const DispatchKeySet ag(DispatchKey::Autograd);
  key_set_ = autograd::requires_grad_impl(this) ? (key_set_ | ag) : (key_set_ - ag);
}

}  // namespace tessera
