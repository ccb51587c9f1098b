// Operators defined by plugins (plugin_ops.h): checking a registration,
// declaring the op, its meta rule, its view kernel and its derivative.
#include "plugin_ops.h"

#include <tessera/autograd/derivative.h>
#include <tessera/error.h>
#include <tessera/ops/call.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>

#include "abi_bridge.h"
#include "operator_slots.h"
#include "plugin_host.h"
#include "structured.h"

namespace tessera::defined_ops {
namespace {

// ---------------------------------------------------------------------------
// The registry: every op a plugin ever defined, by name; and the lock that
// keeps a plugin from being retired while one of its shape functions runs.

struct Registry {
  std::mutex mutex;
  std::map<std::string, Definition*, std::less<>> by_name;  // the current definition; never freed
  std::shared_mutex calls;  // shared: a shape function runs; unique: retiring
};
Registry& registry() {
  static Registry* r = new Registry();  // leaked: ops outlive static destructors
  return *r;
}

const Definition* definition_of(const Operator& op) {
  return static_cast<const Definition*>(detail::OperatorSlots::plugin_op(op));
}

// ---------------------------------------------------------------------------
// Schema types

std::string_view base_type(std::string_view type) { return Schema::base_type(type); }
bool optional_type(std::string_view type) { return Schema::is_optional(type); }
bool is_tensor_type(std::string_view type) { return base_type(type) == "Tensor"; }

constexpr std::string_view kArgTypes[] = {"Tensor", "Tensor?", "int",   "int?",   "float",      "float?",
                                          "bool",   "bool?",   "int[]", "int[]?", "Scalar",     "Scalar?",
                                          "ScalarType", "ScalarType?", "str", "str?"};

// ---------------------------------------------------------------------------
// Validation. Each check returns the message refusing the registration, or "".

struct Refusal {
  TsrErrorCode code = TSR_ERROR_INVALID_ARGUMENT;
  std::string message;
  explicit operator bool() const { return !message.empty(); }
};
Refusal invalid(std::string m) { return {TSR_ERROR_INVALID_ARGUMENT, std::move(m)}; }

std::string arg_name(const Schema& s, int i) {
  return i >= 0 && i < int(s.arguments.size()) ? "'" + s.arguments[i].name + "'" : std::to_string(i);
}

// The ops this core has, or the plugin staged earlier, by name: their schemas.
const Schema* find_schema(std::string_view name, const std::vector<std::unique_ptr<Definition>>& staged) {
  if (const Schema* s = staged_schema(staged, name)) return s;
  if (const Operator* op = Dispatcher::instance().find(name)) return &op->schema();
  return nullptr;
}

bool constant_fits(const ArgRef& r, std::string_view type) {
  const std::string_view b = base_type(type);
  switch (r.const_tag) {
    case TSR_VALUE_NONE: return optional_type(type);
    case TSR_VALUE_INT: return b == "int" || b == "float" || b == "Scalar" || b == "Tensor" || b == "int[]";
    case TSR_VALUE_FLOAT: return b == "float" || b == "Scalar" || b == "Tensor";
    case TSR_VALUE_BOOL: return b == "bool" || b == "Scalar" || b == "Tensor";
    case TSR_VALUE_INT_LIST: return b == "int[]";
    case TSR_VALUE_DTYPE: return b == "ScalarType";
    case TSR_VALUE_STRING: return b == "str";
    default: return false;
  }
}

// What a forward argument of type `from` may be passed as.
bool forward_arg_fits(std::string_view from, std::string_view to) {
  const std::string_view f = base_type(from), t = base_type(to);
  if (optional_type(from) && !optional_type(to)) return false;
  if (f == t) return true;
  // A number where a Tensor is wanted becomes a 0-d tensor (ops::call's rule).
  if (t == "Tensor") return f == "int" || f == "float" || f == "bool" || f == "Scalar";
  if (f == "int") return t == "float" || t == "Scalar";
  if (f == "float" || f == "bool") return t == "Scalar";
  return false;
}

// Copies and checks one TsrOpArg. `num_steps`: steps before this one (STEP
// references must point back); `step_results`: their result counts.
Refusal read_arg(const TsrOpArg& a, const Schema& fwd, const std::vector<size_t>& step_results, bool allow_step,
                 const std::string& where, ArgRef* out) {
  ArgRef r;
  r.kind = a.kind;
  r.index = a.index;
  r.output = a.output;
  const int nargs = int(fwd.arguments.size()), nouts = int(fwd.returns.size());
  switch (a.kind) {
    case TSR_OP_ARG_NONE: break;
    case TSR_OP_ARG_GRAD_OUTPUT:
    case TSR_OP_ARG_OUTPUT:
      if (a.index < 0 || a.index >= nouts)
        return invalid(where + " refers to output " + std::to_string(a.index) + ", but the op has " +
                       std::to_string(nouts) + " output(s)");
      break;
    case TSR_OP_ARG_INPUT:
      if (a.index < 0 || a.index >= nargs)
        return invalid(where + " refers to argument " + std::to_string(a.index) + ", but the schema has " +
                       std::to_string(nargs));
      break;
    case TSR_OP_ARG_STEP:
      if (!allow_step) return invalid(where + ": a step result (TSR_OP_ARG_STEP) only exists in a composite derivative");
      if (a.index < 0 || a.index >= int(step_results.size()))
        return invalid(where + " refers to step " + std::to_string(a.index) + ", which is not an earlier step");
      if (a.output < 0 || a.output >= int(step_results[a.index]))
        return invalid(where + " refers to output " + std::to_string(a.output) + " of step " + std::to_string(a.index) +
                       ", which has " + std::to_string(step_results[a.index]));
      break;
    case TSR_OP_ARG_CONSTANT: {
      const TsrValue& v = a.constant;
      r.const_tag = v.tag;
      switch (v.tag) {
        case TSR_VALUE_NONE: break;
        case TSR_VALUE_INT: r.i = v.as.i; break;
        case TSR_VALUE_FLOAT: r.d = v.as.f; break;
        case TSR_VALUE_BOOL: r.i = v.as.b != 0; break;
        case TSR_VALUE_DTYPE:
          if (v.as.dtype < 0 || v.as.dtype >= kNumScalarTypes)
            return invalid(where + ": constant dtype " + std::to_string(v.as.dtype) + " is not one this core knows");
          r.i = v.as.dtype;
          break;
        case TSR_VALUE_INT_LIST:
          if (v.as.int_list.size > 0 && v.as.int_list.data == nullptr) return invalid(where + ": constant int list with NULL data");
          r.ints.assign(v.as.int_list.data, v.as.int_list.data + v.as.int_list.size);
          break;
        case TSR_VALUE_STRING:
          if (v.as.string == nullptr) return invalid(where + ": constant string is NULL");
          r.str = v.as.string;
          break;
        default:
          return invalid(where + ": a constant must be a NONE, INT, FLOAT, BOOL, INT_LIST, DTYPE or STRING value (tag " +
                         std::to_string(v.tag) + ")");
      }
      break;
    }
    default: return invalid(where + ": unknown TsrOpArg kind " + std::to_string(a.kind));
  }
  *out = std::move(r);
  return {};
}

// Whether reference r (of the forward op `fwd`) may be passed as parameter `p`.
bool ref_fits(const ArgRef& r, const Schema& fwd, const SchemaArgument& p) {
  switch (r.kind) {
    case TSR_OP_ARG_NONE: return optional_type(p.type);
    case TSR_OP_ARG_GRAD_OUTPUT:
    case TSR_OP_ARG_OUTPUT:
    case TSR_OP_ARG_STEP: return is_tensor_type(p.type);
    case TSR_OP_ARG_INPUT: {
      const std::string& from = fwd.arguments[r.index].type;
      if (is_tensor_type(from)) return is_tensor_type(p.type) && (!optional_type(from) || optional_type(p.type));
      return forward_arg_fits(from, p.type);
    }
    case TSR_OP_ARG_CONSTANT: return constant_fits(r, p.type);
  }
  return false;
}

// Checks one call of op `name` with `args` (the step's or the backward op's).
Refusal read_step(const char* name, const TsrOpArg* args, size_t num_args, const Schema& fwd,
                  const std::vector<std::unique_ptr<Definition>>& staged, std::vector<size_t>& step_results,
                  bool allow_step, const std::string& where, Step* out) {
  if (name == nullptr) return invalid(where + ": the op name is NULL");
  const Schema* callee = find_schema(name, staged);
  if (callee == nullptr)
    return {TSR_ERROR_NOT_FOUND, where + ": this core has no op named '" + std::string(name) +
                                     "' (a plugin's own backward op must be registered before the op using it)"};
  if (num_args > 0 && args == nullptr) return invalid(where + ": args is NULL");
  if (num_args > callee->arguments.size())
    return invalid(where + ": " + std::to_string(num_args) + " arguments for '" + callee->text + "', which takes " +
                   std::to_string(callee->arguments.size()));
  Step s;
  s.op = name;
  for (size_t i = 0; i < num_args; ++i) {
    ArgRef r;
    const SchemaArgument& p = callee->arguments[i];
    const std::string at = where + ", argument " + std::to_string(i) + " ('" + p.name + "' of " + callee->name + ")";
    if (Refusal bad = read_arg(args[i], fwd, step_results, allow_step, at, &r)) return bad;
    if (!ref_fits(r, fwd, p))
      return invalid(at + ": its type " + p.type + " does not take " +
                     (r.kind == TSR_OP_ARG_INPUT ? "argument '" + fwd.arguments[r.index].name + "' (" +
                                                       fwd.arguments[r.index].type + ")"
                                                 : std::string("that value")));
    s.args.push_back(std::move(r));
  }
  for (size_t i = num_args; i < callee->arguments.size(); ++i)
    if (callee->arguments[i].default_value.empty())
      return invalid(where + ": argument '" + callee->arguments[i].name + "' of '" + callee->text +
                     "' has no default and is not given");
  for (const std::string& ret : callee->returns)
    if (base_type(ret) != "Tensor")
      return invalid(where + ": '" + callee->text + "' returns " + ret + "; derivative ops must return tensors");
  s.num_results = callee->returns.size();
  step_results.push_back(s.num_results);
  *out = std::move(s);
  return {};
}

std::string ref_text(const ArgRef& r, const Schema& fwd) {
  switch (r.kind) {
    case TSR_OP_ARG_NONE: return "None";
    // Bracketed so that no argument name (an identifier) reads the same.
    case TSR_OP_ARG_GRAD_OUTPUT: return "grad_outputs[" + std::to_string(r.index) + "]";
    case TSR_OP_ARG_INPUT: return fwd.arguments[r.index].name;
    case TSR_OP_ARG_OUTPUT: return "outputs[" + std::to_string(r.index) + "]";
    case TSR_OP_ARG_STEP: return "steps[" + std::to_string(r.index) + "]" + (r.output ? "[" + std::to_string(r.output) + "]" : "");
    default: break;
  }
  switch (r.const_tag) {
    case TSR_VALUE_INT: return std::to_string(r.i);
    case TSR_VALUE_FLOAT: {  // every digit, and a '.' so that 0.0 does not read as the int 0
      char text[40];
      std::snprintf(text, sizeof text, "%.17g", r.d);
      std::string t = text;
      if (t.find_first_of(".eni") == std::string::npos) t += ".0";
      return t;
    }
    case TSR_VALUE_BOOL: return r.i ? "True" : "False";
    case TSR_VALUE_DTYPE: return std::string(dtype_name(static_cast<ScalarType>(r.i)));
    case TSR_VALUE_STRING: return "'" + r.str + "'";
    case TSR_VALUE_INT_LIST: {
      std::string s = "[";
      for (size_t i = 0; i < r.ints.size(); ++i) s += (i ? ", " : "") + std::to_string(r.ints[i]);
      return s + "]";
    }
    default: return "None";
  }
}

std::string step_text(const Step& s, const Schema& fwd) {
  std::string t = s.op + "(";
  for (size_t i = 0; i < s.args.size(); ++i) t += (i ? ", " : "") + ref_text(s.args[i], fwd);
  return t + ")";
}

std::string shape_text(const Definition& d) {
  const Schema& s = d.schema;
  std::string dtype = d.output_dtype >= 0 ? std::string(", dtype ") + std::string(dtype_name(static_cast<ScalarType>(d.output_dtype))) : "";
  if (d.flags & TSR_OP_VIEW) return "view of argument " + arg_name(s, d.shape_input) + " (shape function)";
  switch (d.shape_rule) {
    case TSR_SHAPE_SAME_AS_INPUT:
      return "same shape as argument " + arg_name(s, d.shape_input) + (dtype.empty() ? " and its dtype" : dtype);
    case TSR_SHAPE_BROADCAST: return "tensor arguments broadcast" + (dtype.empty() ? ", dtypes promoted" : dtype);
    case TSR_SHAPE_REDUCTION:
      return "reduction of argument " + arg_name(s, d.shape_input) + " over " +
             (d.dims_arg >= 0 ? "dims " + arg_name(s, d.dims_arg) : std::string("every dim")) +
             (d.keepdim_arg >= 0 ? ", keepdim " + arg_name(s, d.keepdim_arg) : std::string()) + dtype;
    default: return "shape function";
  }
}

std::string derivative_text(const Definition& d) {
  if (d.flags & TSR_OP_VIEW) return "through the view";
  std::string inputs;
  for (size_t i = 0; i < d.differentiable_inputs.size(); ++i)
    inputs += (i ? ", " : "") + d.schema.arguments[d.differentiable_inputs[i]].name;
  switch (d.derivative) {
    case TSR_DERIVATIVE_BACKWARD_OP: return "backward op " + step_text(d.steps[0], d.schema) + " -> grads of " + inputs;
    case TSR_DERIVATIVE_COMPOSITE: {
      std::string t = "composite:";
      for (size_t i = 0; i < d.steps.size(); ++i) t += " steps[" + std::to_string(i) + "] = " + step_text(d.steps[i], d.schema) + ";";
      for (size_t i = 0; i < d.input_grads.size(); ++i)
        t += std::string(i ? "," : "") + " grad " + d.schema.arguments[d.differentiable_inputs[i]].name + " = " +
             ref_text(d.input_grads[i], d.schema);
      return t;
    }
    default: return "not differentiable";
  }
}

// The description without function pointers, to compare a reload's with.
std::string canonical_text(const Definition& d) {
  std::ostringstream os;
  os << d.schema.text << "|" << d.flags << "|" << d.shape_rule << "," << d.shape_input << "," << d.dims_arg << ","
     << d.keepdim_arg << "," << d.output_dtype << "|" << d.derivative << "|" << derivative_text(d);
  return os.str();
}

Refusal check_rule(const Definition& d) {
  const Schema& s = d.schema;
  const int n = int(s.arguments.size());
  const auto tensor_index = [&](int i, const char* field) -> Refusal {
    if (i < 0 || i >= n || base_type(s.arguments[i].type) != "Tensor")
      return invalid(std::string(field) + " " + std::to_string(i) + " is not a Tensor argument of the schema");
    return {};
  };
  if (d.flags & TSR_OP_VIEW) {
    if (d.shape_fn == nullptr) return invalid("a VIEW op needs shape_fn (it calls set_view)");
    if (d.flags & TSR_OP_INPLACE_VARIANT) return invalid("a VIEW op cannot have an in-place variant");
    if (d.flags & (TSR_OP_POINTWISE | TSR_OP_FIXED_OUTPUT_DTYPE))
      return invalid("a VIEW op cannot be POINTWISE or have a FIXED_OUTPUT_DTYPE");
    if (s.returns.size() != 1) return invalid("a VIEW op returns one tensor");
    if (d.derivative != TSR_DERIVATIVE_NONE)
      return invalid("a VIEW op's gradient flows through the view: its derivative must be TSR_DERIVATIVE_NONE");
    if (Refusal r = tensor_index(d.shape_input, "shape_input")) return r;
    if (optional_type(s.arguments[d.shape_input].type)) return invalid("a VIEW op's shape_input must not be optional");
    return {};
  }
  switch (d.shape_rule) {
    case TSR_SHAPE_SAME_AS_INPUT:
      if (Refusal r = tensor_index(d.shape_input, "shape_input")) return r;
      break;
    case TSR_SHAPE_BROADCAST: break;
    case TSR_SHAPE_REDUCTION: {
      if (Refusal r = tensor_index(d.shape_input, "shape_input")) return r;
      if (d.dims_arg != -1) {
        if (d.dims_arg < 0 || d.dims_arg >= n) return invalid("dims_arg " + std::to_string(d.dims_arg) + " is not an argument");
        const std::string_view t = base_type(s.arguments[d.dims_arg].type);
        if (t != "int[]" && t != "int")
          return invalid("dims_arg " + arg_name(s, d.dims_arg) + " has type " + s.arguments[d.dims_arg].type +
                         "; it must be int[], int[]?, int or int?");
      }
      if (d.keepdim_arg != -1 && (d.keepdim_arg < 0 || d.keepdim_arg >= n || s.arguments[d.keepdim_arg].type != "bool"))
        return invalid("keepdim_arg " + std::to_string(d.keepdim_arg) + " is not a bool argument");
      break;
    }
    case TSR_SHAPE_CALLBACK:
      if (d.shape_fn == nullptr) return invalid("shape_rule TSR_SHAPE_CALLBACK needs shape_fn");
      if (d.output_dtype != -1)
        return invalid("TSR_OP_FIXED_OUTPUT_DTYPE does not go with TSR_SHAPE_CALLBACK (set_output sets each dtype)");
      if (d.shape_input != -1)
        if (Refusal r = tensor_index(d.shape_input, "shape_input")) return r;
      break;
    default: return invalid("unknown shape_rule " + std::to_string(d.shape_rule));
  }
  if (d.shape_rule != TSR_SHAPE_BROADCAST && d.shape_rule != TSR_SHAPE_CALLBACK &&
      optional_type(s.arguments[d.shape_input].type))
    return invalid("shape_input " + arg_name(s, d.shape_input) + " must not be an optional Tensor");
  if (d.has_inplace()) {
    if (n == 0 || s.arguments[0].type != "Tensor") return invalid("TSR_OP_INPLACE_VARIANT needs a first argument of type Tensor");
    if (s.returns.size() != 1) return invalid("TSR_OP_INPLACE_VARIANT needs exactly one result");
  }
  return {};
}

Refusal check_schema(const Definition& d, const std::string& plugin) {
  const Schema& s = d.schema;
  const std::string prefix = plugin + "::";
  if (!s.name.starts_with(prefix) || s.name.size() == prefix.size())
    return invalid("the op name '" + s.name + "' is outside the plugin's namespace: it must start with '" + prefix + "'");
  if (s.name.ends_with("_") && !s.name.ends_with("__"))
    return invalid("the op name '" + s.name + "' ends with '_', which names in-place variants (set TSR_OP_INPLACE_VARIANT instead)");
  if (s.arguments.size() > size_t(kMaxKernelArgs))
    return invalid("the schema has " + std::to_string(s.arguments.size()) + " arguments; at most " +
                   std::to_string(kMaxKernelArgs));
  int tensors = 0, lists = 0, strings = 0;
  for (const SchemaArgument& a : s.arguments) {
    if (std::find(std::begin(kArgTypes), std::end(kArgTypes), a.type) == std::end(kArgTypes))
      return invalid("argument '" + a.name + "' has type '" + a.type +
                     "', which plugin ops cannot take (Tensor, Tensor?, int, float, bool, int[], Scalar, ScalarType, str, "
                     "each optionally with '?')");
    tensors += base_type(a.type) == "Tensor";
    lists += base_type(a.type) == "int[]";
    strings += base_type(a.type) == "str";
  }
  if (tensors == 0) return invalid("the schema has no Tensor argument (the op's device comes from its tensors)");
  if (lists > kMaxKernelLists || strings > kMaxKernelStrings)
    return invalid("at most " + std::to_string(kMaxKernelLists) + " int[] and " + std::to_string(kMaxKernelStrings) +
                   " str arguments");
  if (s.returns.empty() || s.returns.size() > size_t(kMaxKernelOutputs))
    return invalid("the op must return 1 to " + std::to_string(kMaxKernelOutputs) + " tensors");
  for (const std::string& r : s.returns)
    if (r != "Tensor") return invalid("return '" + r + "' is not 'Tensor' (plugin ops return new tensors)");
  // Defaults must be values ops::call can read: try them.
  for (const SchemaArgument& a : s.arguments) {
    if (a.default_value.empty()) continue;
    const std::string& v = a.default_value;
    const std::string_view t = base_type(a.type);
    bool ok = v == "None" ? optional_type(a.type) : false;
    if (!ok && (t == "bool" || t == "Scalar")) ok = v == "True" || v == "False";
    if (!ok && (t == "int" || t == "Scalar" || t == "float")) {
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      ok = end == v.c_str() + v.size() && (t != "int" || v.find_first_of(".eE") == std::string::npos);
    }
    if (!ok && t == "int[]") ok = v.size() >= 2 && v.front() == '[' && v.back() == ']';
    if (!ok && t == "str") ok = v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front();
    if (!ok) return invalid("argument '" + a.name + "' (" + a.type + ") has a default '" + v + "' of another type");
  }
  return {};
}

Refusal check_derivative(Definition& d, const TsrOpDesc& desc, const std::vector<std::unique_ptr<Definition>>& staged) {
  const Schema& s = d.schema;
  if (d.flags & TSR_OP_VIEW) return {};
  if (d.derivative == TSR_DERIVATIVE_NONE) {
    if (desc.num_differentiable_inputs != 0 || desc.num_steps != 0 || desc.backward_op != nullptr)
      return invalid("derivative TSR_DERIVATIVE_NONE with differentiable_inputs, steps or backward_op set");
    return {};
  }
  if (d.derivative != TSR_DERIVATIVE_BACKWARD_OP && d.derivative != TSR_DERIVATIVE_COMPOSITE)
    return invalid("unknown derivative kind " + std::to_string(d.derivative));
  if (desc.num_differentiable_inputs == 0 || desc.differentiable_inputs == nullptr)
    return invalid("a derivative needs differentiable_inputs (the Tensor arguments that get gradients)");
  for (size_t i = 0; i < desc.num_differentiable_inputs; ++i) {
    const int a = desc.differentiable_inputs[i];
    if (a < 0 || a >= int(s.arguments.size()) || base_type(s.arguments[a].type) != "Tensor")
      return invalid("differentiable_inputs[" + std::to_string(i) + "] = " + std::to_string(a) + " is not a Tensor argument");
    if (std::count(d.differentiable_inputs.begin(), d.differentiable_inputs.end(), a))
      return invalid("differentiable_inputs lists argument " + arg_name(s, a) + " twice");
    d.differentiable_inputs.push_back(a);
  }
  std::vector<size_t> results;
  if (d.derivative == TSR_DERIVATIVE_BACKWARD_OP) {
    if (desc.num_steps != 0) return invalid("TSR_DERIVATIVE_BACKWARD_OP with steps (those are for COMPOSITE)");
    Step step;
    if (Refusal bad = read_step(desc.backward_op, desc.backward_args, desc.num_backward_args, s, staged, results, false,
                                "backward_op", &step))
      return bad;
    if (step.num_results != d.differentiable_inputs.size())
      return invalid("backward_op '" + step.op + "' returns " + std::to_string(step.num_results) + " tensor(s), but " +
                     std::to_string(d.differentiable_inputs.size()) + " input(s) are differentiable (one gradient each)");
    for (size_t i = 0; i < d.differentiable_inputs.size(); ++i) {
      ArgRef g;
      g.kind = TSR_OP_ARG_STEP;
      g.index = 0;
      g.output = int32_t(i);
      d.input_grads.push_back(g);
    }
    d.steps.push_back(std::move(step));
    return {};
  }
  if (desc.backward_op != nullptr) return invalid("TSR_DERIVATIVE_COMPOSITE with backward_op set (that is BACKWARD_OP)");
  if (desc.num_steps > 0 && desc.steps == nullptr) return invalid("steps is NULL");
  for (size_t k = 0; k < desc.num_steps; ++k) {
    Step step;
    const std::string where = "step " + std::to_string(k);
    if (Refusal bad = read_step(desc.steps[k].op, desc.steps[k].args, desc.steps[k].num_args, s, staged, results, true,
                                where, &step))
      return bad;
    d.steps.push_back(std::move(step));
  }
  if (desc.input_grads == nullptr) return invalid("a composite derivative needs input_grads (one per differentiable input)");
  for (size_t i = 0; i < d.differentiable_inputs.size(); ++i) {
    ArgRef g;
    const std::string where = "input_grads[" + std::to_string(i) + "]";
    if (Refusal bad = read_arg(desc.input_grads[i], s, results, true, where, &g)) return bad;
    if (g.kind != TSR_OP_ARG_NONE && g.kind != TSR_OP_ARG_STEP && g.kind != TSR_OP_ARG_GRAD_OUTPUT)
      return invalid(where + " must be a step result, a gradient of an output, or NONE");
    d.input_grads.push_back(std::move(g));
  }
  return {};
}

// ---------------------------------------------------------------------------
// The meta rule

[[noreturn]] void fail_retired(const Definition& d, const Operator& op) {
  throw PluginError(op.name() + ": this op belongs to plugin '" + d.plugin +
                    "', which was unloaded; load the plugin again to call it");
}

// The collector behind a TsrShapeQuery's handle, valid during one query.
struct ShapeAnswer {
  const Definition* def;
  size_t num_outputs;
  DimVector shapes[kMaxKernelOutputs];
  ScalarType dtypes[kMaxKernelOutputs];
  bool set[kMaxKernelOutputs] = {};
  bool view_set = false;
  DimVector view_sizes, view_strides;
  int64_t view_offset = 0;
};
thread_local ShapeAnswer* t_answer = nullptr;

TsrError* bad_handle(const char* fn) {
  return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                         std::string(fn) + ": not the handle of a shape query running on this thread");
}

TsrError* check_shape_list(const ShapeAnswer& a, const char* fn, int32_t ndim, const int64_t* shape) {
  if (ndim < 0 || ndim > 64 || (ndim > 0 && shape == nullptr))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a.def->name + ": " + fn + ": ndim " + std::to_string(ndim) +
                                                           " (0 to 64, with a shape array when > 0)");
  for (int32_t i = 0; i < ndim; ++i)
    if (shape[i] < 0)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                             a.def->name + ": " + fn + ": negative size " + std::to_string(shape[i]) + " in dim " + std::to_string(i));
  return nullptr;
}

