// Grad mode (docs/conformance.md): for every differentiable op the device
// runs, the gradients of a weighted sum of its outputs with respect to every
// floating input equal cpu's on the same inputs; in float64, gradcheck
// (finite differences) passes on the device for small cases.
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include "compare.h"
#include "runner.h"

namespace tessera::kit {

namespace {

using Status = CaseResult::Status;


// Gradients of sum(out_i * w_i) for the leaves; empty when no output needs grad.
std::vector<Tensor> gradients(const OpCase& c, const Sample& s, Device device, const std::vector<Tensor>& weights,
                              std::vector<Tensor>* outputs_out = nullptr) {
  GradArgs g = grad_args(c, s, device);
  std::vector<Tensor> outs = call_op(*c.op, g.m);
  Tensor loss;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined() || !outs[i].requires_grad()) continue;
    const Tensor term = (outs[i] * weights[i].to(device, outs[i].scalar_type())).sum();
    loss = loss.defined() ? loss + term : term;
  }
  if (outputs_out) *outputs_out = outs;
  if (!loss.defined()) return {};
  loss.backward();
  std::vector<Tensor> grads;
  for (const Tensor& leaf : g.leaves) grads.push_back(leaf.defined() ? leaf.grad() : Tensor());
  return grads;
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
    std::mt19937_64 rng(options.seed + 7);
    size_t checked = 0;
    for (const Sample& s : samples) {
      if (checked >= 8) break;  // the first cases cover the layouts; backward is costly
      auto add = [&](const char* check, Status st, std::string msg) {
        r.results.push_back({c.op->name(), dtype_text(c.dtype), s.name, check, st, std::move(msg), 0});
      };
      // The reference: which outputs are differentiable, and their weights.
      std::vector<Tensor> want, outs;
      std::vector<Tensor> weights;
      try {
        GradArgs probe = grad_args(c, s, cpu);
        outs = call_op(*c.op, probe.m);
        for (const Tensor& o : outs)
          weights.push_back(o.defined() ? random_tensor(rng, o.sizes().vec(), kDouble, Domain::Finite) : Tensor());
        want = gradients(c, s, cpu, weights);
      } catch (const std::exception& e) {
        continue;  // cpu refuses the case, or its backward: nothing to compare
      }
      if (want.empty()) {
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
        if (m.find(": no kernel for device type '" + target.device_type + "'") != std::string::npos) {
          add("grad", Status::Skip, "backward needs a kernel the device lacks (--mode coverage lists them): " + m);
          continue;
        }
        add("grad", Status::Fail, "backward on the device raised: " + m);
        continue;
      }
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
        try {
          GradArgs g = grad_args(c, s, target.device);
          std::vector<Tensor> inputs;
          for (size_t i = 0; i < g.leaves.size(); ++i)
            if (g.leaves[i].defined() && i < want.size() && want[i].defined()) inputs.push_back(g.leaves[i]);
          if (inputs.empty()) continue;
          std::vector<bool> differentiable;
          for (const Tensor& o : outs) differentiable.push_back(o.defined() && o.requires_grad());
          const autograd::GradcheckFn fn = [&](const autograd::variable_list& xs) {
            GradArgs h = grad_args(c, s, target.device);
            size_t k = 0, next = 0;
            for (size_t i = 0; i < s.args.size(); ++i) {
              for (const TensorInput& in : s.args[i].tensors) {
                if (h.leaves[next].defined()) {
                  Tensor leaf = next < want.size() && want[next].defined() ? xs[k++] : h.leaves[next].detach();
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
              if (differentiable[i]) out.push_back(os[i]);  // as on cpu, whether or not grad is on now
            return out;
          };
          autograd::GradcheckOptions go;
          go.raise_exception = true;
          autograd::gradcheck(fn, inputs, go);
          add("gradcheck", Status::Pass, {});
        } catch (const std::exception& e) {
          add("gradcheck", Status::Fail, std::string("gradcheck (float64, finite differences) on the device: ") +
                                             e.what());
        }
      }
    }
  }
  return r;
}

}  // namespace tessera::kit
