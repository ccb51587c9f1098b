// The sample registry, values, layouts and the pointwise case builder (samples.h).
#include "samples.h"

#include <tessera/dlpack.h>
#include <tessera/error.h>
#include <tessera/tessera.h>

#include <cmath>
#include <limits>
#include <map>
#include <mutex>

namespace tessera::kit {

namespace {
struct Entry {
  SampleFn fn;
  double scale;
};
std::map<std::string, Entry, std::less<>>& registry() {
  static std::map<std::string, Entry, std::less<>> r;
  return r;
}
}  // namespace

void register_samples(std::string_view op, SampleFn fn, double scale) {
  registry()[std::string(op)] = Entry{std::move(fn), scale};
}

const SampleFn* find_samples(std::string_view op) {
  auto it = registry().find(op);
  if (it != registry().end()) return &it->second.fn;
  return nullptr;
}

double tolerance_scale(std::string_view op) {
  auto it = registry().find(op);
  return it == registry().end() ? 1.0 : it->second.scale;
}

std::vector<std::string> ops_with_samples() {
  std::vector<std::string> out;
  for (const auto& [name, e] : registry()) out.push_back(name);
  return out;
}

Tolerance default_tolerance(ScalarType t) {
  switch (t) {
    case kDouble: return {1e-7, 1e-10};
    case kFloat: return {1.3e-5, 1e-6};
    case kHalf: return {1e-3, 1e-3};
    case kBFloat16: return {1.6e-2, 1e-2};
    default: return {0, 0};
  }
}

// ---- arguments ---------------------------------------------------------------

SampleArg SampleArg::tensor(TensorInput t) {
  SampleArg a;
  a.kind = Kind::Tensor;
  a.tensors.push_back(std::move(t));
  return a;
}
SampleArg SampleArg::tensor_list(std::vector<TensorInput> ts) {
  SampleArg a;
  a.kind = Kind::TensorList;
  a.tensors = std::move(ts);
  return a;
}
SampleArg SampleArg::integer(int64_t v) {
  SampleArg a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
SampleArg SampleArg::real(double v) {
  SampleArg a;
  a.kind = Kind::Double;
  a.d = v;
  return a;
}
SampleArg SampleArg::boolean(bool v) {
  SampleArg a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
SampleArg SampleArg::int_list(std::vector<int64_t> v) {
  SampleArg a;
  a.kind = Kind::IntList;
  a.ints = std::move(v);
  return a;
}
SampleArg SampleArg::scalar_type(ScalarType t) {
  SampleArg a;
  a.kind = Kind::Dtype;
  a.dtype = t;
  return a;
}
SampleArg SampleArg::string(std::string s) {
  SampleArg a;
  a.kind = Kind::String;
  a.str = std::move(s);
  return a;
}
SampleArg SampleArg::device() {
  SampleArg a;
  a.kind = Kind::Device;
  return a;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string SampleArg::text() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Tensor: {
      const TensorInput& t = tensors[0];
      const Tensor v = t.view ? t.view(t.base) : t.base;
      return shape_text(v.sizes().vec()) + (t.layout == "contiguous" ? "" : " " + t.layout);
    }
    case Kind::TensorList: return std::to_string(tensors.size()) + " tensors";
    case Kind::Int: return std::to_string(i);
    case Kind::Double: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", d);
      return buf;
    }
    case Kind::Bool: return b ? "True" : "False";
    case Kind::IntList: return shape_text(ints);
    case Kind::Dtype: return dtype_text(dtype);
    case Kind::String: return "'" + str + "'";
    case Kind::Device: return "device";
  }
  return "?";
}

// ---- values ------------------------------------------------------------------

namespace {
bool is_float(ScalarType t) { return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16; }

double denormal(ScalarType t) {
  switch (t) {
    case kDouble: return 1e-310;
    case kFloat: return 1e-40;
    case kHalf: return 3e-6;
    default: return 1e-40;  // bfloat16 has float32's exponent range
  }
}
double largest(ScalarType t) {
  switch (t) {
    case kDouble: return std::numeric_limits<double>::max();
    case kHalf: return 65504.0;
    default: return 3.3895313892515355e38;  // float32 and bfloat16 (bfloat16's max)
  }
}
std::pair<int64_t, int64_t> int_range(ScalarType t) {
  switch (t) {
    case kByte: return {0, 255};
    case kChar: return {-128, 127};
    case kShort: return {-32768, 32767};
    case kInt: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}
}  // namespace

Tensor random_tensor(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (dtype == kBool) {
    Tensor t = empty(shape, TensorOptions(kByte));
    auto* p = t.data_ptr<uint8_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(domain == Domain::NonZero ? 1 : rng() & 1);
    return t.to(kBool);
  }
  if (is_float(dtype)) {
    Tensor t = empty(shape, TensorOptions(kDouble));
    double* p = t.data_ptr<double>();
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      double v = normal(rng) * 2.0;
      if (domain == Domain::Small) v = std::max(-4.0, std::min(4.0, v));
      if (domain == Domain::Positive) v = std::fabs(v) + 0.125;
      if (domain == Domain::Unit) v = unit(rng);
      if ((domain == Domain::NonZero) && v == 0.0) v = 1.0;
      p[i] = v;
    }
    // Special values at fixed places of vectors long enough to keep ordinary ones around them.
    if (n >= 16 && (domain == Domain::Any || domain == Domain::Finite || domain == Domain::NonZero)) {
      std::vector<double> specials = {0.0, -0.0, denormal(dtype), -denormal(dtype), 1.0, -1.0};
      if (domain == Domain::NonZero) specials = {denormal(dtype), -denormal(dtype), 1.0, -1.0};
      if (domain == Domain::Any) {
        for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(), largest(dtype), -largest(dtype)})
          specials.push_back(v);
      }
      // Shifted by a random 0..2 so that two inputs' specials rarely meet.
      const int64_t shift = static_cast<int64_t>(rng() % 3);
      for (size_t k = 0; k < specials.size() && static_cast<int64_t>(2 * k + 1) < n; ++k)
        p[(2 * k + 1) * n / (2 * static_cast<int64_t>(specials.size()) + 1) + shift] = specials[k];
    }
    return t.to(dtype);
  }
  // Integers.
  const auto [lo, hi] = int_range(dtype);
  Tensor t = empty(shape, TensorOptions(kLong));
  int64_t* p = t.data_ptr<int64_t>();
  const int64_t bits = static_cast<int64_t>(element_size(dtype)) * 8;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    switch (domain) {
      case Domain::Small: v = static_cast<int64_t>(rng() % 5); break;
      case Domain::Positive: v = 1 + static_cast<int64_t>(rng() % 100); break;
      case Domain::Unit: v = static_cast<int64_t>(rng() & 1); break;
      case Domain::Shift: v = static_cast<int64_t>(rng() % static_cast<uint64_t>(bits)); break;
      default: {
        v = static_cast<int64_t>(rng() % 201) - 100;
        if (lo == 0) v = static_cast<int64_t>(rng() % 256);
        if (domain == Domain::NonZero && v == 0) v = 7;
      }
    }
    p[i] = v;
  }
  // Extremes, where any value is allowed: the wraparound cases.
  if (n >= 16 && domain == Domain::Any) {
    const int64_t shift = static_cast<int64_t>(rng() % 3);  // two inputs' extremes rarely meet
    p[n / 5 + shift] = hi;
    p[3 * n / 5 + shift] = lo;
  }
  return t.to(dtype);
}

