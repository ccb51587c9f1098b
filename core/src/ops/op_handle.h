// Internal: the one handle kind every op of the library is reached through.
//
// An OpHandle is a constant-initialized description of an op (its family, its
// kind, schema, flags, rule or kernel); the op is declared with the dispatcher
// on the handle's first use, once, whichever thread gets there first. Being
// constant-initialized, a handle is safe to use from any static initializer, in
// any order; after the first use it costs one acquire load.
//
//   constinit OpHandle op_tril = structured("shape", "tril(Tensor self, int diagonal=0) -> Tensor", 0, &tri_meta<false>);
//   const Operator& op = op_tril();
#pragma once

#include <tessera/dispatcher.h>

#include <atomic>
#include <mutex>

namespace tessera::ops {

class OpHandle {
 public:
  enum class Kind : uint8_t { Structured, InplaceVariant, Composite };
  /// Builds the op's pointwise lane on declaration (null for ops without one).
  using LaneFn = const PointwiseLane* (*)();

  struct Spec {
    const char* family;   // the op family (docs/ops/<family>.md) that owns the op
    Kind kind;
    const char* schema;
    uint32_t flags = 0;
    MetaFn meta = nullptr;                // Structured, InplaceVariant
    BoxedKernelFn kernel = nullptr;       // Composite
    const OpHandle* functional = nullptr;  // InplaceVariant: the op whose kernels it uses
    LaneFn lane = nullptr;
  };

  constexpr explicit OpHandle(const Spec& spec) : spec_(spec) {}
  OpHandle(const OpHandle&) = delete;
  OpHandle& operator=(const OpHandle&) = delete;

  /// The op, declared on first use. Throws what the declaration throws (a
  /// malformed schema, a name declared twice); a later use then retries.
  [[gnu::always_inline]] const Operator& operator()() const {
    const Operator* op = op_.load(std::memory_order_acquire);
    if (op == nullptr) [[unlikely]] op = &declare();
    return *op;
  }
  const char* family() const { return spec_.family; }

 private:
  [[gnu::noinline, gnu::cold]] const Operator& declare() const;
  Spec spec_;
  mutable std::atomic<const Operator*> op_{nullptr};
  mutable std::once_flag once_;
};

// The three ways an op is declared (see Dispatcher::declare_*).
constexpr OpHandle::Spec structured(const char* family, const char* schema, uint32_t flags, MetaFn meta,
                                    OpHandle::LaneFn lane = nullptr) {
  return {family, OpHandle::Kind::Structured, schema, flags, meta, nullptr, nullptr, lane};
}
constexpr OpHandle::Spec inplace_variant(const char* family, const OpHandle& functional, const char* schema,
                                         MetaFn meta) {
  return {family, OpHandle::Kind::InplaceVariant, schema, kInPlace, meta, nullptr, &functional, nullptr};
}
constexpr OpHandle::Spec composite(const char* family, const char* schema, uint32_t flags, BoxedKernelFn kernel) {
  return {family, OpHandle::Kind::Composite, schema, flags, nullptr, kernel, nullptr, nullptr};
}

/// Declares each op of `handles` now (declare_all_ops runs this for every
/// family, so that every op exists before a plugin registers kernels).
void declare_now(std::initializer_list<const OpHandle*> handles);

}  // namespace tessera::ops
