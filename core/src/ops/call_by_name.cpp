// tessera::ops::call: any op by name, its arguments bound by the schema
// (positional, then keywords, then the schema's defaults) and boxed into the
// dispatcher's IValues. The op's own rule checks values; this file checks only
// what the binding needs: arity, names and the kind of each value.
#include <tessera/error.h>
#include <tessera/ops/call.h>

#include "ops.h"
#include "out_target.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string>

namespace tessera::ops {
namespace {

std::string_view base_type(std::string_view type) { return Schema::base_type(type); }
bool is_optional(std::string_view type) { return Schema::is_optional(type); }

/// N of "int[N]" (0 for "int[]" or another type).
size_t fixed_length(std::string_view type) {
  const size_t open = type.find('['), close = type.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close == open + 1) return 0;
  size_t n = 0;
  std::from_chars(type.data() + open + 1, type.data() + close, n);
  return n;
}

const char* kind_name(const Arg& a) {
  switch (a.index()) {
    case 0: return "None";
    case 1: return "Tensor";
    case 2: return "int";
    case 3: return "float";
    case 4: return "bool";
    case 5: return "int list";
    case 6: return "dtype";
    case 7: return "str";
    case 8: return "device";
    default: return "Tensor list";
  }
}

/// The schema's default text as an Arg: None, True/False, an int, a float, a
/// quoted string or an int list.
Arg parse_default(const std::string& text, const Operator& op, const SchemaArgument& a) {
  if (text == "None") return std::monostate{};
  if (text == "True") return true;
  if (text == "False") return false;
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
    return text.substr(1, text.size() - 2);
  if (text.front() == '[') {
    std::vector<int64_t> v;
    const char* p = text.data() + 1;
    const char* end = text.data() + text.size() - 1;
    while (p < end) {
      while (p < end && (*p == ' ' || *p == ',')) ++p;
      if (p >= end) break;
      int64_t x = 0;
      const auto r = std::from_chars(p, end, x);
      TSR_CHECK(r.ec == std::errc(), InternalError, op.name(), ": cannot read the default '", text, "' of ", a.name);
      v.push_back(x);
      p = r.ptr;
    }
    return v;
  }
  int64_t i = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), i);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return i;
  double d = 0;
  const auto rd = std::from_chars(text.data(), text.data() + text.size(), d);
  TSR_CHECK(rd.ec == std::errc() && rd.ptr == text.data() + text.size(), InternalError, op.name(),
            ": cannot read the default '", text, "' of ", a.name);
  return d;
}

/// Owns what the IValues point at (lists, strings, wrapped numbers) for the call.
struct Boxed {
  std::deque<Tensor> tensors;
  std::deque<std::vector<int64_t>> lists;
  std::deque<std::string> strings;
};

[[noreturn]] void wrong_kind(const Operator& op, const SchemaArgument& a, const Arg& v) {
  throw TypeError(op.name() + ": argument '" + a.name + "' (" + a.type + ") got " + kind_name(v));
}