TsrError* query_set_output(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim, const int64_t* shape) {
  ShapeAnswer* a = t_answer;
  if (a == nullptr || reinterpret_cast<void*>(handle) != static_cast<void*>(a)) return bad_handle("set_output");
  if (a->def->flags & TSR_OP_VIEW)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_output: a VIEW op declares its result with set_view");
  if (index >= a->num_outputs)
    return make_host_error(TSR_ERROR_OUT_OF_RANGE, a->def->name + ": set_output: index " + std::to_string(index) +
                                                       " but the op has " + std::to_string(a->num_outputs) + " output(s)");
  if (a->set[index])
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_output: output " + std::to_string(index) + " set twice");
  if (dtype < 0 || dtype >= kNumScalarTypes)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_output: unknown dtype " + std::to_string(dtype));
  if (TsrError* e = check_shape_list(*a, "set_output", ndim, shape)) return e;
  a->shapes[index].assign(shape, shape + ndim);
  a->dtypes[index] = static_cast<ScalarType>(dtype);
  a->set[index] = true;
  return nullptr;
}

TsrError* query_set_view(TsrCallHandle handle, int32_t ndim, const int64_t* shape, const int64_t* strides,
                         int64_t storage_offset) {
  ShapeAnswer* a = t_answer;
  if (a == nullptr || reinterpret_cast<void*>(handle) != static_cast<void*>(a)) return bad_handle("set_view");
  if (!(a->def->flags & TSR_OP_VIEW))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_view: only VIEW ops make views (use set_output)");
  if (a->view_set) return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_view called twice");
  if (TsrError* e = check_shape_list(*a, "set_view", ndim, shape)) return e;
  if (ndim > 0 && strides == nullptr)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_view: strides is NULL");
  for (int32_t i = 0; i < ndim; ++i)
    if (strides[i] < 0)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_view: negative stride " +
                                                             std::to_string(strides[i]) + " in dim " + std::to_string(i));
  if (storage_offset < 0)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, a->def->name + ": set_view: negative offset");
  a->view_sizes.assign(shape, shape + ndim);
  a->view_strides.assign(strides, strides + ndim);
  a->view_offset = storage_offset;
  a->view_set = true;
  return nullptr;
}

