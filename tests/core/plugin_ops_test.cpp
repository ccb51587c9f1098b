// Ops a plugin defines through register_op (ABI 1.3; core/src/plugin_ops.cpp),
// with the C99 test plugins tests/plugins/opdef_plugin.c (one op of each kind)
// and opdef_bad_plugin.c (malformed registrations). The oracle is the core's
// own ops (x * x * x, x + alpha * y, (x * x).sum(dims), amin/amax, indexing),
// finite differences (gradcheck, gradgradcheck) and hand-computed values.
// Its own program: it loads, unloads and reloads plugins.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/ops/call.h>
#include <tessera/ops/random.h>
#include <tessera/tessera.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace tessera;
using ops::Arg;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Tensor call1(const char* name, const std::vector<Arg>& args, const std::vector<ops::KwArg>& kwargs = {}) {
  return ops::call(name, args, kwargs).at(0);
}

bool close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  return a.sizes().vec() == b.sizes().vec() && a.scalar_type() == b.scalar_type() &&
         allclose(a.cpu(), b.cpu(), tol, tol);
}

// Loads opdef once for the whole program (the suites below share it).
class PluginOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    bool loaded = false;
    for (const PluginInfo& p : plugins()) loaded |= p.name == "opdef";
    if (!loaded) load_plugin(TSRTEST_OPDEF);
  }
  const Device dev{"opdef"};
};

Tensor sample(std::vector<int64_t> shape, ScalarType dtype = kDouble, uint64_t seed = 1) {
  Generator g(seed);
  return randn(shape, g, TensorOptions(dtype));
}

}  // namespace

TEST_F(PluginOps, RegisteredOpsAreListedWithTheirRulesAndDerivatives) {
  std::vector<PluginOpInfo> ops;
  for (const PluginInfo& p : plugins())
    if (p.name == "opdef") ops = p.ops;
  ASSERT_EQ(ops.size(), 9u);
  std::vector<std::string> names;
  for (const auto& o : ops) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"opdef::axpy", "opdef::cube", "opdef::cube_backward", "opdef::diagonal",
                                             "opdef::minmax", "opdef::misshape", "opdef::overview", "opdef::positive",
                                             "opdef::sumsq"}));
  const PluginOpInfo& cube = ops[1];
  EXPECT_EQ(cube.schema, "opdef::cube(Tensor self) -> Tensor");
  EXPECT_EQ(cube.inplace_variant, "opdef::cube_");
  EXPECT_TRUE(cube.pointwise && cube.differentiable && cube.loaded && !cube.view);
  EXPECT_EQ(cube.shape_rule, TSR_SHAPE_SAME_AS_INPUT);
  EXPECT_EQ(cube.derivative_text, "backward op opdef::cube_backward(grad_outputs[0], self) -> grads of self");
  EXPECT_TRUE(ops[3].view);
  EXPECT_FALSE(ops[8].differentiable);

  const std::string info = info_text();
  EXPECT_TRUE(contains(info, "ops it defines (9):")) << info;
  EXPECT_TRUE(contains(info, "shape: same shape as argument 'self', dtype bool")) << info;
  EXPECT_TRUE(contains(info, "opdef::axpy(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor")) << info;
  EXPECT_TRUE(contains(info, "pointwise, in-place variant opdef::axpy_")) << info;
  EXPECT_TRUE(contains(info, "shape: reduction of argument 'self' over dims 'dim', keepdim 'keepdim'")) << info;
  EXPECT_TRUE(contains(info, "derivative: composite: steps[0] = sub(grad_outputs[0], grad_outputs[0]); steps[1] = add(steps[0], "
                             "grad_outputs[0], alpha); grad x = grad_outputs[0], grad y = steps[1]")) << info;
  // The kernels of the new ops are listed with the plugin's others, on both devices.
  EXPECT_TRUE(contains(info, "opdef::cube, opdef::cube_backward")) << info;
  EXPECT_NE(Dispatcher::instance().find("opdef::cube_"), nullptr);
}

