// nn::Module: registration, traversal, modes, device/dtype moves, state dicts.
#include <tessera/autograd.h>
#include <tessera/nn/module.h>

#include <sstream>
#include <unordered_set>

namespace tessera::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}
Module::~Module() = default;

void Module::check_new_name(const std::string& name, const char* what) const {
  TSR_CHECK(!name.empty(), ValueError, type_name_, ".", what, ": the name is empty");
  TSR_CHECK(name.find('.') == std::string::npos, ValueError, type_name_, ".", what, ": the name '", name,
            "' contains '.'");
  auto taken = [&](const auto& v) {
    for (const auto& s : v)
      if (s->name == name) return true;
    return false;
  };
  bool child = false;
  for (const auto& [n, m] : children_) child |= n == name;
  TSR_CHECK(!taken(params_) && !taken(buffers_) && !child, ValueError, type_name_, ".", what, ": the name '", name,
            "' is already used by a ", taken(params_) ? "parameter" : taken(buffers_) ? "buffer" : "submodule",
            " of this module");
}

Tensor& Module::register_parameter(const std::string& name, const Tensor& tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  auto slot = std::make_unique<Slot>();
  slot->name = name;
  if (tensor.defined()) {
    slot->tensor = tensor.detach();
    if (requires_grad) slot->tensor.requires_grad_(true);
  }
  params_.push_back(std::move(slot));
  return params_.back()->tensor;
}

Tensor& Module::register_buffer(const std::string& name, const Tensor& tensor, bool persistent) {
  check_new_name(name, "register_buffer");
  auto slot = std::make_unique<Slot>();
  slot->name = name;
  slot->tensor = tensor;
  slot->persistent = persistent;
  buffers_.push_back(std::move(slot));
  return buffers_.back()->tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  TSR_CHECK(module != nullptr, ValueError, type_name_, ".register_module: the module '", name, "' is null");
  TSR_CHECK(module.get() != this, ValueError, type_name_, ".register_module: a module cannot be its own child");
  children_.emplace_back(name, std::move(module));
}

// Calls f(dotted_prefix, module) for this module and, if recurse, each descendant, pre-order.
template <typename F>
void Module::visit(const std::string& prefix, bool recurse, F&& f) const {
  f(prefix, *this);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->visit(prefix + name + ".", true, f);
}

std::vector<std::pair<std::string, Tensor>> Module::named_slots(Slots Module::*which, bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& s : m.*which)
      if (s->tensor.defined() && seen.insert(s->tensor.unsafeGetTensorImpl()).second)
        out.emplace_back(prefix + s->name, s->tensor);
  });
  return out;
}

namespace {
std::vector<Tensor> tensors_of(std::vector<std::pair<std::string, Tensor>> named) {
  std::vector<Tensor> out;
  out.reserve(named.size());
  for (auto& [n, t] : named) out.push_back(std::move(t));
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  return named_slots(&Module::params_, recurse);
}
std::vector<Tensor> Module::parameters(bool recurse) const { return tensors_of(named_parameters(recurse)); }
std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  return named_slots(&Module::buffers_, recurse);
}
std::vector<Tensor> Module::buffers(bool recurse) const { return tensors_of(named_buffers(recurse)); }

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  // shared_from_this needs a shared owner; a module on the stack gets an aliasing
  // pointer that owns nothing.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  out.emplace_back("", self);
  for (const auto& [name, child] : children_)
    for (auto& [sub, m] : child->named_modules()) out.emplace_back(sub.empty() ? name : name + "." + sub, m);
  return out;
}

Module& Module::train(bool on) {
  training_ = on;
  on_train(on);
  for (const auto& [n, child] : children_) child->train(on);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      if (g.grad_fn()) {  // a grad built with create_graph: cut it from its graph first
        g = g.detach();
        p.set_grad(g);
      }
      g.zero_();
    }
  }
}

