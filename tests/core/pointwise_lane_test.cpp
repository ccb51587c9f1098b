// The unboxed lane of pointwise ops (core/src/pointwise_lane.h) against the
// meta-rule path it bypasses. The oracle: the same call with dispatch tracing on,
// which always takes the meta rule. Every unary and binary pointwise op, every
// dtype, contiguous and strided inputs: same dtype, shape and values, or the
// same error message.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

constexpr ScalarType kDtypes[] = {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};

// Values every op takes some of: small integers (so shifts, powers and integer
// division stay defined or fail the same way on both paths), fractions for floats.
Tensor sample(ScalarType dtype, IntArrayRef shape, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_int_distribution<int> small(-4, 4);
  for (double& x : v) {
    const int k = small(rng);
    if (dtype == kBool) x = k > 0;
    else if (dtype == kByte) x = k + 4;
    else if (is_floating_type(dtype)) x = k * 0.75;
    else x = k;
  }
  return tensor(ArrayRef<double>(v)).reshape(shape).to(dtype);
}

struct Outcome {
  Tensor value;
  std::string error;
};

Outcome run(const Operator& op, const std::vector<IValue>& args) {
  Outcome o;
  Frame frame{args.data(), static_cast<int>(args.size()), &o.value, 1};
  try {
    Dispatcher::instance().call(op, frame);
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

// The meta-rule path: tracing on sends every call there (its stderr output is dropped).
Outcome run_meta_rule_path(const Operator& op, const std::vector<IValue>& args) {
  testing::internal::CaptureStderr();
  Dispatcher::set_trace(true);
  Outcome o = run(op, args);
  Dispatcher::set_trace(false);
  testing::internal::GetCapturedStderr();
  return o;
}

void expect_same(const Outcome& lane, const Outcome& oracle, const std::string& what) {
  ASSERT_EQ(lane.error, oracle.error) << what;
  if (!oracle.error.empty()) return;
  ASSERT_EQ(lane.value.scalar_type(), oracle.value.scalar_type()) << what;
  ASSERT_EQ(lane.value.sizes().vec(), oracle.value.sizes().vec()) << what;
  EXPECT_TRUE(lane.value.is_contiguous()) << what;
  const std::vector<double> a = lane.value.to_vector<double>(), b = oracle.value.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " element " << i;
    } else {
      EXPECT_EQ(a[i], b[i]) << what << " element " << i;
    }
  }
}

// The ops whose schema is (Tensor[, Tensor][, Scalar alpha | str? rounding_mode]) -> Tensor,
// i.e. every op that can have a lane, found from the op registry.
std::vector<const Operator*> lane_shaped_pointwise_ops() {
  std::vector<const Operator*> out;
  for (const Operator* op : Dispatcher::instance().operators()) {
    if (!(op->flags() & kPointwise) || (op->flags() & kInPlace) || !op->is_structured()) continue;
    const auto& args = op->schema().arguments;
    size_t tensors = 0;
    while (tensors < args.size() && args[tensors].type == "Tensor") ++tensors;
    if (tensors == 0 || tensors > 2 || args.size() > tensors + 1) continue;
    if (args.size() == tensors + 1 && args.back().type != "Scalar" && args.back().type != "str?") continue;
    out.push_back(op);
  }
  return out;
}

}  // namespace

