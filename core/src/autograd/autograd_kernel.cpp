// The one Autograd kernel: for every op called on tensors that require grad it
// records a node from the op's rule, then runs the op below the Autograd key.
#include <tessera/autograd.h>
#include <tessera/error.h>

#include "../operator_slots.h"
#include "autograd_meta.h"
#include "rules.h"
#include "../ops/out_target.h"
#include "saved_variable.h"

#include <cctype>
#include <mutex>

namespace tessera::autograd {
namespace {

constexpr int kAutogradBit = static_cast<int>(DispatchKey::Autograd);

// "mul" -> "MulBackward"; a plugin's "toy::fused_gelu" -> "toy::FusedGeluBackward".
std::string node_name_for(const std::string& op) {
  const size_t ns = op.find("::");
  std::string out = ns == std::string::npos ? "" : op.substr(0, ns + 2);
  bool up = true;
  for (char c : ns == std::string::npos ? std::string_view(op) : std::string_view(op).substr(ns + 2)) {
    if (c == '.') break;  // overload name
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out + "Backward";
}

template <typename F>
void for_each_input_tensor(const Frame& frame, const std::vector<int>& inputs, F&& f) {
  for (int a : inputs) {
    if (a >= frame.num_args) continue;
    const IValue& v = frame.args[a];
    if (v.tag == IValue::Tag::Tensor) {
      f(*v.tensor);
    } else if (v.tag == IValue::Tag::TensorList) {
      for (size_t j = 0; j < v.tensors.size; ++j) f(v.tensors.data[j]);
    } else {
      static const Tensor undefined;
      f(undefined);  // an optional tensor passed as None keeps its slot
    }
  }
}

bool any_tensor_requires_grad(const Frame& frame) {
  for (int i = 0; i < frame.num_args; ++i) {
    const IValue& v = frame.args[i];
    if (v.tag == IValue::Tag::Tensor && v.tensor->defined() && requires_grad_impl(v.tensor->unsafeGetTensorImpl()))
      return true;
    if (v.tag == IValue::Tag::TensorList)
      for (size_t j = 0; j < v.tensors.size; ++j)
        if (v.tensors.data[j].defined() && requires_grad_impl(v.tensors.data[j].unsafeGetTensorImpl())) return true;
  }
  return false;
}

// Gives view `v` the history of `base.as_strided(v's geometry)`: what it is
// now that its base (or another view of it) was written in place.
void regenerate_view_history(const Tensor& v) {
  TensorImpl* vi = v.unsafeGetTensorImpl();
  const Tensor base(boost::intrusive_ptr<TensorImpl>(vi->view_base()));
  Tensor fresh = base.as_strided(vi->sizes(), vi->strides(), vi->storage_offset());
  AutogradMeta* fm = meta_of(fresh);
  AutogradMeta& m = materialize_meta(v);
  if (fm != nullptr && fm->grad_fn) {
    m.grad_fn = fm->grad_fn;
    m.output_nr = fm->output_nr;
  } else {
    m.grad_fn.reset();
  }
  m.is_view = true;
  m.view_version = vi->storage()->version();
  vi->set_autograd_meta(&m);
}

// The edge of an input. A view whose base (or another view of the same data)
// was written in place since the view got its history is given its current
// history first, as PyTorch does lazily.
Edge checked_edge(const Tensor& t) {
  if (!t.defined()) return {};
  const AutogradMeta* m = meta_of(t);
  if (m == nullptr) return {};
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  if (m->is_view && impl->view_base() != nullptr && impl->storage()->version() != m->view_version)
    regenerate_view_history(t);
  return gradient_edge(t);
}

struct TensorInfo {
  DimVector sizes;
  DimVector strides;
  int64_t storage_offset = 0;
  ScalarType dtype = ScalarType::Undefined;
  Device device{DeviceTypeId{0}, 0};
};

// One argument of the forward call, copied (IValues only borrow). Small
// vectors keep the common case (one tensor, a short list) free of heap blocks.
struct SavedArg {
  IValue::Tag tag = IValue::Tag::None;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  ScalarType dtype = ScalarType::Undefined;
  DimVector ints;
  std::string str;
  boost::container::small_vector<TensorInfo, 1> tensors;
  boost::container::small_vector<SavedVariable, 1> saved;
};

class FormulaNode final : public Node, public BackwardContext {
 public:
  FormulaNode(const Operator& op, const Rule& rule) : BackwardContext(op), rule_(rule) {}
  std::string name() const override { return rule_.node_name; }

  void record(const Operator& op, const Frame& frame, boost::container::small_vector<bool, 4> needs, const Tensor* inplace_self_clone) {
    needs_ = std::move(needs);
    args_.resize(static_cast<size_t>(frame.num_args));
    for (int a = 0; a < frame.num_args; ++a) {
      const IValue& v = frame.args[a];
      SavedArg& s = args_[a];
      s.tag = v.tag;
      switch (v.tag) {
        case IValue::Tag::None: break;
        case IValue::Tag::Int: s.i = v.i; break;
        case IValue::Tag::Double: s.d = v.d; break;
        case IValue::Tag::Bool: s.b = v.b; break;
        case IValue::Tag::IntList: s.ints.assign(v.ints.data, v.ints.data + v.ints.size); break;
        case IValue::Tag::ScalarType: s.dtype = v.dtype; break;
        case IValue::Tag::String: s.str.assign(v.str.data, v.str.size); break;
        case IValue::Tag::Device: break;
        case IValue::Tag::Tensor: s.tensors.push_back(info(*v.tensor)); break;
        case IValue::Tag::TensorList:
          for (size_t j = 0; j < v.tensors.size; ++j) s.tensors.push_back(info(v.tensors.data[j]));
          break;
      }
    }
    for (int a : rule_.derivative.save_inputs) {
      if (a >= frame.num_args) continue;
      const IValue& v = frame.args[a];
      const std::string what = detail::str(op.name(), ": argument '", arg_name(a), "'");
      if (v.tag == IValue::Tag::Tensor) {
        const Tensor& t = (a == 0 && inplace_self_clone != nullptr) ? *inplace_self_clone : *v.tensor;
        args_[a].saved.emplace_back(t, false, what);
      } else if (v.tag == IValue::Tag::TensorList) {
        for (size_t j = 0; j < v.tensors.size; ++j) args_[a].saved.emplace_back(v.tensors.data[j], false, what);
      }
    }
  }

  void save_outputs(const Frame& frame) {
    saved_outputs_.resize(static_cast<size_t>(frame.num_outputs));
    for (int o : rule_.derivative.save_outputs)
      if (o < frame.num_outputs)
        saved_outputs_[o] = SavedVariable(frame.outputs[o], true, detail::str(op_.name(), ": output ", o));
  }

  variable_list apply(variable_list&& grads) override {
    grads_ = &grads;
    variable_list out = rule_.derivative.formula(*this);
    grads_ = nullptr;
    TSR_CHECK(out.size() == needs_.size(), InternalError, "autograd: the derivative formula of ", op_.name(),
              " returned ", out.size(), " gradients for ", needs_.size(), " differentiable inputs");
    return out;
  }

  void release_variables() override {
    for (SavedArg& a : args_)
      for (SavedVariable& s : a.saved) s.release();
    for (SavedVariable& s : saved_outputs_) s.release();
  }

  // ---- BackwardContext ----
  Tensor grad(int output) const override {
    check_output(output);
    const Tensor& g = (*grads_)[output];
    return g.defined() ? g : input_metadata_[output].zeros();
  }
  bool grad_defined(int output) const override {
    check_output(output);
    return (*grads_)[output].defined();
  }
  Tensor saved(int arg) const override {
    const SavedArg& a = arg_at(arg);
    TSR_CHECK(a.saved.size() == 1, InternalError, "autograd: ", op_.name(), " formula reads argument ", arg,
              " which its rule does not save");
    return a.saved[0].unpack(*this, arg_label(arg), self());
  }
  std::vector<Tensor> saved_list(int arg) const override {
    const SavedArg& a = arg_at(arg);
    std::vector<Tensor> out;
    for (const SavedVariable& s : a.saved) out.push_back(s.unpack(*this, arg_label(arg), self()));
    return out;
  }
  Tensor result(int output) const override {
    TSR_CHECK(output >= 0 && size_t(output) < saved_outputs_.size() && saved_outputs_[output].defined(),
              InternalError, "autograd: ", op_.name(), " formula reads output ", output,
              " which its rule does not save");
    return saved_outputs_[output].unpack(*this, detail::str("output ", output), self());
  }
  bool needs_grad(int slot) const override { return slot >= 0 && size_t(slot) < needs_.size() && needs_[slot]; }
  bool is_none(int arg) const override { return arg_at(arg).tag == IValue::Tag::None; }
  int64_t int_arg(int arg) const override {
    const SavedArg& a = arg_at(arg);
    return a.tag == IValue::Tag::Double ? static_cast<int64_t>(a.d) : a.tag == IValue::Tag::Bool ? a.b : a.i;
  }
  double double_arg(int arg) const override {
    const SavedArg& a = arg_at(arg);
    return a.tag == IValue::Tag::Double ? a.d : a.tag == IValue::Tag::Bool ? double(a.b) : double(a.i);
  }
  bool bool_arg(int arg) const override {
    const SavedArg& a = arg_at(arg);
    return a.tag == IValue::Tag::Bool ? a.b : a.tag == IValue::Tag::Double ? a.d != 0 : a.i != 0;
  }
  Scalar scalar_arg(int arg) const override {
    const SavedArg& a = arg_at(arg);
    if (a.tag == IValue::Tag::Double) return Scalar(a.d);
    if (a.tag == IValue::Tag::Bool) return Scalar(a.b);
    return Scalar(a.i);
  }
  IntArrayRef int_list(int arg) const override {
    const SavedArg& a = arg_at(arg);
    if (a.tag == IValue::Tag::Int) return IntArrayRef(&a.i, 1);  // int[1] given as a number
    return IntArrayRef(a.ints.data(), a.ints.size());
  }
  std::string_view string_arg(int arg) const override { return arg_at(arg).str; }
  ScalarType dtype_arg(int arg) const override { return arg_at(arg).dtype; }
  IntArrayRef input_sizes(int arg, int j) const override {
    const TensorInfo& t = tensor_at(arg, j);
    return IntArrayRef(t.sizes.data(), t.sizes.size());
  }
  ScalarType input_dtype(int arg, int j) const override { return tensor_at(arg, j).dtype; }
  Device input_device(int arg, int j) const override { return tensor_at(arg, j).device; }
  IntArrayRef input_strides(int arg, int j) const override {
    const TensorInfo& t = tensor_at(arg, j);
    return IntArrayRef(t.strides.data(), t.strides.size());
  }
  int64_t input_storage_offset(int arg, int j) const override { return tensor_at(arg, j).storage_offset; }
  int list_size(int arg) const override { return static_cast<int>(arg_at(arg).tensors.size()); }

 private:
  static TensorInfo info(const Tensor& t) {
    TensorInfo i;
    if (!t.defined()) return i;
    const TensorImpl* impl = t.unsafeGetTensorImpl();
    i.sizes.assign(impl->sizes().begin(), impl->sizes().end());
    i.strides.assign(impl->strides().begin(), impl->strides().end());
    i.storage_offset = impl->storage_offset();
    i.dtype = impl->dtype();
    i.device = impl->device();
    return i;
  }
  std::string arg_name(int a) const {
    const auto& args = op_.schema().arguments;
    return a < int(args.size()) ? args[a].name : std::to_string(a);
  }
  std::string arg_label(int a) const { return detail::str("argument '", arg_name(a), "'"); }
  std::shared_ptr<Node> self() const { return std::const_pointer_cast<Node>(shared_from_this()); }
  const SavedArg& arg_at(int arg) const {
    TSR_CHECK(arg >= 0 && size_t(arg) < args_.size(), InternalError, "autograd: ", op_.name(),
              " formula reads argument ", arg, " of a call with ", args_.size());
    return args_[arg];
  }
  const TensorInfo& tensor_at(int arg, int j) const {
    const SavedArg& a = arg_at(arg);
    const size_t k = j < 0 ? 0 : size_t(j);
    TSR_CHECK(k < a.tensors.size(), InternalError, "autograd: ", op_.name(), " formula reads tensor ", k,
              " of argument ", arg, " which has ", a.tensors.size());
    return a.tensors[k];
  }
  void check_output(int output) const {
    TSR_CHECK(grads_ != nullptr && output >= 0 && size_t(output) < grads_->size(), InternalError, "autograd: ",
              op_.name(), " formula reads the gradient of output ", output);
  }

  const Rule& rule_;
  boost::container::small_vector<SavedArg, 3> args_;
  boost::container::small_vector<SavedVariable, 1> saved_outputs_;
  boost::container::small_vector<bool, 4> needs_;
  variable_list* grads_ = nullptr;
};

// An in-place op on a view: the base's new history. Its backward takes the
// gradient of the whole base, runs the op's node on the viewed region, writes
// the region's result back, and passes the base's gradient on to the base's
// old history and the op's other inputs to theirs.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const TensorImpl& view, std::shared_ptr<Node> fn, int self_slot)
      : fn_(std::move(fn)), self_slot_(self_slot) {
    const TensorImpl* b = base.unsafeGetTensorImpl();
    base_strides_.assign(b->strides().begin(), b->strides().end());
    view_sizes_.assign(view.sizes().begin(), view.sizes().end());
    view_strides_.assign(view.strides().begin(), view.strides().end());
    view_offset_ = view.storage_offset() - b->storage_offset();
    add_input_metadata(base);
    next_edges_.push_back(gradient_edge(base));
    const edge_list& fe = fn_->next_edges();
    for (size_t j = 0; j < fe.size(); ++j)
      if (static_cast<int>(j) != self_slot_) next_edges_.push_back(fe[j]);
  }
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads) override {
    const InputMetadata& m = input_metadata_[0];
    Tensor g = grads[0].defined() ? grads[0] : m.zeros();
    Tensor result = empty_strided(IntArrayRef(m.sizes.data(), m.sizes.size()),
                                  IntArrayRef(base_strides_.data(), base_strides_.size()),
                                  TensorOptions(m.dtype).device(m.device));
    result.copy_(g);
    Tensor region = result.as_strided(IntArrayRef(view_sizes_.data(), view_sizes_.size()),
                                      IntArrayRef(view_strides_.data(), view_strides_.size()), view_offset_);
    variable_list r = fn_->apply({region.clone()});
    if (self_slot_ >= 0 && static_cast<size_t>(self_slot_) < r.size() && r[self_slot_].defined()) {
      region.copy_(r[self_slot_]);
    } else {
      region.zero_();  // the op overwrote the region: the old values get no gradient
    }
    variable_list out;
    out.push_back(std::move(result));
    for (size_t j = 0; j < r.size(); ++j)
      if (static_cast<int>(j) != self_slot_) out.push_back(std::move(r[j]));
    return out;
  }
  void release_variables() override { fn_->release_variables(); }

