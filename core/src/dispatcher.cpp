#include <tessera/dispatcher.h>
#include <tessera/error.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "device_registry.h"
#include "env_settings.h"
#include "local_keys.h"
#include "plugin_kernels.h"
#include "structured.h"

namespace tessera {

// ---------------------------------------------------------------------------
// Keys and thread-local sets

std::string dispatch_key_name(int bit) {
  switch (bit) {
    case static_cast<int>(DispatchKey::Autocast): return "Autocast";
    case static_cast<int>(DispatchKey::Autograd): return "Autograd";
    case static_cast<int>(DispatchKey::User0): return "User0";
    case static_cast<int>(DispatchKey::User1): return "User1";
    default: break;
  }
  if (bit < kMaxDeviceTypes) {
    if (const DeviceTypeEntry* e = device_registry::get(static_cast<DeviceTypeId>(bit))) return e->name;
    return "backend" + std::to_string(bit);
  }
  return "key" + std::to_string(bit);
}

std::string to_string(DispatchKeySet ks) {
  std::string s = "[";
  bool first = true;
  for (int bit = 63; bit >= 0; --bit) {
    if (!ks.has(bit)) continue;
    s += (first ? "" : ", ") + dispatch_key_name(bit);
    first = false;
  }
  return s + "]";
}

// initial-exec: read on every dispatch, so no __tls_get_addr call; constinit:
// no TLS-init check where core/src/local_keys.h reads it inline.
constinit thread_local LocalDispatchKeySet g_local_keys __attribute__((tls_model("initial-exec")));

LocalDispatchKeySet& tls_local_dispatch_key_set() { return g_local_keys; }

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.included;  // restore only what we added
  tls.included = tls.included | added_;
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.included = tls.included - added_;
}
ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.excluded;
  tls.excluded = tls.excluded | added_;
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.excluded = tls.excluded - added_;
}

// ---------------------------------------------------------------------------
// IValue

Scalar IValue::to_scalar() const {
  switch (tag) {
    case Tag::Int: return Scalar(i);
    case Tag::Double: return Scalar(d);
    case Tag::Bool: return Scalar(b);
    default: throw InternalError("IValue is not a scalar");
  }
}

// ---------------------------------------------------------------------------
// Schema

namespace {
std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}
std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string last = trim(s.substr(start));
  if (!last.empty()) parts.push_back(last);
  return parts;
}
// An op name (with an optional ".overload": dots allowed) or an argument name.
bool is_identifier(std::string_view s, bool dots) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.' || s.back() == '.')
    return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dots && c == '.');
  });
}
bool brackets_balanced(std::string_view s) {
  std::string open;
  for (char c : s) {
    if (c == '(' || c == '[') open += c;
    if ((c == ')' || c == ']') && (open.empty() || open.back() != (c == ')' ? '(' : '['))) return false;
    if (c == ')' || c == ']') open.pop_back();
  }
  return open.empty();
}
}  // namespace

