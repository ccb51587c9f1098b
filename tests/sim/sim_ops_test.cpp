// The sim device through the public C++ API: every op of the library runs on
// Device("sim") and gives the cpu plugin's results bit for bit (sim runs the
// CPU plugin's kernels, on its worker threads, on memory the host reaches only
// through copies). The cases come from the op registry: each declared op is
// run with the per-op cases of tests/core/meta_cases_*.cpp, on cpu and on sim;
// richer inputs (random values, strided, broadcast, every dtype) follow for
// each family, then autograd and a training loop.
//
// This program sets TESSERA_SIM=devices=2,memory_mb=256 before anything loads
// the plugins (below), so that out of memory is reachable and two devices exist.
#include <gtest/gtest.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "meta_cases.h"

using namespace tessera;

namespace {

// Before main(): the plugins load at the first Device built from a name.
const bool kConfigured = [] { return setenv("TESSERA_SIM", "devices=2,memory_mb=256", 1) == 0; }();

Device sim(int index = 0) { return Device("sim:" + std::to_string(index)); }
const Device kCpu("cpu");

std::string describe(const Tensor& t) {
  std::string s = std::string(dtype_name(t.scalar_type())) + "[";
  for (size_t i = 0; i < t.sizes().size(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return s + "] " + t.device().str();
}

/// Whether `got` (on sim) holds exactly `want`'s (on cpu) shape, dtype and bytes.
::testing::AssertionResult same(const Tensor& want, const Tensor& got, const Device& device = sim()) {
  if (got.device() != device) return ::testing::AssertionFailure() << "on " << got.device().str();
  if (got.sizes().vec() != want.sizes().vec() || got.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << describe(got) << " vs cpu's " << describe(want);
  const Tensor a = want.contiguous(), b = got.cpu().contiguous();
  if (a.nbytes() != b.nbytes() || (a.nbytes() > 0 && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) != 0))
    return ::testing::AssertionFailure() << "values differ: " << describe(got);
  return ::testing::AssertionSuccess();
}

using Case = meta_cases::Case;

meta_cases::CaseMap registry_cases() {
  meta_cases::CaseMap c = meta_cases::all_cases();
  // Ops whose output shape depends on the data (meta cannot run them): sim runs
  // their kernels on the calling thread, after the stream.
  c["nonzero"] = {[](Device d) { return std::vector<Tensor>{tensor({0.f, 1.f, 0.f, 2.f}).to(d).nonzero()}; },
                  [](Device d) {
                    return std::vector<Tensor>{(arange(12, TensorOptions(kInt)).view({3, 4}).to(d).remainder(3).eq(0))
                                                   .nonzero()};
                  }};
  c["masked_select"] = {[](Device d) {
    const Tensor x = arange(6, TensorOptions(kDouble)).view({2, 3}).to(d);
    return std::vector<Tensor>{x.masked_select(x.gt(2.0))};
  }};
  return c;
}

// Outputs whose bytes are not defined (uninitialized memory).
bool unspecified_values(const std::string& op) { return op == "empty" || op == "empty_strided"; }

}  // namespace

TEST(SimOps, EveryOpGivesTheCpuResults) {
  ASSERT_TRUE(kConfigured);
  const meta_cases::CaseMap table = registry_cases();
  size_t ops = 0, runs = 0;
  for (const Operator* op : Dispatcher::instance().operators()) {
    SCOPED_TRACE(op->name());
    const auto it = table.find(op->name());
    if (it == table.end()) {
      ADD_FAILURE() << "op '" << op->name() << "' has no case (tests/core/meta_cases_*.cpp, or sim_ops_test.cpp)";
      continue;
    }
    ++ops;
    for (size_t i = 0; i < it->second.size(); ++i) {
      SCOPED_TRACE("case " + std::to_string(i));
      manual_seed(1234);  // random ops: the same (seed, offset) on both devices
      const std::vector<Tensor> on_cpu = it->second[i](kCpu);
      manual_seed(1234);
      std::vector<Tensor> on_sim;
      try {
        on_sim = it->second[i](sim());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "on sim: " << e.what();
        continue;
      }
      ++runs;
      ASSERT_EQ(on_cpu.size(), on_sim.size());
      for (size_t k = 0; k < on_cpu.size(); ++k) {
        if (unspecified_values(op->name())) {
          EXPECT_EQ(on_sim[k].sizes().vec(), on_cpu[k].sizes().vec());
          continue;
        }
        EXPECT_TRUE(same(on_cpu[k], on_sim[k])) << "output " << k;
      }
    }
  }
  EXPECT_GT(ops, 150u);
  EXPECT_GT(runs, 300u);
}

namespace {

// A case with real values: f gets the inputs on the device it runs on.
using Inputs = std::vector<Tensor>;
using Fn = std::function<std::vector<Tensor>(const Inputs&)>;

void check(const char* what, const Inputs& cpu_inputs, const Fn& f) {
  SCOPED_TRACE(what);
  Inputs on_sim;
  for (const Tensor& t : cpu_inputs) on_sim.push_back(t.to(sim()));
  manual_seed(99);
  const std::vector<Tensor> want = f(cpu_inputs);
  manual_seed(99);
  std::vector<Tensor> got;
  try {
    got = f(on_sim);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "on sim: " << e.what();
    return;
  }
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same(want[i], got[i])) << "output " << i;
}

Tensor rnd(IntArrayRef shape, ScalarType t = kFloat) {
  if (is_floating_type(t)) return randn(shape, std::nullopt, TensorOptions(kFloat)).to(t);
  if (t == kBool) return randint(0, 2, shape, std::nullopt, TensorOptions(kLong)).to(kBool);
  return randint(-50, 50, shape, std::nullopt, TensorOptions(kLong)).to(t);
}

constexpr std::array<ScalarType, 10> kAll = {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};
constexpr std::array<ScalarType, 4> kFloats = {kHalf, kBFloat16, kFloat, kDouble};

}  // namespace

TEST(SimOps, PointwiseOnRandomStridedAndBroadcastInputsOfEveryDtype) {
  manual_seed(5);
  for (ScalarType t : kAll) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor a = rnd({5, 7}, t), b = rnd({7}, t), c = rnd({7, 5}, t);
    check("add, mul, broadcast and transposed", {a, b, c}, [](const Inputs& x) {
      return std::vector<Tensor>{x[0] + x[1], x[0] * x[2].t(), maximum(x[0], x[2].t()), eq(x[0], x[1])};
    });
    if (t != kBool) {
      check("sub, neg, where, abs", {a, b, c}, [](const Inputs& x) {
        return std::vector<Tensor>{x[0] - x[1], neg(x[2]), where(gt(x[0], x[1]), x[0], x[1]), abs(x[0].t())};
      });
    }
    check("copy_ into every dtype", {a}, [](const Inputs& x) {
      std::vector<Tensor> out;
      for (ScalarType u : kAll) out.push_back(x[0].t().to(u));
      return out;
    });
  }
  for (ScalarType t : kFloats) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor a = rnd({4, 6}, t), b = rnd({4, 6}, t);
    check("floating unary and binary", {a, b}, [](const Inputs& x) {
      return std::vector<Tensor>{exp(x[0]),  log(abs(x[0]) + 1), sqrt(abs(x[1])), sigmoid(x[0]), tanh(x[1]),
                                 x[0] / x[1], gelu(x[0]),        pow(x[0], 2),     lerp(x[0], x[1], 0.25)};
    });
  }
  // Integer division, and in-place ops on a reversed view.
  const Tensor i = rnd({9}, kLong), j = rnd({9}, kLong).abs() + 1;
  check("integer floor division, in place on a flipped view", {i, j}, [](const Inputs& x) {
    Tensor y = x[0].clone();
    y.flip({0}).add_(x[1], 3);
    return std::vector<Tensor>{div(x[0], x[1], "floor"), div(x[0], x[1], "trunc"), y};
  });
}

