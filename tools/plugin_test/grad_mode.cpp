// Grad mode (docs/conformance.md): for every differentiable op the device
// runs, the gradients of a weighted sum of its outputs with respect to every
// floating input equal cpu's on the same inputs; in float64, gradcheck
// (finite differences) passes on the device for small cases. A plugin-defined
// op without a cpu kernel is checked by gradcheck alone, and plugin-defined
// ops whose backward is itself differentiable also get a gradgradcheck.
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include "compare.h"
#include "runner.h"

namespace tessera::kit {

namespace {

using Status = CaseResult::Status;

// The gradients of sum(out_i * w_i) for the leaves (a vector-Jacobian product
// with the weights as the outputs' gradients: only the op's own backward runs
// on the device, no mul or sum); empty when no output needs grad.
std::vector<Tensor> gradients(const OpCase& c, const Sample& s, Device device, const std::vector<Tensor>& weights) {
  GradArgs g = grad_args(c, s, device);
  std::vector<Tensor> outs = call_op(*c.op, g.m);
  std::vector<Tensor> active, seeds;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined() || !outs[i].requires_grad()) continue;
    active.push_back(outs[i]);
    seeds.push_back(weights[i].to(outs[i].scalar_type()).to(device));
  }
  if (active.empty()) return {};
  std::vector<Tensor> inputs;
  std::vector<size_t> where;
  for (size_t k = 0; k < g.leaves.size(); ++k)
    if (g.leaves[k].defined()) inputs.push_back(g.leaves[k]), where.push_back(k);
  std::vector<Tensor> grads(g.leaves.size());
  const std::vector<Tensor> got = autograd::grad(active, inputs, seeds, /*retain_graph=*/false, /*create_graph=*/false,
                                                 /*allow_unused=*/true);
  for (size_t i = 0; i < got.size(); ++i) grads[where[i]] = got[i];
  return grads;
}

// gradgradcheck on `device`, with the float64 output gradients drawn on cpu
// (the core's gradgradcheck draws them with randn on the device, a kernel the
// device may lack). Returns false, checking nothing, when the first-order
// gradients do not require grad: the op's backward is not differentiable.
bool gradgradcheck_on(const autograd::GradcheckFn& fn, const autograd::variable_list& inputs, Device device,
                      uint64_t seed, const autograd::GradcheckOptions& options) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> gos;
  for (const Tensor& t : fn(inputs))
    if (t.defined() && t.is_floating_point() && t.requires_grad())
      gos.push_back(random_tensor(rng, t.sizes().vec(), kDouble, Domain::Small).to(device).requires_grad_(true));
  const size_t n = inputs.size();
  const autograd::GradcheckFn first_order = [&fn, n](const autograd::variable_list& all) {
    autograd::EnableGradGuard grad_on;  // also when gradcheck evaluates it under no_grad
    const autograd::variable_list xs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<Tensor> go(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    std::vector<Tensor> act, diff;
    for (const Tensor& t : fn(xs))
      if (t.defined() && t.is_floating_point() && t.requires_grad()) act.push_back(t);
    for (const Tensor& x : xs)
      if (x.defined() && x.requires_grad()) diff.push_back(x);
    std::vector<Tensor> g = autograd::grad(act, diff, go, /*retain_graph=*/true, /*create_graph=*/true,
                                           /*allow_unused=*/true);
    for (size_t i = 0; i < g.size(); ++i)
      if (!g[i].defined()) g[i] = zeros_like(diff[i]);
    return g;
  };
  autograd::variable_list all = inputs;
  all.insert(all.end(), gos.begin(), gos.end());
  bool differentiable = false;
  for (const Tensor& g : first_order(all)) differentiable |= g.requires_grad();
  if (!differentiable) return false;
  autograd::gradcheck(first_order, all, options);
  return true;
}

bool missing_kernel(const Target& target, const std::string& m) {
  return m.find(": no kernel for device type '" + target.device_type + "'") != std::string::npos;
}

}  // namespace

