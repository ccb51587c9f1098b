// The core used from many threads at once: dispatch of every kind of op,
// backward on independent graphs, into one shared leaf and through one shared
// graph, and plugin loading and queries. Each test checks its results against
// values computed by hand, so it catches wrong answers as well as crashes; under
// ThreadSanitizer (scripts/sanitize.sh tsan) it also catches data races. Every
// test runs in its own process (gtest_discover_tests), so the first one that
// touches plugins sees none loaded.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace tessera;

namespace {

constexpr int kThreads = 8;

// Runs body(thread_index) on kThreads threads that start together.
void run_together(const std::function<void(int)>& body) {
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  for (auto& th : threads) th.join();
}

std::vector<double> vals(const Tensor& t) { return t.to(kDouble).contiguous().to_vector<double>(); }

std::vector<std::string> plugin_names() {
  std::vector<std::string> names;
  for (const PluginInfo& p : plugins()) names.push_back(p.name);
  return names;
}

}  // namespace

TEST(Threads, DefaultPluginsLoadOnceWhenManyThreadsAskFirst) {
  // Nothing in this process has touched a plugin yet: every thread's first
  // call races to trigger the default loading, which must happen exactly once.
  std::vector<std::vector<std::string>> seen(kThreads);
  std::vector<float> sums(kThreads);
  run_together([&](int t) {
    if (t % 2 == 0) seen[t] = plugin_names();
    sums[t] = (ones({4}, TensorOptions().device(Device("cpu"))) * float(t)).sum().item<float>();
    if (t % 2 == 1) seen[t] = plugin_names();
  });
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(seen[t], seen[0]) << "thread " << t;
    EXPECT_EQ(std::count(seen[t].begin(), seen[t].end(), "cpu"), 1) << "thread " << t;
    EXPECT_EQ(sums[t], 4.0f * t);
  }
  EXPECT_TRUE(plugin_load_errors().empty());
}

