// Samples of the reduction family (docs/ops/reduction.md): inputs of several
// ranks and layouts, reduced over all, inner, outer and several dims, with
// keepdim and the ops' own options.
#include "samples.h"

#include <string>

namespace tessera::kit {

namespace {

struct Input {
  std::string name;
  TensorInput t;
  int64_t rank;
};

std::vector<Input> inputs(const SampleContext& ctx, Domain d) {
  std::mt19937_64& rng = ctx.rng;
  const ScalarType t = ctx.dtype;
  return {
      {"0-d", contiguous(random_tensor(rng, {}, t, d)), 0},
      {"[37]", contiguous(random_tensor(rng, {37}, t, d)), 1},
      {"[4, 5, 6]", contiguous(random_tensor(rng, {4, 5, 6}, t, d)), 3},
      {"[0, 4]", contiguous(random_tensor(rng, {0, 4}, t, d)), 2},
      {"[5, 6] transposed", transposed(rng, {5, 6}, t, d), 2},
      {"[5, 6] sliced", sliced(rng, {5, 6}, t, d), 2},
      {"[5, 6] expanded", expanded(rng, {5, 6}, t, d, 0), 2},
      {"[5, 6] reversed", reversed(rng, {5, 6}, t, d), 2},
      {"[3, 1100] (a long row)", contiguous(random_tensor(rng, {3, 1100}, t, d)), 2},
  };
}

// Dim choices for an input of `rank`: every dim alone (also negative), two
// dims, and all of them; "none" means the schema's None (or [] for int[1]).
std::vector<std::vector<int64_t>> dim_sets(int64_t rank) {
  std::vector<std::vector<int64_t>> out;
  if (rank == 0) return {{0}, {-1}};
  for (int64_t d = 0; d < rank; ++d) out.push_back({d});
  out.push_back({-1});
  if (rank >= 2) out.push_back({0, rank - 1});
  return out;
}

enum class DimKind { List, OptionalList, Single };

// Cases of op(self, dim, keepdim, ...rest) for the input list: the whole
// reduction when the dim may be omitted, then each dim set with keepdim off
// and on. `rest` are the arguments after keepdim in schema order (or after dim
// when the schema has no keepdim).
std::vector<Sample> reduction_cases(const SampleContext& ctx, DimKind kind, bool has_keepdim, Domain domain,
                                    const std::vector<std::vector<SampleArg>>& rests) {
  std::vector<Sample> out;
  const auto& args = ctx.op.schema().arguments;
  // Arguments placed by name: self, dim and keepdim, the rest in schema order.
  auto make = [&](const Input& in, SampleArg dim, std::string dim_name, bool keepdim,
                  const std::vector<SampleArg>& rest) {
    Sample s;
    s.name = in.name + ", dim " + dim_name + (has_keepdim && keepdim ? ", keepdim" : "");
    size_t next = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == 0) s.args.push_back(SampleArg::tensor(in.t));
      else if (args[i].name == "dim") s.args.push_back(dim);
      else if (args[i].name == "keepdim") s.args.push_back(SampleArg::boolean(keepdim));
      else s.args.push_back(rest.at(next++));
    }
    out.push_back(std::move(s));
  };
  for (const Input& in : inputs(ctx, domain)) {
    for (size_t r = 0; r < rests.size(); ++r) {
      const std::vector<SampleArg>& rest = rests[r];
      if (kind != DimKind::Single) {
        make(in, kind == DimKind::OptionalList ? SampleArg::none() : SampleArg::int_list({}), "all", false, rest);
        if (r > 0) continue;  // option variants: on the whole reduction only
      }
      if (r > 0) continue;
      for (const std::vector<int64_t>& ds : dim_sets(in.rank)) {
        if (kind == DimKind::Single && ds.size() != 1) continue;
        for (bool keepdim : {false, true}) {
          if (!has_keepdim && keepdim) continue;
          make(in, kind == DimKind::Single ? SampleArg::integer(ds[0]) : SampleArg::int_list(ds),
               shape_text(ds), keepdim, rest);
        }
      }
    }
  }
  return out;
}

