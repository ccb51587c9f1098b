// cdev_demo: the program for the C99 plugin of ../example_c (a plugin-only
// project, which builds no program). Loads libtessera-cdev.so given on the
// command line and calls its op cdev::axpby(x, y, *, alpha=1.0, beta=1.0) =
// alpha x + beta y on "cdev" and on "cpu", by name (ops::call, keywords) and
// through a typed handle (ops::TypedOp), then checks its gradients: backward on
// "cdev", and finite differences (gradcheck, gradgradcheck) on "cpu". Exits 0
// on success.
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
    std::cerr << "usage: cdev_demo <path to libtessera-cdev.so>\n";
    return 2;
  }
  try {
    const PluginInfo cdev = load_plugin(argv[1]);
    for (const PluginOpInfo& op : cdev.ops) std::cout << "op " << op.schema << "  [" << op.derivative_text << "]\n";
    const Device dev("cdev");
    bool ok = true;

    // Broadcasting: x is 2x3, y is 3; the kernel sees both as 2x3.
    const Tensor x = arange(6, kFloat).view({2, 3}), y = tensor({10.0f, 20.0f, 30.0f});
    const Tensor want = x * 2 + y * -0.5;  // core ops on cpu: the reference
    const Tensor z = ops::call("cdev::axpby", {x.to(dev), y.to(dev)}, {{"alpha", 2.0}, {"beta", -0.5}})[0];
    std::cout << "  axpby on cdev: " << z.cpu() << "\n";
    ok &= report("axpby on cdev, keywords, broadcast", z.device() == dev && allclose(z.cpu(), want));
    // The defaults (alpha = beta = 1), through a typed handle, with the plugin's cpu kernel.
    const ops::TypedOp<Tensor(const Tensor&, const Tensor&)> axpby("cdev::axpby");
    ok &= report("axpby on cpu, defaults", allclose(axpby(x, y), x + y));
    // Dtypes promote as for add: float32 with float64 gives float64 (on cpu:
    // converting on cdev would need a copy_ kernel, which cdev lacks).
    const Tensor mixed = axpby(x, y.to(kDouble));
    ok &= report("float32 with float64 promotes to float64", mixed.scalar_type() == kDouble);

    // Backward on cdev: the derivative's steps mul(grad, alpha) and
    // mul(grad, beta) run there, with cdev's mul kernel. In float64 and with
    // equal shapes: alpha becomes a 0-d float64 tensor, which a float32 mul
    // would first convert (copy_), and undoing a broadcast needs sum; cdev has
    // neither kernel.
    const Tensor a = tensor({1.0, 2.0, 3.0}).to(dev).requires_grad_();
    const Tensor b = tensor({4.0, 5.0, 6.0}).to(dev).requires_grad_();
    const Tensor g = tensor({1.0, -1.0, 0.5});
    ops::call("cdev::axpby", {a, b}, {{"alpha", 3.0}, {"beta", -2.0}})[0].backward(g.to(dev));
    ok &= report("backward on cdev: grad x = alpha g", allclose(a.grad().cpu(), g * 3.0));
    ok &= report("backward on cdev: grad y = beta g", allclose(b.grad().cpu(), g * -2.0));

    // Finite differences on cpu in float64, with broadcasting (the engine sums
    // y's gradient over the broadcast dimension): first and second derivatives.
    const Tensor xc = randn({2, 3}, std::nullopt, kDouble).requires_grad_();
    const Tensor yc = randn({3}, std::nullopt, kDouble).requires_grad_();
    const autograd::GradcheckFn fn = [](const autograd::variable_list& in) -> autograd::variable_list {
      return ops::call("cdev::axpby", {in[0], in[1]}, {{"alpha", 0.75}, {"beta", -1.5}});
    };
    ok &= report("gradcheck (finite differences)", autograd::gradcheck(fn, {xc, yc}));
    ok &= report("gradgradcheck (finite differences)", autograd::gradgradcheck(fn, {xc, yc}));

    std::cout << (ok ? "cdev ok" : "cdev WRONG") << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "cdev_demo: " << e.what() << "\n";
    return 1;
  }
}