// Asks the plugin's shape function; fills `answer`. Holds the registry's
// shared lock so the plugin cannot be retired (and its code unmapped) meanwhile.
void run_shape_fn(const Operator& op, const Definition& d, const Frame& frame, Device device, ShapeAnswer& answer) {
  std::shared_lock lock(registry().calls);
  if (d.owner.load(std::memory_order_acquire) == nullptr) fail_retired(d, op);
  const int n = frame.num_args;
  TsrValue values[kMaxKernelArgs] = {};
  DLTensor tensors[kMaxKernelArgs] = {};
  std::string strings[kMaxKernelArgs];
  const DeviceTypeEntry* entry = device_registry::get(device.type());
  const DLDevice dl_device = entry != nullptr ? dl_device_of(*entry, device.index()) : DLDevice{kDLExtDev, device.index()};
  for (int i = 0; i < n; ++i) {
    const IValue& v = frame.args[i];
    TsrValue& out = values[i];
    switch (v.tag) {
      case IValue::Tag::None: out.tag = TSR_VALUE_NONE; break;
      case IValue::Tag::Tensor:
        if (!v.tensor->defined()) break;
        tensors[i] = v.tensor->unsafeGetTensorImpl()->dl_tensor();
        tensors[i].data = nullptr;
        tensors[i].byte_offset = 0;
        tensors[i].device = dl_device;
        out.tag = TSR_VALUE_TENSOR;
        out.as.tensor = &tensors[i];
        break;
      case IValue::Tag::Int: out.tag = TSR_VALUE_INT; out.as.i = v.i; break;
      case IValue::Tag::Double: out.tag = TSR_VALUE_FLOAT; out.as.f = v.d; break;
      case IValue::Tag::Bool: out.tag = TSR_VALUE_BOOL; out.as.b = v.b; break;
      case IValue::Tag::IntList:
        out.tag = TSR_VALUE_INT_LIST;
        out.as.int_list.data = v.ints.data;
        out.as.int_list.size = v.ints.size;
        break;
      case IValue::Tag::ScalarType: out.tag = TSR_VALUE_DTYPE; out.as.dtype = to_abi_dtype(v.dtype); break;
      case IValue::Tag::String:
        strings[i] = std::string(v.string());
        out.tag = TSR_VALUE_STRING;
        out.as.string = strings[i].c_str();
        break;
      default: throw InternalError(op.name() + ": an argument kind plugin ops do not take");
    }
  }
  TsrShapeQuery q{};
  q.struct_size = sizeof(TsrShapeQuery);
  q.op_name = d.name.c_str();
  q.context = d.shape_context;
  q.device_type = device.type_name().c_str();
  q.device_index = device.index();
  q.args = values;
  q.num_args = size_t(n);
  q.num_outputs = answer.num_outputs;
  q.handle = reinterpret_cast<TsrCallHandle>(&answer);
  q.set_output = &query_set_output;
  q.set_view = &query_set_view;
  ShapeAnswer* outer = t_answer;
  t_answer = &answer;
  TsrError* err = call_plugin([&] { return d.shape_fn(&q); });
  t_answer = outer;
  if (err != nullptr) throw_abi_error(err, op.name() + ": shape function of plugin '" + d.plugin + "'");
  if (d.flags & TSR_OP_VIEW) {
    TSR_CHECK(answer.view_set, ValueError, op.name(), ": the shape function of plugin '", d.plugin,
              "' returned without calling set_view");
    return;
  }
  for (size_t i = 0; i < answer.num_outputs; ++i)
    TSR_CHECK(answer.set[i], ValueError, op.name(), ": the shape function of plugin '", d.plugin,
              "' returned without setting output ", i);
}