Schema Schema::parse(std::string_view text) {
  Schema sc;
  sc.text = std::string(text);
  const size_t open = text.find('(');
  const size_t arrow = text.rfind("->");
  TSR_CHECK(open != std::string_view::npos && arrow != std::string_view::npos && arrow > open, ValueError,
            "malformed op schema '", text, "': expected 'name(args) -> returns'");
  const size_t close = text.rfind(')', arrow);
  TSR_CHECK(close != std::string_view::npos && close > open, ValueError, "malformed op schema '", text, "'");
  TSR_CHECK(brackets_balanced(text), ValueError, "malformed op schema '", text, "': unbalanced brackets");
  TSR_CHECK(trim(text.substr(close + 1, arrow - close - 1)).empty(), ValueError, "malformed op schema '", text,
            "': text between the arguments and '->'");
  sc.name = trim(text.substr(0, open));
  TSR_CHECK(is_identifier(sc.name, /*dots=*/true), ValueError, "malformed op schema '", text, "': the name '",
            sc.name, "' is not an identifier (with an optional .overload)");
  bool kwarg_only = false;
  for (const std::string& part : split_top_level(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    SchemaArgument a;
    std::string decl = part;
    if (size_t eq = decl.find('='); eq != std::string::npos) {
      a.default_value = trim(std::string_view(decl).substr(eq + 1));
      decl = trim(std::string_view(decl).substr(0, eq));
    }
    const size_t sp = decl.rfind(' ');
    TSR_CHECK(sp != std::string::npos, ValueError, "malformed op schema '", text, "': argument '", part,
              "' needs a type and a name");
    a.type = trim(std::string_view(decl).substr(0, sp));
    a.name = trim(std::string_view(decl).substr(sp + 1));
    TSR_CHECK(is_identifier(a.name, /*dots=*/false), ValueError, "malformed op schema '", text, "': argument name '",
              a.name, "' is not an identifier");
    TSR_CHECK(brackets_balanced(a.type) && brackets_balanced(a.default_value), ValueError, "malformed op schema '",
              text, "': argument '", part, "' has unbalanced brackets in its type or default");
    for (const SchemaArgument& b : sc.arguments)
      TSR_CHECK(b.name != a.name, ValueError, "malformed op schema '", text, "': argument '", a.name, "' twice");
    a.kwarg_only = kwarg_only;
    a.mutable_alias = a.type.find('!') != std::string::npos;
    sc.arguments.push_back(std::move(a));
  }
  std::string rets = trim(text.substr(arrow + 2));
  if (!rets.empty() && rets.front() == '(' && rets.back() == ')') rets = rets.substr(1, rets.size() - 2);
  sc.returns = split_top_level(rets);
  for (const std::string& r : sc.returns)
    TSR_CHECK(!r.empty() && brackets_balanced(r), ValueError, "malformed op schema '", text, "': return '", r,
              "' is empty or has unbalanced brackets");
  return sc;
}

// ---------------------------------------------------------------------------
// Dispatcher

bool g_dispatch_trace = env::parse_switch(std::getenv("TESSERA_DISPATCH_TRACE"));

const KernelFunction g_structured_kernel{&run_structured, nullptr, "structured"};

namespace {

// Kernel entries and tables replaced while other threads may still be reading
// them are kept here rather than freed (lock-free readers hold no reference).
// Bounded by the number of registrations; reachable, so leak checkers are quiet.
struct Retired {
  std::mutex mutex;
  std::vector<const void*> kernels;
  std::vector<const BackendKernels*> tables;
};
Retired& retired() {
  static Retired* r = new Retired();
  return *r;
}
void retire_kernel(const KernelFunction* k) {
  if (k == nullptr || k == &g_structured_kernel) return;
  std::lock_guard<std::mutex> lock(retired().mutex);
  retired().kernels.push_back(k);
}
void retire_table(const BackendKernels* t) {
  if (t == nullptr) return;
  std::lock_guard<std::mutex> lock(retired().mutex);
  retired().tables.push_back(t);
}
}  // namespace

bool Dispatcher::trace_enabled() { return g_dispatch_trace; }
void Dispatcher::set_trace(bool on) { g_dispatch_trace = on; }

struct Dispatcher::State {
  mutable std::mutex mutex;
  std::map<std::string, std::unique_ptr<Operator>, std::less<>> ops;
};

Dispatcher::Dispatcher() : state_(new State()) {}

Dispatcher& Dispatcher::instance() {
  static Dispatcher* d = new Dispatcher();  // leaked: ops outlive static destructors
  return *d;
}

Operator::Operator(std::string_view schema, uint32_t flags) : schema_(Schema::parse(schema)), flags_(flags) {}

Operator& Dispatcher::declare(std::string_view schema, uint32_t flags) {
  auto op = std::make_unique<Operator>(schema, flags);
  std::lock_guard<std::mutex> lock(state_->mutex);
  TSR_CHECK(state_->ops.find(op->name()) == state_->ops.end(), ValueError, "op '", op->name(), "' is declared twice");
  Operator& ref = *op;
  state_->ops.emplace(op->name(), std::move(op));
  return ref;
}

Operator& Dispatcher::declare_structured(std::string_view schema, uint32_t flags, MetaFn meta) {
  Operator& op = declare(schema, flags);
  op.meta_ = meta;
  op.backend_default_ = &g_structured_kernel;
  for (int bit = 0; bit < kMaxDeviceTypes; ++bit) op.table_[bit].store(&g_structured_kernel, std::memory_order_release);
  return op;
}

Operator& Dispatcher::declare_inplace_variant(const Operator& functional, std::string_view schema, MetaFn meta) {
  Operator& op = declare_structured(schema, functional.flags() | kInPlace, meta);
  op.kernel_source_ = &functional;
  return op;
}

Operator& Dispatcher::declare_composite(std::string_view schema, uint32_t flags, BoxedKernelFn kernel) {
  Operator& op = declare(schema, flags);
  auto* k = new KernelFunction{kernel, nullptr, "composite"};  // lives as long as the op
  op.backend_default_ = k;
  for (int bit = 0; bit < kMaxDeviceTypes; ++bit) op.table_[bit].store(k, std::memory_order_release);
  return op;
}

Operator* Dispatcher::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto it = state_->ops.find(name);
  return it == state_->ops.end() ? nullptr : it->second.get();
}