TEST_F(PluginOps, SameAsInputOpComputesOnEachDeviceAndInEveryLayout) {
  for (ScalarType dt : {kFloat, kDouble}) {
    const Tensor x = sample({3, 4}, dt);
    for (const Tensor& in : {x, x.t(), x.slice(1, 1, 3)}) {
      const Tensor want = in * in * in;
      EXPECT_TRUE(close(call1("opdef::cube", {in}), want)) << dtype_name(dt);
      EXPECT_TRUE(close(call1("opdef::cube", {in.to(dev)}), want)) << dtype_name(dt);
    }
  }
  const Tensor y = call1("opdef::cube", {sample({2, 0})});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 0}));
}

TEST_F(PluginOps, FixedOutputDtypeGivesBoolResults) {
  const Tensor x = sample({7}, kFloat);
  for (Device d : {Device("cpu"), dev}) {
    const Tensor r = call1("opdef::positive", {x.to(d)});
    EXPECT_EQ(r.scalar_type(), kBool);
    EXPECT_TRUE(equal(r.cpu(), x.gt(0)));
  }
  EXPECT_EQ(call1("opdef::positive", {empty({2}, TensorOptions(kDouble).device(Device("meta")))}).scalar_type(), kBool);
}

TEST_F(PluginOps, BroadcastOpPromotesAndBroadcastsItsInputs) {
  const Tensor x = sample({2, 3}, kFloat), y = sample({3}, kDouble, 2);
  // float32 [2, 3] with float64 [3]: both dimensioned, so float64 wins.
  EXPECT_TRUE(close(call1("opdef::axpy", {x, y}, {{"alpha", 2.5}}), x.to(kDouble) + y * 2.5));
  // int64 with a float number: float32 (a Python number ranks lower than a tensor of its kind only).
  const Tensor i = arange(6, TensorOptions(kLong)).view({2, 3});
  EXPECT_TRUE(close(call1("opdef::axpy", {i, i}, {{"alpha", int64_t{3}}}), i + i * 3));
  EXPECT_EQ(call1("opdef::axpy", {i, 0.5}).scalar_type(), kFloat);
  EXPECT_TRUE(close(call1("opdef::axpy", {i, 0.5}), i.to(kFloat) + 0.5));
  EXPECT_TRUE(close(call1("opdef::axpy", {x.to(dev), y.to(kFloat).to(dev)}), x + y.to(kFloat)));
}

TEST_F(PluginOps, ReductionOpFollowsDimsAndKeepdim) {
  const Tensor x = sample({2, 3, 4});
  const auto sq = x * x;
  EXPECT_TRUE(close(call1("opdef::sumsq", {x}), sq.sum()));
  EXPECT_TRUE(close(call1("opdef::sumsq", {x, std::vector<int64_t>{1}}), sq.sum({1})));
  EXPECT_TRUE(close(call1("opdef::sumsq", {x, std::vector<int64_t>{-1, 0}, true}), sq.sum({0, 2}, true)));
  EXPECT_TRUE(close(call1("opdef::sumsq", {x.to(dev)}, {{"dim", std::vector<int64_t>{2}}}), sq.sum({2})));
  EXPECT_TRUE(contains(message_of([&] { call1("opdef::sumsq", {x, std::vector<int64_t>{3}}); }), "opdef::sumsq"));
  EXPECT_TRUE(contains(message_of([&] { call1("opdef::sumsq", {x, std::vector<int64_t>{1, 1}}); }),
                       "dim 1 appears twice"));
}

TEST_F(PluginOps, CallbackOpGivesTwoResultsAndItsErrorsNameThePlugin) {
  const Tensor x = sample({3, 5});
  for (Device d : {Device("cpu"), dev}) {
    const std::vector<Tensor> r = ops::call("opdef::minmax", {x.to(d)});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(close(r[0], x.amin({1})));
    EXPECT_TRUE(close(r[1], x.amax({1})));
  }
  const std::string msg = message_of([&] { ops::call("opdef::minmax", {tensor({1.0}).view({})}); });
  EXPECT_TRUE(contains(msg, "opdef::minmax: shape function of plugin 'opdef'")) << msg;
  EXPECT_TRUE(contains(msg, "needs a last dim of size >= 1")) << msg;
}