// The device every defined tensor argument is on (wrapped numbers may be elsewhere).
Device call_device(const StructuredCall& c) {
  const Frame& f = c.frame();
  const Tensor* first = nullptr;
  for (int i = 0; i < f.num_args; ++i) {
    const IValue& v = f.args[i];
    if (v.tag != IValue::Tag::Tensor || !v.tensor->defined()) continue;
    if (v.tensor->unsafeGetTensorImpl()->is_wrapped_number() && first != nullptr) continue;
    if (first == nullptr || first->unsafeGetTensorImpl()->is_wrapped_number()) {
      first = v.tensor;
      continue;
    }
    if (v.tensor->device() != first->device())
      throw ValueError(detail::str(c.op().name(), ": expected all tensors on one device, found ", first->device().str(),
                                   " and ", v.tensor->device().str(), "; call: ", describe_call(c.op(), c.frame())));
  }
  TSR_CHECK(first != nullptr, ValueError, c.op().name(), ": every tensor argument is None; call: ",
            describe_call(c.op(), c.frame()));
  return first->device();
}

void reduction_shape(const StructuredCall& c, const Definition& d, DimVector& out) {
  const Tensor& t = c.tensor_arg(d.shape_input);
  const int64_t nd = t.dim();
  std::vector<bool> reduce(size_t(nd), d.dims_arg < 0);
  if (d.dims_arg >= 0) {
    const IValue& v = c.arg(d.dims_arg);
    IntArrayRef dims;
    int64_t one = 0;
    if (v.tag == IValue::Tag::IntList) dims = v.int_list();
    if (v.tag == IValue::Tag::Int) {
      one = v.i;
      dims = IntArrayRef(&one, 1);
    }
    if (v.is_none() || (v.tag == IValue::Tag::IntList && dims.empty())) std::fill(reduce.begin(), reduce.end(), true);
    for (int64_t dim : dims) {
      const int64_t w = wrap_dim(c.op(), dim, nd);
      TSR_CHECK(nd == 0 || !reduce[size_t(w)], ValueError, c.op().name(), ": dim ", dim, " appears twice in ", dims);
      if (nd > 0) reduce[size_t(w)] = true;
    }
  }
  const bool keepdim = d.keepdim_arg >= 0 && c.arg(d.keepdim_arg).tag == IValue::Tag::Bool && c.arg(d.keepdim_arg).b;
  for (int64_t i = 0; i < nd; ++i) {
    if (!reduce[size_t(i)]) out.push_back(t.size(i));
    else if (keepdim) out.push_back(1);
  }
}