Operator& Dispatcher::get(std::string_view name) const {
  Operator* op = find(name);
  TSR_CHECK(op != nullptr, NotImplementedError, "unknown op '", name, "': no operator of that name is declared");
  return *op;
}

std::vector<const Operator*> Dispatcher::operators() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::vector<const Operator*> out;
  for (const auto& [name, op] : state_->ops) out.push_back(op.get());
  return out;
}

void Dispatcher::register_kernel(Operator& op, DispatchKey key, KernelFunction kernel) {
  register_kernel(op, static_cast<int>(key), kernel);
}
void Dispatcher::register_kernel(Operator& op, int bit, KernelFunction kernel) {
  TSR_CHECK(bit >= 0 && bit < kNumDispatchKeys && kernel.fn != nullptr, ValueError, "register_kernel(", op.name(),
            "): bad key ", bit, " or null kernel");
  std::lock_guard<std::mutex> lock(state_->mutex);
  const KernelFunction* old = op.table_[bit].exchange(new KernelFunction(kernel), std::memory_order_acq_rel);
  if (old != op.backend_default_) retire_kernel(old);
}
void Dispatcher::deregister_kernel(Operator& op, int bit) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const KernelFunction* old =
      op.table_[bit].exchange(bit < kMaxDeviceTypes ? op.backend_default_ : nullptr, std::memory_order_acq_rel);
  if (old != op.backend_default_) retire_kernel(old);
}
void Dispatcher::register_fallback(DispatchKey key, KernelFunction kernel) {
  TSR_CHECK(kernel.fn != nullptr, ValueError, "register_fallback: null kernel");
  std::lock_guard<std::mutex> lock(state_->mutex);
  retire_kernel(fallbacks_[static_cast<int>(key)].exchange(new KernelFunction(kernel), std::memory_order_acq_rel));
}
void Dispatcher::deregister_fallback(DispatchKey key) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  retire_kernel(fallbacks_[static_cast<int>(key)].exchange(nullptr, std::memory_order_acq_rel));
}

namespace {
// Inlined into Dispatcher::call: every boxed call computes its keys.
[[gnu::always_inline]] inline DispatchKeySet dispatch_keys_of(const Frame& frame) {
  uint64_t bits = 0;
  for (int i = 0; i < frame.num_args; ++i) {
    const IValue& v = frame.args[i];
    if (v.tag == IValue::Tag::Tensor) {
      if (v.tensor->defined()) bits |= v.tensor->unsafeGetTensorImpl()->key_set().raw();
    } else if (v.tag == IValue::Tag::TensorList) {
      for (size_t j = 0; j < v.tensors.size; ++j)
        if (v.tensors.data[j].defined()) bits |= v.tensors.data[j].unsafeGetTensorImpl()->key_set().raw();
    } else if (v.tag == IValue::Tag::Device) {
      bits |= DispatchKeySet::backend(v.device.type()).raw();
    }
  }
  const LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  return (DispatchKeySet(bits) | tls.included) - tls.excluded;
}
}  // namespace

DispatchKeySet compute_dispatch_keys(const Frame& frame) { return dispatch_keys_of(frame); }

void Dispatcher::call(const Operator& op, Frame& frame) const { redispatch(op, dispatch_keys_of(frame), frame); }

