// `tessera demo`: loads every plugin found, prints what `tessera info` prints,
// then runs a few ops on each available device and checks them against the CPU.
#include <tessera/tessera.h>

#include <iostream>

using namespace tessera;

namespace {

void demo_on(Device dev) {
  std::cout << "\n=== device " << dev << " ===\n";
  const Tensor a = arange(6, TensorOptions(kFloat).device(dev)).view({2, 3});
  const Tensor b = tensor({10.0, 20.0, 30.0}, TensorOptions(kFloat)).to(dev);
  const Tensor sum_ab = a + b;  // broadcasting [2, 3] + [3]
  const Tensor prod = a.matmul(a.t());
  const Tensor s = sum_ab.sum({1}, /*keepdim=*/true);
  const Tensor r = (a - 2.5).relu().exp();
  std::cout << "a = arange(6).view({2, 3}):\n" << a << "\n";
  std::cout << "a + [10, 20, 30]:\n" << sum_ab << "\n";
  std::cout << "a @ a.t():\n" << prod << "\n";
  std::cout << "(a + b).sum(dim=1, keepdim=True):\n" << s << "\n";
  std::cout << "exp(relu(a - 2.5)):\n" << r << "\n";
  if (dev.type_name() != "cpu" && dev.type_name() != "meta") {
    const Tensor ref = arange(6, kFloat).view({2, 3}).matmul(arange(6, kFloat).view({2, 3}).t());
    std::cout << "matches cpu: " << (allclose(prod.cpu(), ref) ? "yes" : "NO") << "\n";
  }
}

}  // namespace

int run_demo() {
  load_default_plugins();
  std::cout << info_text();
  int failures = 0;
  for (const Device& dev : devices()) {
    try {
      demo_on(dev);
    } catch (const Error& e) {
      ++failures;
      std::cout << "  (" << dev << ": " << e.what() << ")\n";
    }
  }
  std::cout << "\n" << devices().size() << " device(s) tried, " << failures << " could not run every op\n";
  return 0;
}
