// The autograd engine's rules, checked against gradients computed by hand.
#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/autograd/derivative.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <thread>

using namespace tessera;
namespace ag = tessera::autograd;

namespace {
Tensor leaf(std::initializer_list<double> v) { return tensor(v).requires_grad_(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST(AutogradEngine, ScalarBackwardAccumulatesIntoLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor w = leaf({4, 5, 6});
  Tensor y = (x * w + x).sum();  // dy/dx = w + 1, dy/dw = x
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward");
  y.backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2, 3}));
  // A second graph accumulates into the same .grad.
  (x * 2).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{7, 8, 9}));
}

TEST(AutogradRules, EveryOpHasARule) {
  std::string missing;
  for (const Operator* op : Dispatcher::instance().operators())
    if (ag::rule_of(*op) == ag::RuleKind::None) missing += " " + op->name();
  EXPECT_EQ(missing, "") << "ops without an autograd rule (define_derivative, define_not_differentiable or "
                            "define_decomposed in core/src/autograd/formulas_<family>.cpp)";
}

TEST(Gradcheck, AcceptsCorrectAndRejectsWrongGradients) {
  Tensor a = tensor({0.5, -1.5, 2.0}).requires_grad_();
  Tensor b = tensor({1.25, 3.0, -0.75}).requires_grad_();
  EXPECT_TRUE(ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * in[1] / in[1].exp()}; },
                            {a, b}));
  EXPECT_TRUE(ag::gradgradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * in[1] * in[1]}; },
                                {a, b}));
}

namespace {
// Expects `f` to throw AutogradError whose message contains every part.
template <typename F>
void expect_autograd_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no AutogradError";
  } catch (const AutogradError& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(AutogradEngine, ExplicitGradientAndNonScalarRule) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * x;  // dy/dx = 2x
  expect_autograd_error([&] { y.backward(); }, {"one-element", "[3]"});
  y.backward(tensor({1.0, 0.5, 2.0}));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 2, 12}));
  expect_autograd_error([&] { (x * 2).backward(tensor({1.0, 2.0})); }, {"shape [2]", "[3]"});
}

TEST(AutogradEngine, GradientsOfATensorUsedSeveralTimesAreSummed) {
  Tensor x = leaf({2.0});
  Tensor a = x * 3;
  Tensor y = a * a + a + x;  // y = 9x^2 + 3x + x -> 18x + 4 = 40
  y.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 40.0);
}

TEST(AutogradEngine, GradReturnsInsteadOfAccumulating) {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 4});
  Tensor unused = leaf({5});
  Tensor y = (x * w).sum();
  auto g = ag::grad({y}, {x, w}, {}, /*retain_graph=*/true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{3, 4}));
  EXPECT_EQ(vals(g[1]), (std::vector<double>{1, 2}));
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad alone
  EXPECT_FALSE(g[0].requires_grad());
  expect_autograd_error([&] { ag::grad({y}, {unused}, {}, true); }, {"input 0", "allow_unused"});
  auto u = ag::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(u[0].defined());
  EXPECT_FALSE(u[1].defined());
  // Gradient with respect to a non-leaf.
  Tensor h = x * 2;
  Tensor z = (h * h).sum();
  auto gh = ag::grad({z}, {h});
  EXPECT_EQ(vals(gh[0]), (std::vector<double>{4, 8}));
}

TEST(AutogradEngine, SecondBackwardWithoutRetainGraphFails) {
  Tensor x = leaf({1, 2});
  Tensor y = (x * x).sum();  // MulBackward saves its inputs
  y.backward();
  expect_autograd_error([&] { y.backward(); }, {"second time", "retain_graph"});
  Tensor z = (x * x).sum();
  z.backward({}, /*retain_graph=*/true);
  z.backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2 + 2 + 2, 4 + 4 + 4}));
}

