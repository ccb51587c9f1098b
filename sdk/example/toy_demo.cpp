// toy_demo: loads the toy plugin given on the command line, moves a tensor to the
// "toy" device, adds it to itself there (the plugin's kernel) and checks the
// result on the CPU. Then it calls the plugin's own op toy::fused_gelu on
// "toy" and on "cpu" (ops::TypedOp, ops::call, its in-place variant, out=),
// runs backward and double backward through the op's derivative on "toy", and
// checks values and gradients against the core's gelu(x, approximate="tanh")
// and against finite differences (gradcheck, gradgradcheck). Exits 0 on success.
#include <tessera/ops/call.h>
#include <tessera/tessera.h>

#include <iostream>
#include <string>

namespace {

bool report(const std::string& what, bool ok) {
  std::cout << (ok ? "  ok     " : "  WRONG  ") << what << "\n";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc != 2) {
    std::cerr << "usage: toy_demo <path to libtessera-toy.so>\n";
    return 2;
  }
  try {
    const PluginInfo toy = load_plugin(argv[1]);
    const Device dev("toy");
    const Tensor a = arange(4, kFloat).to(dev);  // bytes copied by the plugin
    const Tensor sum = (a + a).cpu();            // add runs on "toy"
    std::cout << "plugin " << toy.name << " " << toy.version << ": " << sum << "\n";
    bool ok = report("add on toy", sum.to_vector<float>() == std::vector<float>{0, 2, 4, 6});

    // ---- the plugin's op ----
    for (const PluginOpInfo& op : toy.ops) std::cout << "op " << op.schema << "  [" << op.derivative_text << "]\n";
    // A typed handle: looked up and checked against the schema once.
    const ops::TypedOp<Tensor(const Tensor&)> fused_gelu("toy::fused_gelu");
    const Tensor x = tensor({-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f});
    const Tensor want = gelu(x, "tanh");  // the core's op on cpu: the reference
    ok &= report("fused_gelu on toy matches gelu(x, 'tanh')", allclose(fused_gelu(x.to(dev)).cpu(), want, 1e-5, 1e-6));
    ok &= report("fused_gelu on cpu (the plugin's cpu kernel)", allclose(fused_gelu(x), want, 1e-5, 1e-6));
    // By name, with its in-place variant and out=.
    Tensor t = x.to(dev);
    ops::call("toy::fused_gelu_", {t});
    ok &= report("toy::fused_gelu_ writes its argument", allclose(t.cpu(), want, 1e-5, 1e-6));
    Tensor out = empty({7}, kFloat);
    ops::call("toy::fused_gelu", {x}, {{"out", out}});
    ok &= report("out= on cpu", allclose(out, want, 1e-5, 1e-6));

    // Backward on toy: toy::fused_gelu_backward runs there. The reference is
    // the gradient of the core's gelu.
    const Tensor g = tensor({1.0f, 2.0f, -1.0f, 0.5f, 1.0f, 3.0f, -2.0f});
    const Tensor xt = x.to(dev).requires_grad_();
    fused_gelu(xt).backward(g.to(dev));
    const Tensor xr = x.clone().requires_grad_();
    gelu(xr, "tanh").backward(g);
    std::cout << "  grad on toy: " << xt.grad().cpu() << "\n";
    ok &= report("backward on toy matches the core's gelu", allclose(xt.grad().cpu(), xr.grad(), 1e-5, 1e-6));

    // Double backward on toy, in float64: grad with create_graph records
    // toy::fused_gelu_backward, whose backward is toy::fused_gelu_double_backward.
    const Tensor x64 = x.to(kDouble), g64 = g.to(kDouble);
    const Tensor xd = x64.to(dev).requires_grad_();
    const Tensor d1 = autograd::grad({fused_gelu(xd)}, {xd}, {g64.to(dev)}, std::nullopt, true)[0];
    d1.backward(g64.to(dev));
    const Tensor xe = x64.clone().requires_grad_();
    autograd::grad({gelu(xe, "tanh")}, {xe}, {g64}, std::nullopt, true)[0].backward(g64);
    ok &= report("double backward on toy matches the core's gelu", allclose(xd.grad().cpu(), xe.grad(), 1e-9, 1e-12));

    // Finite differences, on cpu in float64 (gradcheck perturbs its inputs
    // with ops the toy device lacks): first and second derivatives.
    const Tensor xc = tensor({-2.5, -0.7, 0.0, 0.3, 1.9}).requires_grad_();
    const autograd::GradcheckFn fn = [&](const autograd::variable_list& in) -> autograd::variable_list {
      return {fused_gelu(in[0])};
    };
    ok &= report("gradcheck (finite differences)", autograd::gradcheck(fn, {xc}));
    ok &= report("gradgradcheck (finite differences)", autograd::gradgradcheck(fn, {xc}));

    std::cout << (ok ? "toy ok" : "toy WRONG") << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "toy_demo: " << e.what() << "\n";
    return 1;
  }
}
