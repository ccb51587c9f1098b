// Tensor's autograd methods (tessera/autograd_methods.inc).
#include <tessera/autograd.h>
#include <tessera/error.h>

#include "accumulate_grad.h"
#include "autograd_meta.h"

namespace tessera {
using autograd::AutogradMeta;
using autograd::meta_of;

bool Tensor::requires_grad() const {
  checked();
  return autograd::requires_grad_impl(impl_.get());
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  checked();
  AutogradMeta* m = meta_of(*this);
  if (!requires_grad) {
    TSR_CHECK(m == nullptr || !m->grad_fn, AutogradError,
              "requires_grad_(False): this tensor is not a leaf (it was made by ", m->grad_fn->name(),
              "); use detach() to get a tensor without history");
    if (m != nullptr) {
      m->requires_grad = false;
      impl_->set_autograd_meta(m);
    }
    return *this;
  }
  TSR_CHECK(is_floating_type(scalar_type()), TypeError,
            "requires_grad_: only floating-point tensors can require gradients, got ", dtype_name(scalar_type()));
  TSR_CHECK(!impl_->is_inference() || autograd::is_inference_mode_enabled(), AutogradError,
            "requires_grad_: an inference tensor (made in inference mode) cannot require grad outside inference "
            "mode; clone() it outside inference mode first");
  AutogradMeta& mm = autograd::materialize_meta(*this);
  if (!mm.grad_fn) mm.requires_grad = true;
  impl_->set_autograd_meta(&mm);
  return *this;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = meta_of(*this);
  checked();
  return m == nullptr || !m->grad_fn;
}

Tensor Tensor::grad() const {
  checked();
  const AutogradMeta* m = meta_of(*this);
  if (m == nullptr) return {};
  if (m->grad_fn) {
    if (!m->retained) return {};
    std::lock_guard<std::mutex> lock(m->retained->mu);
    return m->retained->grad;
  }
  return m->grad;
}

void Tensor::set_grad(const Tensor& grad) {
  checked();
  if (grad.defined()) {
    TSR_CHECK(grad.sizes().equals(sizes()) && grad.scalar_type() == scalar_type() && grad.device() == device(),
              ValueError, "set_grad: the gradient must match the tensor: got ", dtype_name(grad.scalar_type()),
              grad.sizes(), " on ", grad.device().str(), " for ", dtype_name(scalar_type()), sizes(), " on ",
              device().str());
  }
  AutogradMeta* m = meta_of(*this);
  if (m == nullptr && !grad.defined()) return;
  AutogradMeta& mm = autograd::materialize_meta(*this);
  if (mm.grad_fn) {
    if (!mm.retained) mm.retained = std::make_shared<autograd::RetainedGrad>();
    std::lock_guard<std::mutex> lock(mm.retained->mu);
    mm.retained->grad = grad;
    return;
  }
  mm.grad = grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  checked();
  const AutogradMeta* m = meta_of(*this);
  return m ? m->grad_fn : nullptr;
}

uint32_t Tensor::output_nr() const {
  checked();
  const AutogradMeta* m = meta_of(*this);
  return m ? m->output_nr : 0;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  checked();
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph, inputs);
}

void Tensor::retain_grad() const {
  checked();
  TSR_CHECK(requires_grad(), AutogradError,
            "retain_grad: the tensor does not require grad (mark a leaf with requires_grad_() first)");
  AutogradMeta& m = *meta_of(*this);
  if (!m.grad_fn) return;  // leaves keep .grad anyway
  if (!m.retained) m.retained = std::make_shared<autograd::RetainedGrad>();
  m.grad_fn->set_retained_grad(m.output_nr, m.retained);
}

bool Tensor::retains_grad() const {
  checked();
  const AutogradMeta* m = meta_of(*this);
  return m != nullptr && m->grad_fn && m->retained;
}

autograd::HookHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  checked();
  TSR_CHECK(requires_grad(), AutogradError,
            "register_hook: cannot register a hook on a tensor that does not require grad");
  AutogradMeta& m = *meta_of(*this);
  std::shared_ptr<autograd::TensorHookList> list;
  if (m.grad_fn) {
    list = m.grad_fn->tensor_hooks(m.output_nr);
  } else {
    if (!m.leaf_hooks) m.leaf_hooks = std::make_shared<autograd::TensorHookList>();
    list = m.leaf_hooks;
  }
  const uint64_t id = list->add(std::move(hook));
  std::weak_ptr<autograd::TensorHookList> weak = list;
  return autograd::HookHandle([weak, id] {
    if (auto l = weak.lock()) l->remove(id);
  });
}

autograd::HookHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  checked();
  TSR_CHECK(requires_grad() && is_leaf(), AutogradError,
            "register_post_accumulate_grad_hook: only leaf tensors that require grad accumulate a .grad");
  AutogradMeta& m = *meta_of(*this);
  if (!m.post_acc_hooks) m.post_acc_hooks = std::make_shared<autograd::PostAccumulateHookList>();
  const uint64_t id = m.post_acc_hooks->add(std::move(hook));
  std::weak_ptr<autograd::PostAccumulateHookList> weak = m.post_acc_hooks;
  return autograd::HookHandle([weak, id] {
    if (auto l = weak.lock()) l->remove(id);
  });
}

Tensor Tensor::detach() const {
  checked();
  return autograd::shallow_alias(*this);
}

Tensor& Tensor::detach_() {
  checked();
  AutogradMeta* m = meta_of(*this);
  if (m == nullptr) return *this;
  TSR_CHECK(!(m->is_view && m->grad_fn), AutogradError,
            "detach_: cannot detach a view of a tensor that requires grad in place; use detach()");
  m->grad_fn.reset();
  m->requires_grad = false;
  m->retained.reset();
  impl_->set_autograd_meta(m);
  return *this;
}

bool Tensor::is_inference() const { return checked().is_inference(); }
uint32_t Tensor::_version() const { return checked().storage()->version(); }

}  // namespace tessera
