// gradcheck / gradgradcheck: autograd's Jacobian against central differences in float64.
#include <tessera/autograd/gradcheck.h>
#include <tessera/error.h>
#include <tessera/ops/random.h>

#include <cmath>

namespace tessera::autograd {
namespace {

// Multi-index of flat element k of shape `sizes`, applied with select() so that
// any strides and any device work.
Tensor element_view(const Tensor& t, int64_t k) {
  Tensor v = t;
  DimVector idx(static_cast<size_t>(t.dim()));
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t s = t.size(d);
    idx[d] = k % s;
    k /= s;
  }
  for (int64_t d = 0; d < t.dim(); ++d) v = v.select(0, idx[d]);
  return v;
}

std::vector<double> flat_values(const Tensor& t) { return t.detach().to(kDouble).to_vector<double>(); }

struct Outputs {
  std::vector<Tensor> tensors;  // the differentiable outputs
  std::vector<size_t> offsets;  // row offset of each in the Jacobian
  size_t rows = 0;
};

Outputs differentiable_outputs(const variable_list& outs) {
  Outputs o;
  for (const Tensor& t : outs) {
    if (!t.defined() || !t.is_floating_point()) continue;
    o.offsets.push_back(o.rows);
    o.tensors.push_back(t);
    o.rows += static_cast<size_t>(t.numel());
  }
  return o;
}

bool fail(const GradcheckOptions& opt, const std::string& msg) {
  if (opt.raise_exception) throw AutogradError(msg);
  return false;
}

}  // namespace