void plugin_op_meta(StructuredCall& c) {
  const Operator& op = c.op();
  const Definition* def = definition_of(op);
  TSR_CHECK(def != nullptr, InternalError, op.name(), ": no plugin definition");
  const Definition& d = *def;
  if (d.owner.load(std::memory_order_acquire) == nullptr) fail_retired(d, op);
  const bool inplace = &op == d.inplace;
  const Frame& f = c.frame();
  const Device device = call_device(c);
  c.device = device;

  // Output shapes and dtypes, and the dispatch dtype.
  const size_t nout = d.schema.returns.size();
  DimVector shapes[kMaxKernelOutputs];
  ScalarType dtypes[kMaxKernelOutputs];
  ScalarType dispatch = ScalarType::Undefined;
  DimVector broadcast;
  switch (d.shape_rule) {
    case TSR_SHAPE_SAME_AS_INPUT: {
      const Tensor& t = c.tensor_arg(d.shape_input);
      dispatch = t.scalar_type();
      for (size_t i = 0; i < nout; ++i) shapes[i].assign(t.sizes().begin(), t.sizes().end());
      break;
    }
    case TSR_SHAPE_REDUCTION: {
      dispatch = c.tensor_arg(d.shape_input).scalar_type();
      DimVector s;
      reduction_shape(c, d, s);
      for (size_t i = 0; i < nout; ++i) shapes[i] = s;
      break;
    }
    case TSR_SHAPE_BROADCAST: {
      std::vector<const TensorImpl*> impls;
      bool first = true;
      for (int i = 0; i < f.num_args; ++i) {
        const IValue& v = f.args[i];
        if (v.tag != IValue::Tag::Tensor || !v.tensor->defined()) continue;
        impls.push_back(v.tensor->unsafeGetTensorImpl());
        if (first) broadcast.assign(v.tensor->sizes().begin(), v.tensor->sizes().end());
        else broadcast = broadcast_shapes(op, broadcast, v.tensor->sizes());
        first = false;
      }
      dispatch = result_type(impls);
      for (size_t i = 0; i < nout; ++i) shapes[i] = broadcast;
      break;
    }
    default: {  // TSR_SHAPE_CALLBACK
      ShapeAnswer answer;
      answer.def = &d;
      answer.num_outputs = nout;
      run_shape_fn(op, d, f, device, answer);
      for (size_t i = 0; i < nout; ++i) {
        shapes[i] = answer.shapes[i];
        dtypes[i] = answer.dtypes[i];
      }
      // Argument shape_input's dtype, else (none named, or None) the first tensor's.
      if (d.shape_input >= 0) {
        const IValue& v = f.args[d.shape_input];
        if (v.tag == IValue::Tag::Tensor && v.tensor->defined()) dispatch = v.tensor->scalar_type();
      }
      for (int i = 0; i < f.num_args && dispatch == ScalarType::Undefined; ++i) {
        const IValue& v = f.args[i];
        if (v.tag == IValue::Tag::Tensor && v.tensor->defined()) dispatch = v.tensor->scalar_type();
      }
      break;
    }
  }
  if (d.shape_rule != TSR_SHAPE_CALLBACK)
    for (size_t i = 0; i < nout; ++i)
      dtypes[i] = d.output_dtype >= 0 ? static_cast<ScalarType>(d.output_dtype) : dispatch;
  c.dispatch_dtype = dispatch;

  // Kernel arguments: every argument in schema order.
  const Tensor* self = inplace ? &c.tensor_arg(0) : nullptr;
  for (int i = 0; i < f.num_args; ++i) {
    const IValue& v = f.args[i];
    const std::string_view type = base_type(d.schema.arguments[i].type);
    switch (v.tag) {
      case IValue::Tag::None: c.set_none(i); break;
      case IValue::Tag::Tensor: {
        if (!v.tensor->defined()) {
          c.set_none(i);
          break;
        }
        const Tensor& t = *v.tensor;
        if (d.shape_rule == TSR_SHAPE_BROADCAST) {
          Tensor moved = t.device() == device ? t : t.to(device);
          if (self != nullptr && i != 0) moved = snapshot_if_overlapping(moved, *self);
          c.set_tensor(i, cast_and_expand(moved, dispatch, broadcast));
        } else if (t.device() != device) {
          c.set_tensor(i, t.to(device));  // a wrapped number
        } else if (self != nullptr && i != 0 && !(d.flags & TSR_OP_POINTWISE)) {
          c.set_tensor(i, snapshot_if_overlapping(t, *self));
        } else {
          c.set_tensor_borrowed(i, t);
        }
        break;
      }
      case IValue::Tag::Int:
      case IValue::Tag::Double:
      case IValue::Tag::Bool:
        if (type == "Scalar") c.set_scalar(i, v.to_scalar(), dispatch);
        else if (type == "float") c.set_float(i, v.tag == IValue::Tag::Int ? double(v.i) : v.d);
        else if (v.tag == IValue::Tag::Bool) c.set_bool(i, v.b);
        else if (v.tag == IValue::Tag::Int) c.set_int(i, v.i);
        else c.set_float(i, v.d);
        break;
      case IValue::Tag::IntList: c.set_int_list(i, v.int_list()); break;
      case IValue::Tag::ScalarType: {
        TsrValue x{};
        x.tag = TSR_VALUE_DTYPE;
        x.as.dtype = to_abi_dtype(v.dtype);
        c.set_value(i, x);
        break;
      }
      case IValue::Tag::String: c.set_string(i, v.string()); break;
      default:
        throw TypeError(op.name() + ": argument '" + d.schema.arguments[i].name + "' got a value of a kind plugin ops do not take");
    }
  }

  if (!inplace) {
    for (size_t i = 0; i < nout; ++i) c.add_output(shapes[i], dtypes[i]);
    return;
  }
  check_writable(op, *self);
  TSR_CHECK(IntArrayRef(shapes[0].data(), shapes[0].size()).equals(self->sizes()), ValueError, op.name(),
            ": the result's shape ", IntArrayRef(shapes[0].data(), shapes[0].size()), " differs from self's ",
            self->sizes(), ", so it cannot be written in place");
  if (dtypes[0] == self->scalar_type()) {
    c.add_aliased_output(*self);
  } else {
    TSR_CHECK(can_cast(dtypes[0], self->scalar_type()), TypeError, op.name(), ": the result's dtype ",
              dtype_name(dtypes[0]), " cannot be written into self's ", dtype_name(self->scalar_type()));
    c.add_output(shapes[0], dtypes[0]);
    c.copy_result_into(*self);
  }
}

