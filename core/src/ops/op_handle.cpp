// Declaring an op on its handle's first use (op_handle.h).
#include "op_handle.h"

#include "../operator_slots.h"

namespace tessera::ops {

const Operator& OpHandle::declare() const {
  std::call_once(once_, [this] {
    Dispatcher& d = Dispatcher::instance();
    Operator* op = nullptr;
    switch (spec_.kind) {
      case Kind::Structured: op = &d.declare_structured(spec_.schema, spec_.flags, spec_.meta); break;
      case Kind::InplaceVariant: op = &d.declare_inplace_variant((*spec_.functional)(), spec_.schema, spec_.meta); break;
      case Kind::Composite: op = &d.declare_composite(spec_.schema, spec_.flags, spec_.kernel); break;
    }
    detail::OperatorSlots::set_family(*op, spec_.family);
    if (spec_.lane != nullptr) detail::OperatorSlots::set_pointwise_lane(*op, spec_.lane());
    op_.store(op, std::memory_order_release);
  });
  return *op_.load(std::memory_order_acquire);
}

void declare_now(std::initializer_list<const OpHandle*> handles) {
  for (const OpHandle* h : handles) (*h)();
}

}  // namespace tessera::ops
