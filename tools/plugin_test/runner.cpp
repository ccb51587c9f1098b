// What the modes share (runner.h) and the test mode.
#include "runner.h"

#include <tessera/error.h>
#include <tessera/stream.h>
#include <tessera/tessera.h>
#include <tessera/testing.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "compare.h"

namespace tessera::kit {

// ---- the plugin under test ------------------------------------------------------

Target load_target(const Options& o) {
  load_default_plugins();
  Target t;
  const bool is_path = o.plugin.find('/') != std::string::npos || o.plugin.size() > 3 &&
                       o.plugin.compare(o.plugin.size() - 3, 3, ".so") == 0;
  if (is_path) {
    t.plugin = load_plugin(o.plugin);
  } else {
    bool found = false;
    for (const PluginInfo& p : plugins())
      if (p.name == o.plugin) t.plugin = p, found = true;
    if (!found) {
      std::string names;
      for (const PluginInfo& p : plugins()) names += (names.empty() ? "" : ", ") + p.name;
      throw ValueError("no plugin named '" + o.plugin + "' is loaded (loaded: " + names +
                       "); give the path of its .so instead");
    }
  }
  t.device_type = o.device_type;
  if (t.device_type.empty()) {
    if (!t.plugin.device_types.empty()) {
      t.device_type = t.plugin.device_types.front();
    } else if (!t.plugin.kernels.empty()) {
      t.device_type = t.plugin.kernels.front().device_type;  // a kernel-only plugin: its kernels' device
    } else {
      throw ValueError("plugin '" + t.plugin.name + "' has no device type and no kernels");
    }
  }
  bool known = false;
  for (const DeviceTypeSummary& d : device_types()) {
    if (d.name != t.device_type) continue;
    known = true;
    if (d.device_count == 0)
      throw ValueError("device type '" + t.device_type + "' has no device" +
                       (d.unavailable_reason.empty() ? std::string() : " (" + d.unavailable_reason + ")"));
    t.async = (d.capabilities & TSR_DEVICE_CAP_ASYNC) != 0;
  }
  if (!known) throw ValueError("no device type '" + t.device_type + "' is registered");
  t.device = Device(t.device_type + ":0");
  if (t.async) {
    try {
      (void)zeros({1}).pin_memory(t.device_type);
      t.pinned = true;
    } catch (const ValueError&) {
      t.pinned = false;  // uploads are then synchronous (the report says so)
    }
  }
  return t;
}

std::regex op_filter(const Options& o) {
  try {
    return std::regex(o.op_regex.empty() ? std::string(".*") : o.op_regex);
  } catch (const std::regex_error& e) {
    throw ValueError("--op '" + o.op_regex + "' is not a regular expression: " + e.what());
  }
}

std::vector<OpCase> op_cases(const Target& t, const Options& o) {
  std::map<std::string, std::vector<std::string>> registered;  // op -> dtypes, for the device type
  for (const KernelInfo& k : t.plugin.kernels)
    if (k.device_type == t.device_type) registered[k.op] = k.dtypes;
  const std::regex filter = op_filter(o);
  for (const std::string& d : o.dtypes) {
    try {
      (void)parse_dtype(d);
    } catch (const std::exception&) {
      throw ValueError("--dtype: unknown dtype '" + d + "' (bool, uint8, int8, int16, int32, int64, float16, "
                       "bfloat16, float32, float64)");
    }
  }
  // Plugin-defined ops, and the (op, dtype) pairs cpu has kernels for.
  std::map<std::string, PluginOpInfo> defined;
  for (PluginOpInfo& info : plugin_ops()) defined.emplace(info.name, std::move(info));
  std::set<std::pair<std::string, std::string>> on_cpu;
  if (!defined.empty())
    for (const PluginInfo& p : plugins())
      for (const KernelInfo& k : p.kernels)
        if (k.device_type == "cpu" && defined.count(k.op))
          for (const std::string& d : k.dtypes) on_cpu.emplace(k.op, d);
  std::vector<OpCase> out;
  const Dispatcher& disp = Dispatcher::instance();
  for (const Operator* op : disp.operators()) {
    if (!op->is_structured()) continue;
    auto it = registered.find(op->kernel_source().name());
    if (it == registered.end()) continue;
    if (!std::regex_match(op->name(), filter)) continue;
    const auto def = defined.find(op->kernel_source().name());
    for (const std::string& d : it->second) {
      if (!o.dtypes.empty() && std::find(o.dtypes.begin(), o.dtypes.end(), d) == o.dtypes.end()) continue;
      OpCase c{op, &op->kernel_source(), parse_dtype(d)};
      if (def != defined.end()) {
        c.plugin_op = true;
        c.cpu_reference = on_cpu.count({def->first, d}) != 0;
        c.nondeterministic = def->second.nondeterministic;
      }
      out.push_back(c);
    }
  }
  std::sort(out.begin(), out.end(), [](const OpCase& a, const OpCase& b) {
    return a.op->name() != b.op->name() ? a.op->name() < b.op->name() : a.dtype < b.dtype;
  });
  return out;
}

std::vector<Sample> samples_for(const OpCase& c, uint64_t seed) {
  ensure_samples_registered();
  const SampleFn* fn = find_samples(c.sample_op->name());
  std::optional<PluginOpInfo> defined;
  if (fn == nullptr && c.plugin_op) defined = find_plugin_op(c.sample_op->name());
  if (fn == nullptr && !defined) throw ValueError("the kit has no sample generator for " + c.sample_op->name());
  // One stream of random values per (op, dtype): a case does not change when others are added.
  std::seed_seq seq{seed, static_cast<uint64_t>(std::hash<std::string>{}(c.sample_op->name())),
                    static_cast<uint64_t>(c.dtype)};
  std::mt19937_64 rng(seq);
  const SampleContext ctx{*c.sample_op, c.dtype, rng};
  std::vector<Sample> samples = fn ? (*fn)(ctx) : plugin_op_samples(ctx, *defined, c.cpu_reference);
  if (c.nondeterministic)
    for (Sample& s : samples) s.values_unspecified = true;
  if (c.op == c.sample_op) return samples;
  // An in-place variant: the functional op's arguments, matched by name.
  const auto& from = c.sample_op->schema().arguments;
  const auto& to = c.op->schema().arguments;
  for (Sample& s : samples) {
    std::vector<SampleArg> args;
    for (const SchemaArgument& a : to) {
      auto it = std::find_if(from.begin(), from.end(), [&](const SchemaArgument& f) { return f.name == a.name; });
      if (it == from.end()) throw ValueError("in-place variant " + c.op->name() + " has argument '" + a.name +
                                             "' that " + c.sample_op->name() + " lacks");
      args.push_back(s.args[static_cast<size_t>(it - from.begin())]);
    }
    s.args = std::move(args);
  }
  return samples;
}

bool is_mutable(const Operator& op, size_t i) {
  const auto& args = op.schema().arguments;
  return i < args.size() && args[i].mutable_alias;
}

std::vector<int> base_index(const Sample& s) {
  std::vector<int> out;
  int next = 0;
  for (const SampleArg& a : s.args) {
    out.push_back(a.kind == SampleArg::Kind::Tensor ? next : -1);
    next += static_cast<int>(a.tensors.size());
  }
  return out;
}

Materialized materialize(const Sample& s, Device device, bool pinned_upload) {
  Materialized m;
  m.lists.resize(s.args.size());
  auto make = [&](const TensorInput& in) {
    Tensor base;
    if (pinned_upload && device.type() != Device("cpu").type()) {
      base = in.base.pin_memory(device.type_name()).to(device, /*non_blocking=*/true);
    } else {
      base = in.base.to(device);
      if (base.device() == in.base.device()) base = in.base.clone();  // cpu: never the sample's own
    }
    m.bases.push_back(base);
    if (!in.view) {
      m.views.push_back(base);
      return;
    }
    try {
      m.views.push_back(in.view(base));
    } catch (const std::exception& e) {
      throw LayoutUnavailable("the layout '" + in.layout + "' cannot be made on " + device.str() + ": " + e.what());
    }
  };
  for (const SampleArg& a : s.args)
    for (const TensorInput& in : a.tensors) make(in);
  size_t next = 0;
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SampleArg& a = s.args[i];
    switch (a.kind) {
      case SampleArg::Kind::None: m.args.push_back(IValue::none()); break;
      case SampleArg::Kind::Tensor: m.args.push_back(IValue::of(m.views[next++])); break;
      case SampleArg::Kind::TensorList:
        for (size_t k = 0; k < a.tensors.size(); ++k) m.lists[i].push_back(m.views[next++]);
        m.args.push_back(IValue::of(ArrayRef<Tensor>(m.lists[i])));
        break;
      case SampleArg::Kind::Int: m.args.push_back(IValue::of(a.i)); break;
      case SampleArg::Kind::Double: m.args.push_back(IValue::of(a.d)); break;
      case SampleArg::Kind::Bool: m.args.push_back(IValue::of(a.b)); break;
      case SampleArg::Kind::IntList: m.args.push_back(IValue::of(IntArrayRef(a.ints))); break;
      case SampleArg::Kind::Dtype: m.args.push_back(IValue::of(a.dtype)); break;
      case SampleArg::Kind::String: m.args.push_back(IValue::of(std::string_view(a.str))); break;
      case SampleArg::Kind::Device: m.args.push_back(IValue::of(device)); break;
    }
  }
  return m;
}