TEST(AutogradEngine, CreateGraphGivesHigherOrderGradients) {
  Tensor x = leaf({2.0, -1.0});
  Tensor y = (x * x * x).sum();                                // y' = 3x^2, y'' = 6x, y''' = 6
  Tensor g1 = ag::grad({y}, {x}, {}, std::nullopt, true)[0];   // create_graph
  EXPECT_TRUE(g1.requires_grad());
  EXPECT_EQ(vals(g1), (std::vector<double>{12, 3}));
  Tensor g2 = ag::grad({g1.sum()}, {x}, {}, std::nullopt, true)[0];
  EXPECT_EQ(vals(g2), (std::vector<double>{12, -6}));
  Tensor g3 = ag::grad({g2.sum()}, {x})[0];
  EXPECT_EQ(vals(g3), (std::vector<double>{6, 6}));
  // backward(create_graph) leaves a differentiable .grad.
  Tensor w = leaf({3.0});
  (w * w * w).sum().backward({}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(w.grad().requires_grad());
  EXPECT_DOUBLE_EQ(ag::grad({w.grad().sum()}, {w})[0].item<double>(), 18.0);
  w.set_grad({});  // a .grad with history refers back to w: clearing it breaks the cycle (docs/autograd.md)
}

TEST(AutogradEngine, RetainGradKeepsNonLeafGradients) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 3;
  Tensor plain = x * 4;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  (h * h + plain).sum().backward();
  EXPECT_EQ(vals(h.grad()), (std::vector<double>{6, 12}));
  EXPECT_FALSE(plain.grad().defined());
}

TEST(AutogradEngine, HooksRunInDocumentedOrder) {
  std::vector<std::string> order;
  Tensor x = leaf({1, 2});
  Tensor h = x * 2;
  h.register_hook([&](const Tensor& g) {
    order.push_back("h:first");
    return g * 10;  // replaces the gradient flowing on
  });
  h.register_hook([&](const Tensor& g) {
    order.push_back("h:second saw " + std::to_string(g.to_vector<double>()[0]));
    return Tensor();  // keeps it
  });
  h.retain_grad();
  x.register_hook([&](const Tensor& g) {
    order.push_back("x:tensor hook saw " + std::to_string(g.to_vector<double>()[0]));
    return Tensor();
  });
  x.register_post_accumulate_grad_hook([&](const Tensor& t) {
    order.push_back("x:post-accumulate saw .grad " + std::to_string(t.grad().to_vector<double>()[0]));
  });
  auto removed = x.register_hook([&](const Tensor& g) {
    order.push_back("removed hook ran");
    return g;
  });
  removed.remove();
  h.sum().backward();
  const std::vector<std::string> want = {"h:first", "h:second saw 10.000000", "x:tensor hook saw 20.000000",
                                         "x:post-accumulate saw .grad 20.000000"};
  EXPECT_EQ(order, want);
  EXPECT_EQ(vals(h.grad()), (std::vector<double>{10, 10}));  // retained after the hooks
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{20, 20}));
  expect_autograd_error([&] { h.register_post_accumulate_grad_hook([](const Tensor&) {}); }, {"leaf"});
}

TEST(AutogradEngine, LeafAndRequiresGradRules) {
  Tensor x = tensor({1.0, 2.0});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(x.requires_grad());
  EXPECT_THROW(arange(3).requires_grad_(), TypeError);
  x.requires_grad_();
  Tensor y = x * 2;
  EXPECT_FALSE(y.is_leaf());
  expect_autograd_error([&] { y.requires_grad_(false); }, {"not a leaf", "detach"});
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.data_ptr(), y.data_ptr());  // shares the data
  y.detach_();
  EXPECT_FALSE(y.requires_grad());
  // A leaf that requires grad cannot be modified in place, except under no_grad.
  expect_autograd_error([&] { x.mul_(2); }, {"mul_", "leaf"});
  {
    ag::NoGradGuard no_grad;
    x.mul_(2);
  }
  EXPECT_EQ(vals(x), (std::vector<double>{2, 4}));
}

