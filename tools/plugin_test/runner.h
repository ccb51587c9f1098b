// Internal to the kit: what the modes share — the plugin under test, the
// (op, dtype) pairs it registers, and running one sample on a device.
#pragma once

#include <tessera/dispatcher.h>
#include <tessera/plugin.h>
#include <tessera/stream.h>

#include <functional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit.h"
#include "samples.h"

namespace tessera::kit {

/// The plugin under test, loaded beside the defaults.
struct Target {
  PluginInfo plugin;
  std::string device_type;
  Device device;
  bool async = false;
  bool pinned = false;  // the device offers pinned host memory (non-blocking uploads)
};
Target load_target(const Options& options);

/// One (op, dtype) to check: the op (an in-place variant included) and the
/// samples' source op (the functional op for an in-place variant).
struct OpCase {
  const Operator* op;
  const Operator* sample_op;
  ScalarType dtype;
  /// A plugin-defined op (ABI 1.3; its source op is in tessera::plugin_ops()).
  bool plugin_op = false;
  /// Whether cpu has a kernel to compare with. False only for a plugin-defined
  /// op without a cpu kernel for the dtype: its cases are then checked against
  /// the meta rule's shapes and dtypes instead (docs/conformance.md).
  bool cpu_reference = true;
  /// The plugin declared the op nondeterministic: shapes and dtypes only.
  bool nondeterministic = false;
};
/// The --op filter (everything when empty); ValueError naming a malformed one.
std::regex op_filter(const Options& options);

/// Every (op, dtype) the plugin registers for the device type, and the
/// in-place variants of those ops, filtered by the options (sorted by name).
std::vector<OpCase> op_cases(const Target& target, const Options& options);

/// The samples of an OpCase: the source op's, arguments reordered by name
/// for an in-place variant. A plugin-defined op without a generator of its own
/// gets plugin_op_samples (samples.h). Throws when the op has no generator.
std::vector<Sample> samples_for(const OpCase& c, uint64_t seed);

/// A sample's arguments made on one device.
struct Materialized {
  std::vector<Tensor> bases;   // per tensor input (flattened over lists), the contiguous copy
  std::vector<Tensor> views;   // what is passed
  std::vector<std::vector<Tensor>> lists;  // tensor lists, per argument
  std::vector<IValue> args;
};
/// A view the device cannot make (e.g. a negative stride without DLPack): the case is skipped there.
struct LayoutUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `pinned_upload`: copies to the device are non-blocking from pinned memory
/// (asynchronous devices: ordered on the current stream only).
Materialized materialize(const Sample& s, Device device, bool pinned_upload = false);

/// A sample's arguments on the meta device, for asking the meta rule about a
/// case: a layout meta cannot make (a negative stride) is made on cpu and
/// moved to meta (its shape is what the rule reads).
Materialized materialize_meta(const Sample& s);

/// A stream of the device kept for the whole run: slot 0 for the cases, 1..n
/// for the threads of the concurrency check (a new stream per case would
/// cost a device its stream creation each time).
Stream side_stream(const Target& target, size_t slot);
/// Drops the side streams (they hold their plugin loaded).
void release_side_streams();

/// A sample's arguments on `device` with every floating tensor input a leaf
/// that requires grad (its base: views keep the layout); a written argument is
/// a clone of its leaf, since a leaf that requires grad cannot be written.
struct GradArgs {
  Materialized m;
  std::vector<Tensor> leaves;  // per tensor input; undefined for non-floating ones
};
GradArgs grad_args(const OpCase& c, const Sample& s, Device device);

/// Runs op on the arguments; returns its outputs.
std::vector<Tensor> call_op(const Operator& op, Materialized& m);

/// Whether the op's schema marks argument i as written (Tensor(a!)).
bool is_mutable(const Operator& op, size_t i);

/// The indices into Materialized::bases of the tensor arguments, per schema argument (-1 for others).
std::vector<int> base_index(const Sample& s);

/// The ABI checks (abi_checks.cpp): before the cases, and the unload check after them.
void run_abi_checks(const Target& target, Report& r);
void run_unload_check(const Target& target, Report& r);

Report run_test_mode(const Target& target, const Options& options);
Report run_grad_mode(const Target& target, const Options& options);
Report run_coverage_mode(const Target& target, const Options& options);
Report run_perf_mode(const Target& target, const Options& options);

/// Parallel map over n items with `jobs` threads (jobs <= 1: in order on this thread).
void parallel_for(size_t n, int jobs, const std::function<void(size_t)>& fn);

}  // namespace tessera::kit