namespace {
// Points m.args (and m.lists) at m.views again, after the views were replaced.
void rebind(const Sample& s, Materialized& m) {
  size_t next = 0;
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (s.args[i].kind == SampleArg::Kind::Tensor) m.args[i] = IValue::of(m.views[next]);
    if (s.args[i].kind == SampleArg::Kind::TensorList) {
      m.lists[i].assign(m.views.begin() + static_cast<long>(next),
                        m.views.begin() + static_cast<long>(next + s.args[i].tensors.size()));
      m.args[i] = IValue::of(ArrayRef<Tensor>(m.lists[i]));
    }
    next += s.args[i].tensors.size();
  }
}
}  // namespace

Materialized materialize_meta(const Sample& s) {
  const Device meta("meta");
  try {
    return materialize(s, meta);
  } catch (const LayoutUnavailable&) {
  }
  Materialized m = materialize(s, Device("cpu"));
  for (Tensor& b : m.bases) b = b.to(meta);
  for (Tensor& v : m.views) v = v.to(meta);
  for (size_t i = 0; i < s.args.size(); ++i)
    if (s.args[i].kind == SampleArg::Kind::Device) m.args[i] = IValue::of(meta);
  rebind(s, m);
  return m;
}

std::vector<Tensor> call_op(const Operator& op, Materialized& m) {
  std::vector<Tensor> outs(op.schema().returns.size());
  Frame frame{m.args.data(), static_cast<int>(m.args.size()), outs.data(), static_cast<int>(outs.size())};
  Dispatcher::instance().call(op, frame);
  return outs;
}