TEST(AutogradEngine, InPlaceOnSavedTensorIsDetectedWithBothVersions) {
  Tensor x = leaf({1, 2});
  Tensor b = x * 2;
  Tensor c = b * b;  // saves b at its current version
  const uint32_t v = b._version();
  b.add_(1);
  EXPECT_EQ(b._version(), v + 1);
  try {
    c.sum().backward();
    ADD_FAILURE() << "no error";
  } catch (const AutogradError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("MulBackward"), std::string::npos) << m;
    EXPECT_NE(m.find("modified by an in-place operation"), std::string::npos) << m;
    EXPECT_NE(m.find("version " + std::to_string(v + 1)), std::string::npos) << m;
    EXPECT_NE(m.find("version " + std::to_string(v)), std::string::npos) << m;
  }
}

TEST(AutogradEngine, InPlaceOpsOnNonLeavesAreDifferentiated) {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 5});
  Tensor y = x * 1;
  y.mul_(w);  // y = x * w, recorded with the value of y before the op
  y.add_(x);  // y = x * w + x
  EXPECT_EQ(y.grad_fn()->name(), "AddBackward");
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 6}));
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2}));
  // A plain tensor written in place from one that requires grad joins the graph.
  Tensor z = zeros({2}, kDouble);
  Tensor x2 = leaf({7, 8});
  z.add_(x2 * 3);
  EXPECT_TRUE(z.requires_grad());
  z.sum().backward();
  EXPECT_EQ(vals(x2.grad()), (std::vector<double>{3, 3}));
}

TEST(AutogradEngine, GradModeGuardsAreScopedAndThreadLocal) {
  Tensor x = leaf({1, 2});
  {
    ag::NoGradGuard no_grad;
    EXPECT_FALSE(ag::is_grad_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
    {
      ag::EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE((x * 2).requires_grad());
    bool other_thread = false;
    std::thread t([&] { other_thread = ag::is_grad_enabled() && (x * 2).requires_grad(); });
    t.join();
    EXPECT_TRUE(other_thread);  // grad mode is per thread
    ag::SetGradEnabledGuard on(true);
    EXPECT_TRUE((x * 2).requires_grad());
  }
  EXPECT_TRUE(ag::is_grad_enabled());
}

TEST(AutogradEngine, InferenceModeSkipsAutogradAndItsTensorsCannotBeSaved) {
  Tensor x = leaf({1, 2});
  Tensor inf;
  {
    ag::InferenceMode guard;
    EXPECT_TRUE(ag::is_inference_mode_enabled());
    EXPECT_FALSE(ag::is_grad_enabled());
    inf = x * 2;
    EXPECT_FALSE(inf.requires_grad());
    EXPECT_TRUE(inf.is_inference());
    EXPECT_TRUE(ones({2}).is_inference());
  }
  EXPECT_FALSE(ag::is_inference_mode_enabled());
  EXPECT_FALSE(x.is_inference());
  expect_autograd_error([&] { (void)(x * inf); }, {"inference tensor", "saved for backward"});
  Tensor ok = x + inf;  // add saves nothing
  EXPECT_TRUE(ok.requires_grad());
  expect_autograd_error([&] { inf.requires_grad_(); }, {"inference"});
  Tensor cl = inf.clone();
  EXPECT_FALSE(cl.is_inference());
}

TEST(AutogradEngine, AnomalyModeNamesTheForwardOp) {
  Tensor x = tensor({0.0}).requires_grad_();
  ag::DetectAnomalyGuard anomaly;
  Tensor y = x / x;  // NaN in forward, NaN gradient in DivBackward
  expect_autograd_error([&] { y.sum().backward(); }, {"anomaly", "DivBackward", "NaN", "div(self=float64[1]"});
}

namespace {
// Identity whose backward returns a [3, 2] view of *held (a 6-element tensor).
struct GradIsAViewOf : ag::Function<GradIsAViewOf> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x, const Tensor* held) {
    ctx->saved_data["held"] = *held;
    return x * 1.0;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list) {
    return {std::any_cast<Tensor>(ctx->saved_data["held"]).reshape({3, 2})};
  }
};
}  // namespace