TEST(Threads, EveryKindOfOpDispatchesConcurrently) {
  std::atomic<int> wrong{0};
  auto check = [&](bool ok) {
    if (!ok) ++wrong;
  };
  run_together([&](int t) {
    const double k = t + 1;
    for (int rep = 0; rep < 50; ++rep) {
      // The pointwise lane: same dtype, same shape, contiguous.
      const Tensor a = full({8}, k), b = full({8}, double(rep));
      check(vals(a + b) == std::vector<double>(8, k + rep));
      // Promotion (int64 with a float scalar) and broadcasting.
      const Tensor i = arange(4);
      check(vals(i * 0.5 + tensor({1.0f}).view({1, 1})) == std::vector<double>{1, 1.5, 2, 2.5});
      // A structured reduction over a transposed view, and a copy to contiguous.
      const Tensor m = arange(6, kFloat).view({2, 3}).t();
      check(vals(m.sum({1})) == std::vector<double>{3, 5, 7});
      check(vals(m.contiguous()) == std::vector<double>{0, 3, 1, 4, 2, 5});
      // BLAS: [[k, 0], [0, k]] @ [[1, 2], [3, 4]].
      const Tensor d = tensor({k, 0.0, 0.0, k}).view({2, 2});
      check(vals(d.mm(tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2}))) == std::vector<double>{k, 2 * k, 3 * k, 4 * k});
      // A data-dependent output.
      check(vals(tensor({0.0, k, 0.0, 1.0}).nonzero().view({-1})) == std::vector<double>{1, 3});
      // The meta device: shapes only.
      const Tensor meta = zeros({1 << 20, 3}, TensorOptions().device(Device("meta")));
      check(meta.sum({0}).sizes().size() == 1 && meta.sum({0}).sizes()[0] == 3);
      // dtype conversion through the host.
      check(vals(full({3}, k, TensorOptions(kHalf)).to(kInt)) == std::vector<double>(3, k));
      // An error on one thread leaves the others alone.
      try {
        (void)(ones({2}) + ones({3}));
        ++wrong;
      } catch (const ValueError&) {
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, BackwardOnIndependentGraphs) {
  std::atomic<int> wrong{0};
  run_together([&](int t) {
    for (int rep = 0; rep < 20; ++rep) {
      // y = sum(exp(x) * (t + 1)) + sum(x @ w): dy/dx = exp(x) * (t + 1) + w summed over its columns.
      Tensor x = tensor({0.0, 0.5 * t, double(rep) / 20, -1.0}).view({2, 2}).requires_grad_();
      const Tensor w = tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2});
      const Tensor y = (x.exp() * double(t + 1)).sum() + x.mm(w).sum();
      y.backward();
      const std::vector<double> xs = {0.0, 0.5 * t, double(rep) / 20, -1.0};
      const double row[2] = {1.0 + 2.0, 3.0 + 4.0};
      const std::vector<double> g = vals(x.grad());
      for (int j = 0; j < 4; ++j)
        if (std::abs(g[j] - (std::exp(xs[j]) * (t + 1) + row[j % 2])) > 1e-12) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, BackwardIntoOneSharedLeafAccumulates) {
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  constexpr int kReps = 25;
  run_together([&](int t) {
    for (int rep = 0; rep < kReps; ++rep) (w * double(t)).sum().backward();  // adds t to each element
  });
  double want = 0;
  for (int t = 0; t < kThreads; ++t) want += double(t) * kReps;
  EXPECT_EQ(vals(w.grad()), std::vector<double>(3, want));
}

TEST(Threads, BackwardThroughOneSharedGraph) {
  // h's node is shared by every thread's graph; retain_graph keeps its saved
  // tensors for the other threads' passes.
  Tensor w = tensor({1.0, -2.0}).requires_grad_();
  const Tensor h = w * w;  // dh/dw = 2w
  constexpr int kReps = 10;
  run_together([&](int t) {
    for (int rep = 0; rep < kReps; ++rep) (h * double(t + 1)).sum().backward({}, /*retain_graph=*/true);
  });
  double scale = 0;  // sum over threads and reps of (t + 1)
  for (int t = 0; t < kThreads; ++t) scale += double(t + 1) * kReps;
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{2 * 1.0 * scale, 2 * -2.0 * scale}));
}

TEST(Threads, PluginLoadsAndQueriesFromManyThreads) {
  load_default_plugins();
  std::string cpu_path;
  for (const PluginInfo& p : plugins())
    if (p.name == "cpu") cpu_path = p.path;
  ASSERT_FALSE(cpu_path.empty());
  const std::vector<std::string> before = plugin_names();
  std::atomic<int> wrong{0};
  run_together([&](int t) {
    for (int rep = 0; rep < 10; ++rep) {
      switch ((t + rep) % 4) {
        case 0:  // loading a loaded file again is a no-op that describes it
          if (load_plugin(cpu_path).name != "cpu") ++wrong;
          break;
        case 1:  // a refused plugin leaves nothing behind, whoever else is loading
          try {
            load_plugin(TSRTEST_BAD_MAJOR);
            ++wrong;
          } catch (const PluginError&) {
          }
          break;
        case 2:
          if (info_text().find("cpu") == std::string::npos || devices().empty()) ++wrong;
          break;
        default:
          if ((ones({3}) * 2.0f).sum().item<float>() != 6.0f) ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(plugin_names(), before);
}

TEST(Threads, PluginLoadAndUnloadWhileOtherThreadsDispatch) {
  load_default_plugins();
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread loader([&] {
    for (int rep = 0; rep < 20; ++rep) {
      const PluginInfo p = load_plugin(TSRTEST_DLPACK_EXT);
      if (rep % 2 == 0) {  // a tensor on the plugin's device keeps it loaded past unload
        Tensor on_ext = ones({4}).to(Device(p.device_types.at(0) + ":1"));
        unload_plugin(p.name);
        if (vals(on_ext.cpu()) != std::vector<double>(4, 1.0)) ++wrong;
      } else {
        unload_plugin(p.name);
      }
    }
    done = true;
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads - 1; ++t)
    workers.emplace_back([&, t] {
      while (!done) {
        if ((full({5}, double(t)) + 1.0).sum().item<double>() != 5.0 * (t + 1)) ++wrong;
        (void)plugin_names();
        (void)devices();
      }
    });
  loader.join();
  for (auto& th : workers) th.join();
  EXPECT_EQ(wrong.load(), 0);
}