void parallel_for(size_t n, int jobs, const std::function<void(size_t)>& fn) {
  if (jobs <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int j = 0; j < jobs; ++j)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (std::thread& th : pool) th.join();
}

GradArgs grad_args(const OpCase& c, const Sample& s, Device device) {
  GradArgs g;
  Materialized& m = g.m;
  m = materialize(s, device);
  // Rebuild the views over leaves: the bases become leaves.
  size_t next = 0;
  for (size_t i = 0; i < s.args.size(); ++i) {
    for (const TensorInput& in : s.args[i].tensors) {
      Tensor& base = m.bases[next];
      Tensor leaf;
      if (is_floating_type(base.scalar_type())) {
        leaf = base.detach().requires_grad_(true);
        Tensor used = is_mutable(*c.op, i) ? leaf.clone() : leaf;
        m.views[next] = in.view ? in.view(used) : used;
      }
      g.leaves.push_back(leaf);
      ++next;
    }
  }
  rebind(s, m);  // the IValues point at m.views
  return g;
}

namespace {
std::mutex g_streams_mu;
std::map<std::pair<std::string, size_t>, Stream> g_streams;
}  // namespace

void release_side_streams() {
  std::lock_guard lock(g_streams_mu);
  g_streams.clear();
}

Stream side_stream(const Target& target, size_t slot) {
  auto& mu = g_streams_mu;
  auto& streams = g_streams;
  std::lock_guard lock(mu);
  const auto key = std::make_pair(target.device.str(), slot);
  auto it = streams.find(key);
  if (it == streams.end()) it = streams.emplace(key, Stream::create(target.device)).first;
  return it->second;
}

