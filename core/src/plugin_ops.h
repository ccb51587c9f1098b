// Internal: operators a plugin defines through TsrHostApi.register_op (ABI 1.3).
//
// A registration is checked completely (schema, rule, derivative) and staged;
// when the plugin's initialize succeeds the op is declared with the dispatcher
// as a structured op whose meta rule is the plugin's rule (or, for a view, a
// composite that builds the view), its autograd rule runs the derivative's
// steps with ordinary dispatched ops, and its kernels come from register_kernel
// as for any op. The dispatcher never forgets an op: when the plugin unloads,
// its ops are retired (a call fails naming the plugin) and a later load of the
// same plugin revives them if it describes each identically.
#pragma once

#include <tessera/abi.h>
#include <tessera/dispatcher.h>
#include <tessera/plugin.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

class PluginRecord;

namespace defined_ops {

/// A TsrOpArg, its constant copied.
struct ArgRef {
  int32_t kind = TSR_OP_ARG_NONE;
  int32_t index = 0;
  int32_t output = 0;
  TsrValueTag const_tag = TSR_VALUE_NONE;
  int64_t i = 0;
  double d = 0;
  std::vector<int64_t> ints;
  std::string str;
};

/// One op call of a derivative: the op by name (resolved when it runs: it may
/// be another plugin op) and its arguments.
struct Step {
  std::string op;
  std::vector<ArgRef> args;
  size_t num_results = 1;
};

/// Everything register_op was told, owned by the core. Immutable once
/// committed, except `owner`.
struct Definition {
  std::string name;
  std::string plugin;
  Schema schema;
  uint32_t flags = 0;
  TsrShapeRule shape_rule = 0;
  int32_t shape_input = -1, dims_arg = -1, keepdim_arg = -1;
  TsrDType output_dtype = -1;
  TsrShapeFn shape_fn = nullptr;
  void* shape_context = nullptr;
  TsrDerivativeKind derivative = TSR_DERIVATIVE_NONE;
  std::vector<int> differentiable_inputs;
  std::vector<Step> steps;          // BACKWARD_OP: one step
  std::vector<ArgRef> input_grads;  // per differentiable input
  /// The description without its function pointers: a reload must match it.
  std::string canonical;
  /// The loaded plugin that defined it; null once that plugin was unloaded.
  std::atomic<PluginRecord*> owner{nullptr};
  Operator* op = nullptr;
  Operator* inplace = nullptr;  // "<name>_" with TSR_OP_INPLACE_VARIANT

  bool has_inplace() const { return (flags & TSR_OP_INPLACE_VARIANT) != 0; }
  PluginOpInfo describe() const;
};

/// Checks `desc`, registered by plugin `plugin` during its initialize, against
/// the ops this core has and `staged` (the plugin's earlier registrations).
/// Returns the definition to stage, or the error refusing it (owned by the caller).
TsrError* validate(const TsrOpDesc* desc, const std::string& plugin,
                   const std::vector<std::unique_ptr<Definition>>& staged, std::unique_ptr<Definition>* out);

/// The op of that name a staged or committed definition declares (itself or its
/// in-place variant), for register_kernel of a staged op: its schema; null if none.
const Schema* staged_schema(const std::vector<std::unique_ptr<Definition>>& staged, std::string_view name);

/// Declares the staged op (or revives its retired one) with `owner` as its
/// plugin. Called with the plugin host's lock held, once initialize succeeded.
/// The definition is kept for the life of the process.
void commit(std::unique_ptr<Definition> def, PluginRecord* owner);

/// Retires every op `owner` defined: calls fail naming the plugin. Waits for
/// shape functions of those ops running on other threads.
void retire(PluginRecord* owner);

/// The ops `owner` defined, for PluginInfo.
std::vector<PluginOpInfo> ops_of(const PluginRecord* owner);

}  // namespace defined_ops
}  // namespace tessera
