// `tessera demo`: loads the plugins, prints their summary, then trains a small
// MLP classifier (2 -> 64 -> 64 -> 2, ReLU, cross-entropy, Adam) on two
// interleaved spirals, full batch, on the device named on the command line
// (`tessera demo sim`) or else the best device present (cuda when a device is
// available, else cpu). Shows a progress bar on a terminal (periodic
// lines otherwise) and a summary. Exit code 0 when the training accuracy
// reaches 95%, 1 otherwise.
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/tessera.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numbers>
#include <string>

using namespace tessera;

namespace {

constexpr uint64_t kSeed = 20241121;
constexpr int64_t kPointsPerClass = 500;
constexpr int kSteps = 1000;
constexpr double kTarget = 0.95;  // required training accuracy

void print_plugins() {
  std::cout << "plugins:\n";
  for (const PluginInfo& p : plugins())
    std::cout << "  " << p.name << " " << p.version << " (ABI " << p.abi_major << "." << p.abi_minor << ")  "
              << p.path << "\n";
  for (const std::string& e : plugin_load_errors()) std::cout << "  (not loaded: " << e << ")\n";
  std::cout << "device types:\n";
  for (const DeviceTypeSummary& d : device_types()) {
    std::cout << "  " << d.name << " [" << d.plugin << "]: " << d.device_count << " device(s)";
    if (d.device_count == 0 && !d.unavailable_reason.empty()) std::cout << " (" << d.unavailable_reason << ")";
    std::cout << "\n";
  }
}

// Whether one training step of a tiny model runs on `dev`: a device may be
// present without kernels for every op training needs.
bool can_train_on(const Device& dev, std::string& why) {
  try {
    nn::Linear probe(2, 2, true, TensorOptions(kFloat).device(dev));
    Tensor loss = cross_entropy(probe.forward(ones({4, 2}, TensorOptions(kFloat).device(dev))).relu(),
                                zeros({4}, TensorOptions(kLong).device(dev)));
    loss.backward();
    return true;
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
}

// cuda:0 when the cuda plugin reports a device that can train, else cpu.
Device best_device() {
  for (const DeviceTypeSummary& d : device_types()) {
    if (d.name != "cuda" || d.device_count == 0) continue;
    std::string why;
    if (can_train_on(Device("cuda:0"), why)) return Device("cuda:0");
    std::cout << "cuda:0 is present but cannot train yet, using cpu: " << why.substr(0, why.find('\n')) << "\n";
  }
  return Device("cpu");
}

const PluginInfo* plugin_of(const Device& dev) {
  static const std::vector<PluginInfo> all = plugins();
  for (const DeviceTypeSummary& d : device_types())
    if (d.name == dev.type_name())
      for (const PluginInfo& p : all)
        if (p.name == d.plugin) return &p;
  return nullptr;
}

// Two interleaved spirals, 2.5 turns each, with a little Gaussian noise:
// x [2n, 2] float32, y [2n] int64 (class 0 then class 1).
std::pair<Tensor, Tensor> make_spirals(int64_t n, Generator gen) {
  const double turns = 2.5;
  const Tensor u = arange(n, kDouble) / double(n);                 // 0 .. 1
  const Tensor angle = u * (2 * std::numbers::pi * turns) + 0.5;  // radians
  const Tensor radius = u * 0.9 + 0.1;
  std::vector<Tensor> xs, ys;
  for (int k = 0; k < 2; ++k) {
    const Tensor a = angle + k * std::numbers::pi;  // the second arm is the first turned by 180 degrees
    xs.push_back(stack({radius * cos(a), radius * sin(a)}, 1));
    ys.push_back(full({n}, k, kLong));
  }
  const Tensor noise = randn({2 * n, 2}, gen, kDouble) * 0.02;
  return {(cat(xs, 0) + noise).to(kFloat), cat(ys, 0)};
}

double accuracy(const Tensor& logits, const Tensor& y) {
  return argmax(logits, 1).eq(y).sum().to(kDouble).item<double>() / double(y.numel());
}

void draw(bool tty, int step, double loss, double acc) {
  if (tty) {
    const int width = 30, filled = int(width * step / kSteps);
    std::printf("\r[%s%s] step %4d/%d  loss %.4f  accuracy %5.1f%%", std::string(filled, '#').c_str(),
                std::string(width - filled, '.').c_str(), step, kSteps, loss, 100 * acc);
  } else {
    std::printf("step %4d  loss %.4f  accuracy %5.1f%%\n", step, loss, 100 * acc);
  }
  std::fflush(stdout);
}

}  // namespace

int run_demo(const char* device) {
  // The model's tensors are tiny (1000 x 64): a step is ~2 ms, and fork-join
  // threads only add wake-up latency, which on a busy machine becomes waiting
  // for descheduled workers (2 cores with 2 other busy processes: 36 s with
  // threads, 2.6 s without). Set before the cpu plugin loads libgomp and
  // OpenBLAS, which read them once; values the user set win.
  setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  load_default_plugins();
  print_plugins();

  const Device dev = device != nullptr ? Device(device) : best_device();
  const PluginInfo* plugin = plugin_of(dev);
  std::cout << "\ntraining a 2-64-64-2 MLP on two spirals (" << 2 * kPointsPerClass << " points) on " << dev
            << "\n";

  auto [x, y] = make_spirals(kPointsPerClass, Generator(kSeed));
  x = x.to(dev);
  y = y.to(dev);
  const Generator init(kSeed + 1);
  nn::Sequential model{std::make_shared<nn::Linear>(2, 64, true, TensorOptions(kFloat).device(dev), init),
                       std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(64, 64, true, TensorOptions(kFloat).device(dev), init),
                       std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(64, 2, true, TensorOptions(kFloat).device(dev), init)};
  optim::AdamOptions opts;
  opts.lr = 0.01;
  optim::Adam opt(model.parameters(), opts);

  const bool tty = isatty(STDOUT_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  double loss_value = 0, acc = 0;
  for (int step = 1; step <= kSteps; ++step) {
    opt.zero_grad();
    const Tensor logits = model.forward(x);
    const Tensor loss = cross_entropy(logits, y);
    loss.backward();
    opt.step();
    // The accuracy of this step's logits (before the update), as a training loop reports it.
    const bool report = step % (tty ? 10 : 100) == 0 || step == kSteps;
    if (report) {
      autograd::NoGradGuard no_grad;
      loss_value = loss.item<double>();
      acc = accuracy(logits, y);
      draw(tty, step, loss_value, acc);
    }
  }
  if (tty) std::printf("\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Final figures: the trained model in eval mode over the whole training set.
  model.eval();
  {
    autograd::NoGradGuard no_grad;
    const Tensor logits = model.forward(x);
    loss_value = cross_entropy(logits, y).item<double>();
    acc = accuracy(logits, y);
  }
  std::printf("\nsummary\n");
  std::printf("  device:            %s\n", dev.str().c_str());
  if (plugin != nullptr)
    std::printf("  plugin:            %s %s (%s)\n", plugin->name.c_str(), plugin->version.c_str(),
                plugin->path.c_str());
  std::printf("  steps:             %d (%.0f steps/s)\n", kSteps, kSteps / seconds);
  std::printf("  final loss:        %.4f\n", loss_value);
  std::printf("  training accuracy: %.1f%% (target %.0f%%)\n", 100 * acc, 100 * kTarget);
  std::printf("  wall time:         %.2f s\n", seconds);
  if (acc < kTarget) {
    std::printf("FAILED: training accuracy below %.0f%%\n", 100 * kTarget);
    return 1;
  }
  return 0;
}
