// nn::Module: registration and naming, train/eval, zero_grad, to(), state
// dicts in memory, and the gradients of a small MLP against hand-computed ones.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/tessera.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tessera;

namespace {

template <typename V>
std::vector<std::string> names_of(const V& named) {
  std::vector<std::string> out;
  for (const auto& [n, x] : named) out.push_back(n);
  return out;
}

// Two layers and a buffer, the shape of a typical user module.
struct Net : nn::Module {
  Net() : Module("Net") {}
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
  Tensor& scale = register_buffer("scale", ones({4}));
  Tensor& scratch = register_buffer("scratch", zeros({2}), /*persistent=*/false);
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
  Tensor& temperature = register_parameter("temperature", ones({1}));
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).relu() * scale) * temperature; }
};

TEST(NnModule, ParametersAreNamedInRegistrationOrderOwnFirst) {
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"temperature", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(names_of(net.named_parameters(/*recurse=*/false)), (std::vector<std::string>{"temperature"}));
  EXPECT_EQ(names_of(net.named_buffers()), (std::vector<std::string>{"scale", "scratch"}));
  EXPECT_EQ(names_of(net.named_children()), (std::vector<std::string>{"fc1", "fc2"}));
  EXPECT_EQ(names_of(net.named_modules()), (std::vector<std::string>{"", "fc1", "fc2"}));
  for (const Tensor& p : net.parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  for (const Tensor& b : net.buffers()) EXPECT_FALSE(b.requires_grad());
  // The references handed out are the registered tensors.
  EXPECT_TRUE(net.fc1->weight().is_same(net.named_parameters()[1].second));
  EXPECT_TRUE(net.temperature.is_same(net.parameters()[0]));
}

TEST(NnModule, StateDictHasParametersAndPersistentBuffers) {
  Net net;
  const StateDict sd = net.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"temperature", "scale", "fc1.weight", "fc1.bias", "fc2.weight",
                                                 "fc2.bias"}));
  // Entries alias the module's data but carry no autograd history.
  EXPECT_FALSE(sd.at("fc1.weight").requires_grad());
  EXPECT_EQ(sd.at("fc1.weight").data_ptr(), net.fc1->weight().data_ptr());
}

TEST(NnModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", ones({2}));
  EXPECT_THROW(m.register_parameter("w", ones({2})), ValueError);
  EXPECT_THROW(m.register_buffer("w", ones({2})), ValueError);
  EXPECT_THROW(m.register_module("w", std::make_shared<nn::ReLU>()), ValueError);
  EXPECT_THROW(m.register_parameter("a.b", ones({2})), ValueError);
  EXPECT_THROW(m.register_parameter("", ones({2})), ValueError);
  EXPECT_THROW(m.register_module("r", std::shared_ptr<nn::ReLU>()), ValueError);
  EXPECT_THROW(m.register_parameter("i", ones({2}, kLong)), TypeError);  // integers cannot require grad
  try {
    m.register_buffer("w", ones({1}));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'w' is already used by a parameter"), std::string::npos) << e.what();
  }
  // An integer parameter that does not require grad is fine; absent ones are listed nowhere.
  m.register_parameter("steps", zeros({1}, kLong), /*requires_grad=*/false);
  m.register_parameter("absent", Tensor());
  EXPECT_EQ(names_of(m.named_parameters()), (std::vector<std::string>{"w", "steps"}));
  EXPECT_THROW(m.forward(ones({1})), NotImplementedError);
}

TEST(NnModule, RegisterParameterDetachesAndLeavesTheCallersTensorAlone) {
  nn::Module m;
  Tensor t = ones({2});
  Tensor& p = m.register_parameter("p", t);
  EXPECT_TRUE(p.requires_grad());
  EXPECT_FALSE(t.requires_grad());
  EXPECT_EQ(p.data_ptr(), t.data_ptr());  // same data
}

TEST(NnModule, SharedParameterIsListedOnce) {
  nn::Module m;
  auto a = m.register_module("a", std::make_shared<nn::Linear>(2, 2));
  auto b = m.register_module("b", a);  // the same layer twice (tied weights)
  EXPECT_EQ(names_of(m.named_parameters()), (std::vector<std::string>{"a.weight", "a.bias"}));
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "b.bias"}));
}