// A VIEW op: the plugin's shape function decides the view, which as_strided makes.
void plugin_view_kernel(const Operator& op, DispatchKeySet, Frame& frame, void*) {
  const Definition* def = definition_of(op);
  TSR_CHECK(def != nullptr, InternalError, op.name(), ": no plugin definition");
  const Definition& d = *def;
  const IValue& in = frame.args[d.shape_input];
  TSR_CHECK(in.tag == IValue::Tag::Tensor && in.tensor->defined(), ValueError, op.name(), ": argument '",
            d.schema.arguments[d.shape_input].name, "' must be a defined tensor");
  const Tensor& base = *in.tensor;
  ShapeAnswer answer;
  answer.def = &d;
  answer.num_outputs = 1;
  run_shape_fn(op, d, frame, base.device(), answer);
  // as_strided checks the view against the storage; its refusal names this op.
  try {
    frame.outputs[0] = base.as_strided(IntArrayRef(answer.view_sizes.data(), answer.view_sizes.size()),
                                       IntArrayRef(answer.view_strides.data(), answer.view_strides.size()),
                                       base.storage_offset() + answer.view_offset);
  } catch (const Error& e) {
    throw_error(e.code(), op.name() + ": the view the shape function of plugin '" + d.plugin + "' chose is refused: " +
                              e.what());
  }
}