// ---- test mode --------------------------------------------------------------------

namespace {

using Status = CaseResult::Status;

struct Checker {
  const Target& target;
  const OpCase& c;
  std::vector<CaseResult>& out;
  std::string sample;

  void add(const char* check, Status st, std::string msg = {}) {
    out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), sample, check, st, std::move(msg), 0});
  }
};

Tolerance tolerance_of(const OpCase& c, const Sample& s, ScalarType result) {
  Tolerance t = default_tolerance(result);
  const double k = tolerance_scale(c.sample_op->name());
  t.rtol *= k, t.atol *= k;
  if (s.rtol) t.rtol = *s.rtol;
  if (s.atol) t.atol = *s.atol;
  return t;
}

std::string error_text(const std::exception& e) {
  std::string m = e.what();
  return m.size() > 600 ? m.substr(0, 600) + "..." : m;
}

// Whether `e` says another op than the case's lacks a kernel on the device
// (eq_ converting its bool result with copy_, say): a gap coverage mode
// reports, not this kernel's fault.
bool needs_other_kernel(const Target& target, const OpCase& c, const std::exception& e) {
  const std::string m = e.what();
  const size_t colon = m.find(": no kernel for device type '" + target.device_type + "'");
  return colon != std::string::npos && m.compare(0, colon, c.op->kernel_source().name()) != 0;
}

// Whether every floating tensor input of the sample is finite (the bases: a
// view reads a part of its base).
bool inputs_finite(const Sample& s) {
  for (const SampleArg& a : s.args)
    for (const TensorInput& in : a.tensors)
      if (is_floating_type(in.base.scalar_type()) && in.base.numel() > 0 && !in.base.isfinite().all().item<bool>())
        return false;
  return true;
}

