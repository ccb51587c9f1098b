// Coverage mode (docs/conformance.md): which ops and dtypes the device
// implements and lacks against the cpu plugin, and which other kernels each
// op's backward and the common paths (Python scalars, factories, dtype
// conversion, printing, anomaly mode) need on the device — found by running
// them on cpu with the core's kernel recorder (tessera/testing.h) — and the
// plugin-defined ops (ABI 1.3): what each declared and where it has kernels.
#include <tessera/tessera.h>
#include <tessera/testing.h>

#include <map>
#include <regex>
#include <mutex>
#include <set>
#include <sstream>

#include "runner.h"

namespace tessera::kit {

namespace {

using Status = CaseResult::Status;
using KernelSet = std::set<std::pair<std::string, ScalarType>>;


// Every kernel registered for a device type, by any plugin: op -> dtypes.
std::map<std::string, std::set<ScalarType>> kernels_for(const std::string& device_type) {
  std::map<std::string, std::set<ScalarType>> out;
  for (const PluginInfo& p : plugins())
    for (const KernelInfo& k : p.kernels)
      if (k.device_type == device_type)
        for (const std::string& d : k.dtypes) out[k.op].insert(parse_dtype(d));
  return out;
}

// The cpu kernels `fn` runs, recorded while it runs (kernels of other device types ignored).
KernelSet record(const std::function<void()>& fn) {
  struct Sink {
    std::mutex mu;
    KernelSet seen;
  } sink;
  testing::set_kernel_recorder(
      [](void* ctx, const char* op, const char* device_type, ScalarType dtype) {
        if (std::string_view(device_type) != "cpu") return;
        auto* s = static_cast<Sink*>(ctx);
        std::lock_guard lock(s->mu);
        s->seen.emplace(op, dtype);
      },
      &sink);
  try {
    fn();
  } catch (...) {
    testing::set_kernel_recorder(nullptr, nullptr);
    throw;
  }
  testing::set_kernel_recorder(nullptr, nullptr);
  return sink.seen;
}

std::string text(const KernelSet& ks) {
  std::string s;
  for (const auto& [op, t] : ks) s += (s.empty() ? "" : ", ") + op + "(" + dtype_text(t) + ")";
  return s;
}

// The paths users take besides calling ops, per dtype: what each needs.
struct Path {
  const char* name;
  std::function<void(ScalarType)> run;  // on cpu
  bool floating_only;
};
std::vector<Path> paths() {
  const TensorOptions cpu;
  return {
      {"t + 1 (a Python number)", [](ScalarType t) { (void)(ones({3}, TensorOptions(t)) + Scalar(1)); }, false},
      {"t * 2.5", [](ScalarType t) { (void)(ones({3}, TensorOptions(t)) * Scalar(2.5)); }, true},
      {"zeros/ones/full on the device",
       [](ScalarType t) {
         (void)zeros({3}, TensorOptions(t));
         (void)ones({3}, TensorOptions(t));
         (void)full({3}, Scalar(2), TensorOptions(t));
       },
       false},
      {"arange", [](ScalarType t) { (void)arange(Scalar(0), Scalar(5), Scalar(1), TensorOptions(t)); }, false},
      {"t.to(float32) and back", [](ScalarType t) { (void)ones({3}, TensorOptions(t)).to(kFloat).to(t); }, false},
      {"printing (str(t))", [](ScalarType t) { std::ostringstream os; os << ones({2, 3}, TensorOptions(t)); }, false},
      {"t.sum().backward()",
       [](ScalarType t) {
         Tensor x = ones({3}, TensorOptions(t)).requires_grad_(true);
         x.sum().backward();
       },
       true},
      {"t.mean().backward()",
       [](ScalarType t) {
         Tensor x = ones({3}, TensorOptions(t)).requires_grad_(true);
         x.mean().backward();
       },
       true},
      {"backward in anomaly mode",
       [](ScalarType t) {
         autograd::set_anomaly_enabled(true);
         try {
           Tensor x = ones({3}, TensorOptions(t)).requires_grad_(true);
           (x * x).sum().backward();
         } catch (...) {
           autograd::set_anomaly_enabled(false);
           throw;
         }
         autograd::set_anomaly_enabled(false);
       },
       true},
  };
}

}  // namespace

Report run_coverage_mode(const Target& target, const Options& options) {
  Report r;
  const auto have = kernels_for(target.device_type);
  const auto cpu = kernels_for("cpu");
  auto has = [&](const std::string& op, ScalarType t) {
    auto it = have.find(op);
    return it != have.end() && it->second.count(t) != 0;
  };
  const std::regex filter = op_filter(options);

  // 1. Implemented and lacking, against cpu.
  std::ostringstream table;
  table << "coverage of " << target.device_type << " against cpu (op: implemented dtypes | lacking dtypes):\n";
  for (const auto& [op, dtypes] : cpu) {
    if (!std::regex_match(op, filter)) continue;
    std::string got, lack;
    for (ScalarType t : dtypes) (has(op, t) ? got : lack) += (has(op, t) ? (got.empty() ? "" : ", ") : (lack.empty() ? "" : ", ")) + dtype_text(t);
    table << "  " << op << ": " << (got.empty() ? "-" : got) << " | " << (lack.empty() ? "-" : lack) << "\n";
    if (!lack.empty())
      r.results.push_back({op, lack, "", "implemented", Status::Skip, "not implemented on " + target.device_type, 0});
  }
  r.notes.push_back(table.str());

  // 2. What each implemented op's forward (beyond its own kernel) and backward need.
  std::ostringstream needs;
  needs << "what each op needs besides its own kernel (missing on " << target.device_type << " marked !):\n";
  for (const OpCase& c : op_cases(target, options)) {
    if (c.op != c.sample_op) continue;  // in-place variants need what their functional op needs
    std::vector<Sample> samples;
    try {
      samples = samples_for(c, options.seed);
    } catch (const std::exception&) {
      continue;
    }
    KernelSet forward, backward;
    bool ran = false;
    for (const Sample& s : samples) {
      // A case with data in every tensor, so the core does not skip kernels for empties.
      bool nonempty = true;
      for (const SampleArg& a : s.args)
        for (const TensorInput& in : a.tensors) nonempty &= in.base.numel() > 1;
      if (!nonempty) continue;
      try {
        GradArgs g = is_floating_type(c.dtype) ? grad_args(c, s, Device("cpu")) : GradArgs{materialize(s, Device("cpu")), {}};
        std::vector<Tensor> outs;
        forward = record([&] { outs = call_op(*c.op, g.m); });
        forward.erase({c.op->name(), c.dtype});
        Tensor loss;
        for (const Tensor& o : outs)
          if (o.defined() && o.requires_grad()) loss = loss.defined() ? loss + o.sum() : o.sum();
        if (loss.defined()) backward = record([&] { loss.backward(); });
        ran = true;
        break;
      } catch (const std::exception&) {
        continue;
      }
    }
    if (!ran) continue;
    std::string line = "  " + c.op->name() + "(" + dtype_text(c.dtype) + "):";
    std::string missing;
    auto list = [&](const char* what, const KernelSet& ks) {
      if (ks.empty()) return;
      line += std::string(" ") + what + " ";
      bool first = true;
      for (const auto& [op, t] : ks) {
        const bool ok = has(op, t);
        line += (first ? "" : ", ") + op + "(" + dtype_text(t) + ")" + (ok ? "" : " !");
        if (!ok) missing += (missing.empty() ? "" : ", ") + op + "(" + dtype_text(t) + ")";
        first = false;
      }
      line += ";";
    };
    list("forward also runs", forward);
    list("backward runs", backward);
    if (forward.empty() && backward.empty()) continue;
    needs << line << "\n";
    r.results.push_back({c.op->name(), dtype_text(c.dtype), "", "needs", missing.empty() ? Status::Pass : Status::Fail,
                         missing.empty() ? "" : "needs kernels " + target.device_type + " lacks: " + missing, 0});
  }
  r.notes.push_back(needs.str());

  // 3. The common paths, per dtype the device has any kernel for.
  std::set<ScalarType> dtypes;
  for (const auto& [op, ds] : have) dtypes.insert(ds.begin(), ds.end());
  std::ostringstream common;
  common << "what the common paths need on " << target.device_type << " (missing marked !):\n";
  for (const Path& p : paths()) {
    for (ScalarType t : dtypes) {
      if (p.floating_only && !is_floating_type(t)) continue;
      KernelSet ks;
      try {
        ks = record([&] { p.run(t); });
      } catch (const std::exception&) {
        continue;  // the path does not apply to this dtype (on cpu either)
      }
      std::string line, missing;
      for (const auto& [op, kt] : ks) {
        const bool ok = has(op, kt);
        line += (line.empty() ? "" : ", ") + op + "(" + dtype_text(kt) + ")" + (ok ? "" : " !");
        if (!ok) missing += (missing.empty() ? "" : ", ") + op + "(" + dtype_text(kt) + ")";
      }
      common << "  " << p.name << " [" << dtype_text(t) << "]: " << (line.empty() ? "no kernel" : line) << "\n";
      r.results.push_back({p.name, dtype_text(t), "", "path", missing.empty() ? Status::Pass : Status::Fail,
                           missing.empty() ? "" : "needs kernels " + target.device_type + " lacks: " + missing, 0});
    }
  }
  r.notes.push_back(common.str());

  // 4. Plugin-defined ops (ABI 1.3): what each declared, its kernels on the
  // device, and whether cpu has kernels to compare it with.
  std::ostringstream defined;
  size_t listed = 0;
  defined << "plugin-defined ops (op [plugin]: flags; shape rule; derivative; " << target.device_type
          << " kernels | cpu kernels, the reference):\n";
  for (const PluginOpInfo& info : plugin_ops()) {
    if (!std::regex_match(info.name, filter)) continue;
    auto dtypes_of = [&](const std::map<std::string, std::set<ScalarType>>& m) {
      std::set<ScalarType> out;
      if (auto it = m.find(info.name); it != m.end()) out = it->second;
      return out;
    };
    const std::set<ScalarType> dev = dtypes_of(have), ref = dtypes_of(cpu);
    const bool own = info.plugin == target.plugin.name;
    if (!own && dev.empty()) continue;  // another plugin's op this device does not run
    ++listed;
    std::string flags;
    auto flag = [&](bool on, const std::string& what) {
      if (on) flags += (flags.empty() ? "" : ", ") + what;
    };
    flag(info.pointwise, "pointwise");
    flag(info.view, "view");
    flag(info.nondeterministic, "nondeterministic");
    flag(!info.inplace_variant.empty(), "in-place variant " + info.inplace_variant);
    flag(!info.loaded, "its plugin is unloaded");
    auto list = [](const std::set<ScalarType>& ts) {
      std::string out;
      for (ScalarType t : ts) out += (out.empty() ? "" : ", ") + dtype_text(t);
      return out.empty() ? std::string("-") : out;
    };
    defined << "  " << info.name << " [" << info.plugin << "]: " << (flags.empty() ? "-" : flags) << "; "
            << info.shape_text << "; " << info.derivative_text << "; " << list(dev) << " | " << list(ref) << "\n";
    if (info.view) continue;  // a view runs no kernel: it works on every device
    if (dev.empty()) {
      r.results.push_back({info.name, "-", "", "implemented", Status::Skip,
                           "defined by plugin '" + info.plugin + "' but has no kernel on " + target.device_type, 0});
      continue;
    }
    std::string unreferenced;
    for (ScalarType t : dev)
      if (!ref.count(t)) unreferenced += (unreferenced.empty() ? "" : ", ") + dtype_text(t);
    if (!unreferenced.empty())
      r.results.push_back({info.name, unreferenced, "", "reference", Status::Skip,
                           "no cpu kernel: test mode compares shapes and dtypes with the meta rule and checks "
                           "finiteness, not values; grad mode runs gradcheck only",
                           0});
  }
  if (listed == 0) defined << "  (none)\n";
  r.notes.push_back(defined.str());
  return r;
}

}  // namespace tessera::kit
