// toy_demo: loads the toy plugin given on the command line, moves a tensor to the
// "toy" device, adds it to itself there (the plugin's kernel) and checks the
// result on the CPU. Exits 0 on success.
#include <tessera/tessera.h>

#include <iostream>

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc != 2) {
    std::cerr << "usage: toy_demo <path to libtessera-toy.so>\n";
    return 2;
  }
  try {
    const PluginInfo toy = load_plugin(argv[1]);
    const Tensor a = arange(4, kFloat).to(Device("toy"));  // bytes copied by the plugin
    const Tensor sum = (a + a).cpu();                      // add runs on "toy"
    std::cout << "plugin " << toy.name << " " << toy.version << ": " << sum << "\n";
    const bool ok = sum.to_vector<float>() == std::vector<float>{0, 2, 4, 6};
    std::cout << (ok ? "toy ok" : "toy WRONG") << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "toy_demo: " << e.what() << "\n";
    return 1;
  }
}