Tensor random_index(std::mt19937_64& rng, std::vector<int64_t> shape, int64_t low, int64_t high) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t = empty(shape, TensorOptions(kLong));
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = low + static_cast<int64_t>(rng() % static_cast<uint64_t>(high - low));
  return t;
}

// ---- layouts -----------------------------------------------------------------

TensorInput contiguous(Tensor base) { return TensorInput{std::move(base), {}, "contiguous"}; }

TensorInput transposed(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain) {
  const size_t r = shape.size();
  std::swap(shape[r - 1], shape[r - 2]);
  return TensorInput{random_tensor(rng, shape, dtype, domain),
                     [r](const Tensor& b) { return b.transpose(static_cast<int64_t>(r) - 1, static_cast<int64_t>(r) - 2); },
                     "transposed"};
}

TensorInput strided(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain) {
  const int64_t last = shape.back();
  shape.back() = 2 * last;
  const auto dim = static_cast<int64_t>(shape.size()) - 1;
  return TensorInput{random_tensor(rng, shape, dtype, domain),
                     [dim, last](const Tensor& b) { return b.slice(dim, 0, 2 * last, 2); }, "every other element"};
}

TensorInput sliced(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain) {
  std::vector<int64_t> big = shape;
  for (int64_t& s : big) s += 2;
  return TensorInput{random_tensor(rng, big, dtype, domain),
                     [shape](const Tensor& b) {
                       Tensor v = b;
                       for (size_t d = 0; d < shape.size(); ++d)
                         v = v.slice(static_cast<int64_t>(d), 1, 1 + shape[d]);
                       return v;
                     },
                     "sliced (offset)"};
}