 private:
  std::shared_ptr<Node> fn_;
  int self_slot_;
  DimVector base_strides_, view_sizes_, view_strides_;
  int64_t view_offset_ = 0;
};

void run_below(const Operator& op, DispatchKeySet ks, Frame& frame) {
  BelowAutogradGuard below;
  Dispatcher::instance().redispatch(op, ks.below(kAutogradBit), frame);
}

void check_inplace_target(const Operator& op, const Frame& frame) {
  const Tensor& self = *frame.args[0].tensor;
  const AutogradMeta* m = meta_of(self);
  if (m == nullptr) return;
  TSR_CHECK(!(m->requires_grad && !m->grad_fn), AutogradError, op.name(),
            ": a leaf tensor that requires grad is being modified in place; do it under no_grad (as optimizers "
            "do), or use the out-of-place op. Call: ",
            describe_call(op, frame));
}

// The base whose history an in-place op on view `self` must rewrite, or an
// undefined tensor. A view of a leaf that requires grad is refused like the leaf.
Tensor inplace_view_base(const Operator& op, const Frame& frame) {
  const TensorImpl* si = frame.args[0].tensor->unsafeGetTensorImpl();
  if (si->view_base() == nullptr) return {};
  Tensor base(boost::intrusive_ptr<TensorImpl>(si->view_base()));
  const AutogradMeta* bm = meta_of(base);
  TSR_CHECK(!(bm != nullptr && bm->requires_grad && !bm->grad_fn), AutogradError, op.name(),
            ": a view of a leaf tensor that requires grad is being modified in place; do it under no_grad, or "
            "modify a clone. Call: ",
            describe_call(op, frame));
  if (!is_floating_type(base.scalar_type())) return {};
  return base;
}

void autograd_kernel(const Operator& op, DispatchKeySet ks, Frame& frame, void*) {
  const Rule* rule = rule_ptr(op);
  const RuleKind kind = rule ? rule->kind : RuleKind::None;
  if (kind == RuleKind::Decomposed) {
    Dispatcher::instance().redispatch(op, ks.below(kAutogradBit), frame);  // its inner ops record
    return;
  }
  if (kind != RuleKind::Formula) {
    if (any_tensor_requires_grad(frame)) {
      if (kind == RuleKind::None)
        throw NotImplementedError(detail::str(op.name(), ": has no derivative formula, so it cannot run on tensors "
                                                         "that require grad; detach() them or use no_grad. Call: ",
                                              describe_call(op, frame)));
      if ((op.flags() & kInPlace) && requires_grad_impl(frame.args[0].tensor->unsafeGetTensorImpl()))
        throw AutogradError(detail::str(op.name(), ": is not differentiable and cannot modify in place a tensor "
                                                   "that requires grad; detach() it first. Call: ",
                                        describe_call(op, frame)));
    }
    run_below(op, ks, frame);
    return;
  }

  const Derivative& d = rule->derivative;
  boost::container::small_vector<bool, 4> needs;
  bool any = false;
  for_each_input_tensor(frame, d.inputs, [&](const Tensor& t) {
    const bool r = t.defined() && requires_grad_impl(t.unsafeGetTensorImpl());
    needs.push_back(r);
    any |= r;
  });
  if (!any) {
    run_below(op, ks, frame);
    return;
  }
  // A result that gets history is copied into an out= tensor, never written there.
  const ops::OutTargetSuspend no_out_target;
  const bool inplace = (op.flags() & kInPlace) != 0;
  Tensor view_base;
  if (inplace) {
    check_inplace_target(op, frame);
    view_base = inplace_view_base(op, frame);
  }

  auto node = make_node<FormulaNode>(op, *rule);
  edge_list& edges = node->mutable_next_edges();
  edges.reserve(needs.size());
  for_each_input_tensor(frame, d.inputs, [&](const Tensor& t) { edges.push_back(checked_edge(t)); });

  // An in-place op overwrites self; a formula that reads it gets a copy made
  // now (through autograd, so double backward sees its history).
  Tensor self_clone;
  if (inplace)
    for (int a : d.save_inputs)
      if (a == 0) self_clone = frame.args[0].tensor->clone();
  node->record(op, frame, std::move(needs), self_clone.defined() ? &self_clone : nullptr);
  if (is_anomaly_enabled()) node->set_forward_call(describe_call(op, frame));

  run_below(op, ks, frame);

  std::shared_ptr<Node> base = node;
  for (int i = 0; i < frame.num_outputs; ++i) {
    // reshape and contiguous return a view, or the input itself, when they
    // can: such an output is a view for autograd, and a fresh TensorImpl so
    // that the input keeps its own history.
    bool is_view = false;  // shares an input's storage (view ops, and reshape/contiguous when they can)
    if (!inplace && frame.outputs[i].defined())
      for (int a = 0; a < frame.num_args; ++a) {
        const IValue& v = frame.args[a];
        if (v.tag != IValue::Tag::Tensor || !v.tensor->defined()) continue;
        if (frame.outputs[i].is_same(*v.tensor)) {
          TensorImpl* in = v.tensor->unsafeGetTensorImpl();
          frame.outputs[i] = shallow_alias(frame.outputs[i]);
          frame.outputs[i].unsafeGetTensorImpl()->set_view_base(
              boost::intrusive_ptr<TensorImpl>(in->view_base() ? in->view_base() : in));
        }
        if (frame.outputs[i].unsafeGetTensorImpl()->storage() == v.tensor->unsafeGetTensorImpl()->storage())
          is_view = true;
      }
    // A view of a temporary the op made below autograd (reshape copying
    // through contiguous()) is, for autograd, a fresh tensor.
    if (!inplace && !is_view && frame.outputs[i].defined() && frame.outputs[i].unsafeGetTensorImpl()->view_base())
      frame.outputs[i].unsafeGetTensorImpl()->set_view_base(nullptr);
    const Tensor& o = frame.outputs[i];
    if (!o.defined()) {
      InputMetadata m;
      m.differentiable = false;
      node->add_input_metadata(std::move(m));
      continue;
    }
    const bool diff = is_floating_type(o.scalar_type());
    node->add_input_metadata(o, diff);
    if (!diff) continue;
    set_history(o, base, static_cast<uint32_t>(i));
    if (is_view) {
      AutogradMeta* m = meta_of(o);
      m->is_view = true;
      m->view_version = o.unsafeGetTensorImpl()->storage()->version();
    }
  }
  node->save_outputs(frame);
  if (view_base.defined()) {
    // self is a view: the op wrote a region of its base. The base's history
    // becomes CopySlices over this node; self's becomes a view of the new base.
    int self_slot = -1;
    for (size_t k = 0; k < d.inputs.size(); ++k)
      if (d.inputs[k] == 0) self_slot = static_cast<int>(k);
    const Tensor& self = *frame.args[0].tensor;
    set_history(view_base, make_node<CopySlices>(view_base, *self.unsafeGetTensorImpl(), node, self_slot), 0);
    regenerate_view_history(self);
  }
}

}  // namespace