void Dispatcher::redispatch(const Operator& op, DispatchKeySet ks, Frame& frame) const {
  const int bit = ks.highest();
  const KernelFunction* k = bit >= 0 ? op.table_[bit].load(std::memory_order_acquire) : nullptr;
  if (k == nullptr) [[unlikely]] {
    k = bit >= 0 ? fallbacks_[bit].load(std::memory_order_acquire) : nullptr;
    if (k == nullptr) no_kernel(op, ks, bit, frame);
  }
  if (g_dispatch_trace) [[unlikely]] {
    std::fprintf(stderr, "[tessera dispatch] %s keys=%s -> %s (%s)\n", op.name().c_str(), to_string(ks).c_str(),
                 dispatch_key_name(bit).c_str(), k->label);
  }
  k->fn(op, ks, frame, k->context);
}

void Dispatcher::no_kernel(const Operator& op, DispatchKeySet ks, int bit, const Frame& frame) const {
  if (bit < 0) {
    throw ValueError(detail::str(op.name(), ": cannot tell which device to run on (no tensor or device argument); call: ",
                                 describe_call(op, frame)));
  }
  throw NotImplementedError(detail::str(op.name(), ": no kernel and no fallback for dispatch key ",
                                        dispatch_key_name(bit), " (keys ", to_string(ks), "); call: ",
                                        describe_call(op, frame)));
}

std::string describe_call(const Operator& op, const Frame& frame) {
  std::ostringstream os;
  os << op.name() << "(";
  const auto& args = op.schema().arguments;
  for (int i = 0; i < frame.num_args; ++i) {
    if (i) os << ", ";
    if (i < int(args.size())) os << args[i].name << "=";
    const IValue& v = frame.args[i];
    switch (v.tag) {
      case IValue::Tag::None: os << "None"; break;
      case IValue::Tag::Tensor:
        if (!v.tensor->defined()) {
          os << "<undefined tensor>";
        } else {
          os << dtype_name(v.tensor->scalar_type()) << v.tensor->sizes() << " " << v.tensor->device().str();
        }
        break;
      case IValue::Tag::Int: os << v.i; break;
      case IValue::Tag::Double: os << v.d; break;
      case IValue::Tag::Bool: os << (v.b ? "True" : "False"); break;
      case IValue::Tag::IntList: os << v.int_list(); break;
      case IValue::Tag::ScalarType: os << dtype_name(v.dtype); break;
      case IValue::Tag::String: os << '"' << v.string() << '"'; break;
      case IValue::Tag::Device: os << v.device.str(); break;
      case IValue::Tag::TensorList: os << "<" << v.tensors.size << " tensors>"; break;
    }
  }
  os << ")";
  return os.str();
}

// ---------------------------------------------------------------------------
// Plugin kernel tables

uint64_t registered_dtype_mask(const Operator& op, DeviceTypeId t) {
  const auto* k = static_cast<const BackendKernels*>(op.backend_kernels(t));
  uint64_t mask = 0;
  if (k != nullptr)
    for (int d = 0; d < kNumScalarTypes; ++d)
      if (k->by_dtype[d].fn) mask |= uint64_t{1} << d;
  return mask;
}

void install_plugin_kernel(Operator& op, DeviceTypeId t, uint64_t mask, TsrKernelFn fn, void* context,
                           PluginRecord* plugin) {
  const auto* old = static_cast<const BackendKernels*>(op.backend_kernels(t));
  auto* next = old ? new BackendKernels(*old) : new BackendKernels();  // copy-on-write; old kept for readers
  for (int d = 0; d < kNumScalarTypes; ++d)
    if (mask & (uint64_t{1} << d)) next->by_dtype[d] = PluginKernel{fn, context, plugin};
  op.set_backend_kernels(t, next);
  retire_table(old);
}

}  // namespace tessera

namespace tessera {

void remove_plugin_kernels(const PluginRecord* plugin) {
  for (const Operator* cop : Dispatcher::instance().operators()) {
    auto* op = const_cast<Operator*>(cop);
    for (int t = 0; t < kMaxDeviceTypes; ++t) {
      const auto* old = static_cast<const BackendKernels*>(op->backend_kernels(static_cast<DeviceTypeId>(t)));
      if (old == nullptr) continue;
      bool touched = false;
      auto* next = new BackendKernels(*old);  // copy-on-write; the old table stays for readers
      for (PluginKernel& k : next->by_dtype) {
        if (k.plugin == plugin) {
          k = PluginKernel{};
          touched = true;
        }
      }
      if (touched) {
        op->set_backend_kernels(static_cast<DeviceTypeId>(t), next);
        retire_table(old);
      } else {
        delete next;
      }
    }
  }
}

}  // namespace tessera