// A leaf's first gradient becomes its .grad uncopied when nothing else can
// reach its memory, also when it leaves backward as a view (a Linear weight's
// gradient comes out of transpose's backward), and is copied when the view's
// base is still someone else's.
TEST(AutogradEngine, FirstGradientIsTakenUncopiedOnlyWhenNothingElseHoldsIt) {
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).reshape({3, 2}).detach().requires_grad_();
  Tensor x = tensor({1.0, -2.0, 0.5, 4.0}).reshape({2, 2});
  const void* reached = nullptr;
  w.register_hook([&](const Tensor& g) {
    reached = g.data_ptr();
    return Tensor();
  });
  x.mm(w.t()).sum().backward();  // d/dw[i][j] = sum over rows of x[.][j]
  EXPECT_EQ(w.grad().data_ptr(), reached);
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1.5, 2, 1.5, 2, 1.5, 2}));

  // A backward handing v a view of a tensor its caller still holds: copied.
  Tensor v = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).reshape({3, 2}).detach().requires_grad_();
  Tensor held = tensor({10.0, 20.0, 30.0, 40.0, 50.0, 60.0});
  GradIsAViewOf::apply(v, &held).sum().backward();
  EXPECT_NE(v.grad().data_ptr(), held.data_ptr());
  v.grad().add_(1.0);
  EXPECT_EQ(vals(held), (std::vector<double>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(vals(v.grad()), (std::vector<double>{11, 21, 31, 41, 51, 61}));
}

TEST(AutogradEngine, BackwardInputsLimitsAccumulation) {
  Tensor x = leaf({1});
  Tensor w = leaf({2});
  Tensor h = x * w;
  (h * 3).sum().backward({}, std::nullopt, false, {w, h});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_DOUBLE_EQ(w.grad().item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(h.grad().item<double>(), 3.0);
}

TEST(AutogradEngine, DtypeAndDeviceConversionsAreDifferentiable) {
  Tensor x = leaf({1.5, 2.5});
  Tensor y = x.to(kFloat);
  EXPECT_TRUE(y.requires_grad());
  (y * y).sum().backward();
  EXPECT_EQ(x.grad().scalar_type(), kDouble);
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 5}));
}

TEST(AutogradEngine, DeepChainsRunAndFreeWithoutRecursion) {
  Tensor x = leaf({1.0});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 1.0);
  y = Tensor();  // frees 100k nodes iteratively
}

TEST(AutogradThreads, IndependentGraphsOnManyThreads) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  Tensor shared = leaf({1.0, 1.0});
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        Tensor x = tensor({double(t), double(rep)}).requires_grad_();
        Tensor y = (x * x * double(t + 1) + shared * x).sum();  // dy/dx = 2(t+1)x + shared
        y.backward();
        std::vector<double> g = x.grad().to_vector<double>();
        if (g[0] == 2.0 * (t + 1) * t + 1 && g[1] == 2.0 * (t + 1) * rep + 1) ++ok[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 20) << "thread " << t;
  // The shared leaf's gradient is the sum over all threads: sum_t sum_rep x.
  double want0 = 0, want1 = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int rep = 0; rep < 20; ++rep) {
      want0 += t;
      want1 += rep;
    }
  EXPECT_EQ(vals(shared.grad()), (std::vector<double>{want0, want1}));
}

namespace {
struct Cube : ag::Function<Cube> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * x * x * scale;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    const double scale = std::any_cast<double>(ctx->saved_data["scale"]);
    return {grads[0] * x * x * (3 * scale)};
  }
};
struct SortedWithIndex : ag::Function<SortedWithIndex> {  // two outputs, one not differentiable
  static ag::variable_list forward(ag::AutogradContext* ctx, const Tensor& x) {
    Tensor idx = arange(x.numel());
    ctx->mark_non_differentiable({idx});
    return {x * 2, idx};
  }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list grads) { return {grads[0] * 2}; }
};
struct WrongGrad : ag::Function<WrongGrad> {
  static Tensor forward(ag::AutogradContext*, const Tensor& x) { return x * x; }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list grads) { return {grads[0]}; }
};
}  // namespace

