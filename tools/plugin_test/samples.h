// Sample inputs of the conformance kit (docs/conformance.md): for every op a
// generator, kept in one file per op family (samples_<family>.cpp), that makes
// the cases the kit runs on the device under test and on cpu — PyTorch's
// OpInfo sample_inputs idea. Inputs are built on cpu and described so that the
// kit can make the same layout on any device.
#pragma once

#include <tessera/dispatcher.h>
#include <tessera/plugin.h>
#include <tessera/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::kit {

/// A tensor argument: a contiguous cpu base and the view of it that is passed
/// (transposed, sliced, expanded...), applied alike on every device.
struct TensorInput {
  Tensor base;                                 // cpu, contiguous
  std::function<Tensor(const Tensor&)> view;   // base -> argument; empty: the base itself
  std::string layout = "contiguous";           // for the case's name
};

/// One argument, in schema order.
struct SampleArg {
  enum class Kind { None, Tensor, TensorList, Int, Double, Bool, IntList, Dtype, String, Device };
  Kind kind = Kind::None;
  std::vector<TensorInput> tensors;  // Tensor: one; TensorList: any
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::vector<int64_t> ints;
  ScalarType dtype = kFloat;
  std::string str;

  static SampleArg none() { return {}; }
  static SampleArg tensor(TensorInput t);
  static SampleArg tensor_list(std::vector<TensorInput> ts);
  static SampleArg integer(int64_t v);
  static SampleArg real(double v);
  static SampleArg boolean(bool v);
  static SampleArg int_list(std::vector<int64_t> v);
  static SampleArg scalar_type(ScalarType t);
  static SampleArg string(std::string s);
  static SampleArg device();  // the device the case runs on
  std::string text() const;   // "alpha=2" style, for the case's name
};

/// One case: arguments for every schema argument (defaults written out).
struct Sample {
  std::string name;
  std::vector<SampleArg> args;
  /// Tolerances for floating results, when the op's own (Tolerance) do not fit.
  std::optional<double> rtol, atol;
  /// Results that may legitimately differ between devices are compared only in
  /// shape and dtype (e.g. the order of nonzero-free tie breaking).
  bool values_unspecified = false;
};

/// What a generator gets: the op (its schema tells the arguments), the dtype
/// the kernel is dispatched with, and a seeded random source.
struct SampleContext {
  const Operator& op;
  ScalarType dtype;
  std::mt19937_64& rng;
};

using SampleFn = std::function<std::vector<Sample>(const SampleContext&)>;

/// Tolerance of an op's floating results: |device - cpu| <= atol + rtol * |cpu|.
struct Tolerance {
  double rtol, atol;
};
/// The default for a dtype (float64 1e-7, float32 1.3e-5, float16 1e-3, bfloat16 1.6e-2; integers and bool exact).
Tolerance default_tolerance(ScalarType t);

/// Registers the generator of `op` (its exact schema name, e.g. "max.dim");
/// `tolerance_scale` widens the default tolerance for ops whose results
/// legitimately differ more between devices (accumulations, transcendental
/// functions). Called by the family files at start-up.
void register_samples(std::string_view op, SampleFn fn, double tolerance_scale = 1.0);
/// The generator of op, or null. An in-place variant ("add_") without its own
/// uses its functional op's ("add"), with self mutable.
const SampleFn* find_samples(std::string_view op);
double tolerance_scale(std::string_view op);
/// Every op name with a generator.
std::vector<std::string> ops_with_samples();

// ---- building blocks for the family files ----------------------------------

/// How values are drawn.
enum class Domain {
  Any,        // the dtype's range; floats include NaN, ±inf, ±0, denormals and extremes
  Finite,     // as Any without NaN and inf (ops that refuse them)
  Small,      // |x| <= 4 (floats), 0..4 (integers): no overflow in products and powers
  NonZero,    // Any without 0 (integer divisors)
  Positive,   // > 0
  Unit,       // [0, 1] (probabilities)
  Shift,      // integers 0 .. bits-1 (shift counts)
};

/// A contiguous cpu tensor of `shape` and `dtype` drawn from `domain`.
Tensor random_tensor(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain = Domain::Any);
/// Integers in [low, high) as int64 (indices).
Tensor random_index(std::mt19937_64& rng, std::vector<int64_t> shape, int64_t low, int64_t high);