TEST(NnModule, TrainEvalIsRecursive) {
  auto inner = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Dropout>(0.5)});
  nn::Sequential outer{std::make_shared<nn::Linear>(2, 2), inner};
  EXPECT_TRUE(outer.is_training());
  outer.eval();
  for (auto& [name, m] : outer.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  EXPECT_EQ(names_of(outer.named_modules()), (std::vector<std::string>{"", "0", "1", "1.0"}));
  outer.train();
  for (auto& [name, m] : outer.named_modules()) EXPECT_TRUE(m->is_training()) << name;
  inner->eval();  // only the subtree
  EXPECT_TRUE(outer.is_training());
  EXPECT_FALSE((*inner)[0]->is_training());
}

TEST(NnModule, ZeroGrad) {
  nn::Linear lin(3, 2);
  lin.forward(ones({4, 3})).sum().backward();
  ASSERT_TRUE(lin.weight().grad().defined());
  lin.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(lin.weight().grad().defined());
  EXPECT_TRUE(equal(lin.weight().grad(), zeros({2, 3})));
  EXPECT_TRUE(equal(lin.bias().grad(), zeros({2})));
  lin.zero_grad();
  EXPECT_FALSE(lin.weight().grad().defined());
  EXPECT_FALSE(lin.bias().grad().defined());
}

TEST(NnModule, ToDtypeConvertsFloatingTensorsAndKeepsThemParameters) {
  Net net;
  net.register_buffer("count", zeros({1}, kLong));
  const Tensor w32 = net.fc1->weight().detach().clone();
  net.to(kDouble);
  EXPECT_EQ(net.fc1->weight().scalar_type(), kDouble);  // the reference follows
  EXPECT_TRUE(net.fc1->weight().requires_grad());
  EXPECT_TRUE(net.fc1->weight().is_leaf());
  EXPECT_EQ(net.scale.scalar_type(), kDouble);
  EXPECT_EQ(net.named_buffers().back().second.scalar_type(), kLong);  // integer buffers are kept
  EXPECT_TRUE(allclose(net.fc1->weight().to(kFloat), w32));
  for (const Tensor& p : net.parameters()) EXPECT_EQ(p.scalar_type(), kDouble);
  // It still trains: backward reaches the new leaves.
  net.forward(ones({1, 3}, kDouble)).sum().backward();
  EXPECT_TRUE(net.fc2->weight().grad().defined());
  EXPECT_THROW(net.to(kLong), TypeError);
}

TEST(NnModule, ToDeviceMovesParametersGradsAndBuffers) {
  Net net;
  net.forward(ones({2, 3})).sum().backward();
  net.to(Device("meta"));  // a device with shapes and no bytes: enough to see what moves
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_EQ(p.device().type_name(), "meta") << name;
    EXPECT_TRUE(p.requires_grad() && p.is_leaf()) << name;
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().device().type_name(), "meta") << name;
  }
  for (const Tensor& b : net.buffers()) EXPECT_EQ(b.device().type_name(), "meta");
  EXPECT_EQ(net.fc1->weight().device().type_name(), "meta");
  const Tensor y = net.forward(ones({5, 3}, TensorOptions(kFloat).device(Device("meta"))));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(y.device().type_name(), "meta");
}

TEST(NnModule, LoadStateDictCopiesInPlaceAndCasts) {
  nn::Linear a(3, 2), b(3, 2);
  Tensor& wb = b.weight();
  const void* before = wb.data_ptr();
  StateDict sd = a.state_dict();
  sd.insert("weight", sd.at("weight").to(kDouble));  // cast back on load
  const nn::LoadResult r = b.load_state_dict(sd);
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  EXPECT_EQ(b.weight().data_ptr(), before);  // in place
  EXPECT_EQ(b.weight().scalar_type(), kFloat);
  EXPECT_TRUE(equal(b.weight(), a.weight().detach()));
  EXPECT_TRUE(equal(b.bias(), a.bias().detach()));
  EXPECT_TRUE(b.weight().requires_grad());
  EXPECT_TRUE(b.weight().is_leaf());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}