// Runs one sample on the device under test and on cpu and checks everything
// test mode promises for it (docs/conformance.md). Without a cpu reference (a
// plugin-defined op with no cpu kernel for the dtype) the meta rule stands in
// for cpu: shapes and dtypes are compared, and values must be finite where
// the inputs are. `cpu_results` gets what the thread check compares with:
// cpu's results, or without a reference the device's own.
void check_sample(const Target& target, const OpCase& c, const Sample& s, std::vector<CaseResult>& out,
                  std::vector<Tensor>* cpu_results) {
  Checker ck{target, c, out, s.name};
  for (const SampleArg& a : s.args)
    if (a.kind != SampleArg::Kind::Tensor && a.kind != SampleArg::Kind::TensorList &&
        a.kind != SampleArg::Kind::Device && a.kind != SampleArg::Kind::None)
      ck.sample += ", " + a.text();
  const Operator& op = *c.op;
  const Device cpu("cpu");
  const bool reference = c.cpu_reference;

  // The reference. A sample the cpu (or the meta rule) refuses is not one the op takes: skipped.
  Materialized ref = reference ? materialize(s, cpu) : materialize_meta(s);
  std::vector<Tensor> want;
  try {
    want = call_op(op, ref);
  } catch (const std::exception& e) {
    ck.add("reference", Status::Skip,
           (reference ? "the cpu plugin refuses this case: "
                      : "the meta rule refuses this case (no cpu kernel to ask instead): ") + error_text(e));
    return;
  }
  const char* const against = reference ? "cpu" : "the meta rule";

  // The device, with guard bytes around its outputs, on a side stream for
  // asynchronous devices with its inputs uploaded on that stream: a kernel
  // that ignores its stream reads them before they arrive.
  std::vector<Tensor> got;
  Materialized dev;
  {
    std::optional<StreamGuard> guard_stream;
    if (target.async) guard_stream.emplace(side_stream(target, 0));
    try {
      dev = materialize(s, target.device, target.pinned);
    } catch (const LayoutUnavailable& e) {
      ck.add("layout", Status::Skip, e.what());
      return;
    }
    try {
      got = call_op(op, dev);
    } catch (const std::exception& e) {
      if (needs_other_kernel(target, c, e)) {
        ck.add("needs", Status::Skip, "needs a kernel the device lacks (--mode coverage lists them): " + error_text(e));
        return;
      }
      ck.add("error", Status::Fail, std::string("the device raised where ") +
                                        (reference ? "cpu did not: " : "the meta rule accepted the case: ") +
                                        error_text(e));
      return;
    }
    // Host copies made below, while the side stream is current, wait for its work.
    bool ok = true;
    const bool finite_in = !reference && inputs_finite(s);
    bool checked_finite = false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].defined() || !want[i].defined()) {
        if (got[i].defined() != want[i].defined()) {
          ck.add("values", Status::Fail, "output " + std::to_string(i) + " is " +
                                             (got[i].defined() ? "defined" : "undefined") + " on the device only");
          ok = false;
        }
        continue;
      }
      if (got[i].device() != target.device) {
        ck.add("device", Status::Fail, "output " + std::to_string(i) + " is on " + got[i].device().str() + ", not " +
                                          target.device.str());
        ok = false;
        continue;
      }
      if (s.values_unspecified || !reference) {
        if (got[i].sizes().vec() != want[i].sizes().vec() || got[i].scalar_type() != want[i].scalar_type()) {
          ck.add(reference ? "shape" : "meta", Status::Fail,
                 "output " + std::to_string(i) + ": " + shape_text(got[i].sizes().vec()) + " " +
                     dtype_text(got[i].scalar_type()) + " where " + against + " gives " +
                     shape_text(want[i].sizes().vec()) + " " + dtype_text(want[i].scalar_type()));
          ok = false;
          continue;
        }
        if (finite_in && is_floating_type(got[i].scalar_type())) {
          checked_finite = true;
          if (auto m = check_finite(got[i])) {
            ck.add("finite", Status::Fail, (got.size() > 1 ? "output " + std::to_string(i) + ": " : std::string()) +
                                               *m + ", though every input is finite (no cpu reference)");
            ok = false;
          }
        }
        continue;
      }
      if (auto m = compare_values(got[i], want[i], tolerance_of(c, s, want[i].scalar_type()))) {
        ck.add("values", Status::Fail, (got.size() > 1 ? "output " + std::to_string(i) + ": " : std::string()) + *m);
        ok = false;
      }
    }
    if (ok && reference) ck.add("values", Status::Pass);
    if (ok && !reference) {
      ck.add("meta", Status::Pass, "shapes and dtypes as the meta rule gives; no cpu reference, values not compared");
      if (checked_finite) ck.add("finite", Status::Pass);
    }

    // Inputs: unchanged, except written arguments, whose whole base must equal cpu's.
    const std::vector<int> idx = base_index(s);
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (idx[i] < 0) continue;
      const Tensor& dbase = dev.bases[static_cast<size_t>(idx[i])];
      if (is_mutable(op, i)) {
        if (!reference) continue;  // nothing to compare the written buffer with
        const Tensor& cbase = ref.bases[static_cast<size_t>(idx[i])];
        if (auto m = compare_values(dbase, cbase, tolerance_of(c, s, cbase.scalar_type())))
          ck.add("inputs", Status::Fail, "written argument '" + op.schema().arguments[i].name +
                                             "' (its whole buffer) differs from cpu's: " + *m);
      } else if (auto m = compare_bitwise(dbase, s.args[i].tensors[0].base)) {
        ck.add("inputs", Status::Fail, "argument '" + op.schema().arguments[i].name + "' was changed: " + *m);
      }
    }

    // Guard bytes around new outputs.
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].defined()) continue;
      const testing::GuardCheck g = testing::check_output_guard(got[i]);
      if (g.guarded && !g.intact)
        ck.add("guard", Status::Fail, "output " + std::to_string(i) + ": " + std::to_string(g.bad_bytes) +
                                          " guard bytes changed, the first at byte offset " + std::to_string(g.first_bad) +
                                          (g.first_bad < 0 ? " (before the output)" : " (past its end)") +
                                          ": the kernel writes outside its output");
    }

    // Determinism: a second run on fresh copies gives the same bits.
    if (ok && !s.values_unspecified) {
      try {
        Materialized again = materialize(s, target.device, target.pinned);
        std::vector<Tensor> second = call_op(op, again);
        for (size_t i = 0; i < got.size(); ++i) {
          if (!got[i].defined()) continue;
          if (auto m = compare_bitwise(got[i], second[i])) {
            ck.add("deterministic", Status::Fail, "a second run differs: output " + std::to_string(i) + ", " + *m);
            break;
          }
        }
      } catch (const std::exception& e) {
        ck.add("deterministic", Status::Fail, "the second run raised: " + error_text(e));
      }
    }
    if (!reference) {
      // The device's own results are what the thread check compares with.
      if (cpu_results != nullptr) {
        if (ok && !s.values_unspecified) *cpu_results = got;
        else cpu_results->clear();
      }
      return;  // the meta rule was the reference: checked above
    }
  }
  // Meta: the shape rule's outputs have the device's shapes and dtypes.
  if ((op.flags() & kDataDependent) == 0) {
    try {
      Materialized meta = materialize(s, Device("meta"));
      std::vector<Tensor> m = call_op(op, meta);
      for (size_t i = 0; i < m.size() && i < got.size(); ++i) {
        if (!m[i].defined() || !got[i].defined()) continue;
        if (m[i].sizes().vec() != got[i].sizes().vec() || m[i].scalar_type() != got[i].scalar_type())
          ck.add("meta", Status::Fail, "output " + std::to_string(i) + " is " + shape_text(got[i].sizes().vec()) + " " +
                                           dtype_text(got[i].scalar_type()) + ", the meta rule says " +
                                           shape_text(m[i].sizes().vec()) + " " + dtype_text(m[i].scalar_type()));
      }
    } catch (const std::exception&) {
      // Meta refusing what cpu ran is the core's business (its own tests), not the plugin's.
    }
  }
  if (cpu_results != nullptr) *cpu_results = want;
}