TensorInput expanded(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain, int dim) {
  std::vector<int64_t> small = shape;
  small[static_cast<size_t>(dim)] = 1;
  return TensorInput{random_tensor(rng, small, dtype, domain),
                     [shape](const Tensor& b) { return b.expand(shape); }, "expanded (stride 0)"};
}

TensorInput reversed(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain) {
  // Tessera's own views never make negative strides; DLPack imports do (from
  // NumPy's [::-1]). The view exports the device's copy and imports it back
  // with the last dim's stride negated.
  return TensorInput{random_tensor(rng, shape, dtype, domain),
                     [](const Tensor& b) {
                       DLManagedTensorVersioned* m = to_dlpack_versioned(b);
                       DLTensor& t = m->dl_tensor;
                       const int last = t.ndim - 1;
                       if (t.ndim > 0 && t.shape[last] > 1) {
                         t.byte_offset += static_cast<uint64_t>((t.shape[last] - 1) * t.strides[last]) *
                                          static_cast<uint64_t>(b.element_size());
                         t.strides[last] = -t.strides[last];
                       }
                       return from_dlpack(m);
                     },
                     "reversed (negative stride)"};
}

// ---- schema defaults and option variants -------------------------------------

std::optional<SampleArg> default_arg(const SchemaArgument& a, ScalarType dtype) {
  std::string v = a.default_value;
  if (v.empty()) return std::nullopt;
  if (v == "None") return SampleArg::none();
  if (v == "True" || v == "False") return SampleArg::boolean(v == "True");
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) return SampleArg::string(v.substr(1, v.size() - 2));
  const std::string& type = a.type;
  if (type.rfind("int[", 0) == 0) {  // "[]", "[1, 2]" or one int repeated ("int[2] stride=1")
    std::vector<int64_t> ints;
    if (v.front() == '[') {
      size_t pos = 1;
      while (pos < v.size() && v[pos] != ']') {
        size_t used = 0;
        ints.push_back(std::stoll(v.substr(pos), &used));
        pos += used;
        while (pos < v.size() && (v[pos] == ',' || v[pos] == ' ')) ++pos;
      }
    } else {
      const size_t open = type.find('['), close = type.find(']');
      const int n = close > open + 1 ? std::stoi(type.substr(open + 1, close - open - 1)) : 1;
      ints.assign(static_cast<size_t>(n), std::stoll(v));
    }
    return SampleArg::int_list(ints);
  }
  if (type.rfind("int", 0) == 0) return SampleArg::integer(std::stoll(v));
  if (type.rfind("float", 0) == 0) return SampleArg::real(std::stod(v));
  if (type.rfind("Scalar", 0) == 0) {
    const double d = std::stod(v);
    const bool integral = d == std::floor(d) && v.find_first_of(".e") == std::string::npos;
    if (integral && !(dtype == kFloat || dtype == kDouble || dtype == kHalf || dtype == kBFloat16))
      return SampleArg::integer(static_cast<int64_t>(d));
    return integral ? SampleArg::integer(static_cast<int64_t>(d)) : SampleArg::real(d);
  }
  return std::nullopt;
}

std::vector<std::vector<SampleArg>> option_variants(const SampleContext& ctx, size_t from,
                                                    const std::map<std::string, std::vector<SampleArg>>& choices) {
  const auto& args = ctx.op.schema().arguments;
  std::vector<SampleArg> base;
  for (size_t i = from; i < args.size(); ++i) {
    auto c = choices.find(args[i].name);
    std::optional<SampleArg> d = default_arg(args[i], ctx.dtype);
    if (!d && c != choices.end() && !c->second.empty()) d = c->second.front();
    if (!d) throw ValueError("samples of " + ctx.op.name() + ": argument '" + args[i].name +
                             "' has no default and no choices");
    base.push_back(*d);
  }
  std::vector<std::vector<SampleArg>> out{base};
  const bool floating = ctx.dtype == kFloat || ctx.dtype == kDouble || ctx.dtype == kHalf || ctx.dtype == kBFloat16;
  for (size_t i = from; i < args.size(); ++i) {
    const size_t k = i - from;
    std::vector<SampleArg> values;
    auto c = choices.find(args[i].name);
    if (c != choices.end()) {
      for (const SampleArg& v : c->second) values.push_back(v);
    } else if (args[i].type.rfind("Scalar", 0) == 0) {
      values = {floating ? SampleArg::real(2.5) : SampleArg::integer(2), SampleArg::integer(-1)};
    } else if (args[i].type == "bool") {
      values = {SampleArg::boolean(!base[k].b)};
    }
    for (SampleArg& v : values) {
      if (v.text() == base[k].text()) continue;
      std::vector<SampleArg> variant = base;
      variant[k] = std::move(v);
      out.push_back(std::move(variant));
    }
  }
  return out;
}