TEST(AutogradFunction, CustomForwardBackwardAndSavedTensors) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = Cube::apply(x, 2.0);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_NE(y.grad_fn()->name().find("Cube"), std::string::npos);
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{6, 24}));
  auto outs = SortedWithIndex::apply(x);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_FALSE(outs[1].requires_grad());
  EXPECT_TRUE(ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {Cube::apply(in[0], 1.5)}; },
                            {leaf({0.3, -0.7})}));
  ag::GradcheckOptions no_raise;
  no_raise.raise_exception = false;
  EXPECT_FALSE(ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {WrongGrad::apply(in[0])}; },
                             {leaf({0.3, -0.7})}, no_raise));
  // Modifying a saved input before backward is detected here too.
  Tensor a = leaf({1.0});
  Tensor b = a * 1;
  Tensor c = Cube::apply(b, 1.0);
  b.add_(1);
  expect_autograd_error([&] { c.sum().backward(); }, {"modified by an in-place operation"});
  // No input requires grad: nothing is recorded.
  EXPECT_FALSE(Cube::apply(tensor({1.0}), 1.0).requires_grad());
}

TEST(AutogradEngine, PrintingShowsRequiresGradAndGradFn) {
  Tensor x = leaf({1, 2});
  EXPECT_EQ(x.to_string(), "tensor([1., 2.], dtype=float64, requires_grad=True)");
  EXPECT_EQ((x * 2).to_string(), "tensor([2., 4.], dtype=float64, grad_fn=<MulBackward>)");
}

TEST(AutogradViews, InPlaceOnAViewRewritesTheBaseHistory) {
  // Writing a requires-grad value into a view of a plain tensor makes the base require grad.
  Tensor x = leaf({5, 7});
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0});
  Tensor z = zeros({4}, kDouble);
  z.narrow(0, 1, 2).copy_(x);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(z.grad_fn()->name(), "CopySlices");
  (z * w).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 3}));
  // In place on a view of a non-leaf: the region gets the op's gradient, the rest passes through.
  Tensor a = leaf({1, 2, 3, 4});
  Tensor y = a * 1;
  y.narrow(0, 0, 2).mul_(3);
  y.sum().backward();
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{3, 3, 1, 1}));
  // A view of a view.
  Tensor b = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).reshape({2, 3}).detach().requires_grad_();
  Tensor m = b * 1;
  m.select(0, 1).narrow(0, 1, 2).mul_(5);
  m.sum().backward();
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{1, 1, 1, 1, 5, 5}));
}

TEST(AutogradViews, AViewSeesItsBaseWrittenInPlace) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor y = x * 2;
  Tensor v = y.narrow(0, 0, 2);
  y.mul_(3);  // v now holds 6x[0:2]; its history is regenerated when next used
  (v * 1).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{6, 6, 0, 0}));
}

TEST(AutogradViews, GradcheckThroughViewInPlaceOps) {
  auto f = [](const ag::variable_list& in) -> ag::variable_list {
    Tensor y = in[0] * 1;
    y.select(0, 1).mul_(in[1]);
    y.narrow(0, 0, 1).add_(in[1].sum());
    y.t().narrow(0, 2, 1).copy_(in[1].narrow(0, 0, 2).exp().unsqueeze(0));  // column 2
    return {y};
  };
  Tensor x = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}).reshape({2, 3}).detach().requires_grad_();
  Tensor w3 = tensor({0.7, -0.3, 0.2}).requires_grad_();
  EXPECT_TRUE(ag::gradcheck(f, {x, w3}));
  EXPECT_TRUE(ag::gradgradcheck(f, {x, w3}));
}

namespace {
struct IgnoresItsGradient : ag::Function<IgnoresItsGradient> {  // wrong: backward ignores grads
  static Tensor forward(ag::AutogradContext*, const Tensor& x) { return x * 1; }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list grads) { return {ones_like(grads[0])}; }
};
}  // namespace