// The arguments after dim and keepdim, defaults and variants (option_variants' rule).
std::vector<std::vector<SampleArg>> rest_variants(const SampleContext& ctx,
                                                  const std::map<std::string, std::vector<SampleArg>>& choices = {}) {
  const auto& args = ctx.op.schema().arguments;
  std::vector<std::vector<SampleArg>> out{{}};
  // Arguments other than self, dim and keepdim, in schema order.
  std::vector<size_t> idx;
  for (size_t i = 1; i < args.size(); ++i)
    if (args[i].name != "dim" && args[i].name != "keepdim") idx.push_back(i);
  if (idx.empty()) return out;
  // option_variants works on a suffix; build the same by hand for a scattered set.
  std::vector<SampleArg> base;
  for (size_t i : idx) {
    auto c = choices.find(args[i].name);
    std::optional<SampleArg> d = default_arg(args[i], ctx.dtype);
    if (!d && c != choices.end()) d = c->second.front();
    base.push_back(*d);
  }
  out = {base};
  for (size_t k = 0; k < idx.size(); ++k) {
    auto c = choices.find(args[idx[k]].name);
    if (c == choices.end()) continue;
    for (const SampleArg& v : c->second) {
      if (v.text() == base[k].text()) continue;
      std::vector<SampleArg> variant = base;
      variant[k] = v;
      out.push_back(std::move(variant));
    }
  }
  return out;
}


}  // namespace

void add_reduction_samples() {
  // sum/prod(self, int[1]? dim, keepdim, *, dtype): accumulation order differs between devices.
  for (const char* op : {"sum", "prod"}) {
    register_samples(op, [](const SampleContext& ctx) {
      const Domain d = ctx.op.name() == "prod" ? Domain::Small : Domain::Any;
      return reduction_cases(ctx, DimKind::OptionalList, true, d,
                             rest_variants(ctx, {{"dtype", {SampleArg::none(), SampleArg::scalar_type(kDouble),
                                                            SampleArg::scalar_type(kLong)}}}));
    }, 20.0);
  }
  for (const char* op : {"all", "any"}) {
    register_samples(op, [](const SampleContext& ctx) {
      return reduction_cases(ctx, DimKind::OptionalList, true, Domain::Unit, rest_variants(ctx));
    });
  }
  for (const char* op : {"amax", "amin"}) {
    register_samples(op, [](const SampleContext& ctx) {
      return reduction_cases(ctx, DimKind::List, true, Domain::Any, rest_variants(ctx));
    });
  }
  register_samples("logsumexp", [](const SampleContext& ctx) {
    std::vector<Sample> out = reduction_cases(ctx, DimKind::List, true, Domain::Any, rest_variants(ctx));
    return out;
  }, 20.0);
  for (const char* op : {"max.dim", "min.dim"}) {
    register_samples(op, [](const SampleContext& ctx) {
      // Ties go to the first index (docs/ops/reduction.md): small integers make many.
      return reduction_cases(ctx, DimKind::Single, true, is_floating_type(ctx.dtype) ? Domain::Any : Domain::Small,
                             rest_variants(ctx));
    });
  }
  for (const char* op : {"cumsum", "cumprod"}) {
    register_samples(op, [](const SampleContext& ctx) {
      const Domain d = ctx.op.name() == "cumprod" ? Domain::Small : Domain::Any;
      return reduction_cases(ctx, DimKind::Single, false, d,
                             rest_variants(ctx, {{"dtype", {SampleArg::none(), SampleArg::scalar_type(kDouble)}}}));
    }, 20.0);
  }
  register_samples("norm", [](const SampleContext& ctx) {
    return reduction_cases(ctx, DimKind::OptionalList, true, Domain::Finite,
                           rest_variants(ctx, {{"p", {SampleArg::real(2), SampleArg::real(1), SampleArg::real(3),
                                                      SampleArg::real(INFINITY), SampleArg::real(-INFINITY),
                                                      SampleArg::real(0)}}}));
  }, 20.0);
  for (const char* op : {"var", "std"}) {
    register_samples(op, [](const SampleContext& ctx) {
      return reduction_cases(ctx, DimKind::OptionalList, true, Domain::Finite,
                             rest_variants(ctx, {{"correction", {SampleArg::none(), SampleArg::integer(0),
                                                                 SampleArg::real(2.5)}}}));
    }, 20.0);
  }
}

}  // namespace tessera::kit