// The same samples from several threads at once, each checked against cpu.
void check_threads(const Target& target, const OpCase& c, const std::vector<Sample>& samples,
                   const std::vector<std::vector<Tensor>>& wants, int threads, std::vector<CaseResult>& out) {
  std::mutex mu;
  std::string failure;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t k = 0; k < samples.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(t)) % samples.size();
        if (wants[i].empty()) continue;
        try {
          std::optional<StreamGuard> g;
          if (target.async) g.emplace(side_stream(target, 1 + static_cast<size_t>(t)));
          Materialized m = materialize(samples[i], target.device, target.pinned);
          std::vector<Tensor> got = call_op(*c.op, m);
          for (size_t o = 0; o < got.size(); ++o) {
            if (!got[o].defined() || samples[i].values_unspecified) continue;
            if (auto msg = compare_values(got[o], wants[i][o], tolerance_of(c, samples[i], wants[i][o].scalar_type()))) {
              std::lock_guard lock(mu);
              if (failure.empty()) failure = "thread " + std::to_string(t) + ", case '" + samples[i].name + "': " + *msg;
            }
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          if (failure.empty()) failure = "thread " + std::to_string(t) + ", case '" + samples[i].name + "' raised: " +
                                         error_text(e);
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), std::to_string(threads) + " threads at once", "threads",
                           failure.empty() ? Status::Pass : Status::Fail, failure, 0});
}

}  // namespace