TEST(SimOps, ReductionsLinalgShapeIndexingRandomAndNn) {
  manual_seed(6);
  const Tensor x = rnd({6, 8}), y = rnd({8, 5}), z = rnd({3, 6, 8}, kDouble);
  check("reductions", {x, z}, [](const Inputs& v) {
    return std::vector<Tensor>{sum(v[0]),          sum(v[0], {1}, true), mean(v[1], {0, 2}), amax(v[0], {0}),
                               argmax(v[0], 1),    var(v[1], {1}),       logsumexp(v[0], {1}), cumsum(v[0], 1),
                               prod(v[0].t(), {1}), norm(v[1])};
  });
  check("linalg", {x, y, z}, [](const Inputs& v) {
    return std::vector<Tensor>{mm(v[0], v[1]), matmul(v[0].t(), v[0]), addmm(mm(v[1].t(), v[0].t()), v[1].t(), v[0].t()),
                               bmm(v[2], v[2].transpose(1, 2)), mm(v[0].to(kInt), v[1].to(kInt))};
  });
  check("shape", {x, z}, [](const Inputs& v) {
    return std::vector<Tensor>{cat({v[0], v[0].flip({1})}, 0), v[1].permute({2, 0, 1}).contiguous(), tril(v[0], 1),
                               roll(v[0], {2}, {1}),          pad(v[0], {1, 2}),                      v[0].t().reshape({-1})};
  });
  const Tensor idx = randint(0, 6, {4, 8}, std::nullopt, TensorOptions(kLong));
  const Tensor rows = randint(0, 6, {5}, std::nullopt, TensorOptions(kLong));
  check("indexing", {x, idx, rows}, [](const Inputs& v) {
    const Tensor mask = v[0].gt(0);
    return std::vector<Tensor>{gather(v[0], 0, v[1]),
                               index_select(v[0], 0, v[2]),
                               scatter_add(zeros({6, 8}, TensorOptions(kFloat).device(v[0].device())), 0, v[1], v[0].narrow(0, 0, 4)),
                               index_add(v[0], 0, v[2], ones({5, 8}, TensorOptions(kFloat).device(v[0].device()))),
                               masked_fill(v[0], mask, -1.0),
                               masked_select(v[0], mask),
                               nonzero(mask),
                               take(v[0], v[1])};
  });
  check("random", {x}, [](const Inputs& v) {
    const TensorOptions o = TensorOptions(kFloat).device(v[0].device());
    return std::vector<Tensor>{rand({4, 4}, std::nullopt, o), randn({3}, std::nullopt, o.dtype(kDouble)),
                               randperm(9, std::nullopt, TensorOptions(kLong).device(v[0].device())),
                               dropout(v[0], 0.3, true), empty({5}, o).uniform_(-2, 2)};
  });
  const Tensor img = rnd({2, 3, 8, 8}), w = rnd({4, 3, 3, 3}), b = rnd({4});
  const Tensor target = randint(0, 5, {6}, std::nullopt, TensorOptions(kLong));
  check("nn", {img, w, b, x, target}, [](const Inputs& v) {
    const Tensor logits = v[3].narrow(1, 0, 5);
    return std::vector<Tensor>{conv2d(v[0], v[1], v[2], {1}, {1}),
                               max_pool2d(v[0], {2}),
                               avg_pool2d(v[0], {3}, {2}),
                               softmax(v[3], 1),
                               log_softmax(v[3], 0),
                               layer_norm(v[3], {8}),
                               cross_entropy(logits, v[4])};
  });
}

