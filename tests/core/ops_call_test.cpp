// tessera::ops::call (tessera/ops/call.h): any op by name gives what its C++
// function gives, with positional, keyword and default arguments, numbers in
// place of tensors, in-place ops, two results, autograd; and every binding
// error names the op and the argument.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/ops/call.h>
#include <tessera/tessera.h>

#include <string>
#include <vector>

using namespace tessera;
using ops::Arg;

namespace {

bool same(const Tensor& a, const Tensor& b) {
  return a.sizes().vec() == b.sizes().vec() && a.scalar_type() == b.scalar_type() && equal(a, b);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(OpsCall, PositionalKeywordAndDefaultArgumentsGiveTheCppFunctionsResults) {
  const Tensor a = arange(6, TensorOptions(kFloat)).view({2, 3}), b = full({2, 3}, 2.0f);
  EXPECT_TRUE(same(ops::call("add", {a, b}).at(0), add(a, b)));
  EXPECT_TRUE(same(ops::call("add", {a, b}, {{"alpha", 3.0}}).at(0), add(a, b, 3.0)));
  EXPECT_TRUE(same(ops::call("sum", {a}, {{"dim", std::vector<int64_t>{1}}, {"keepdim", true}}).at(0),
                   a.sum({1}, true)));
  EXPECT_TRUE(same(ops::call("sum", {a}, {{"dim", int64_t{0}}}).at(0), a.sum({0})))
      << "one int for an int list";
  EXPECT_TRUE(same(ops::call("div", {a, b}, {{"rounding_mode", std::string("floor")}}).at(0), div(a, b, "floor")));
  EXPECT_TRUE(same(ops::call("softmax", {a, int64_t{1}}).at(0), a.softmax(1)));
  EXPECT_TRUE(same(ops::call("arange", {int64_t{0}, int64_t{5}}, {{"dtype", kDouble}}).at(0),
                   arange(0, 5, 1, TensorOptions(kDouble))));
}

TEST(OpsCall, NumbersInPlaceOfTensorsPromoteLikePythonNumbers) {
  const Tensor i = arange(4, TensorOptions(kInt));
  const Tensor r = ops::call("mul", {i, 2.5}).at(0);
  EXPECT_EQ(r.scalar_type(), kFloat) << "int32 tensor * 2.5 -> float32, as i * 2.5";
  EXPECT_TRUE(same(r, i * 2.5));
  EXPECT_EQ(ops::call("add", {i, int64_t{1}}).at(0).scalar_type(), kInt);
}

TEST(OpsCall, InPlaceOpsReturnTheTensorTheyWroteAndTwoResultOpsBoth) {
  Tensor x = zeros({3});
  const Tensor r = ops::call("add_", {x, ones({3})}).at(0);
  EXPECT_EQ(r.data_ptr(), x.data_ptr());
  EXPECT_TRUE(same(x, ones({3})));
  const Tensor m = tensor({3.0f, 1.0f, 4.0f, 1.0f, 5.0f, 9.0f}).view({2, 3});
  const std::vector<Tensor> vi = ops::call("max.dim", {m, int64_t{1}});
  ASSERT_EQ(vi.size(), 2u);
  EXPECT_TRUE(same(vi[0], tensor({4.0f, 9.0f})));
  EXPECT_TRUE(same(vi[1], tensor({int64_t{2}, int64_t{2}})));
}

TEST(OpsCall, GradientsFlowThroughOpsCalledByName) {
  const Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  const Tensor y = ops::call("mul", {x, x}).at(0);
  ops::call("sum", {y}).at(0).backward();
  EXPECT_TRUE(same(x.grad(), tensor({2.0, 4.0, 6.0})));
}

TEST(OpsCall, BindingErrorsNameTheOpAndTheArgument) {
  const Tensor a = ones({2});
  EXPECT_THROW(ops::call("no_such_op", {a}), NotImplementedError);
  std::string m = message_of([&] { ops::call("add", {a, a, 1.0, a}); });
  EXPECT_TRUE(contains(m, "add takes 3 arguments, got 4 positional")) << m;
  m = message_of([&] { ops::call("add", {a, a}, {{"beta", 1.0}}); });
  EXPECT_TRUE(contains(m, "add has no argument 'beta'")) << m;
  m = message_of([&] { ops::call("add", {a, a}, {{"other", a}}); });
  EXPECT_TRUE(contains(m, "argument 'other' given twice")) << m;
  m = message_of([&] { ops::call("add", {a}); });
  EXPECT_TRUE(contains(m, "missing argument 'other'")) << m;
  m = message_of([&] { ops::call("softmax", {a, 1.5}); });
  EXPECT_TRUE(contains(m, "softmax: argument 'dim' (int) got float")) << m;
  m = message_of([&] { ops::call("add", {a, std::monostate{}}); });
  EXPECT_TRUE(contains(m, "argument 'other' (Tensor) cannot be None")) << m;
  // The schema's keyword-only arguments refuse a positional value.
  m = message_of([&] { ops::call("add", {a, a, 2.0}); });
  EXPECT_TRUE(contains(m, "keyword-only")) << m;
}
