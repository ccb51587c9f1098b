// The dispatcher (tessera/dispatcher.h): op declaration and lookup, kernel and
// fallback registration, and dispatch of a boxed call by its keys.
#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/op_catalogue.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dispatch_trace.h"
#include "env_settings.h"
#include "local_keys.h"
#include "structured_kernel.h"

namespace tessera {

bool g_dispatch_trace = env::parse_switch(std::getenv("TESSERA_DISPATCH_TRACE"));

namespace {

// Kernel entries replaced while other threads may still be reading them are
// kept here rather than freed (lock-free readers hold no reference). Bounded by
// the number of registrations; reachable, so leak checkers are quiet.
struct Retired {
  std::mutex mutex;
  std::vector<const void*> kernels;
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

// Bumped with each new tests/abi/op_catalogue_v<N>.txt (abi_op_catalogue_test checks they agree).
int op_catalogue_version() { return 6; }

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
  return call_key_set(bits);
}
}  // namespace

DispatchKeySet compute_dispatch_keys(const Frame& frame) { return dispatch_keys_of(frame); }

void Dispatcher::call(const Operator& op, Frame& frame) const { redispatch(op, dispatch_keys_of(frame), frame); }

void Dispatcher::redispatch(const Operator& op, DispatchKeySet ks, Frame& frame) const {
  const int bit = ks.highest();
  const KernelFunction* k = bit >= 0 ? op.kernel_for(bit) : nullptr;
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

}  // namespace tessera