void register_family_default(const char* family, const std::function<SampleFn(const Operator&)>& make) {
  for (const Operator* op : Dispatcher::instance().operators()) {
    if (std::string_view(op->family()) != family || !op->is_structured()) continue;
    if (&op->kernel_source() != op) continue;  // in-place variants use their functional op's samples
    if (find_samples(op->name()) != nullptr) continue;
    register_samples(op->name(), make(*op));
  }
}

void ensure_samples_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    add_unary_samples();
    add_binary_samples();
    add_ternary_samples();
    add_reduction_samples();
    add_linalg_samples();
    add_shape_samples();
    add_indexing_samples();
    add_nn_samples();
    add_random_samples();
  });
}

// ---- pointwise cases -----------------------------------------------------------

std::vector<Sample> pointwise_samples(const SampleContext& ctx, const std::vector<Domain>& domains,
                                      const std::vector<std::vector<SampleArg>>& trailing) {
  std::mt19937_64& rng = ctx.rng;
  const ScalarType t = ctx.dtype;
  const size_t n = domains.size();
  std::vector<Sample> out;
  auto add = [&](std::string name, std::vector<TensorInput> inputs, const std::vector<SampleArg>& rest) {
    Sample s;
    s.name = std::move(name);
    for (TensorInput& in : inputs) s.args.push_back(SampleArg::tensor(std::move(in)));
    for (const SampleArg& a : rest) s.args.push_back(a);
    out.push_back(std::move(s));
  };
  auto all = [&](const std::vector<int64_t>& shape) {
    std::vector<TensorInput> v;
    for (size_t i = 0; i < n; ++i) v.push_back(contiguous(random_tensor(rng, shape, t, domains[i])));
    return v;
  };
  const std::vector<SampleArg>& first = trailing.front();

  add("0-d", all({}), first);
  add("empty [0, 3]", all({0, 3}), first);
  add("size 1", all({1}), first);
  add("vector of 37 with special values", all({37}), first);
  add("[4, 5, 6]", all({4, 5, 6}), first);
  add("1027 elements (a vector loop's tail)", all({1027}), first);
  for (size_t k = 1; k < trailing.size(); ++k) add("[6, 7]", all({6, 7}), trailing[k]);
  for (size_t i = 0; i < n; ++i) {  // input i laid out otherwise, the others contiguous
    const std::string who = n == 1 ? "" : "input " + std::to_string(i) + " ";
    auto with = [&](TensorInput in) {
      std::vector<TensorInput> v = all({5, 6});
      v[i] = std::move(in);
      return v;
    };
    add(who + "transposed [5, 6]", with(transposed(rng, {5, 6}, t, domains[i])), first);
    add(who + "every other element [5, 6]", with(strided(rng, {5, 6}, t, domains[i])), first);
    add(who + "sliced [5, 6]", with(sliced(rng, {5, 6}, t, domains[i])), first);
    add(who + "expanded [5, 6] from [1, 6]", with(expanded(rng, {5, 6}, t, domains[i], 0)), first);
    add(who + "reversed [5, 6]", with(reversed(rng, {5, 6}, t, domains[i])), first);
    if (n > 1) {  // broadcasting: input i of a smaller shape
      std::vector<TensorInput> v = all({4, 3, 5});
      v[i] = contiguous(random_tensor(rng, {3, 1}, t, domains[i]));
      add(who + "[3, 1] broadcast against [4, 3, 5]", std::move(v), first);
      std::vector<TensorInput> w = all({2, 3});
      w[i] = contiguous(random_tensor(rng, {}, t, domains[i]));
      add(who + "0-d broadcast against [2, 3]", std::move(w), first);
    }
  }
  return out;
}

}  // namespace tessera::kit