Report run_test_mode(const Target& target, const Options& options) {
  Report r;
  if (target.async && !target.pinned)
    r.notes.push_back("note: " + target.device_type + " is asynchronous but offers no pinned host memory, so the kit "
                      "uploads inputs synchronously: a kernel that ignores its stream may go unseen");
  run_abi_checks(target, r);
  const std::vector<OpCase> cases = op_cases(target, options);
  if (cases.empty())
    r.results.push_back({"(none)", "-", "", "kernels", Status::Fail,
                         "nothing to test: plugin '" + target.plugin.name + "' registers no kernel for device type '" +
                             target.device_type + "'" + (options.op_regex.empty() && options.dtypes.empty()
                                                             ? std::string()
                                                             : " that --op/--dtype select"),
                         0});
  std::vector<std::vector<CaseResult>> per(cases.size());
  // Every output the run makes has guard bytes (process-wide, set before any op runs).
  struct GuardOn {
    GuardOn() { testing::set_output_guard(64); }
    ~GuardOn() { testing::set_output_guard(0); }
  } guard_on;
  parallel_for(cases.size(), options.jobs, [&](size_t k) {
    const OpCase& c = cases[k];
    std::vector<CaseResult>& out = per[k];
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Sample> samples;
    try {
      samples = samples_for(c, options.seed);
    } catch (const std::exception& e) {
      out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), "", "samples", Status::Fail, e.what(), 0});
      return;
    }
    if (!c.cpu_reference)
      out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), "", "reference", Status::Skip,
                               "no cpu reference: plugin-defined op " + c.sample_op->name() + " has no cpu kernel for " +
                                   dtype_text(c.dtype) + ", so its values are not compared; each case checks shapes "
                                   "and dtypes against the meta rule, finite results from finite inputs, unchanged "
                                   "inputs, guard bytes, determinism and threads",
                               0});
    std::vector<std::vector<Tensor>> wants(samples.size());
    bool ran = false;  // some case got past the reference
    for (size_t i = 0; i < samples.size(); ++i) {
      const size_t before = out.size();
      try {
        check_sample(target, c, samples[i], out, &wants[i]);
      } catch (const std::exception& e) {
        // Reading a result back can need another kernel too (copy_ to make a
        // negative-stride output contiguous): the same skip as in check_sample.
        if (needs_other_kernel(target, c, e))
          out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), samples[i].name, "needs", Status::Skip,
                                   "needs a kernel the device lacks (--mode coverage lists them): " + error_text(e), 0});
        else
          out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), samples[i].name, "error", Status::Fail,
                                   std::string("the kit could not run the case: ") + e.what(), 0});
      }
      for (size_t j = before; j < out.size(); ++j) {
        if (out[j].status == Status::Fail) wants[i].clear();  // only passing cases go to the thread check
        if (out[j].status != Status::Skip) ran = true;
      }
    }
    if (!ran && c.plugin_op && !samples.empty())
      out.push_back(CaseResult{c.op->name(), dtype_text(c.dtype), "", "samples", Status::Skip,
                               "none of the " + std::to_string(samples.size()) + " generic cases ran (" +
                                   (c.cpu_reference ? "cpu" : "the meta rule") +
                                   " refused each): the op needs arguments the generic cases do not make (tensors "
                                   "of different shapes, say); give it a generator of its own (register_samples, "
                                   "tools/plugin_test/samples.h)",
                               0});
    if (options.threads > 1) check_threads(target, c, samples, wants, options.threads, out);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!out.empty()) out.back().seconds = secs;
  });
  for (auto& v : per)
    for (CaseResult& cr : v) r.results.push_back(std::move(cr));
  std::string unreferenced;
  for (const OpCase& c : cases)
    if (!c.cpu_reference) unreferenced += (unreferenced.empty() ? "" : ", ") + c.op->name() + "(" + dtype_text(c.dtype) + ")";
  if (!unreferenced.empty())
    r.notes.push_back("note: no cpu reference for " + unreferenced + ": these plugin-defined ops have no cpu kernel for "
                      "the dtype, so their values were not compared, only their shapes and dtypes (against the meta "
                      "rule), finiteness, inputs, guard bytes, determinism and threads; register a cpu kernel to have "
                      "them compared");
  run_unload_check(target, r);  // last: the plugin is gone afterwards
  return r;
}

}  // namespace tessera::kit