Report run_grad_mode(const Target& target, const Options& options) {
  Report r;
  const Device cpu("cpu");
  for (const OpCase& c : op_cases(target, options)) {
    if (!is_floating_type(c.dtype)) continue;  // gradients flow through floating tensors only
    std::vector<Sample> samples;
    try {
      samples = samples_for(c, options.seed);
    } catch (const std::exception& e) {
      r.results.push_back({c.op->name(), dtype_text(c.dtype), "", "samples", Status::Fail, e.what(), 0});
      continue;
    }
    // Without a cpu kernel (a plugin-defined op), the device's own gradients
    // are checked by finite differences only (float64).
    const bool reference = c.cpu_reference;
    if (!reference)
      r.results.push_back({c.op->name(), dtype_text(c.dtype), "", "reference", Status::Skip,
                           "no cpu reference: plugin-defined op " + c.sample_op->name() + " has no cpu kernel for " +
                               dtype_text(c.dtype) + "; its gradients are checked by gradcheck (float64) on the device only",
                           0});
    std::mt19937_64 rng(options.seed + 7);
    size_t checked = 0;
    for (const Sample& s : samples) {
      if (checked >= 8) break;  // the first cases cover the layouts; backward is costly
      auto add = [&](const char* check, Status st, std::string msg) {
        r.results.push_back({c.op->name(), dtype_text(c.dtype), s.name, check, st, std::move(msg), 0});
      };
      // The reference: which outputs are differentiable, and their weights
      // (on cpu; without a cpu kernel, cases the meta rule accepts, run on the device).
      std::vector<Tensor> want, outs;
      std::vector<Tensor> weights;
      try {
        if (!reference) {
          Materialized meta = materialize_meta(s);
          (void)call_op(*c.op, meta);
        }
      } catch (const std::exception&) {
        continue;  // the op refuses the case
      }
      try {
        GradArgs probe = grad_args(c, s, reference ? cpu : target.device);
        outs = call_op(*c.op, probe.m);
        for (const Tensor& o : outs)
          weights.push_back(o.defined() ? random_tensor(rng, o.sizes().vec(), kDouble, Domain::Finite) : Tensor());
        if (reference) want = gradients(c, s, cpu, weights);
      } catch (const LayoutUnavailable& e) {
        if (!reference) add("grad", Status::Skip, e.what());
        continue;
      } catch (const std::exception& e) {
        if (reference) continue;  // cpu refuses the case, or its backward: nothing to compare
        if (missing_kernel(target, e.what())) add("grad", Status::Skip, std::string("needs a kernel the device lacks: ") + e.what());
        else add("error", Status::Fail, std::string("the device raised where the meta rule accepted the case: ") + e.what());
        continue;
      }
      bool differentiable = false;
      for (const Tensor& o : outs) differentiable |= o.defined() && o.requires_grad();
      if (!differentiable || (reference && want.empty())) {
        if (checked == 0 && &s == &samples.back())
          add("grad", Status::Skip, "no output requires grad: the op is not differentiable for these inputs");
        continue;
      }
      ++checked;
      std::vector<Tensor> got;
      try {
        got = gradients(c, s, target.device, weights);
      } catch (const LayoutUnavailable& e) {
        add("grad", Status::Skip, e.what());
        continue;
      } catch (const std::exception& e) {
        const std::string m = e.what();
        if (missing_kernel(target, m)) {
          add("grad", Status::Skip, "backward needs a kernel the device lacks (--mode coverage lists them): " + m);
          continue;
        }
        add("grad", Status::Fail, "backward on the device raised: " + m);
        continue;
      }
      if (reference) {
        bool ok = true;
        for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
          if (!want[i].defined() && !got[i].defined()) continue;
          if (want[i].defined() != got[i].defined()) {
            add("grad", Status::Fail, "input " + std::to_string(i) + " has a gradient on " +
                                          (got[i].defined() ? "the device only" : "cpu only"));
            ok = false;
            continue;
          }
          Tolerance tol = default_tolerance(want[i].scalar_type());
          const double k = 10 * tolerance_scale(c.sample_op->name());
          tol.rtol *= k, tol.atol *= k;
          if (auto m = compare_values(got[i], want[i], tol)) {
            add("grad", Status::Fail, "gradient of input " + std::to_string(i) + ": " + *m);
            ok = false;
          }
        }
        if (ok) add("grad", Status::Pass, {});
      } else {
        add("backward", Status::Pass, "ran on the device; no cpu reference, so its values are checked by gradcheck "
                                      "(float64) only");
      }
      // The inputs that get a gradient: those cpu's backward gives one (the device's without a reference).
      const std::vector<Tensor>& graded = reference ? want : got;
      // Finite differences on the device, in float64, for small inputs where
      // the op is smooth enough to check: finite inputs and outputs. Only the
      // inputs cpu's backward gives a gradient are varied (nll_loss's weight,
      // for one, gets none).
      if (c.dtype == kDouble && checked <= 3) {
        bool small = true;
        for (const SampleArg& a : s.args)
          for (const TensorInput& in : a.tensors) small &= in.base.numel() <= 64 && in.base.numel() > 0;
        bool finite = true;
        for (const Tensor& o : outs)
          if (o.defined() && is_floating_type(o.scalar_type())) finite &= host_copy(o).isfinite().all().item<bool>();
        for (const SampleArg& a : s.args)
          for (const TensorInput& in : a.tensors)
            if (is_floating_type(in.base.scalar_type())) finite &= in.base.isfinite().all().item<bool>();
        if (!small || !finite) continue;
        std::vector<bool> differentiable_out;
        for (const Tensor& o : outs) differentiable_out.push_back(o.defined() && o.requires_grad());
        const autograd::GradcheckFn fn = [&](const autograd::variable_list& xs) {
          GradArgs h = grad_args(c, s, target.device);
          size_t k = 0, next = 0;
          for (size_t i = 0; i < s.args.size(); ++i) {
            for (const TensorInput& in : s.args[i].tensors) {
              if (h.leaves[next].defined()) {
                Tensor leaf = next < graded.size() && graded[next].defined() ? xs[k++] : h.leaves[next].detach();
                Tensor used = is_mutable(*c.op, i) ? leaf.clone() : leaf;
                h.m.views[next] = in.view ? in.view(used) : used;
              }
              ++next;
            }
          }
          next = 0;
          for (size_t i = 0; i < s.args.size(); ++i) {
            if (s.args[i].kind == SampleArg::Kind::Tensor) h.m.args[i] = IValue::of(h.m.views[next]);
            next += s.args[i].tensors.size();
          }
          autograd::variable_list out;
          const std::vector<Tensor> os = call_op(*c.op, h.m);
          for (size_t i = 0; i < os.size(); ++i)
            if (differentiable_out[i]) out.push_back(os[i]);  // as on cpu, whether or not grad is on now
          return out;
        };
        std::vector<Tensor> inputs;
        try {
          GradArgs g = grad_args(c, s, target.device);
          for (size_t i = 0; i < g.leaves.size(); ++i)
            if (g.leaves[i].defined() && i < graded.size() && graded[i].defined()) inputs.push_back(g.leaves[i]);
          if (inputs.empty()) continue;
          autograd::GradcheckOptions go;
          go.raise_exception = true;
          autograd::gradcheck(fn, inputs, go);
          add("gradcheck", Status::Pass, {});
        } catch (const std::exception& e) {
          if (missing_kernel(target, e.what())) {
            add("gradcheck", Status::Skip, std::string("gradcheck needs a kernel the device lacks (fill_ makes its "
                                                       "seeds and perturbs the inputs): ") + e.what());
          } else {
            add("gradcheck", Status::Fail, std::string("gradcheck (float64, finite differences) on the device: ") +
                                               e.what());
          }
          continue;
        }
        // Second derivatives of plugin-defined ops: the backward op or the
        // composite's steps must themselves be right where they are differentiable.
        if (!c.plugin_op) continue;
        try {
          autograd::GradcheckOptions go;
          go.raise_exception = true;
          if (gradgradcheck_on(fn, inputs, target.device, options.seed + 13, go))
            add("gradgradcheck", Status::Pass, {});
          else
            add("gradgradcheck", Status::Skip, "the op's backward is not differentiable (its gradients do not "
                                               "require grad): no second derivative to check");
        } catch (const std::exception& e) {
          if (missing_kernel(target, e.what()))
            add("gradgradcheck", Status::Skip, std::string("needs a kernel the device lacks: ") + e.what());
          else
            add("gradgradcheck", Status::Fail, std::string("gradgradcheck (float64, finite differences of the "
                                                           "backward) on the device: ") + e.what());
        }
      }
    }
  }
  return r;
}

}  // namespace tessera::kit