// ---------------------------------------------------------------------------
// The derivative: the steps, run with ordinary ops (so backward of backward works).

ops::Arg constant_arg(const ArgRef& r) {
  switch (r.const_tag) {
    case TSR_VALUE_INT: return r.i;
    case TSR_VALUE_FLOAT: return r.d;
    case TSR_VALUE_BOOL: return r.i != 0;
    case TSR_VALUE_INT_LIST: return r.ints;
    case TSR_VALUE_DTYPE: return static_cast<ScalarType>(r.i);
    case TSR_VALUE_STRING: return r.str;
    default: return std::monostate{};
  }
}

ops::Arg forward_arg(autograd::BackwardContext& c, const Schema& s, int i) {
  const std::string& type = s.arguments[i].type;
  if (c.is_none(i)) return std::monostate{};
  const std::string_view b = base_type(type);
  if (b == "Tensor") return c.saved(i);
  if (b == "int") return c.int_arg(i);
  if (b == "float") return c.double_arg(i);
  if (b == "bool") return c.bool_arg(i);
  if (b == "int[]") {
    const IntArrayRef l = c.int_list(i);
    return std::vector<int64_t>(l.begin(), l.end());
  }
  if (b == "str") return std::string(c.string_arg(i));
  if (b == "ScalarType") return c.dtype_arg(i);
  const Scalar v = c.scalar_arg(i);  // Scalar
  if (v.kind() == Scalar::Kind::Bool) return v.to_bool();
  if (v.kind() == Scalar::Kind::Int) return v.to_long();
  return v.to_double();
}

autograd::variable_list plugin_backward(autograd::BackwardContext& c) {
  const Definition* def = definition_of(c.op());
  TSR_CHECK(def != nullptr, InternalError, c.op().name(), ": no plugin definition");
  const Definition& d = *def;
  std::vector<std::vector<Tensor>> results;
  const auto value = [&](const ArgRef& r) -> ops::Arg {
    switch (r.kind) {
      case TSR_OP_ARG_GRAD_OUTPUT: return c.grad(r.index);
      case TSR_OP_ARG_INPUT: return forward_arg(c, d.schema, r.index);
      case TSR_OP_ARG_OUTPUT: return c.result(r.index);
      case TSR_OP_ARG_STEP: return results[r.index][r.output];
      case TSR_OP_ARG_CONSTANT: return constant_arg(r);
      default: return std::monostate{};
    }
  };
  for (const Step& s : d.steps) {
    std::vector<ops::Arg> args;
    for (const ArgRef& r : s.args) args.push_back(value(r));
    // Bound by position, keyword-only parameters included (as registration checked them).
    results.push_back(ops::typed_detail::call_positional(Dispatcher::instance().get(s.op), std::move(args)));
  }
  autograd::variable_list grads;
  for (const ArgRef& g : d.input_grads) {
    ops::Arg v = value(g);
    grads.push_back(std::holds_alternative<Tensor>(v) ? std::get<Tensor>(v) : Tensor());
  }
  return grads;
}

autograd::Derivative derivative_of(const Definition& d) {
  autograd::Derivative out;
  out.inputs = d.differentiable_inputs;
  std::set<int> inputs, outputs;
  const auto note = [&](const ArgRef& r) {
    if (r.kind == TSR_OP_ARG_INPUT && is_tensor_type(d.schema.arguments[r.index].type)) inputs.insert(r.index);
    if (r.kind == TSR_OP_ARG_OUTPUT) outputs.insert(r.index);
  };
  for (const Step& s : d.steps)
    for (const ArgRef& r : s.args) note(r);
  for (const ArgRef& r : d.input_grads) note(r);
  out.save_inputs.assign(inputs.begin(), inputs.end());
  out.save_outputs.assign(outputs.begin(), outputs.end());
  out.formula = &plugin_backward;
  return out;
}

std::string inplace_schema(const Schema& s) {
  std::string t = s.name + "_(";
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    const SchemaArgument& a = s.arguments[i];
    if (i > 0) t += ", ";
    if (a.kwarg_only && (i == 0 || !s.arguments[i - 1].kwarg_only)) t += "*, ";
    t += (i == 0 ? std::string("Tensor(a!)") : a.type) + " " + a.name;
    if (!a.default_value.empty()) t += "=" + a.default_value;
  }
  return t + ") -> Tensor(a!)";
}

}  // namespace

// ---------------------------------------------------------------------------

PluginOpInfo Definition::describe() const {
  PluginOpInfo info;
  info.name = name;
  info.schema = schema.text;
  info.plugin = plugin;
  info.inplace_variant = has_inplace() ? name + "_" : "";
  info.pointwise = flags & TSR_OP_POINTWISE;
  info.view = flags & TSR_OP_VIEW;
  info.nondeterministic = flags & TSR_OP_NONDETERMINISTIC;
  info.shape_rule = (flags & TSR_OP_VIEW) ? TSR_SHAPE_CALLBACK : shape_rule;
  info.shape_input = shape_input;
  info.differentiable = (flags & TSR_OP_VIEW) || derivative != TSR_DERIVATIVE_NONE;
  info.shape_text = shape_text(*this);
  info.derivative_text = derivative_text(*this);
  info.loaded = owner.load(std::memory_order_acquire) != nullptr;
  return info;
}

const Schema* staged_schema(const std::vector<std::unique_ptr<Definition>>& staged, std::string_view name) {
  for (const auto& d : staged)
    if (d->name == name) return &d->schema;
  return nullptr;
}