IValue box(const Operator& op, const SchemaArgument& a, const Arg& v, Device number_device, Boxed& keep) {
  const std::string_view type = base_type(a.type);
  if (std::holds_alternative<std::monostate>(v)) {
    if (is_optional(a.type)) return IValue::none();
    throw TypeError(op.name() + ": argument '" + a.name + "' (" + a.type + ") cannot be None");
  }
  if (type == "Tensor") {
    if (const Tensor* t = std::get_if<Tensor>(&v)) return IValue::of(*t);
    // A number in place of a tensor: a 0-d wrapped number, as `a + 2`.
    if (const auto* i = std::get_if<int64_t>(&v)) return IValue::of(keep.tensors.emplace_back(wrapped_number(Scalar(*i), number_device)));
    if (const auto* d = std::get_if<double>(&v)) return IValue::of(keep.tensors.emplace_back(wrapped_number(Scalar(*d), number_device)));
    if (const auto* b = std::get_if<bool>(&v)) return IValue::of(keep.tensors.emplace_back(wrapped_number(Scalar(*b), number_device)));
    wrong_kind(op, a, v);
  }
  if (type == "Tensor[]") {
    if (const auto* ts = std::get_if<std::vector<Tensor>>(&v)) return IValue::of(ArrayRef<Tensor>(ts->data(), ts->size()));
    wrong_kind(op, a, v);
  }
  if (type == "Scalar") {
    if (const auto* i = std::get_if<int64_t>(&v)) return IValue::of(*i);
    if (const auto* d = std::get_if<double>(&v)) return IValue::of(*d);
    if (const auto* b = std::get_if<bool>(&v)) return IValue::of(*b);
    wrong_kind(op, a, v);
  }
  if (type == "int") {
    if (const auto* i = std::get_if<int64_t>(&v)) return IValue::of(*i);
    wrong_kind(op, a, v);
  }
  if (type == "float") {
    if (const auto* d = std::get_if<double>(&v)) return IValue::of(*d);
    if (const auto* i = std::get_if<int64_t>(&v)) return IValue::of(static_cast<double>(*i));
    wrong_kind(op, a, v);
  }
  if (type == "bool") {
    if (const auto* b = std::get_if<bool>(&v)) return IValue::of(*b);
    wrong_kind(op, a, v);
  }
  if (type == "int[]") {
    if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return IValue::of(IntArrayRef(l->data(), l->size()));
    if (const auto* i = std::get_if<int64_t>(&v)) {  // one int for int[N]: N copies, as PyTorch
      const std::vector<int64_t>& l = keep.lists.emplace_back(std::max<size_t>(fixed_length(a.type), 1), *i);
      return IValue::of(IntArrayRef(l.data(), l.size()));
    }
    wrong_kind(op, a, v);
  }
  if (type == "str") {
    if (const auto* s = std::get_if<std::string>(&v)) return IValue::of(std::string_view(*s));
    wrong_kind(op, a, v);
  }
  if (type == "ScalarType") {
    if (const auto* t = std::get_if<ScalarType>(&v)) return IValue::of(*t);
    wrong_kind(op, a, v);
  }
  if (type == "Device") {
    if (const auto* d = std::get_if<Device>(&v)) return IValue::of(*d);
    if (const auto* s = std::get_if<std::string>(&v)) return IValue::of(Device(*s));
    wrong_kind(op, a, v);
  }
  throw NotImplementedError(op.name() + ": argument '" + a.name + "' has type " + a.type +
                            ", which ops::call cannot bind");
}

bool kind_fits(size_t kind, const std::string& type) {
  const std::string_view t = base_type(type);
  switch (kind) {
    case 0: return is_optional(type);
    case 1: return t == "Tensor";
    case 2: return t == "int" || t == "float" || t == "Scalar" || t == "Tensor" || t == "int[]";
    case 3: return t == "float" || t == "Scalar" || t == "Tensor";
    case 4: return t == "bool" || t == "Scalar" || t == "Tensor";
    case 5: return t == "int[]";
    case 6: return t == "ScalarType";
    case 7: return t == "str" || t == "Device";
    case 8: return t == "Device";
    default: return t == "Tensor[]";
  }
}

}  // namespace

namespace typed_detail {
void check_signature(const Operator& op, const std::vector<size_t>& kinds, size_t num_results) {
  const std::vector<SchemaArgument>& params = op.schema().arguments;
  static const char* const names[] = {"None", "Tensor", "an integer", "a floating value", "bool", "an int list",
                                      "ScalarType", "a string", "Device", "a tensor list"};
  TSR_CHECK(kinds.size() <= params.size(), TypeError, "TypedOp ", op.name(), ": ", kinds.size(),
            " parameters, but the schema has ", params.size(), " arguments (", op.schema().text, ")");
  for (size_t i = 0; i < kinds.size(); ++i)
    TSR_CHECK(kind_fits(kinds[i], params[i].type), TypeError, "TypedOp ", op.name(), ": parameter ", i, " is ",
              names[std::min<size_t>(kinds[i], 9)], " but argument '", params[i].name, "' has type ", params[i].type,
              " (", op.schema().text, ")");
  for (size_t i = kinds.size(); i < params.size(); ++i)
    TSR_CHECK(!params[i].default_value.empty(), TypeError, "TypedOp ", op.name(), ": argument '", params[i].name,
              "' has no default, so the signature must include it (", op.schema().text, ")");
  TSR_CHECK(num_results == 0 || op.schema().returns.size() == num_results, TypeError, "TypedOp ", op.name(),
            ": returns ", op.schema().returns.size(), " results; use std::vector<Tensor> as the result type (",
            op.schema().text, ")");
}

std::vector<Tensor> call_positional(const Operator& op, std::vector<Arg> args) {
  const std::vector<SchemaArgument>& params = op.schema().arguments;
  std::vector<KwArg> kwargs;
  size_t positional = 0;
  while (positional < args.size() && !params[positional].kwarg_only) ++positional;
  for (size_t i = positional; i < args.size(); ++i) kwargs.emplace_back(params[i].name, std::move(args[i]));
  args.resize(positional);
  return call(op, args, kwargs);
}
}  // namespace typed_detail