bool gradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& opt) {
  std::vector<size_t> diff;  // indices of inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    TSR_CHECK(x.scalar_type() == kDouble, AutogradError, "gradcheck: input ", i, " is ", dtype_name(x.scalar_type()),
              "; finite differences need float64 inputs");
    diff.push_back(i);
  }
  TSR_CHECK(!diff.empty(), AutogradError, "gradcheck: no input requires grad");

  // Analytical: one vector-Jacobian product per output element.
  variable_list outs = fn(inputs);
  Outputs o = differentiable_outputs(outs);
  std::vector<Tensor> diff_inputs;
  for (size_t i : diff) diff_inputs.push_back(inputs[i]);
  std::vector<std::vector<std::vector<double>>> analytic(diff.size());  // [input][row][elem]
  for (size_t a = 0; a < diff.size(); ++a) analytic[a].assign(o.rows, std::vector<double>(size_t(diff_inputs[a].numel()), 0.0));
  std::vector<Tensor> active, grads_seed;
  for (const Tensor& t : o.tensors)
    if (t.requires_grad()) active.push_back(t);
  for (size_t oi = 0; oi < o.tensors.size(); ++oi) {
    const Tensor& out = o.tensors[oi];
    if (!out.requires_grad()) continue;
    for (int64_t e = 0; e < out.numel(); ++e) {
      std::vector<Tensor> seeds;
      for (const Tensor& t : active) {
        Tensor z = zeros(t.sizes(), TensorOptions(t.scalar_type()).device(t.device()));
        if (t.is_same(out)) element_view(z, e).fill_(1);
        seeds.push_back(z);
      }
      std::vector<Tensor> g = grad(active, diff_inputs, seeds, /*retain_graph=*/true, false, /*allow_unused=*/true);
      for (size_t a = 0; a < diff.size(); ++a) {
        if (!g[a].defined()) continue;
        TSR_CHECK(g[a].sizes().equals(diff_inputs[a].sizes()), AutogradError, "gradcheck: the gradient of input ",
                  diff[a], " has shape ", g[a].sizes(), " but the input has shape ", diff_inputs[a].sizes());
        std::vector<double> v = flat_values(g[a]);
        for (size_t k = 0; k < v.size(); ++k) analytic[a][o.offsets[oi] + size_t(e)][k] = v[k];
      }
    }
  }
  if (opt.check_undefined_grad && !active.empty()) {
    // Zero output gradients must give zero (or no) input gradients.
    std::vector<Tensor> zero_seeds;
    for (const Tensor& t : active) zero_seeds.push_back(zeros(t.sizes(), TensorOptions(t.scalar_type()).device(t.device())));
    std::vector<Tensor> g = grad(active, diff_inputs, zero_seeds, /*retain_graph=*/true, false, /*allow_unused=*/true);
    for (size_t a = 0; a < g.size(); ++a) {
      if (!g[a].defined()) continue;
      for (double v : flat_values(g[a]))
        if (v != 0.0)
          return fail(opt, detail::str("gradcheck: zero output gradients gave a non-zero gradient (", v,
                                       ") for input ", diff[a]));
    }
  }
  outs.clear();
  active.clear();
  o.tensors.clear();

  // Numerical: central differences, perturbing each input element in place.
  for (size_t a = 0; a < diff.size(); ++a) {
    Tensor x = diff_inputs[a].detach();
    for (int64_t k = 0; k < x.numel(); ++k) {
      Tensor xk = element_view(x, k);
      const double orig = xk.item<double>();
      std::vector<double> plus, minus;
      {
        NoGradGuard no_grad;
        xk.fill_(orig + opt.eps);
        Outputs op = differentiable_outputs(fn(inputs));
        for (const Tensor& t : op.tensors) {
          auto v = flat_values(t);
          plus.insert(plus.end(), v.begin(), v.end());
        }
        xk.fill_(orig - opt.eps);
        Outputs om = differentiable_outputs(fn(inputs));
        for (const Tensor& t : om.tensors) {
          auto v = flat_values(t);
          minus.insert(minus.end(), v.begin(), v.end());
        }
        xk.fill_(orig);
      }
      TSR_CHECK(plus.size() == o.rows && minus.size() == o.rows, AutogradError,
                "gradcheck: the function's outputs changed size between calls");
      for (size_t r = 0; r < o.rows; ++r) {
        const double num = (plus[r] - minus[r]) / (2 * opt.eps);
        const double ana = analytic[a][r][size_t(k)];
        if (!(std::abs(ana - num) <= opt.atol + opt.rtol * std::abs(num)))
          return fail(opt, detail::str("gradcheck: Jacobian mismatch for output element ", r, " with respect to input ",
                                       diff[a], " element ", k, ": numerical ", num, ", analytical ", ana,
                                       " (atol ", opt.atol, ", rtol ", opt.rtol, ")"));
      }
    }
  }
  return true;
}

bool gradgradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& opt, uint64_t seed) {
  variable_list outs = fn(inputs);
  std::vector<Tensor> grad_outputs;
  Generator gen(seed);
  for (const Tensor& t : differentiable_outputs(outs).tensors)
    if (t.requires_grad()) grad_outputs.push_back(randn(t.sizes(), gen, TensorOptions(kDouble).device(t.device())).requires_grad_());
  outs.clear();
  const size_t n = inputs.size();
  GradcheckFn first_order = [&fn, n](const variable_list& all) {
    EnableGradGuard grad_on;  // also when gradcheck evaluates it under no_grad
    variable_list xs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    variable_list gos(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    variable_list ys = fn(xs);
    std::vector<Tensor> act;
    for (const Tensor& t : differentiable_outputs(ys).tensors)
      if (t.requires_grad()) act.push_back(t);
    std::vector<Tensor> diff_inputs;
    for (const Tensor& x : xs)
      if (x.defined() && x.requires_grad()) diff_inputs.push_back(x);
    std::vector<Tensor> g = grad(act, diff_inputs, gos, true, /*create_graph=*/true, /*allow_unused=*/true);
    for (size_t i = 0; i < g.size(); ++i)
      if (!g[i].defined()) g[i] = zeros_like(diff_inputs[i]);
    return g;
  };
  variable_list all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  return gradcheck(first_order, all, opt);
}

}  // namespace tessera::autograd