void Module::convert(const std::optional<Device>& device, const std::optional<ScalarType>& dtype) {
  TSR_CHECK(!dtype || is_floating_type(*dtype), TypeError, type_name_, ".to: dtype must be floating, got ", *dtype);
  autograd::NoGradGuard no_grad;
  auto moved = [&](const Tensor& t) {
    const Device dev = device.value_or(t.device());
    const ScalarType dt = dtype && t.is_floating_point() ? *dtype : t.scalar_type();
    return t.to(dev, dt);
  };
  // Convert everything first so that a failure leaves the module unchanged.
  std::vector<std::pair<Slot*, Tensor>> updates;
  auto plan = [&](Module& m) {
    for (auto& s : m.params_) {
      if (!s->tensor.defined()) continue;
      Tensor n = moved(s->tensor);
      if (n.is_same(s->tensor)) continue;
      n = n.detach();
      if (s->tensor.requires_grad()) n.requires_grad_(true);
      if (Tensor g = s->tensor.grad(); g.defined()) n.set_grad(moved(g).detach());
      updates.emplace_back(s.get(), std::move(n));
    }
    for (auto& s : m.buffers_) {
      if (!s->tensor.defined()) continue;
      Tensor n = moved(s->tensor);
      if (!n.is_same(s->tensor)) updates.emplace_back(s.get(), std::move(n));
    }
  };
  for (auto& [name, m] : named_modules()) plan(*m);
  // A tensor shared by several slots moves once and stays shared.
  std::unordered_map<const TensorImpl*, Tensor> done;
  for (auto& [slot, n] : updates) {
    auto [it, fresh] = done.emplace(slot->tensor.unsafeGetTensorImpl(), n);
    slot->tensor = it->second;
  }
}

Module& Module::to(Device device) {
  convert(device, std::nullopt);
  return *this;
}
Module& Module::to(ScalarType dtype) {
  convert(std::nullopt, dtype);
  return *this;
}
Module& Module::to(Device device, ScalarType dtype) {
  convert(device, dtype);
  return *this;
}

StateDict Module::state_dict() const {
  StateDict out;
  visit("", true, [&](const std::string& prefix, const Module& m) {
    for (const auto& s : m.params_)
      if (s->tensor.defined()) out.insert(prefix + s->name, s->tensor.detach());
    for (const auto& s : m.buffers_)
      if (s->tensor.defined() && s->persistent) out.insert(prefix + s->name, s->tensor.detach());
  });
  return out;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "'" : ", '") + s + "'";
  return out;
}
std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
  // Every destination, by key (shared weights appear under each of their names).
  std::vector<std::pair<std::string, Slot*>> dests;
  visit("", true, [&](const std::string& prefix, const Module& m) {
    for (const auto& s : m.params_)
      if (s->tensor.defined()) dests.emplace_back(prefix + s->name, s.get());
    for (const auto& s : m.buffers_)
      if (s->tensor.defined() && s->persistent) dests.emplace_back(prefix + s->name, s.get());
  });
  LoadResult result;
  std::vector<std::string> mismatched;
  std::unordered_set<std::string> known;
  for (const auto& [key, slot] : dests) {
    known.insert(key);
    const Tensor* src = dict.find(key);
    if (src == nullptr) {
      result.missing_keys.push_back(key);
      continue;
    }
    if (!src->sizes().equals(slot->tensor.sizes()))
      mismatched.push_back(detail::str("'", key, "': the file has shape ", shape_str(src->sizes()),
                                       ", the module has ", shape_str(slot->tensor.sizes())));
  }
  for (const auto& [key, t] : dict)
    if (!known.count(key)) result.unexpected_keys.push_back(key);

  std::string problems;
  for (const auto& m : mismatched) problems += "\n  size mismatch for " + m;
  if (strict && !result.missing_keys.empty()) problems += "\n  missing keys: " + join(result.missing_keys);
  if (strict && !result.unexpected_keys.empty()) problems += "\n  unexpected keys: " + join(result.unexpected_keys);
  if (!problems.empty())
    throw ValueError(detail::str(type_name_, ".load_state_dict: the state dict does not fit the module (nothing was "
                                             "loaded):",
                                 problems));

  autograd::NoGradGuard no_grad;
  for (const auto& [key, slot] : dests)
    if (const Tensor* src = dict.find(key)) slot->tensor.copy_(*src);
  return result;
}

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(detail::str(type_name_, ".forward: this module does not define forward()"));
}

std::string Module::repr() const {
  std::string out = type_name_ + "(" + extra_repr();
  if (!children_.empty()) {
    out += "\n";
    for (const auto& [name, child] : children_) {
      std::string sub = child->repr();
      std::string indented;
      for (char c : sub) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      out += "  (" + name + "): " + indented + "\n";
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace tessera::nn