TEST_F(PluginOps, AShapeFunctionBreakingTheRulesIsRefusedNamingTheOp) {
  const Tensor x = sample({2, 3}, kFloat);
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "opdef::misshape: the shape function of plugin 'opdef' returned without setting output 0"},
      {1, "opdef::misshape: set_output: output 0 set twice"},
      {2, "opdef::misshape: set_output: index 1 but the op has 1 output(s)"},
      {3, "opdef::misshape: set_output: unknown dtype 99"},
      {4, "opdef::misshape: set_output: negative size -1 in dim 0"},
      {5, "opdef::misshape: set_view: only VIEW ops make views"},
  };
  for (const auto& [how, want] : cases) {
    const std::string msg = message_of([&] { call1("opdef::misshape", {x, how}); });
    EXPECT_TRUE(contains(msg, want)) << how << ": " << msg;
  }
}

TEST_F(PluginOps, AViewPastTheStorageIsRefused) {
  const Tensor x = sample({4});
  const std::string msg = message_of([&] { call1("opdef::overview", {x}); });
  EXPECT_TRUE(contains(msg, "opdef::overview: the view the shape function of plugin 'opdef' chose is refused")) << msg;
  EXPECT_TRUE(contains(msg, "beyond the storage's 4 elements")) << msg;
}

TEST_F(PluginOps, ViewOpSharesItsInputsMemory) {
  Tensor m = arange(9, TensorOptions(kDouble)).view({3, 3});
  Tensor d = call1("opdef::diagonal", {m});
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 4, 8}));
  d.fill_(-1.0);  // writes through to m
  EXPECT_EQ(m.to_vector<double>(), (std::vector<double>{-1, 1, 2, 3, -1, 5, 6, 7, -1}));
  // The offset is relative to the argument's first element: a slice's diagonal.
  const Tensor s = arange(16, TensorOptions(kDouble)).view({4, 4}).slice(0, 1, 3).slice(1, 2, 4);
  EXPECT_EQ(call1("opdef::diagonal", {s}).to_vector<double>(), (std::vector<double>{6, 11}));
  EXPECT_TRUE(contains(message_of([&] { call1("opdef::diagonal", {sample({2, 3})}); }), "needs a square matrix"));
}

