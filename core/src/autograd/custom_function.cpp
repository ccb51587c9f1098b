// Custom autograd functions (tessera/autograd/function.h).
#include <tessera/autograd/function.h>
#include <tessera/error.h>

#include "autograd_meta.h"
#include "saved_variable.h"

namespace tessera::autograd {

struct AutogradContext::Saved {
  SavedVariable var;
  const TensorImpl* impl = nullptr;  // to recognise outputs saved before wiring
  Tensor pending;                    // held until wiring decides input or output
};

void AutogradContext::save_for_backward(variable_list tensors) {
  saved_.clear();
  for (Tensor& t : tensors) {
    auto s = std::make_shared<Saved>();
    s->impl = t.defined() ? t.unsafeGetTensorImpl() : nullptr;
    s->pending = std::move(t);
    saved_.push_back(std::move(s));
  }
}

variable_list AutogradContext::get_saved_variables() const {
  TSR_CHECK(!released_, AutogradError, "autograd: trying to backward through ", name_,
            " a second time (its saved tensors were freed by the first backward); pass retain_graph=true to the "
            "first backward call");
  variable_list out;
  for (size_t i = 0; i < saved_.size(); ++i) {
    const Saved& s = *saved_[i];
    if (s.pending.defined() || node_ == nullptr) {
      out.push_back(s.pending);
    } else {
      out.push_back(s.var.unpack(*node_, tessera::detail::str("saved tensor ", i), node_->shared_from_this()));
    }
  }
  return out;
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(t.unsafeGetTensorImpl());
}

bool AutogradContext::needs_input_grad(size_t i) const { return i < needs_input_grad_.size() && needs_input_grad_[i]; }

CustomFunctionNode::CustomFunctionNode(std::string name, BackwardFn backward)
    : name_(std::move(name)), backward_(std::move(backward)) {
  ctx_.name_ = name_;
  ctx_.node_ = this;
}

void prepare_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs) {
  AutogradContext& ctx = node->context();
  ctx.needs_input_grad_.clear();
  const bool grad_on = is_grad_enabled();
  for (const Tensor& t : inputs)
    ctx.needs_input_grad_.push_back(grad_on && t.defined() && requires_grad_impl(t.unsafeGetTensorImpl()));
}

variable_list detail_wire_custom(const std::shared_ptr<CustomFunctionNode>& node, const variable_list& inputs,
                                 variable_list outputs) {
  AutogradContext& ctx = node->ctx_;
  bool any = false;
  for (bool b : ctx.needs_input_grad_) any |= b;
  auto is_nondiff = [&](const Tensor& t) {
    for (const TensorImpl* p : ctx.non_differentiable_)
      if (p == t.unsafeGetTensorImpl()) return true;
    return false;
  };
  // Outputs that are inputs (or share their TensorImpl) get a fresh alias so
  // that the input's own history is not overwritten.
  for (Tensor& o : outputs) {
    if (!o.defined()) continue;
    for (const Tensor& in : inputs)
      if (in.defined() && in.is_same(o)) {
        o = o.detach();
        break;
      }
  }
  if (!any) {  // nothing to differentiate: keep the saved tensors as they are
    for (auto& s : ctx.saved_) {
      s->var = SavedVariable(s->pending, false, ctx.name_ + ": a saved tensor");
      s->pending = Tensor();
    }
    return outputs;
  }
  node->num_tensor_inputs_ = static_cast<uint32_t>(inputs.size());
  edge_list& edges = node->mutable_next_edges();
  for (const Tensor& in : inputs) edges.push_back(in.defined() ? gradient_edge(in) : Edge{});
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    if (!o.defined()) {
      InputMetadata m;
      m.differentiable = false;
      node->add_input_metadata(std::move(m));
      continue;
    }
    const bool diff = is_floating_type(o.scalar_type()) && !is_nondiff(o);
    node->add_input_metadata(o, diff);
    if (diff) set_history(o, node, static_cast<uint32_t>(i));
  }
  // Saved outputs now have history; SavedVariable holds them without it.
  for (auto& s : ctx.saved_) {
    if (!s->pending.defined()) continue;
    bool is_output = false;
    for (const Tensor& o : outputs)
      if (o.defined() && o.unsafeGetTensorImpl() == s->impl) is_output = true;
    s->var = SavedVariable(s->pending, is_output, ctx.name_ + ": a saved tensor");
    s->pending = Tensor();
  }
  return outputs;
}

variable_list CustomFunctionNode::apply(variable_list&& grads) {
  variable_list in(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() || !ctx_.materialize_grads_ || !input_metadata_[i].differentiable) {
      in[i] = std::move(grads[i]);
    } else {
      in[i] = input_metadata_[i].zeros();
    }
  }
  variable_list out = backward_(&ctx_, std::move(in));
  // Trailing undefined gradients may be omitted.
  while (out.size() > num_tensor_inputs_ && !out.back().defined()) out.pop_back();
  TSR_CHECK(out.size() == num_tensor_inputs_ || out.size() < num_tensor_inputs_, AutogradError, name_,
            ".backward returned ", out.size(), " gradients, but forward took ", num_tensor_inputs_, " tensors");
  out.resize(num_tensor_inputs_);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() || !next_edges_[i].is_valid()) continue;
    const InputMetadata& m = next_edges_[i].function->input_metadata(next_edges_[i].input_nr);
    TSR_CHECK(out[i].sizes().equals(IntArrayRef(m.sizes.data(), m.sizes.size())), AutogradError, name_,
              ".backward returned a gradient of shape ", out[i].sizes(), " for input ", i, ", which has shape ",
              IntArrayRef(m.sizes.data(), m.sizes.size()));
  }
  return out;
}

void CustomFunctionNode::release_variables() {
  for (auto& s : ctx_.saved_) s->var.release();
  ctx_.released_ = true;
}

}  // namespace tessera::autograd