TsrError* validate(const TsrOpDesc* desc, const std::string& plugin,
                   const std::vector<std::unique_ptr<Definition>>& staged, std::unique_ptr<Definition>* out) {
  const std::string who = "plugin '" + plugin + "': register_op";
  if (desc == nullptr || desc->struct_size < offsetof(TsrOpDesc, input_grads) + sizeof(void*))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": description is NULL or smaller than the 1.3 TsrOpDesc");
  if (desc->schema == nullptr) return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": schema is NULL");
  auto d = std::make_unique<Definition>();
  try {
    d->schema = Schema::parse(desc->schema);
  } catch (const Error& e) {
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": " + e.what());
  }
  d->name = d->schema.name;
  d->plugin = plugin;
  const std::string what = who + " '" + d->name + "'";
  constexpr uint32_t kKnownFlags =
      TSR_OP_POINTWISE | TSR_OP_INPLACE_VARIANT | TSR_OP_VIEW | TSR_OP_NONDETERMINISTIC | TSR_OP_FIXED_OUTPUT_DTYPE;
  if (desc->flags & ~kKnownFlags)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": unknown flag bits 0x" + [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%x", desc->flags & ~kKnownFlags);
      return std::string(b);
    }() + " (this core knows POINTWISE, INPLACE_VARIANT, VIEW, NONDETERMINISTIC and FIXED_OUTPUT_DTYPE)");
  d->flags = desc->flags;
  d->shape_rule = desc->shape_rule;
  d->shape_input = desc->shape_input;
  d->dims_arg = desc->dims_arg;
  d->keepdim_arg = desc->keepdim_arg;
  if (desc->flags & TSR_OP_FIXED_OUTPUT_DTYPE) {
    if (desc->output_dtype < 0 || desc->output_dtype >= kNumScalarTypes)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": output_dtype " + std::to_string(desc->output_dtype) +
                                                             " is not a dtype this core knows");
    d->output_dtype = desc->output_dtype;
  } else if (desc->output_dtype != 0) {
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           what + ": output_dtype is " + std::to_string(desc->output_dtype) +
                               " without TSR_OP_FIXED_OUTPUT_DTYPE (leave it 0 for the rule's dtype, or set the flag)");
  }
  d->shape_fn = desc->shape_fn;
  d->shape_context = desc->shape_context;
  d->derivative = desc->derivative;
  if (Refusal r = check_schema(*d, plugin)) return make_host_error(r.code, what + ": " + r.message);
  if (Refusal r = check_rule(*d)) return make_host_error(r.code, what + ": " + r.message);
  if (Refusal r = check_derivative(*d, *desc, staged)) return make_host_error(r.code, what + ": " + r.message);
  d->canonical = canonical_text(*d);

  // The name (and its in-place variant's) must be free, or a retired op of
  // this plugin described identically (a reload).
  const std::string inplace_name = d->name + "_";
  for (const auto& s : staged)
    if (s->name == d->name || (s->has_inplace() && s->name + "_" == d->name))
      return make_host_error(TSR_ERROR_ALREADY_EXISTS, what + ": registered twice");
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().by_name.find(d->name);
    if (it != registry().by_name.end()) {
      const Definition& old = *it->second;
      if (old.owner.load(std::memory_order_acquire) != nullptr)
        return make_host_error(TSR_ERROR_ALREADY_EXISTS, what + ": already defined by the loaded plugin '" + old.plugin + "'");
      if (old.canonical != d->canonical)
        return make_host_error(TSR_ERROR_ALREADY_EXISTS,
                               what + ": an earlier load of plugin '" + old.plugin +
                                   "' defined this op differently, and a process keeps an op's definition once "
                                   "declared; it was: " +
                                   old.schema.text + " [" + shape_text(old) + "; " + derivative_text(old) +
                                   "], now: " + d->schema.text + " [" + shape_text(*d) + "; " + derivative_text(*d) + "]");
    } else {
      if (Dispatcher::instance().find(d->name) != nullptr)
        return make_host_error(TSR_ERROR_ALREADY_EXISTS, what + ": an op of that name exists");
      if (d->has_inplace() && Dispatcher::instance().find(inplace_name) != nullptr)
        return make_host_error(TSR_ERROR_ALREADY_EXISTS, what + ": its in-place variant's name '" + inplace_name + "' is taken");
    }
  }
  *out = std::move(d);
  return nullptr;
}

void commit(std::unique_ptr<Definition> owned, PluginRecord* owner) {
  Definition* d = owned.release();  // kept for the process's life
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(d->name);
  if (it != r.by_name.end()) {  // a reload: the same op, described identically
    d->op = it->second->op;
    d->inplace = it->second->inplace;
    it->second = d;
  } else {
    Dispatcher& disp = Dispatcher::instance();
    uint32_t flags = 0;
    if (d->flags & TSR_OP_POINTWISE) flags |= kPointwise;
    if (d->flags & TSR_OP_VIEW) {
      d->op = &disp.declare_composite(d->schema.text, kView, &plugin_view_kernel);
    } else {
      d->op = &disp.declare_structured(d->schema.text, flags, &plugin_op_meta);
      if (d->has_inplace()) d->inplace = &disp.declare_inplace_variant(*d->op, inplace_schema(d->schema), &plugin_op_meta);
    }
    if (d->flags & TSR_OP_VIEW) {
      autograd::define_decomposed(d->name);
    } else if (d->derivative == TSR_DERIVATIVE_NONE) {
      autograd::define_not_differentiable(d->name);
      if (d->inplace) autograd::define_not_differentiable(d->inplace->name());
    } else {
      autograd::define_derivative(d->name, derivative_of(*d));
      if (d->inplace) autograd::define_derivative(d->inplace->name(), derivative_of(*d));
    }
    r.by_name.emplace(d->name, d);
  }
  d->owner.store(owner, std::memory_order_release);
  detail::OperatorSlots::set_plugin_op(*d->op, d);
  if (d->inplace) detail::OperatorSlots::set_plugin_op(*d->inplace, d);
}

void retire(PluginRecord* owner) {
  Registry& r = registry();
  std::unique_lock calls(r.calls);  // no shape function of the plugin runs from here on
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [name, d] : r.by_name)
    if (d->owner.load(std::memory_order_acquire) == owner) d->owner.store(nullptr, std::memory_order_release);
}

std::vector<PluginOpInfo> ops_of(const PluginRecord* owner) {
  std::vector<PluginOpInfo> out;
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (const auto& [name, d] : registry().by_name)
    if (d->owner.load(std::memory_order_acquire) == owner) out.push_back(d->describe());
  return out;
}

}  // namespace tessera::defined_ops

namespace tessera {

std::vector<PluginOpInfo> plugin_ops() {
  load_default_plugins();
  std::vector<PluginOpInfo> out;
  std::lock_guard<std::mutex> lock(defined_ops::registry().mutex);
  for (const auto& [name, d] : defined_ops::registry().by_name) out.push_back(d->describe());
  return out;
}

}  // namespace tessera