// ---- rules ----

namespace {
std::mutex g_rules_mu;
const Rule* install(std::string_view op_name, Rule r) {
  Operator& op = Dispatcher::instance().get(op_name);
  std::lock_guard<std::mutex> lock(g_rules_mu);
  TSR_CHECK(detail::OperatorSlots::autograd_rule(op) == nullptr, ValueError, "autograd: op ", op_name, " already has an autograd rule");
  r.node_name = node_name_for(op.name());
  const Rule* p = new Rule(std::move(r));  // lives as long as the op (never freed, like kernels)
  detail::OperatorSlots::set_autograd_rule(op, p);
  return p;
}
}  // namespace

void define_derivative(std::string_view op_name, Derivative d) {
  const Operator& op = Dispatcher::instance().get(op_name);
  const int n = static_cast<int>(op.schema().arguments.size());
  const int nout = static_cast<int>(op.schema().returns.size());
  auto check = [&](const std::vector<int>& idx, int limit, const char* what) {
    for (int i : idx)
      TSR_CHECK(i >= 0 && i < limit, ValueError, "define_derivative(", op_name, "): ", what, " index ", i,
                " is out of range for the schema ", op.schema().text);
  };
  check(d.inputs, n, "input");
  check(d.save_inputs, n, "saved input");
  check(d.save_outputs, nout, "saved output");
  TSR_CHECK(d.formula != nullptr, ValueError, "define_derivative(", op_name, "): no formula");
  Rule r;
  r.kind = RuleKind::Formula;
  r.derivative = std::move(d);
  install(op_name, std::move(r));
}
void define_not_differentiable(std::string_view op_name) {
  Rule r;
  r.kind = RuleKind::NotDifferentiable;
  install(op_name, std::move(r));
}
void define_decomposed(std::string_view op_name) {
  Rule r;
  r.kind = RuleKind::Decomposed;
  install(op_name, std::move(r));
}
RuleKind rule_of(const Operator& op) {
  const Rule* r = rule_ptr(op);
  return r ? r->kind : RuleKind::None;
}

bool BackwardContext::create_graph() const { return is_grad_enabled(); }

void install_autograd_kernel() {
  Dispatcher::instance().register_fallback(DispatchKey::Autograd, KernelFunction{&autograd_kernel, nullptr, "autograd"});
}

}  // namespace tessera::autograd
