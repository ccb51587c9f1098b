// One SGD training step of a 2-layer MLP, float32 on the CPU:
//   x [256, 512] -> Linear(512, 512) -> ReLU -> Linear(512, 10) -> cross_entropy(y [256])
// (a) autograd   nn::Linear + nn::ReLU, cross_entropy, loss.backward(), optim::SGD
// (b) manual     the same step written by hand with the same tessera ops: the
//                same forward, the gradients with mm/sum/softmax/mul by the chain
//                rule, the same in-place update p.add_(grad, -lr)
// Target: time(a) / time(b) <= 1.15 (the cost of recording and running the graph).
// Run: build/release/bin/tessera_bench_mlp_step
//   BM_mlp_step_autograd / BM_mlp_step_manual time each side alone;
//   BM_mlp_step_ratio alternates (a) and (b) in every iteration, so machine drift
//   hits both alike, and reports the counters a_us, b_us and ratio = a / b (the
//   ratio of the summed times). The table at the end repeats it.
#include <benchmark/benchmark.h>
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/tessera.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace tessera;

namespace {

constexpr int64_t kBatch = 256, kIn = 512, kHidden = 512, kClasses = 10;
constexpr double kLr = 0.01;

struct Data {
  Tensor x, y, y_onehot;
};

Data make_data() {
  Generator gen(1);
  Data d;
  d.x = randn({kBatch, kIn}, gen);
  d.y = randint(kClasses, {kBatch}, gen);
  d.y_onehot = one_hot(d.y, kClasses).to(kFloat);
  return d;
}

// (a): the library way.
struct AutogradStep {
  std::shared_ptr<nn::Linear> fc1 = std::make_shared<nn::Linear>(kIn, kHidden, true, kFloat, Generator(2));
  std::shared_ptr<nn::Linear> fc2 = std::make_shared<nn::Linear>(kHidden, kClasses, true, kFloat, Generator(3));
  nn::Sequential model{fc1, std::make_shared<nn::ReLU>(), fc2};
  optim::SGD opt{model.parameters(), optim::SGDOptions{kLr}};

  Tensor run(const Data& d) {
    opt.zero_grad();
    Tensor loss = cross_entropy(model.forward(d.x), d.y);
    loss.backward();
    opt.step();
    return loss;
  }
};

// (b): the same computation by hand. The parameters do not require grad, so no
// graph is recorded; the forward calls the ops nn::Linear calls.
struct ManualStep {
  Tensor w1, b1, w2, b2;
  ManualStep() {
    nn::Linear l1(kIn, kHidden, true, kFloat, Generator(2)), l2(kHidden, kClasses, true, kFloat, Generator(3));
    w1 = l1.weight().detach();
    b1 = l1.bias().detach();
    w2 = l2.weight().detach();
    b2 = l2.bias().detach();
  }
  static Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) { return addmm(b, x, w.t()); }

  Tensor run(const Data& d) {
    const Tensor h = linear(d.x, w1, b1).relu();
    const Tensor logits = linear(h, w2, b2);
    Tensor loss = cross_entropy(logits, d.y);
    // d loss / d logits of the mean cross-entropy: (softmax - onehot) / batch.
    const Tensor g_logits = (softmax(logits, 1) - d.y_onehot) / double(kBatch);
    const Tensor g_w2 = g_logits.t().mm(h);
    const Tensor g_b2 = g_logits.sum({0});
    const Tensor g_h = g_logits.mm(w2) * h.gt(0).to(kFloat);  // relu'(x) = [x > 0]
    const Tensor g_w1 = g_h.t().mm(d.x);
    const Tensor g_b1 = g_h.sum({0});
    w1.add_(g_w1, -kLr);
    b1.add_(g_b1, -kLr);
    w2.add_(g_w2, -kLr);
    b2.add_(g_b2, -kLr);
    return loss;
  }
};

void BM_mlp_step_autograd(benchmark::State& s) {
  const Data d = make_data();
  AutogradStep a;
  for (auto _ : s) benchmark::DoNotOptimize(a.run(d).data_ptr());
}
BENCHMARK(BM_mlp_step_autograd)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_mlp_step_manual(benchmark::State& s) {
  const Data d = make_data();
  ManualStep b;
  for (auto _ : s) benchmark::DoNotOptimize(b.run(d).data_ptr());
}
BENCHMARK(BM_mlp_step_manual)->Unit(benchmark::kMicrosecond)->UseRealTime();

double g_ratio = 0, g_a_us = 0, g_b_us = 0;

void BM_mlp_step_ratio(benchmark::State& s) {
  using clock = std::chrono::steady_clock;
  const Data d = make_data();
  AutogradStep a;
  ManualStep b;
  double ta = 0, tb = 0;
  for (auto _ : s) {
    const auto t0 = clock::now();
    benchmark::DoNotOptimize(a.run(d).data_ptr());
    const auto t1 = clock::now();
    benchmark::DoNotOptimize(b.run(d).data_ptr());
    const auto t2 = clock::now();
    ta += std::chrono::duration<double, std::micro>(t1 - t0).count();
    tb += std::chrono::duration<double, std::micro>(t2 - t1).count();
  }
  const double n = double(s.iterations());
  s.counters["a_us"] = ta / n;
  s.counters["b_us"] = tb / n;
  s.counters["ratio"] = ta / tb;
  g_a_us = ta / n;
  g_b_us = tb / n;
  g_ratio = ta / tb;
}
BENCHMARK(BM_mlp_step_ratio)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("TESSERA_PLUGIN_PATH") == nullptr) setenv("TESSERA_PLUGIN_PATH", TSR_BENCH_PLUGIN_DIR, 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  if (g_ratio > 0)
    std::printf("\nmlp_step (batch %ld, %ld -> %ld -> %ld, SGD): autograd %.1f us, manual %.1f us, ratio %.3f "
                "(target <= 1.15)\n",
                long(kBatch), long(kIn), long(kHidden), long(kClasses), g_a_us, g_b_us, g_ratio);
  benchmark::Shutdown();
  return 0;
}
