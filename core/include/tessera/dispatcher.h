// tessera/dispatcher.h — operators, boxed calls and the dispatcher.
//
// Every op is an Operator declared once (schema text, shape/dtype rule, flags).
// Each Operator holds a flat table of 64 kernel slots, one per dispatch key; a
// call computes the key set from its tensor arguments and this thread's
// include/exclude sets and runs the slot of the highest key, falling back to the
// per-key fallback kernel. Lookups take no lock and allocate nothing; kernels and
// fallbacks are registered under a lock and published atomically, so they may be
// registered while other threads dispatch. Registered kernels are never freed.
#pragma once

#include <tessera/dispatch_key.h>
#include <tessera/tensor.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// One boxed argument. Borrowed: it points at the caller's objects.
struct IValue {
  enum class Tag : uint8_t { None, Tensor, Int, Double, Bool, IntList, ScalarType, String, Device, TensorList };
  Tag tag = Tag::None;
  union {
    const Tensor* tensor;
    int64_t i;
    double d;
    bool b;
    struct { const int64_t* data; size_t size; } ints;
    ScalarType dtype;
    struct { const char* data; size_t size; } str;
    Device device;
    struct { const Tensor* data; size_t size; } tensors;
  };
  IValue() : i(0) {}
  static IValue none() { return IValue(); }
  static IValue of(const Tensor& t) { IValue v; v.tag = Tag::Tensor; v.tensor = &t; return v; }
  static IValue of(int64_t x) { IValue v; v.tag = Tag::Int; v.i = x; return v; }
  static IValue of(double x) { IValue v; v.tag = Tag::Double; v.d = x; return v; }
  static IValue of(bool x) { IValue v; v.tag = Tag::Bool; v.b = x; return v; }
  static IValue of(IntArrayRef x) { IValue v; v.tag = Tag::IntList; v.ints = {x.data(), x.size()}; return v; }
  static IValue of(ScalarType x) { IValue v; v.tag = Tag::ScalarType; v.dtype = x; return v; }
  static IValue of(std::string_view x) { IValue v; v.tag = Tag::String; v.str = {x.data(), x.size()}; return v; }
  static IValue of(Device x) { IValue v; v.tag = Tag::Device; v.device = x; return v; }
  static IValue of(ArrayRef<Tensor> x) { IValue v; v.tag = Tag::TensorList; v.tensors = {x.data(), x.size()}; return v; }
  static IValue of(const Scalar& s) {  // inline: every op with a Scalar argument boxes one
    switch (s.kind()) {
      case Scalar::Kind::Bool: return of(s.to_bool());
      case Scalar::Kind::Int: return of(s.to_long());
      default: return of(s.to_double());
    }
  }
  bool is_none() const { return tag == Tag::None; }
  bool is_tensor() const { return tag == Tag::Tensor; }
  IntArrayRef int_list() const { return IntArrayRef(ints.data, ints.size); }
  std::string_view string() const { return std::string_view(str.data, str.size); }
  /// Int, Double or Bool as a Scalar.
  Scalar to_scalar() const;
};

/// A boxed call: arguments in schema order, and the slots for the results.
struct Frame {
  const IValue* args;
  int num_args;
  Tensor* outputs;
  int num_outputs;
};

class Operator;
/// A boxed kernel. `ks` is the key set being dispatched on (kernels that
/// redispatch pass ks.below(their key)).
using BoxedKernelFn = void (*)(const Operator& op, DispatchKeySet ks, Frame& frame, void* context);

struct KernelFunction {
  BoxedKernelFn fn = nullptr;
  void* context = nullptr;
  /// What the trace prints, e.g. "composite" or "fallback:User0". Static storage.
  const char* label = "";
};

/// Operator properties.
enum OpFlags : uint32_t {
  kPointwise = 1u << 0,
  kView = 1u << 1,        // output aliases the first input
  kInPlace = 1u << 2,     // writes its first argument and returns it
  kFactory = 1u << 3,     // no tensor inputs; device from a Device argument
  kDataDependent = 1u << 4,
};

/// A parsed schema argument.
struct SchemaArgument {
  std::string type;           // "Tensor", "Scalar", "int[]?", ...
  std::string name;
  std::string default_value;  // empty: none
  bool kwarg_only = false;
  bool mutable_alias = false;  // Tensor(a!)
};

/// A parsed PyTorch-style schema: "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
struct Schema {
  std::string name;
  std::vector<SchemaArgument> arguments;
  std::vector<std::string> returns;
  std::string text;
  /// Parses; throws ValueError naming the schema on malformed text: anything but
  /// "name(type arg[=default], ...) -> returns" with balanced brackets, an
  /// identifier (optionally "namespace::" before it and ".overload" after) for
  /// the name, identifiers for the arguments, no argument twice.
  static Schema parse(std::string_view text);
  /// An argument type without its alias annotation, optional mark and list
  /// length: "Tensor(a!)" -> "Tensor", "int[2]?" -> "int[]", "Scalar?" -> "Scalar".
  static std::string_view base_type(std::string_view type);
  /// Whether the type ends in '?' (the argument may be None).
  static bool is_optional(std::string_view type) { return !type.empty() && type.back() == '?'; }
};