TEST(NnModule, LoadStateDictStrictErrorsNameTheKeysAndLoadNothing) {
  Net net;
  const Tensor w_before = net.fc1->weight().detach().clone();
  Net other;
  StateDict sd = other.state_dict();
  sd.erase("fc2.bias");
  sd.insert("fc3.weight", ones({1}));
  std::string msg = error_of([&] { net.load_state_dict(sd); });
  EXPECT_NE(msg.find("missing keys: 'fc2.bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected keys: 'fc3.weight'"), std::string::npos) << msg;
  EXPECT_TRUE(equal(net.fc1->weight(), w_before));  // nothing was loaded

  // strict = false reports them and loads the rest.
  const nn::LoadResult r = net.load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"fc2.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"fc3.weight"}));
  EXPECT_TRUE(equal(net.fc1->weight(), other.fc1->weight()));

  // A shape mismatch is an error even when not strict.
  StateDict bad = other.state_dict();
  bad.insert("fc1.weight", zeros({3, 4}));
  msg = error_of([&] { net.load_state_dict(bad, /*strict=*/false); });
  EXPECT_NE(msg.find("size mismatch for 'fc1.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
}

// A 2-layer MLP in float64; loss = sum(c * mlp(x)), so dloss/dy = c. The
// gradients are computed here with loops (the chain rule by hand).
TEST(NnModule, MlpGradientsMatchHandComputed) {
  manual_seed(7);
  const int64_t N = 5, I = 3, H = 4, O = 2;
  nn::Sequential mlp{std::make_shared<nn::Linear>(I, H, true, kDouble), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(H, O, true, kDouble)};
  auto& l1 = static_cast<nn::Linear&>(*mlp[0]);
  auto& l2 = static_cast<nn::Linear&>(*mlp[2]);
  const Tensor x = randn({N, I}, std::nullopt, kDouble);
  const Tensor c = randn({N, O}, std::nullopt, kDouble);
  const Tensor y = mlp.forward(x);
  (y * c).sum().backward();

  const auto X = x.to_vector<double>(), C = c.to_vector<double>();
  const auto W1 = l1.weight().to_vector<double>(), B1 = l1.bias().to_vector<double>();
  const auto W2 = l2.weight().to_vector<double>(), B2 = l2.bias().to_vector<double>();
  std::vector<double> pre(N * H), h(N * H), Y(N * O, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < H; ++j) {
      double s = B1[j];
      for (int64_t i = 0; i < I; ++i) s += X[n * I + i] * W1[j * I + i];
      pre[n * H + j] = s;
      h[n * H + j] = s > 0 ? s : 0;
    }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      double s = B2[o];
      for (int64_t j = 0; j < H; ++j) s += h[n * H + j] * W2[o * H + j];
      Y[n * O + o] = s;
    }
  std::vector<double> gW2(O * H, 0), gB2(O, 0), gh(N * H, 0), gW1(H * I, 0), gB1(H, 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      gB2[o] += C[n * O + o];
      for (int64_t j = 0; j < H; ++j) {
        gW2[o * H + j] += C[n * O + o] * h[n * H + j];
        gh[n * H + j] += C[n * O + o] * W2[o * H + j];
      }
    }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < H; ++j) {
      const double gp = pre[n * H + j] > 0 ? gh[n * H + j] : 0;
      gB1[j] += gp;
      for (int64_t i = 0; i < I; ++i) gW1[j * I + i] += gp * X[n * I + i];
    }
  auto expect_near = [](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-12) << what << "[" << k << "]";
  };
  expect_near(y.to_vector<double>(), Y, "y");
  expect_near(l2.weight().grad().to_vector<double>(), gW2, "fc2.weight.grad");
  expect_near(l2.bias().grad().to_vector<double>(), gB2, "fc2.bias.grad");
  expect_near(l1.weight().grad().to_vector<double>(), gW1, "fc1.weight.grad");
  expect_near(l1.bias().grad().to_vector<double>(), gB1, "fc1.bias.grad");
}

TEST(NnModule, Repr) {
  nn::Sequential s{std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
                   std::make_shared<nn::Linear>(3, 1, false)};
  EXPECT_EQ(s.repr(),
            "Sequential(\n"
            "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
            "  (1): ReLU()\n"
            "  (2): Linear(in_features=3, out_features=1, bias=False)\n"
            ")");
}

}  // namespace