TEST_F(PluginOps, MetaRunsTheRuleOnly) {
  const Device meta("meta");
  const Tensor x = empty({4, 1, 3}, TensorOptions(kFloat).device(meta)), y = empty({5, 1}, TensorOptions(kDouble).device(meta));
  const Tensor a = call1("opdef::axpy", {x, y});
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{4, 5, 3}));
  EXPECT_EQ(a.scalar_type(), kDouble);
  EXPECT_EQ(a.device(), meta);
  EXPECT_EQ(call1("opdef::cube", {x}).sizes().vec(), (std::vector<int64_t>{4, 1, 3}));
  EXPECT_EQ(call1("opdef::sumsq", {x, std::vector<int64_t>{0}, true}).sizes().vec(), (std::vector<int64_t>{1, 1, 3}));
  const std::vector<Tensor> mm = ops::call("opdef::minmax", {x});
  EXPECT_EQ(mm[1].sizes().vec(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(mm[1].scalar_type(), kFloat);
  const Tensor sq = empty({3, 3}, TensorOptions(kFloat).device(meta));
  EXPECT_EQ(call1("opdef::diagonal", {sq}).strides().vec(), (std::vector<int64_t>{4}));
}

TEST_F(PluginOps, GradientsPassGradcheckAndGradgradcheckThroughThePluginsDerivatives) {
  using autograd::variable_list;
  const Tensor x = sample({2, 3}).requires_grad_(), y = sample({3}, kDouble, 5).requires_grad_();
  const auto cube = [](const variable_list& in) -> variable_list { return {call1("opdef::cube", {in[0]})}; };
  EXPECT_TRUE(autograd::gradcheck(cube, {x}));
  EXPECT_TRUE(autograd::gradgradcheck(cube, {x}));  // through cube_backward's composite derivative
  const auto axpy = [](const variable_list& in) -> variable_list {
    return {call1("opdef::axpy", {in[0], in[1]}, {{"alpha", -1.5}})};
  };
  EXPECT_TRUE(autograd::gradcheck(axpy, {x, y}));  // y broadcast: its gradient is summed down
  EXPECT_TRUE(autograd::gradgradcheck(axpy, {x, y}));
  const auto diag = [](const variable_list& in) -> variable_list { return {call1("opdef::diagonal", {in[0]}) * 2.0}; };
  EXPECT_TRUE(autograd::gradcheck(diag, {sample({3, 3}).requires_grad_()}));
  // On the plugin's own device too, and the gradient against the closed form 3 x^2.
  const Tensor xc = sample({4});
  const Tensor xd = xc.to(dev).requires_grad_();
  call1("opdef::cube", {xd}).backward(ones({4}, TensorOptions(kDouble)).to(dev));
  EXPECT_EQ(xd.grad().device(), dev);
  EXPECT_TRUE(close(xd.grad(), xc * xc * 3.0));
  // Not differentiable: the result never requires grad.
  EXPECT_FALSE(call1("opdef::sumsq", {x}).requires_grad());
}

TEST_F(PluginOps, InPlaceVariantWritesSelfAndRecordsHistory) {
  Tensor x = sample({2, 3});
  const Tensor want = x * x * x;
  Tensor r = ops::call("opdef::cube_", {x}).at(0);
  EXPECT_TRUE(close(x, want));
  EXPECT_EQ(r.data_ptr(), x.data_ptr());
  Tensor a = sample({2, 3}, kFloat);
  const Tensor b = sample({3}, kFloat, 3);
  const Tensor want_a = a + b * 2.0;
  ops::call("opdef::axpy_", {a, b}, {{"alpha", 2.0}});
  EXPECT_TRUE(close(a, want_a));
  // The result's shape must be self's.
  Tensor small = sample({3}, kFloat);
  const std::string msg = message_of([&] { ops::call("opdef::axpy_", {small, sample({2, 3}, kFloat)}); });
  EXPECT_TRUE(contains(msg, "opdef::axpy_: the result's shape [2, 3] differs from self's [3]")) << msg;
  // On a non-leaf under autograd: d/dx (2x)^3 = 24 x^2.
  const Tensor leaf = sample({4}).requires_grad_();
  Tensor t = leaf * 2.0;
  ops::call("opdef::cube_", {t});
  t.sum().backward();
  EXPECT_TRUE(close(leaf.grad(), leaf.detach() * leaf.detach() * 24.0));
}

TEST_F(PluginOps, OutFormAndTypedHandle) {
  const Tensor x = sample({5}, kFloat);
  Tensor out = empty({5}, TensorOptions(kDouble));
  const Tensor r = call1("opdef::cube", {x}, {{"out", out}});
  EXPECT_EQ(r.data_ptr(), out.data_ptr());
  EXPECT_TRUE(close(out, (x * x * x).to(kDouble)));
  EXPECT_TRUE(contains(message_of([&] { call1("opdef::cube", {x}, {{"out", empty({4})}}); }), "opdef::cube"));
  EXPECT_TRUE(contains(message_of([&] { ops::call("opdef::minmax", {x}, {{"out", out}}); }), "has no out= form"));

  const ops::TypedOp<Tensor(const Tensor&, const Tensor&, double)> axpy("opdef::axpy");
  EXPECT_TRUE(close(axpy(x, x, 3.0), x * 4.0));
  const ops::TypedOp<std::vector<Tensor>(const Tensor&)> minmax("opdef::minmax");
  EXPECT_EQ(minmax(sample({2, 2})).size(), 2u);
  const std::string bad = message_of([] { ops::TypedOp<Tensor(const Tensor&, const std::string&)> h("opdef::sumsq"); });
  EXPECT_TRUE(contains(bad, "TypedOp opdef::sumsq: parameter 1 is a string but argument 'dim' has type int[]?")) << bad;
  EXPECT_TRUE(contains(message_of([] { ops::TypedOp<Tensor(const Tensor&)> h("opdef::minmax"); }), "returns 2 results"));
}

TEST_F(PluginOps, CallsAreTracedAndBadCallsNameTheOp) {
  const Tensor x = sample({2});
  Dispatcher::set_trace(true);
  testing::internal::CaptureStderr();
  (void)call1("opdef::cube", {x});
  const std::string trace = testing::internal::GetCapturedStderr();
  Dispatcher::set_trace(false);
  EXPECT_TRUE(contains(trace, "[tessera dispatch] opdef::cube keys=[cpu]")) << trace;
  EXPECT_TRUE(contains(trace, "kernel opdef::cube [cpu, float64] from plugin 'opdef'")) << trace;

  std::string msg = message_of([] { call1("opdef::cube", {arange(3, TensorOptions(kInt))}); });
  EXPECT_TRUE(contains(msg, "opdef::cube")) << msg;
  EXPECT_TRUE(contains(msg, "int32")) << msg;
  msg = message_of([&] { call1("opdef::axpy", {x, sample({2}).to(dev)}); });
  EXPECT_TRUE(contains(msg, "opdef::axpy: expected all tensors on one device")) << msg;
  msg = message_of([&] { call1("opdef::axpy", {x, sample({3})}); });
  EXPECT_TRUE(contains(msg, "not broadcastable")) << msg;
  EXPECT_TRUE(contains(message_of([&] { call1("opdef::axpy", {x}, {{"beta", 1.0}}); }), "has no argument 'beta'"));
}

// Malformed registrations: each is refused with a clear message, and nothing of
// the plugin stays (not even the valid op it registered first).
TEST(PluginOpsRegistration, MalformedRegistrationsAreRefusedWithoutKeepingAnything) {
  struct Case {
    int n;
    const char* message;
  };
  const Case cases[] = {
      {1, "code=1: plugin 'opdef_bad': register_op: malformed op schema 'opdef_bad::x(Tensor self -> Tensor'"},
      {2, "code=1: plugin 'opdef_bad': register_op 'opdef_bad::x': argument 'w' has type 'Widget', which plugin ops cannot take"},
      {3, "code=1: plugin 'opdef_bad': register_op 'other::x': the op name 'other::x' is outside the plugin's namespace: it must start with 'opdef_bad::'"},
      {4, "the op name 'x' is outside the plugin's namespace"},
      {5, "code=1: plugin 'opdef_bad': register_op 'opdef_bad::x': backward_op 'mul' returns 1 tensor(s), but 2 input(s) are differentiable"},
      {6, "code=7: plugin 'opdef_bad': register_op 'opdef_bad::x': backward_op: this core has no op named 'opdef_bad::nope'"},
      {7, "backward_op, argument 1 ('k' of opdef_bad::good): its type int does not take that value"},
      {8, "unknown flag bits 0x200"},
      {9, "shape_input 5 is not a Tensor argument of the schema"},
      {10, "code=8: plugin 'opdef_bad': register_op 'opdef_bad::good': registered twice"},
      {11, "step 0, argument 0 ('self' of mul) refers to step 0, which is not an earlier step"},
      {12, "the schema has no Tensor argument"},
      {13, "return 'int' is not 'Tensor'"},
      {14, "shape_rule TSR_SHAPE_CALLBACK needs shape_fn"},
      {15, "differentiable_inputs[0] = 1 is not a Tensor argument"},
      {16, "a VIEW op's gradient flows through the view: its derivative must be TSR_DERIVATIVE_NONE"},
      {17, "description is NULL or smaller than the 1.3 TsrOpDesc"},
      {18, "kernel for op 'opdef_bad::x' on 'cpu': 'opdef_bad::x' is a VIEW op"},
      {19, "argument 'alpha' (float) has a default 'abc' of another type"},
      {20, "ends with '_', which names in-place variants"},
      {21, "output_dtype is -1 without TSR_OP_FIXED_OUTPUT_DTYPE"},
      {22, "output_dtype 99 is not a dtype this core knows"},
  };
  for (const Case& c : cases) {
    ::setenv("TSRTEST_OPDEF_BAD_CASE", std::to_string(c.n).c_str(), 1);
    std::string msg;
    try {
      load_plugin(TSRTEST_OPDEF_BAD);
      msg = "(loaded)";
    } catch (const PluginError& e) {
      msg = e.what();
    }
    EXPECT_TRUE(contains(msg, "plugin 'opdef_bad'")) << c.n << ": " << msg;
    EXPECT_TRUE(contains(msg, c.message)) << "case " << c.n << ": " << msg;
    EXPECT_EQ(Dispatcher::instance().find("opdef_bad::good"), nullptr) << c.n;
    for (const PluginInfo& p : plugins()) EXPECT_NE(p.name, "opdef_bad") << c.n;
  }
  // Case 0 registers only the valid op: it loads, and its op works.
  ::setenv("TSRTEST_OPDEF_BAD_CASE", "0", 1);
  load_plugin(TSRTEST_OPDEF_BAD);
  EXPECT_NE(Dispatcher::instance().find("opdef_bad::good"), nullptr);
  EXPECT_EQ(call1("opdef_bad::good", {empty({0})}).numel(), 0);
  unload_plugin("opdef_bad");
  ::unsetenv("TSRTEST_OPDEF_BAD_CASE");
}

// Unloading: tensors made by the plugin's ops live on; calls fail naming the
// plugin; a reload describing every op identically revives them; another
// description of an op is refused.
TEST(PluginOpsLifetime, UnloadRetiresTheOpsAndAReloadRevivesThem) {
  bool loaded = false;
  for (const PluginInfo& p : plugins()) loaded |= p.name == "opdef";
  if (!loaded) load_plugin(TSRTEST_OPDEF);
  const Device dev("opdef");
  const Tensor x = sample({3}).requires_grad_();
  const Tensor on_dev = call1("opdef::cube", {x.detach().to(dev)});
  const Tensor y = call1("opdef::cube", {x});
  const Operator* cube = Dispatcher::instance().find("opdef::cube");
  unload_plugin("opdef");

  EXPECT_TRUE(close(on_dev, x.detach() * x.detach() * x.detach())) << "a tensor on its device outlives it";
  std::string msg = message_of([&] { call1("opdef::cube", {x.detach()}); });
  EXPECT_TRUE(contains(msg, "opdef::cube: this op belongs to plugin 'opdef', which was unloaded")) << msg;
  msg = message_of([&] { y.sum().backward(); });  // backward needs opdef::cube_backward
  EXPECT_TRUE(contains(msg, "opdef::cube_backward: this op belongs to plugin 'opdef', which was unloaded")) << msg;
  bool listed = false;
  for (const PluginOpInfo& o : plugin_ops()) listed |= o.name == "opdef::cube" && !o.loaded;
  EXPECT_TRUE(listed);

  msg = message_of([] { load_plugin(TSRTEST_OPDEF_V2); });
  EXPECT_TRUE(contains(msg, "code") || contains(msg, "defined this op differently")) << msg;
  EXPECT_TRUE(contains(msg, "an earlier load of plugin 'opdef' defined this op differently")) << msg;
  EXPECT_TRUE(contains(msg, "now: opdef::cube(Tensor self, int unused=0) -> Tensor")) << msg;

  load_plugin(TSRTEST_OPDEF);
  EXPECT_EQ(Dispatcher::instance().find("opdef::cube"), cube) << "the same op, revived";
  EXPECT_TRUE(close(call1("opdef::cube", {x.detach()}), x.detach() * x.detach() * x.detach()));
  const Tensor z = call1("opdef::cube", {x});
  z.sum().backward();
  EXPECT_TRUE(close(x.grad(), x.detach() * x.detach() * 3.0));
}