TEST(Gradcheck, CheckUndefinedGradSeesZeroOutputGradients) {
  ag::GradcheckOptions o;
  o.check_undefined_grad = true;
  EXPECT_TRUE(ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * in[0]}; },
                            {leaf({0.5, 1.5})}, o));
  o.raise_exception = false;
  EXPECT_FALSE(ag::gradcheck(
      [](const ag::variable_list& in) -> ag::variable_list { return {IgnoresItsGradient::apply(in[0])}; },
      {leaf({0.5})}, o));
}

namespace {
Tensor call_unary(const Operator& op, const Tensor& x) {
  const IValue args[1] = {IValue::of(x)};
  Tensor out;
  Frame f{args, 1, &out, 1};
  Dispatcher::instance().call(op, f);
  return out;
}
}  // namespace

TEST(AutogradRules, OpsWithoutARuleAndBadRulesAreRefused) {
  const Operator& op = Dispatcher::instance().declare_composite(
      "autograd_test_identity(Tensor self) -> Tensor", 0,
      [](const Operator&, DispatchKeySet, Frame& f, void*) { f.outputs[0] = f.args[0].tensor->clone(); });
  Tensor x = leaf({1, 2});
  EXPECT_FALSE(call_unary(op, x.detach()).requires_grad());  // no tensor requires grad: runs as usual
  try {
    call_unary(op, x);
    ADD_FAILURE() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("autograd_test_identity: has no derivative formula"), std::string::npos)
        << e.what();
  }
  auto identity = [](ag::BackwardContext& c) -> ag::variable_list { return {c.grad()}; };
  EXPECT_THROW(ag::define_derivative("autograd_test_identity", {{3}, {}, {}, identity}), ValueError);
  EXPECT_THROW(ag::define_derivative("autograd_test_identity", {{0}, {}, {}, nullptr}), ValueError);
  EXPECT_THROW(ag::define_derivative("no_such_op", {{0}, {}, {}, identity}), NotImplementedError);
  ag::define_derivative("autograd_test_identity", {{0}, {}, {}, identity});
  EXPECT_THROW(ag::define_not_differentiable("autograd_test_identity"), ValueError);  // one rule per op
  call_unary(op, x).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 1}));
}

namespace {
struct WrongShape : ag::Function<WrongShape> {  // backward returns a gradient of the wrong shape
  static Tensor forward(ag::AutogradContext*, const Tensor& x) { return x * 1; }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list) { return {ones({5}, kDouble)}; }
};
}  // namespace

TEST(AutogradEngine, BadBackwardCallsAreRefusedWithClearErrors) {
  Tensor x = leaf({1, 2});
  Tensor plain = tensor({1.0, 2.0});
  Tensor y = (x * 2).sum();
  expect_autograd_error([&] { ag::backward({}); }, {"no tensors"});
  expect_autograd_error([&] { plain.sum().backward(); }, {"does not require grad and has no grad_fn"});
  expect_autograd_error([&] { ag::backward({y}, {tensor({1.0}), tensor({1.0})}); }, {"2 gradients for 1 tensors"});
  expect_autograd_error([&] { ag::grad({y}, {plain}, {}, true); }, {"grad: input 0 does not require grad"});
  expect_autograd_error([&] { ag::grad({y}, {}, {}, true); }, {"no inputs"});
  expect_autograd_error([&] { y.backward({}, std::nullopt, false, {plain}); }, {"backward: input 0"});
  expect_autograd_error([&] { WrongShape::apply(x).sum().backward(); }, {"shape [5]", "[2]"});
  expect_autograd_error(
      [&] {
        ag::gradcheck([](const ag::variable_list& in) -> ag::variable_list { return {in[0] * 2}; },
                      {tensor({1.0f}).requires_grad_()});
      },
      {"float32", "float64"});
  (x * 3).sum().backward();  // the engine still works afterwards
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 3}));
}
