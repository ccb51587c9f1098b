// Cases of plugin-defined ops (ABI 1.3): a generic generator built from the
// op's schema and what its plugin declared (PluginOpInfo), for ops that have
// no generator of their own (samples.h: plugin_op_samples).
#include <tessera/abi.h>
#include <tessera/error.h>
#include <tessera/plugin.h>

#include <algorithm>

#include "samples.h"

namespace tessera::kit {

namespace {

// "Tensor(a!)" -> "Tensor", "int[2]?" -> "int[]", "float?" -> "float".
std::string base_type(std::string_view type) {
  if (!type.empty() && type.back() == '?') type.remove_suffix(1);
  if (const size_t p = type.find('('); p != std::string_view::npos) type = type.substr(0, p);
  if (type.rfind("int[", 0) == 0) return "int[]";
  return std::string(type);
}
bool is_optional(std::string_view type) { return !type.empty() && type.back() == '?'; }

bool floating_dtype(ScalarType t) { return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16; }

// The dims argument a reduction's shape rule names: PluginOpInfo::shape_text
// reads "reduction of argument 'self' over dims 'dim', keepdim 'keepdim'".
std::string reduction_dims_arg(const PluginOpInfo& info) {
  if (info.shape_rule != TSR_SHAPE_REDUCTION) return {};
  const std::string key = "over dims '";
  const size_t at = info.shape_text.find(key);
  if (at == std::string::npos) return {};
  const size_t from = at + key.size(), to = info.shape_text.find('\'', from);
  return to == std::string::npos ? std::string() : info.shape_text.substr(from, to - from);
}

}  // namespace

std::optional<PluginOpInfo> find_plugin_op(std::string_view name) {
  if (name.find("::") == std::string_view::npos) return std::nullopt;  // the core's ops have no namespace
  for (PluginOpInfo& info : plugin_ops())
    if (info.name == name) return std::move(info);
  return std::nullopt;
}

std::vector<Sample> plugin_op_samples(const SampleContext& ctx, const PluginOpInfo& info, bool reference) {
  const auto& args = ctx.op.schema().arguments;
  const ScalarType t = ctx.dtype;
  const bool floating = floating_dtype(t);
  const std::string dims = reduction_dims_arg(info);

  // Which arguments get tensors, and a value for every argument without a
  // default (a placeholder None for the tensors, filled in per case below).
  std::vector<bool> is_tensor(args.size(), false);
  std::map<std::string, std::vector<SampleArg>> choices;
  size_t tensors = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const SchemaArgument& a = args[i];
    const std::string b = base_type(a.type);
    if (b == "Tensor") {
      choices[a.name] = {SampleArg::none()};
      if (!is_optional(a.type)) is_tensor[i] = true, ++tensors;
      continue;
    }
    std::vector<SampleArg>& c = choices[a.name];
    if (a.name == dims && b == "int[]") c = {SampleArg::int_list({0}), SampleArg::int_list({-1}), SampleArg::int_list({0, 1})};
    else if (a.name == dims && b == "int") c = {SampleArg::integer(0), SampleArg::integer(-1)};
    else if (b == "float" && !a.default_value.empty() && !is_optional(a.type)) c = {SampleArg::real(2.5)};
    if (!a.default_value.empty()) {
      if (c.empty()) choices.erase(a.name);  // its default, and option_variants' variants
      continue;
    }
    if (!c.empty()) continue;
    if (is_optional(a.type)) c = {SampleArg::none()};
    else if (b == "int") c = {SampleArg::integer(0)};
    else if (b == "float") c = {SampleArg::real(0.5)};
    else if (b == "bool") c = {SampleArg::boolean(false), SampleArg::boolean(true)};
    else if (b == "int[]") c = {SampleArg::int_list({0})};
    else if (b == "Scalar") c = {SampleArg::integer(1), floating ? SampleArg::real(2.5) : SampleArg::integer(2), SampleArg::integer(-1)};
    else if (b == "ScalarType") c = {SampleArg::scalar_type(t)};
    else if (b == "str") c = {SampleArg::string("")};
    else throw ValueError("samples of " + info.name + ": argument '" + a.name + "' has type " + a.type +
                          ", which the kit's generic cases do not make");
  }
  if (tensors == 0) {  // every tensor optional: the first one is given
    for (size_t i = 0; i < args.size() && tensors == 0; ++i)
      if (base_type(args[i].type) == "Tensor") is_tensor[i] = true, ++tensors;
  }
  // The options, in schema order (every argument; tensors hold None here).
  const std::vector<std::vector<SampleArg>> variants = option_variants(ctx, 0, choices);

