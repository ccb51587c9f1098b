// clamp with both bounds runs as one _clamp pass (core/src/ops/ternary.cpp)
// where the device has the kernel and the result keeps self's dtype, and as the
// maximum + minimum composite otherwise. The oracle is the composite itself:
// the two must agree bit for bit (NaN included). The kernel recorder
// (tessera/testing.h) shows which path ran.
#include <gtest/gtest.h>
#include <tessera/ops/call.h>
#include <tessera/testing.h>
#include <tessera/tessera.h>

#include "kernel_log.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tessera;

namespace {

using tsrtest::kernels_of;
using tsrtest::Names;

bool ran(const Names& names, const std::string& op) {
  for (const std::string& n : names)
    if (n == op) return true;
  return false;
}

// Same dtype, shape and values, NaN where the other has NaN.
void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.scalar_type(), b.scalar_type());
  ASSERT_TRUE(a.sizes().equals(b.sizes()));
  const std::vector<double> x = a.to(kDouble).contiguous().to_vector<double>();
  const std::vector<double> y = b.to(kDouble).contiguous().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(x[i])) << "element " << i << ": " << x[i] << ", expected NaN";
    } else {
      EXPECT_EQ(x[i], y[i]) << "element " << i;
    }
  }
}

Tensor composite(const Tensor& x, const Tensor& lo, const Tensor& hi) { return minimum(maximum(x, lo), hi); }

// Values around the bounds, both infinities and NaN.
Tensor sample(ScalarType t) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {-3, -1, -0.5, 0, 0.25, 0.5, 1, 2.75, 100, -inf, inf, nan};
  for (int i = 0; i < 40; ++i) v.push_back(std::sin(i * 1.7) * 3);
  Tensor x = tensor(v).to(t);
  return x.view({4, 13});
}

const ScalarType kDtypes[] = {kFloat, kDouble, kHalf, kBFloat16, kInt, kLong, kByte, kChar, kShort};

}  // namespace

TEST(ClampFusion, NumberBoundsRunOnePassAndMatchTheComposite) {
  for (ScalarType t : kDtypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = sample(t);
    Tensor got;
    const Names k = kernels_of([&] { got = clamp(x, Scalar(-1), Scalar(2)); });
    EXPECT_TRUE(ran(k, "_clamp"));
    EXPECT_FALSE(ran(k, "maximum") || ran(k, "minimum"));
    expect_same(got, composite(x, full({}, -1.0).to(t), full({}, 2.0).to(t)));
  }
}

TEST(ClampFusion, TensorBoundsBroadcastAndNanInABoundGivesNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = sample(t);
    // lo per column (one NaN), hi per row (one below some lo: the result is hi there).
    std::vector<double> lo_v(13), hi_v = {1.5, nan, -2, 3};
    for (int j = 0; j < 13; ++j) lo_v[j] = j == 4 ? nan : -1.0 + 0.1 * j;
    const Tensor lo = tensor(lo_v).to(t), hi = tensor(hi_v).to(t).view({4, 1});
    Tensor got;
    const Names k = kernels_of([&] { got = clamp(x, lo, hi); });
    EXPECT_TRUE(ran(k, "_clamp"));
    expect_same(got, composite(x, lo, hi));
  }
  // Integer bounds on an integer self.
  const Tensor xi = arange(-6, 6, 1, TensorOptions(kInt)).view({3, 4});
  expect_same(clamp(xi, full({4}, 1).to(kInt) * arange(4, TensorOptions(kInt)) - 2, full({3, 1}, 3).to(kInt)),
              composite(xi, full({4}, 1).to(kInt) * arange(4, TensorOptions(kInt)) - 2, full({3, 1}, 3).to(kInt)));
}

TEST(ClampFusion, AResultOfAnotherDtypeOrA0dSelfTakesTheComposite) {
  // int self, float bound: the result is float32 (PyTorch's promotion), not self's dtype.
  const Tensor xi = arange(-3, 4, 1, TensorOptions(kInt));
  Tensor got;
  Names k = kernels_of([&] { got = clamp(xi, Scalar(0), Scalar(2.5)); });
  EXPECT_FALSE(ran(k, "_clamp"));
  EXPECT_TRUE(ran(k, "maximum") && ran(k, "minimum"));
  EXPECT_EQ(got.scalar_type(), kFloat);
  EXPECT_EQ(got.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 2, 2.5f}));
  // A bound of a wider dtype widens the result.
  const Tensor xf = tensor({-2.0, 0.5, 9.0}).to(kFloat);
  k = kernels_of([&] { got = clamp(xf, tensor({-1.0}), tensor({1.0})); });
  EXPECT_FALSE(ran(k, "_clamp"));
  EXPECT_EQ(got.scalar_type(), kDouble);
  // A 0-d self.
  k = kernels_of([&] { got = clamp(full({}, 5.0f), Scalar(0), Scalar(1)); });
  EXPECT_FALSE(ran(k, "_clamp"));
  EXPECT_EQ(got.item<float>(), 1.0f);
  // One bound: maximum or minimum alone.
  k = kernels_of([&] { got = clamp(xf, Scalar(0), std::nullopt); });
  EXPECT_TRUE(ran(k, "maximum"));
  EXPECT_FALSE(ran(k, "minimum") || ran(k, "_clamp"));
}