TEST(PointwiseLane, EveryUnaryAndBinaryOpMatchesTheMetaRulePathOnEveryDtype) {
  std::mt19937 rng(7);
  const std::vector<const Operator*> ops = lane_shaped_pointwise_ops();
  ASSERT_GE(ops.size(), 40u);  // the unary and binary families
  int compared = 0;
  for (const Operator* op : ops) {
    const auto& schema = op->schema().arguments;
    const bool binary = schema.size() >= 2 && schema[1].type == "Tensor";
    for (ScalarType dtype : kDtypes) {
      // Contiguous inputs, then transposed (strided) views of the same shape.
      for (bool strided : {false, true}) {
        const Tensor a0 = sample(dtype, {3, 4}, rng), b0 = sample(dtype, {3, 4}, rng);
        const Tensor a = strided ? a0.reshape({4, 3}).t() : a0;
        const Tensor b = strided ? b0.reshape({4, 3}).t() : b0;
        std::vector<std::vector<IValue>> calls;
        std::vector<IValue> base{IValue::of(a)};
        if (binary) base.push_back(IValue::of(b));
        if (schema.size() == base.size()) {
          calls.push_back(base);
        } else if (schema.back().type == "Scalar") {  // alpha: int, float and bool forms
          for (IValue alpha : {IValue::of(int64_t{2}), IValue::of(0.5), IValue::of(true)}) {
            calls.push_back(base);
            calls.back().push_back(alpha);
          }
        } else {  // rounding_mode: None (lane) and a mode (meta rule only)
          calls.push_back(base);
          calls.back().push_back(IValue::none());
          calls.push_back(base);
          calls.back().push_back(IValue::of(std::string_view("floor")));
        }
        for (const auto& args : calls) {
          const std::string what = op->name() + " on " + std::string(dtype_name(dtype)) +
                                   (strided ? " (strided)" : "") + " with " + std::to_string(args.size()) + " args";
          expect_same(run(*op, args), run_meta_rule_path(*op, args), what);
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

namespace {
// Runs a C++ API call, catching its error as run() does.
template <typename F>
Outcome run_api(F&& f) {
  Outcome o;
  try {
    o.value = f();
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}
}  // namespace

// The C++ API's pointwise functions take the lane with their typed arguments
// (call_pointwise, no boxing): the same oracle for them, on every dtype.
TEST(PointwiseLane, TheCppApiTypedEntriesMatchTheMetaRulePathOnEveryDtype) {
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  using Unary = Tensor (*)(const Tensor&);
  const std::pair<const char*, Binary> binaries[] = {
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); }},
      {"bitwise_and", [](const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }},
      {"bitwise_left_shift", [](const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }},
  };
  const std::pair<const char*, Unary> unaries[] = {
      {"neg", [](const Tensor& a) { return neg(a); }},         {"exp", [](const Tensor& a) { return exp(a); }},
      {"relu", [](const Tensor& a) { return relu(a); }},       {"abs", [](const Tensor& a) { return abs(a); }},
      {"sqrt", [](const Tensor& a) { return sqrt(a); }},       {"floor", [](const Tensor& a) { return floor(a); }},
      {"isnan", [](const Tensor& a) { return isnan(a); }},     {"logical_not", [](const Tensor& a) { return logical_not(a); }},
      {"bitwise_not", [](const Tensor& a) { return bitwise_not(a); }},
  };
  std::mt19937 rng(11);
  auto& d = Dispatcher::instance();
  int compared = 0;
  for (ScalarType dtype : kDtypes) {
    for (bool strided : {false, true}) {
      const Tensor a0 = sample(dtype, {3, 4}, rng), b0 = sample(dtype, {3, 4}, rng);
      const Tensor a = strided ? a0.reshape({4, 3}).t() : a0;
      const Tensor b = strided ? b0.reshape({4, 3}).t() : b0;
      const std::string on = " on " + std::string(dtype_name(dtype)) + (strided ? " (strided)" : "");
      for (const auto& [name, f] : binaries) {
        expect_same(run_api([&] { return f(a, b); }), run_meta_rule_path(d.get(name), {IValue::of(a), IValue::of(b)}),
                    name + on);
        ++compared;
      }
      for (const auto& [name, f] : unaries) {
        expect_same(run_api([&] { return f(a); }), run_meta_rule_path(d.get(name), {IValue::of(a)}), name + on);
        ++compared;
      }
      // add and sub with alpha as the default 1, an int, a float and a bool.
      for (const Scalar& alpha : {Scalar(1), Scalar(2), Scalar(0.5), Scalar(true)}) {
        const std::vector<IValue> args{IValue::of(a), IValue::of(b), IValue::of(alpha)};
        const std::string with = on + " alpha " + std::to_string(alpha.to_double());
        expect_same(run_api([&] { return add(a, b, alpha); }), run_meta_rule_path(d.get("add"), args), "add" + with);
        expect_same(run_api([&] { return sub(a, b, alpha); }), run_meta_rule_path(d.get("sub"), args), "sub" + with);
        compared += 2;
      }
    }
  }
  EXPECT_EQ(compared, 10 * 2 * (9 + 9 + 8));
}

TEST(PointwiseLane, StridedInputsGiveAContiguousOutputWithTheRightValues) {
  // a = [[0, 3], [1, 4], [2, 5]] and b = 10 * a, both transposed views.
  const Tensor a = arange(6, kFloat).reshape({2, 3}).t();
  const Tensor b = (arange(6, kFloat) * 10).reshape({2, 3}).t();
  ASSERT_FALSE(a.is_contiguous());
  const Tensor r = add(a, b, 2);
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 63, 21, 84, 42, 105}));  // a + 2 * b
  EXPECT_EQ(a.neg().to_vector<float>(), (std::vector<float>{-0.0f, -3, -1, -4, -2, -5}));
}