class StructuredCall;
struct PointwiseLane;  // internal to the core (core/src/pointwise_lane.h)
namespace detail {
struct OperatorSlots;  // internal to the core (core/src/operator_slots.h)
}
/// The shape/dtype rule of a structured op: checks arguments, decides output
/// shapes and dtypes, the dispatch dtype, and the kernel arguments.
using MetaFn = void (*)(StructuredCall& call);

class Operator {
 public:
  Operator(std::string_view schema, uint32_t flags);
  const std::string& name() const { return schema_.name; }
  const Schema& schema() const { return schema_; }
  uint32_t flags() const { return flags_; }
  bool is_structured() const { return meta_ != nullptr; }
  /// The op family that declares it ("unary", "binary", ..., docs/ops/<family>.md),
  /// or "" for an op declared outside the library (a test's, a user's).
  const char* family() const { return family_; }
  MetaFn meta() const { return meta_; }

  /// The kernel that runs for key `bit`, or null: O(1), lock-free.
  const KernelFunction* kernel_for(int bit) const { return table_[bit].load(std::memory_order_acquire); }

  /// The op whose plugin kernels this op uses: itself, or for an in-place
  /// variant ("add_") its functional op ("add").
  const Operator& kernel_source() const { return kernel_source_ ? *kernel_source_ : *this; }

 private:
  friend class Dispatcher;
  // The core's own slots (plugin kernel tables, the autograd rule, the
  // pointwise lane) are reached through core/src/operator_slots.h only.
  friend struct detail::OperatorSlots;
  Schema schema_;
  uint32_t flags_;
  MetaFn meta_ = nullptr;
  const char* family_ = "";
  const Operator* kernel_source_ = nullptr;
  const PointwiseLane* pointwise_lane_ = nullptr;
  const KernelFunction* backend_default_ = nullptr;  // what backend slots hold unless overridden
  std::atomic<const KernelFunction*> table_[kNumDispatchKeys] = {};
  std::atomic<const void*> backend_kernels_[kMaxDeviceTypes] = {};
  std::atomic<const void*> autograd_rule_{nullptr};
  std::atomic<const void*> plugin_op_{nullptr};
};

class Dispatcher {
 public:
  /// The process-wide dispatcher.
  static Dispatcher& instance();

  /// Declares an op whose backend kernels come from plugins (structured: `meta`
  /// runs first, then the plugin kernel for (op, device type, dtype)).
  Operator& declare_structured(std::string_view schema, uint32_t flags, MetaFn meta);
  /// Declares the in-place variant of a structured op: its own schema and rule,
  /// the kernels of `functional`.
  Operator& declare_inplace_variant(const Operator& functional, std::string_view schema, MetaFn meta);
  /// Declares an op implemented by one core kernel for every backend
  /// (views and compositions of other ops).
  Operator& declare_composite(std::string_view schema, uint32_t flags, BoxedKernelFn kernel);

  /// The op named `name`, or null.
  Operator* find(std::string_view name) const;
  /// The op named `name`; NotImplementedError ("unknown op") if absent.
  Operator& get(std::string_view name) const;
  std::vector<const Operator*> operators() const;

  /// Overrides the kernel of one key of one op (any thread, any time).
  void register_kernel(Operator& op, DispatchKey key, KernelFunction kernel);
  void register_kernel(Operator& op, int bit, KernelFunction kernel);
  void deregister_kernel(Operator& op, int bit);
  /// Installs a fallback used by every op that has no kernel for `key`.
  void register_fallback(DispatchKey key, KernelFunction kernel);
  void deregister_fallback(DispatchKey key);

  /// Calls `op`: key set from tensor arguments + thread-local sets, then the
  /// kernel of its highest key.
  void call(const Operator& op, Frame& frame) const;
  /// Calls `op` with the keys of `ks` only (used by kernels that pass on).
  void redispatch(const Operator& op, DispatchKeySet ks, Frame& frame) const;

  /// Whether TESSERA_DISPATCH_TRACE was set at start-up (or set_trace was called).
  static bool trace_enabled();
  static void set_trace(bool on);

 private:
  Dispatcher();
  Operator& declare(std::string_view schema, uint32_t flags);
  [[noreturn]] void no_kernel(const Operator& op, DispatchKeySet ks, int bit, const Frame& frame) const;
  struct State;
  State* state_;
  std::atomic<const KernelFunction*> fallbacks_[kNumDispatchKeys] = {};
};

/// Computes the dispatch key set of a frame (its tensors' keys, the thread's
/// included keys, minus the excluded ones).
DispatchKeySet compute_dispatch_keys(const Frame& frame);

/// "add(self: float32[2, 3] cpu:0, other: int64[3] cpu:0)" — used in error messages.
std::string describe_call(const Operator& op, const Frame& frame);

}  // namespace tessera