  const Domain domain = reference ? Domain::Any : Domain::Positive;
  std::mt19937_64& rng = ctx.rng;
  std::vector<Sample> out;
  // A case: `ts` for the tensor arguments in order, the rest from `options`.
  auto place = [&](std::string name, std::vector<SampleArg> ts, const std::vector<SampleArg>& options) {
    Sample s;
    s.name = std::move(name);
    size_t k = 0;
    for (size_t i = 0; i < args.size(); ++i) s.args.push_back(is_tensor[i] ? std::move(ts[k++]) : options[i]);
    s.values_unspecified = info.nondeterministic;
    out.push_back(std::move(s));
  };

  if (info.pointwise || info.shape_rule == TSR_SHAPE_BROADCAST) {
    // pointwise_samples puts the tensors first, then the other arguments.
    std::vector<std::vector<SampleArg>> trailing;
    for (const std::vector<SampleArg>& v : variants) {
      std::vector<SampleArg> rest;
      for (size_t i = 0; i < args.size(); ++i)
        if (!is_tensor[i]) rest.push_back(v[i]);
      trailing.push_back(std::move(rest));
    }
    for (Sample& p : pointwise_samples(ctx, std::vector<Domain>(tensors, domain), trailing)) {
      // Only the broadcasting rule broadcasts; a pointwise op of another rule
      // receives its tensors as they are, so those cases test nothing.
      if (info.shape_rule != TSR_SHAPE_BROADCAST && p.name.find("broadcast") != std::string::npos) continue;
      std::vector<SampleArg> ts(p.args.begin(), p.args.begin() + static_cast<long>(tensors));
      std::vector<SampleArg> options(args.size());
      size_t r = tensors;
      for (size_t i = 0; i < args.size(); ++i)
        if (!is_tensor[i]) options[i] = p.args[r++];
      place(std::move(p.name), std::move(ts), options);
    }
    return out;
  }

  // Any other op: a few shapes and layouts, every tensor argument of one shape.
  auto all = [&](const std::function<TensorInput()>& make) {
    std::vector<SampleArg> v;
    for (size_t k = 0; k < tensors; ++k) v.push_back(SampleArg::tensor(make()));
    return v;
  };
  auto plain = [&](std::vector<int64_t> shape) {
    return all([&] { return contiguous(random_tensor(rng, shape, t, domain)); });
  };
  const std::vector<SampleArg>& defaults = variants.front();
  place("0-d", plain({}), defaults);
  place("[5]", plain({5}), defaults);
  place("[3, 4]", plain({3, 4}), defaults);
  place("transposed [3, 4]", all([&] { return transposed(rng, {3, 4}, t, domain); }), defaults);
  place("sliced [3, 4]", all([&] { return sliced(rng, {3, 4}, t, domain); }), defaults);
  if (tensors > 1) {  // layouts that differ between the arguments
    std::vector<SampleArg> v = plain({3, 4});
    v[0] = SampleArg::tensor(transposed(rng, {3, 4}, t, domain));
    place("input 0 transposed [3, 4]", std::move(v), defaults);
  }
  for (size_t k = 1; k < variants.size(); ++k) place("[3, 4]", plain({3, 4}), variants[k]);
  return out;
}

}  // namespace tessera::kit