TEST(ClampFusion, InPlaceWritesSelfInOnePass) {
  Tensor x = sample(kFloat);
  const Tensor before = x.clone();
  const void* data = x.data_ptr();
  const Tensor lo = full({13}, -0.75f), hi = full({4, 1}, 0.5f);
  const Names k = kernels_of([&] { x.clamp_(lo, hi); });
  EXPECT_EQ(k, Names{"_clamp"});
  EXPECT_EQ(x.data_ptr(), data);
  expect_same(x, composite(before, lo, hi));
  // Bounds that would widen self's shape: the composite's error, naming clamp_.
  Tensor row = full({13}, 1.0f);
  try {
    row.clamp_(lo, hi);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("clamp_"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 13]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(row.to_vector<float>(), std::vector<float>(13, 1.0f));  // untouched
  // Wider bounds: the composite in float64, then stored into self's float32.
  Tensor y = before.clone();
  const Names w = kernels_of([&] { y.clamp_(lo.to(kDouble), hi.to(kDouble)); });
  EXPECT_FALSE(ran(w, "_clamp"));
  EXPECT_TRUE(ran(w, "copy_"));
  expect_same(y, composite(before.to(kDouble), lo.to(kDouble), hi.to(kDouble)).to(kFloat));
}

TEST(ClampFusion, OutIsWrittenByTheKernel) {
  const Tensor x = sample(kFloat), lo = full({}, -1.0f), hi = full({}, 1.0f);
  Tensor out = empty({4, 13});
  const void* data = out.data_ptr();
  EXPECT_EQ(kernels_of([&] { clamp_out(out, x, lo, hi); }), Names{"_clamp"});
  EXPECT_EQ(out.data_ptr(), data);
  expect_same(out, composite(x, lo, hi));
  // One bound: maximum / minimum write into out.
  const Tensor row = full({13}, -0.25f), col = full({4, 1}, 0.5f);
  EXPECT_EQ(kernels_of([&] { clamp_min_out(out, x, row); }), Names{"maximum"});
  EXPECT_EQ(out.data_ptr(), data);
  expect_same(out, maximum(x, row));
  EXPECT_EQ(kernels_of([&] { clamp_max_out(out, x, col); }), Names{"minimum"});
  expect_same(out, minimum(x, col));
  // out of another dtype: computed, then copied.
  Tensor wide = empty({4, 13}, TensorOptions(kDouble));
  EXPECT_EQ(kernels_of([&] { clamp_out(wide, x, lo, hi); }), (Names{"_clamp", "copy_"}));
  expect_same(wide, composite(x, lo, hi).to(kDouble));
}

TEST(ClampFusion, ByNameItPromotesOverAllThree) {
  const Tensor x = arange(-3, 3, 1, TensorOptions(kInt)), lo = full({6}, -1.5).to(kDouble), hi = full({}, 1.0f);
  const Tensor got = ops::call("_clamp", {x, lo, hi}).at(0);
  EXPECT_EQ(got.scalar_type(), kDouble);
  EXPECT_EQ(got.to_vector<double>(), (std::vector<double>{-1.5, -1.5, -1, 0, 1, 1}));
  EXPECT_THROW(ops::call("_clamp", {x, full({4}, 0.0), hi}), ValueError);  // not broadcastable
}

TEST(ClampFusion, ADeviceWithoutTheKernelRunsTheComposite) {
  (void)Device("cpu");
  load_plugin(TSRTEST_CLAMPLESS);
  const Device dev("clampless");
  const Tensor x = sample(kFloat), lo = full({13}, -0.5f), hi = full({4, 1}, 0.75f);
  Tensor got;
  const Names k = kernels_of([&] { got = clamp(x.to(dev), lo.to(dev), hi.to(dev)); });
  EXPECT_FALSE(ran(k, "_clamp"));
  EXPECT_TRUE(ran(k, "maximum") && ran(k, "minimum"));
  EXPECT_EQ(got.device(), dev);
  expect_same(got.to(Device("cpu")), clamp(x, lo, hi));
}