TEST(PointwiseLane, CallsItDeclinesStillGetTheirErrors) {
  const Tensor i = tensor({1, 2}), f = tensor({1.5, 2.5});
  try {
    add(i, i, 0.5);  // a float alpha for integers
    FAIL() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sub(tensor({true}), tensor({false})), TypeError);
  EXPECT_THROW(neg(tensor({true})), TypeError);
  EXPECT_THROW(bitwise_and(f, f), TypeError);
  EXPECT_THROW(add(i, tensor({1, 2, 3})), ValueError);  // not broadcastable
  // Same dtype and shape, but the kernel fails: its error, with the op and plugin named.
  try {
    remainder(i, tensor({1, 0}));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("remainder"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("plugin 'cpu'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(add(i, i).to_vector<int64_t>(), (std::vector<int64_t>{2, 4}));  // and the next call works
}

TEST(PointwiseLane, OutputsFollowInferenceModeAndGradMode) {
  const Tensor a = tensor({1.0f, 2.0f});
  {
    autograd::InferenceMode guard;
    EXPECT_TRUE(add(a, a).is_inference());
  }
  EXPECT_FALSE(add(a, a).is_inference());
  // A tensor that requires grad takes the Autograd key first; its output has history.
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  const Tensor y = mul(x, x);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4}));
}

TEST(PointwiseLane, ZeroSizeAndMetaTensorsTakeTheMetaRule) {
  const Tensor e = empty({0, 3});
  EXPECT_EQ(add(e, e).sizes().vec(), (std::vector<int64_t>{0, 3}));
  const Tensor m = empty({2, 3}, TensorOptions().device(Device("meta")));
  const Tensor r = mul(m, m);
  EXPECT_EQ(r.device(), m.device());
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

namespace {
int g_override_calls = 0;
// Stands in for a user's kernel over the CPU slot of mul: doubles the product.
void doubled_mul(const Operator&, DispatchKeySet, Frame& frame, void*) {
  ++g_override_calls;
  const std::vector<double> a = frame.args[0].tensor->to_vector<double>();
  const std::vector<double> b = frame.args[1].tensor->to_vector<double>();
  std::vector<double> r(a.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = 2 * a[i] * b[i];  // not through mul: that would recurse
  frame.outputs[0] = tensor(ArrayRef<double>(r)).to(frame.args[0].tensor->scalar_type());
}
}  // namespace

TEST(PointwiseLane, AKernelRegisteredOverTheBackendSlotWinsOverTheLane) {
  auto& d = Dispatcher::instance();
  Operator& mul_op = d.get("mul");
  const Tensor a = tensor({1.0f, 2.0f}), b = tensor({3.0f, 4.0f});
  const int cpu_bit = a.device().type();
  d.register_kernel(mul_op, cpu_bit, {&doubled_mul, nullptr, "test:doubled-mul"});
  g_override_calls = 0;
  EXPECT_EQ(mul(a, b).to_vector<float>(), (std::vector<float>{6, 16}));  // the C++ API's entry
  Tensor out;
  const IValue args[2] = {IValue::of(a), IValue::of(b)};
  Frame frame{args, 2, &out, 1};
  d.call(mul_op, frame);  // the boxed entry
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{6, 16}));
  EXPECT_EQ(g_override_calls, 2);
  d.deregister_kernel(mul_op, cpu_bit);
  EXPECT_EQ(mul(a, b).to_vector<float>(), (std::vector<float>{3, 8}));  // back to the structured kernel
  EXPECT_EQ(g_override_calls, 2);
}