TEST(SimOps, AutogradAndTrainingGiveTheCpuResults) {
  auto train = [](Device d) {
    manual_seed(11);
    nn::Sequential mlp{std::make_shared<nn::Linear>(4, 16), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(16, 3)};
    mlp.to(d);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.9;
    optim::SGD opt(mlp.parameters(), o);
    const Tensor x = randn({32, 4}).to(d);
    const Tensor target = randint(0, 3, {32}, std::nullopt, TensorOptions(kLong)).to(d);
    std::vector<Tensor> out;
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      const Tensor loss = cross_entropy(mlp.forward(x), target);
      loss.backward();
      opt.step();
      out.push_back(loss.detach());
    }
    for (const Tensor& p : mlp.parameters()) out.push_back(p.detach());
    return out;
  };
  const std::vector<Tensor> want = train(kCpu), got = train(sim());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same(want[i], got[i])) << "tensor " << i;
}

TEST(SimOps, AKernelErrorSurfacesWhenTheHostNextWaits) {
  const Tensor a = arange(4, 7).to(sim()), zero = zeros({3}, TensorOptions(kLong).device(sim()));
  const Tensor q = div(a, zero, "floor");  // queued: the launch itself succeeds
  try {
    (void)q.cpu();  // the copy back waits for the stream and reports its error
    FAIL() << "expected the division by zero to be reported";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("div"), std::string::npos) << msg;
    EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  }
  EXPECT_TRUE(same(arange(4, 7) * 2, a * 2));  // the stream goes on
}

TEST(SimOps, TwoDevicesAndCopiesBetweenThem) {
  const Tensor x = arange(10, TensorOptions(kDouble));
  const Tensor on0 = x.to(sim(0)).mul(3);
  // A copy between devices runs on the destination's stream after it waited
  // for an event recorded on the source's stream (docs/streams.md rule 6), so
  // the sim checker accepts it without the host waiting for sim:0 first.
  const Tensor on1 = on0.to(sim(1));
  EXPECT_EQ(on1.device(), sim(1));
  EXPECT_TRUE(same(x * 3, on1 + 0, sim(1)));
}

TEST(SimOps, OutOfMemoryNamesTheSimDevice) {
  try {
    (void)empty({int64_t{1} << 30}, TensorOptions(kFloat).device(sim()));  // 4 GiB; the device holds 256 MiB
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sim:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("256.00 MiB"), std::string::npos) << msg;
  }
  // Everything still works afterwards.
  EXPECT_TRUE(same(ones({3}) * 2, ones({3}, TensorOptions(kFloat).device(sim())) * 2));
}

TEST(SimOps, ListedAsAnAsynchronousDevice) {
  bool found = false;
  for (const DeviceTypeSummary& t : device_types()) {
    if (t.name != "sim") continue;
    found = true;
    EXPECT_EQ(t.plugin, "sim");
    EXPECT_EQ(t.device_count, 2);
    ASSERT_EQ(t.device_descriptions.size(), 2u);
    EXPECT_NE(t.device_descriptions[0].find("simulated"), std::string::npos) << t.device_descriptions[0];
  }
  EXPECT_TRUE(found);
#ifdef TSRTEST_TESSERA_CLI
  std::string out;
  if (FILE* p = popen(TSRTEST_TESSERA_CLI " info 2>&1", "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  for (const char* part : {"plugin sim", "device type sim: 2 device(s), DLPack type 0, capabilities: async, caching-allocator",
                           "sim:1  simulated asynchronous device", "[sim]"})
    EXPECT_NE(out.find(part), std::string::npos) << part << " missing in:\n" << out;
#endif
}