std::vector<Tensor> call(std::string_view name, const std::vector<Arg>& args, const std::vector<KwArg>& kwargs) {
  return call(Dispatcher::instance().get(name), args, kwargs);
}

std::vector<Tensor> call(const Operator& op, const std::vector<Arg>& args, const std::vector<KwArg>& kwargs) {
  const std::vector<SchemaArgument>& params = op.schema().arguments;
  // out=: a keyword the schema does not have; the result is written into it.
  const auto has_param = [&](std::string_view n) {
    return std::any_of(params.begin(), params.end(), [&](const SchemaArgument& a) { return a.name == n; });
  };
  for (size_t k = 0; k < kwargs.size(); ++k) {
    if (kwargs[k].first != "out" || has_param("out")) continue;
    const Tensor* target = std::get_if<Tensor>(&kwargs[k].second);
    TSR_CHECK(target != nullptr && target->defined(), TypeError, op.name(), ": out= takes a Tensor, got ",
              kind_name(kwargs[k].second));
    TSR_CHECK(op.schema().returns.size() == 1 && !(op.flags() & (kInPlace | kView)), TypeError, op.name(),
              ": has no out= form (only ops with one result that are neither in-place nor views)");
    std::vector<KwArg> rest(kwargs);
    rest.erase(rest.begin() + std::ptrdiff_t(k));
    Tensor out = *target;
    out_form(op.name(), out, [&] { return call(op, args, rest).at(0); });
    return {out};
  }
  TSR_CHECK(args.size() <= params.size(), TypeError, op.name(), " takes ", params.size(), " arguments, got ",
            args.size(), " positional (", op.schema().text, ")");

  // Bind: positional, then keywords, then defaults.
  std::vector<std::optional<Arg>> bound(params.size());
  for (size_t i = 0; i < args.size(); ++i) {
    TSR_CHECK(!params[i].kwarg_only, TypeError, op.name(), ": argument '", params[i].name,
              "' is keyword-only (", op.schema().text, ")");
    bound[i] = args[i];
  }
  for (const auto& [key, value] : kwargs) {
    size_t i = 0;
    while (i < params.size() && params[i].name != key) ++i;
    TSR_CHECK(i < params.size(), TypeError, op.name(), " has no argument '", key, "' (", op.schema().text, ")");
    TSR_CHECK(!bound[i], TypeError, op.name(), ": argument '", key, "' given twice");
    bound[i] = value;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    TSR_CHECK(!params[i].default_value.empty(), TypeError, op.name(), ": missing argument '", params[i].name, "' (",
              op.schema().text, ")");
    bound[i] = parse_default(params[i].default_value, op, params[i]);
  }

  // Numbers in place of tensors go on the first tensor argument's device.
  Device number_device("cpu");
  for (const auto& b : bound)
    if (const Tensor* t = std::get_if<Tensor>(&*b); t != nullptr && t->defined()) {
      number_device = t->device();
      break;
    }
  // A factory's device left out is the default device, as its C++ function has it.
  if (op.flags() & kFactory)
    for (size_t i = 0; i < params.size(); ++i)
      if (base_type(params[i].type) == "Device" && std::holds_alternative<std::monostate>(*bound[i])) bound[i] = Device();
  Boxed keep;
  std::vector<IValue> boxed;
  boxed.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) boxed.push_back(box(op, params[i], *bound[i], number_device, keep));

  std::vector<Tensor> out(op.schema().returns.size());
  Frame frame{boxed.data(), static_cast<int>(boxed.size()), out.data(), static_cast<int>(out.size())};
  Dispatcher::instance().call(op, frame);
  if (op.flags() & kInPlace) {  // the C++ API returns the tensor it wrote
    if (const Tensor* self = std::get_if<Tensor>(&*bound[0])) return {*self};
  }
  return out;
}

}  // namespace tessera::ops