TensorInput contiguous(Tensor base);
/// A [cols, rows] base passed transposed as [rows, cols] (needs 2 dims or more: the last two swap).
TensorInput transposed(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain);
/// Every other element of a base twice as long in the last dim.
TensorInput strided(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain);
/// An interior slice [1:-1] of a base larger by 2 in every dim (a storage offset).
TensorInput sliced(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain);
/// A base of shape with dim `dim` of size 1, expanded to shape (stride 0).
TensorInput expanded(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain, int dim);
/// The input reversed along its last dim, through a negative stride on
/// devices that take them; flip-free layouts otherwise (see layouts.cpp).
TensorInput reversed(std::mt19937_64& rng, std::vector<int64_t> shape, ScalarType dtype, Domain domain);

/// A case of this name and these arguments (schema order).
inline Sample make_sample(std::string name, std::vector<SampleArg> args) {
  Sample s;
  s.name = std::move(name);
  s.args = std::move(args);
  return s;
}

/// dtype_name as a std::string, for messages.
inline std::string dtype_text(ScalarType t) { return std::string(dtype_name(t)); }

/// "[2, 3]"
std::string shape_text(const std::vector<int64_t>& shape);

/// The value of schema argument `a` when omitted (parsed from its default
/// text: numbers, True/False, None, strings, int lists); nullopt without one.
std::optional<SampleArg> default_arg(const SchemaArgument& a, ScalarType dtype);

/// Variants of the arguments from schema index `from` on: the first has every
/// default; each next one changes one argument — a Scalar to 2 (2.5 for
/// floating dtypes) and -1, a bool to its negation, a str to each of
/// choices[name] (other than its default). Arguments without a default take
/// choices[name][0] (a generator must name them).
std::vector<std::vector<SampleArg>> option_variants(const SampleContext& ctx, size_t from,
                                                    const std::map<std::string, std::vector<SampleArg>>& choices = {});

/// Registers `fn` for every structured op of `family` that is not an
/// in-place variant and has no generator yet: a family file's generic rule
/// after its special cases (so a new op of the family is covered at once).
void register_family_default(const char* family, const std::function<SampleFn(const Operator&)>& make);

/// Fills the registry on first use (every family's add_*_samples).
void ensure_samples_registered();
void add_unary_samples();
void add_binary_samples();
void add_ternary_samples();
void add_reduction_samples();
void add_linalg_samples();
void add_shape_samples();
void add_indexing_samples();
void add_nn_samples();
void add_random_samples();

/// The pointwise cases every pointwise op gets (docs/conformance.md): for
/// `inputs` tensors drawn from domains[i] — 0-d, empty, size-1, a 1-d vector
/// with special values, broadcasting, transposed, strided, sliced, expanded
/// and reversed layouts, and a size past the vector width with a tail — with
/// `trailing` the values of the arguments after the tensors (one case each
/// past the first, the first in all others).
std::vector<Sample> pointwise_samples(const SampleContext& ctx, const std::vector<Domain>& domains,
                                      const std::vector<std::vector<SampleArg>>& trailing = {{}});

// ---- plugin-defined ops (ABI 1.3, samples_plugin.cpp) -------------------------

/// The op a plugin defined through register_op (tessera::plugin_ops()) named
/// `name` ("myplugin::fused_gelu"), or nullopt for any other op.
std::optional<PluginOpInfo> find_plugin_op(std::string_view name);

/// The generic cases of a plugin-defined op without a generator of its own,
/// made from its schema and what it declared (docs/conformance.md):
///  - tensor arguments of the case's dtype. A pointwise or broadcasting op gets
///    pointwise_samples (0-d, empty, broadcasting, strided layouts...; the
///    broadcasting cases only with TSR_SHAPE_BROADCAST, since other rules do not
///    broadcast); any other op 0-d, [5], [3, 4], transposed [3, 4] and sliced
///    [3, 4], every tensor argument of one shape;
///  - optional tensors (Tensor?) None;
///  - other arguments: their defaults and option_variants' variants (and 2.5
///    for a float with a default); without a
///    default int 0, float 0.5, bool False (and True), int[] [0], Scalar 1,
///    ScalarType the case's dtype, str '', an optional one None; a reduction's
///    dims argument also [0], [-1] and [0, 1];
///  - values: `reference` (cpu has a kernel for the dtype): Domain::Any, special
///    values included; without one Domain::Positive (moderate positive values,
///    so that the results can be expected finite);
///  - a nondeterministic op's cases have values_unspecified.
std::vector<Sample> plugin_op_samples(const SampleContext& ctx, const PluginOpInfo& info, bool reference);

}  // namespace tessera::kit
