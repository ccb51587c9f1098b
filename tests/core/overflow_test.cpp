// Size, stride and index arithmetic is checked everywhere (core/src/checked_math.h):
// a shape, extent or offset that int64 cannot hold is a ValueError naming the op
// and the shapes, never a wrapped number. Each case runs on cpu, on meta
// (where nothing is allocated, so only the arithmetic stands between a huge
// shape and a wrong answer) and on sim (an asynchronous device whose memory
// the host reaches only through copies). Oracles: hand-computed values and
// Python's range().
#include <gtest/gtest.h>
#include <tessera/tessera.h>
#include <tessera/sdk/checked.hpp>
#include <tessera/sdk/iterate.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace tessera;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t P(int n) { return int64_t{1} << n; }

// Runs f and expects ErrorType with every fragment in its message.
template <typename ErrorType, typename F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an error";
  } catch (const ErrorType& e) {
    const std::string msg = e.what();
    for (const std::string& frag : fragments)
      EXPECT_NE(msg.find(frag), std::string::npos) << "missing '" << frag << "' in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class Overflow : public ::testing::TestWithParam<const char*> {
 protected:
  Device dev() const { return Device(GetParam()); }
  TensorOptions on(ScalarType t = kFloat) const { return TensorOptions(t).device(dev()); }
  bool holds_data() const { return std::string(GetParam()) != "meta"; }
};

std::vector<int64_t> sizes(const Tensor& t) { return t.sizes().vec(); }

// Huge operands are stride-0 views of one element: nothing is allocated.
Tensor huge_view(IntArrayRef shape, const TensorOptions& o) {
  return ones(DimVector(shape.size(), 1), o).expand(shape);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Devices, Overflow, ::testing::Values("cpu", "meta", "sim"));

// ---- the examples ----

TEST_P(Overflow, EmptyWhoseByteSizeOverflows) {
  // 2**61 + 1 float64 elements are 2**64 + 8 bytes: once an 8-byte buffer.
  expect_error<ValueError>([&] { empty({P(61) + 1}, on(kDouble)); },
                           {"empty", "[2305843009213693953]", "float64", "18446744073709551624 bytes"});
  expect_error<ValueError>([&] { zeros({P(61) + 1}, on(kDouble)); }, {"empty", "bytes"});
  expect_error<ValueError>([&] { full({P(62)}, 1.0, on(kFloat)); }, {"empty", "bytes"});
  // The largest that fits: on meta it exists.
  if (!holds_data()) EXPECT_EQ(empty({P(60) - 1}, on(kDouble)).nbytes(), size_t(kMax - 7));
}

TEST_P(Overflow, AsStridedExtentIsExact) {
  const Tensor t = zeros({4}, on());
  expect_error<ValueError>([&] { t.as_strided({3}, {P(62) + 100000}); }, {"as_strided", "[3]", "int64"});
  expect_error<ValueError>([&] { t.as_strided({2, 2}, {kMax, 1}); }, {"as_strided"});
  expect_error<ValueError>([&] { t.as_strided({2}, {1}, kMax); }, {"as_strided"});
  // Exact bounds: element 3 is the last one.
  EXPECT_EQ(sizes(t.as_strided({2}, {3})), (std::vector<int64_t>{2}));
  EXPECT_EQ(sizes(t.as_strided({1}, {kMax}, 3)), (std::vector<int64_t>{1}));
  expect_error<ValueError>([&] { t.as_strided({2}, {4}); }, {"as_strided", "element 4", "4 elements"});
  expect_error<ValueError>([&] { t.as_strided({1}, {1}, 4); }, {"as_strided"});
  // Nothing addressed: any offset whose byte count fits.
  EXPECT_EQ(t.as_strided({0}, {1}, 100).numel(), 0);
  expect_error<ValueError>([&] { t.as_strided({0}, {1}, kMax); }, {"as_strided", "offset"});
}

TEST_P(Overflow, NumelOfAHugeShapeIsRefusedNotZero) {
  expect_error<ValueError>([&] { zeros({P(40), P(40)}, on()); }, {"[1099511627776, 1099511627776]", "int64"});
  expect_error<ValueError>([&] { empty({P(40), P(40)}, on()); }, {"empty", "more elements"});
  // A 0 hides nothing: such a shape has no int64 strides.
  expect_error<ValueError>([&] { empty({0, P(40), P(40)}, on()); }, {"empty", "[0, 1099511627776, 1099511627776]"});
}

TEST_P(Overflow, ExpandBeyondInt64IsRefused) {
  const Tensor one = ones({1, 1}, on());
  expect_error<ValueError>([&] { one.expand({P(32), P(32)}).sum(); },
                           {"expand", "[4294967296, 4294967296]", "more elements"});
  // 2**62 float32 elements are 2**64 bytes.
  expect_error<ValueError>([&] { one.expand({P(31), P(31)}); }, {"expand", "float32", "bytes"});
  // What fits is exact.
  const Tensor b = ones({1, 1}, on(kInt8)).expand({P(31), P(31)});
  EXPECT_EQ(b.numel(), P(62));
  EXPECT_EQ(b.nbytes(), size_t(P(62)));
}

TEST_P(Overflow, ArangeCountMatchesPythonRange) {
  // len(range(2**63 - 1, -2**63 + 1, -2**62)) == 4
  const Tensor a = arange(kMax, kMin + 1, -P(62), on(kLong));
  ASSERT_EQ(sizes(a), (std::vector<int64_t>{4}));
  if (holds_data())
    EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{kMax, kMax - P(62), kMax - P(62) - P(62), kMax - P(62) - P(62) - P(62)}));
  // len(range(-2**63, 2**63 - 1, 2**63 - 1)) == 3: [-2**63, -1, 2**63 - 2]
  const Tensor b = arange(kMin, kMax, kMax, on(kLong));
  ASSERT_EQ(sizes(b), (std::vector<int64_t>{3}));
  if (holds_data()) EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{kMin, -1, kMax - 1}));
  EXPECT_EQ(arange(kMin, kMax, kMax - 1, on(kLong)).numel(), 3);  // ceil((2**64 - 1) / (2**63 - 2))
  EXPECT_EQ(arange(kMax, kMin, kMin, on(kLong)).numel(), 2);      // range(2**63-1, -2**63, -2**63): [2**63-1, -1]
  EXPECT_EQ(arange(kMin + 1, kMax, P(62), on(kLong)).numel(), 4);
  EXPECT_EQ(arange(7, 7, kMin, on(kLong)).numel(), 0);
  // len(range(-2**63, 2**63 - 1)) is 2**64 - 1: no int64 count.
  expect_error<ValueError>([&] { arange(kMin, kMax, 1, on(kLong)); }, {"arange", "18446744073709551615 elements"});
  // Floats: a count beyond int64 (or infinite) is refused, not converted.
  expect_error<ValueError>([&] { arange(0.0, 1e300, 1.0, on()); }, {"arange", "elements"});
  expect_error<ValueError>([&] { arange(-1e308, 1e308, 1e-300, on()); }, {"arange", "elements"});
  // A count that fits int64 but not memory: the byte size is refused.
  expect_error<ValueError>([&] { arange(0, P(62), 1, on(kLong)); }, {"arange", "bytes"});
}

TEST_P(Overflow, SliceLengthMatchesPythonSlicing) {
  const Tensor t = arange(5, on(kLong));
  // len(range(5)[0:5:2**63 - 1]) == 1
  const Tensor s = t.slice(0, 0, 5, kMax);
  ASSERT_EQ(sizes(s), (std::vector<int64_t>{1}));
  if (holds_data()) EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(t.slice(0, kMin, kMax, kMax).numel(), 1);  // range(5)[-2**63:2**63-1:2**63-1]
  EXPECT_EQ(t.slice(0, 1, kMax, kMax - 1).numel(), 1);
  EXPECT_EQ(t.slice(0, 4, kMax, 3).numel(), 1);
  EXPECT_EQ(t.slice(0, kMax, kMin, 1).numel(), 0);
  EXPECT_EQ(t.slice(0, -2, std::nullopt, 2).numel(), 1);
}

TEST_P(Overflow, OneHotNeedsAtLeastOneClass) {
  const Tensor t = tensor({0, 1}, on(kLong));
  expect_error<ValueError>([&] { one_hot(t, 0); }, {"one_hot", "num_classes", "got 0"});
  expect_error<ValueError>([&] { one_hot(t, -2); }, {"one_hot", "num_classes", "got -2"});
  EXPECT_EQ(sizes(one_hot(t, 1 << 20)), (std::vector<int64_t>{2, 1 << 20}));
  // A result beyond int64 names one_hot.
  expect_error<ValueError>([&] { one_hot(tensor({0}, on(kLong)).expand({P(40)}), P(40)); }, {"one_hot"});
  if (holds_data()) {
    expect_error<ValueError>([&] { one_hot(tensor({kMax}, on(kLong))); }, {"one_hot", "beyond int64"});
  }
}

// ---- every fixed site ----

TEST_P(Overflow, ViewAndReshapeShapes) {
  const Tensor e = empty({0}, on());
  expect_error<ValueError>([&] { e.view({0, P(40), P(40)}); }, {"view", "[0, 1099511627776, 1099511627776]"});
  expect_error<ValueError>([&] { e.reshape({P(40), P(40), 0}); }, {"reshape"});
  expect_error<ValueError>([&] { empty({4}, on()).view({P(32), P(32), 0}); }, {"view"});
  expect_error<ValueError>([&] { empty({4}, on()).view({-1, P(32), P(32)}); }, {"view"});
}

TEST_P(Overflow, NarrowSelectUnsqueeze) {
  const Tensor t = arange(10, on(kLong));
  // start + length once wrapped past the size check.
  expect_error<IndexError>([&] { t.narrow(0, 2, kMax); }, {"narrow"});
  expect_error<IndexError>([&] { t.narrow(0, -3, kMax); }, {"narrow"});
  EXPECT_EQ(t.narrow(0, 10, 0).numel(), 0);
  expect_error<IndexError>([&] { t.select(0, kMin); }, {"select"});
  // unsqueeze after the last dim of a huge-stride view: any stride serves.
  const Tensor v = t.as_strided({2, 1}, {9, kMax});
  EXPECT_EQ(sizes(v.unsqueeze(1)), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(sizes(v.unsqueeze(2)), (std::vector<int64_t>{2, 1, 1}));
}

TEST_P(Overflow, CatStackSplit) {
  if (!holds_data()) {
    const Tensor big = empty({P(62)}, on(kBool));
    expect_error<ValueError>([&] { cat({big, big}); }, {"cat", "beyond int64"});
    // n > 2**62: start + split_size passes INT64_MAX in the second step.
    const Tensor huge = empty({P(62) + 10}, on(kBool));
    const auto parts = huge.split(P(62) + 5);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].numel(), P(62) + 5);
    EXPECT_EQ(parts[1].numel(), 5);
    // shift % n + n would pass INT64_MAX: roll still gives the shape.
    EXPECT_EQ(sizes(huge.roll({P(62) + 9})), sizes(huge));
  }
  // Expanded views: no memory, but results beyond int64.
  const Tensor e8 = ones({1, 1}, on(kInt8)).expand({P(31), P(31)});
  expect_error<ValueError>([&] { cat({e8, e8}); }, {"cat", "[4294967296, 2147483648]", "more elements"});
  const Tensor e32 = ones({1, 1}, on()).expand({P(30), P(30)});
  expect_error<ValueError>([&] { cat({e32, e32}); }, {"cat", "float32", "bytes"});
  expect_error<ValueError>([&] { stack({e8, e8}); }, {"stack", "more elements"});
  // Sizes that add up to the dim only after wrapping around.
  const Tensor one = ones({1}, on());
  expect_error<ValueError>([&] { one.split_with_sizes({kMax, kMax, 3}); }, {"split_with_sizes", "beyond int64"});
}

TEST_P(Overflow, RepeatTilePad) {
  const Tensor t = ones({2}, on());
  expect_error<ValueError>([&] { t.repeat({P(40), P(40)}); }, {"repeat", "[1099511627776, 2199023255552]"});
  expect_error<ValueError>([&] { t.tile({P(40), P(40)}); }, {"tile"});
  expect_error<ValueError>([&] { t.repeat({kMax}); }, {"repeat"});
  const Tensor m = ones({1, 1}, on());
  expect_error<ValueError>([&] { m.pad({0, P(40), 0, P(40)}); }, {"pad", "[1099511627777, 1099511627777]"});
  expect_error<ValueError>([&] { m.pad({kMax, kMax}); }, {"pad"});
  // Cropping by INT64_MIN leaves nothing (not a negated overflow).
  expect_error<ValueError>([&] { m.pad({kMin, 0}); }, {"pad", "negative output size"});
  EXPECT_EQ(sizes(m.pad({kMin, kMax})), (std::vector<int64_t>{1, 0}));
}

TEST_P(Overflow, BroadcastAndPointwise) {
  const Tensor a = huge_view({P(40), 1}, on(kInt8)), b = huge_view({1, P(40)}, on(kInt8));
  expect_error<ValueError>([&] { (void)(a + b); }, {"add", "[1099511627776, 1]", "[1, 1099511627776]"});
  expect_error<ValueError>([&] { where(huge_view({1, P(40)}, on(kBool)), a, a); }, {"where"});
  // The output's byte size: 2**62 elements of float32.
  const Tensor c = huge_view({P(31), 1}, on(kInt8)), d = huge_view({1, P(31)}, on(kFloat));
  expect_error<ValueError>([&] { (void)(c + d); }, {"add", "float32", "18446744073709551616 bytes"});
  if (!holds_data()) EXPECT_EQ((c + d.to(kInt8)).numel(), P(62));
  expect_error<ValueError>([&] { huge_view({P(61)}, on(kInt8)).to(kDouble); }, {"to", "float64", "bytes"});
}

TEST_P(Overflow, MatmulShapes) {
  const Tensor a = huge_view({P(40), 1}, on()), b = huge_view({1, P(40)}, on());
  expect_error<ValueError>([&] { a.mm(b); }, {"mm", "[1099511627776, 1099511627776]"});
  expect_error<ValueError>([&] { a.matmul(b); }, {"mm"});
  expect_error<ValueError>([&] { huge_view({1, P(40), 1}, on()).matmul(huge_view({P(30), 1, 1}, on())); },
                           {"matmul", "[1073741824, 1099511627776, 1]"});
  expect_error<ValueError>([&] { outer(huge_view({P(40)}, on()), huge_view({P(40)}, on())); },
                           {"[1099511627776, 1099511627776]"});
}

TEST_P(Overflow, IndexingShapes) {
  const Tensor self = huge_view({1, P(30)}, on()), index = zeros({1}, on(kLong)).expand({P(40)});
  expect_error<ValueError>([&] { self.index_select(0, index); }, {"index_select", "[1099511627776, 1073741824]"});
  expect_error<ValueError>([&] { embedding(huge_view({2, P(30)}, on()), index); }, {"embedding"});
}

TEST_P(Overflow, ConvAndPoolOutputShapes) {
  const Tensor x = ones({1, 1, 4, 4}, on()), w = ones({1, 1, 1, 1}, on()), w3 = ones({1, 1, 3, 3}, on());
  expect_error<ValueError>([&] { conv2d(x, w, std::nullopt, {1}, {P(62)}); }, {"conv2d", "beyond int64"});
  expect_error<ValueError>([&] { conv2d(x, w3, std::nullopt, {1}, IntArrayRef{0}, {P(62)}); }, {"conv2d", "beyond int64"});
  expect_error<ValueError>([&] { conv2d(x, w3, std::nullopt, {1}, "same", {P(62)}); }, {"conv2d", "beyond int64"});
  // Output sizes that fit stay exact.
  if (!holds_data())
    EXPECT_EQ(sizes(conv2d(x, w, std::nullopt, {P(61)}, {P(40)})), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_error<ValueError>([&] { max_pool2d(x, {3}, {1}, {0}, {P(62)}); }, {"max_pool2d", "beyond int64"});
  EXPECT_EQ(sizes(max_pool2d(x, {2}, {kMax})), (std::vector<int64_t>{1, 1, 1, 1}));
  // ceil_mode once added stride - 1 to the span and overflowed. Exact: ceil(4 / (2**63 - 1)) + 1
  // = 2 windows, less the second, which would start past the input.
  EXPECT_EQ(sizes(max_pool2d(x, {2}, {kMax}, {1}, {1}, true)), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(sizes(avg_pool2d(x, {3}, {kMax}, {1}, true)), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST_P(Overflow, ReductionsOverHugeShapes) {
  if (holds_data()) GTEST_SKIP() << "2**62 elements: meta only";
  const Tensor x = empty({P(31), P(31)}, on(kInt8));
  EXPECT_EQ(sizes(x.sum()), std::vector<int64_t>{});
  EXPECT_EQ(sizes(x.sum({1}, true)), (std::vector<int64_t>{P(31), 1}));
  EXPECT_EQ(sizes(empty({P(30), P(30)}, on()).mean()), std::vector<int64_t>{});
  // cumsum of int8 counts in int64: 2**65 bytes.
  expect_error<ValueError>([&] { cumsum(x, 0); }, {"cumsum", "int64", "bytes"});
  EXPECT_EQ(sizes(cumsum(x, 0, kInt8)), (std::vector<int64_t>{P(31), P(31)}));
}

// Windows far larger than the input (found by the Python op fuzzer: a 2**62
// kernel made the CPU kernel scan every tap, a hang; the divisor of avg_pool's
// padded window overflowed int64). Hand-computed values and gradients.
TEST(OverflowHost, PoolingWindowsFarLargerThanTheInput) {
  const auto plane = [] { return arange(8, TensorOptions(kFloat64)).reshape({1, 1, 2, 4}).requires_grad_(); };
  {  // One window (stride = kernel) covering the input and its padding: the max, 7, takes the gradient.
    Tensor x = plane();
    Tensor y = max_pool2d(x, {P(62)}, {}, {3}, {1}, /*ceil_mode=*/true);
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{7}));
    y.sum().backward();
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1}));
  }
  {  // avg over the padded window: (2 + 2*3) * (4 + 2*3) = 80 counted, or the 8 inside.
    Tensor x = plane();
    Tensor y = avg_pool2d(x, {P(62)}, {}, {3}, /*ceil_mode=*/true, /*count_include_pad=*/true);
    EXPECT_DOUBLE_EQ(y.item().to_double(), 28.0 / 80);
    y.sum().backward();
    for (double g : x.grad().to_vector<double>()) EXPECT_DOUBLE_EQ(g, 1.0 / 80);
    Tensor x2 = plane();
    Tensor y2 = avg_pool2d(x2, {P(62)}, {}, {3}, true, /*count_include_pad=*/false);
    EXPECT_DOUBLE_EQ(y2.item().to_double(), 28.0 / 8);
    y2.sum().backward();
    for (double g : x2.grad().to_vector<double>()) EXPECT_DOUBLE_EQ(g, 1.0 / 8);
  }
  {  // Padding 2**61 each side: the padded area (2 + 2**62) * (4 + 2**62) passes int64. The
     // backward, built in the padded frame, refuses it with the reason.
    Tensor x = plane();
    Tensor y = avg_pool2d(x, {P(62)}, {}, {P(61)});
    const double area = (2.0 + std::ldexp(1.0, 62)) * (4.0 + std::ldexp(1.0, 62));
    EXPECT_DOUBLE_EQ(y.item().to_double(), 28.0 / area);
    expect_error<ValueError>([&] { y.sum().backward(); }, {"avg_pool2d backward", "padded frame"});
  }
}

TEST(OverflowHost, FromBlobAndEmptyStrided) {
  float buf[4] = {};
  expect_error<ValueError>([&] { from_blob(buf, {3}, {P(62)}, nullptr); }, {"from_blob", "int64"});
  expect_error<ValueError>([&] { from_blob(buf, {3, 2}, {-P(62), P(62)}, nullptr); }, {"from_blob"});
  expect_error<ValueError>([&] { from_blob(buf, {P(40), P(40)}, nullptr); }, {"from_blob"});
  EXPECT_EQ(from_blob(buf + 2, {2, 2}, {-2, 1}, nullptr).storage()->nbytes(), 4 * sizeof(float));
  expect_error<ValueError>([&] { empty_strided({3}, {P(62)}); }, {"empty_strided", "int64"});
  EXPECT_EQ(empty_strided({2, 3}, {1, 2}).storage()->nbytes(), 6 * sizeof(float));
}

// ---- the SDK's iterators refuse operands whose extent overflows ----

TEST(OverflowSdk, StridedIterRefusesOverflowingExtents) {
  char data[16] = {};
  const int64_t shape[2] = {3, 2};
  const int64_t huge[2] = {P(62), 1};
  const sdk::IterOperand good{data, nullptr, 1};
  const sdk::IterOperand bad{data, huge, 4};
  try {
    sdk::StridedIter<2> it(2, shape, {good, bad});
    ADD_FAILURE() << "expected an sdk::Error";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), TSR_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("operand 1"), std::string::npos) << e.what();
  }
  // A dense operand whose byte size overflows.
  const int64_t long_shape[1] = {P(61) + 1};
  const sdk::IterOperand wide{data, nullptr, 8};
  int64_t n = 0;
  EXPECT_THROW(sdk::StridedIter<1>::dense(1, long_shape, {wide}, &n), sdk::Error);
  EXPECT_THROW(sdk::StridedIter<1>(1, long_shape, {wide}), sdk::Error);
  // Empty shapes with huge other dims: zero elements, no overflow reported.
  const int64_t empty_shape[3] = {0, P(40), P(40)};
  EXPECT_EQ(sdk::StridedIter<1>(3, empty_shape, {good}).numel(), 0);
  EXPECT_TRUE(sdk::StridedIter<1>::dense(3, empty_shape, {good}, &n));
  EXPECT_EQ(n, 0);
  // Size-1 dims never step: any stride is fine.
  const int64_t one_shape[2] = {1, 4};
  const int64_t odd[2] = {kMax, 1};
  EXPECT_EQ(sdk::StridedIter<1>(2, one_shape, {sdk::IterOperand{data, odd, 4}}).numel(), 4);
}

TEST(OverflowSdk, CheckedHelpers) {
  int64_t out = 0;
  EXPECT_FALSE(sdk::checked::mul(P(31), P(31), &out));
  EXPECT_EQ(out, P(62));
  EXPECT_TRUE(sdk::checked::mul(P(32), P(31), &out));
  EXPECT_TRUE(sdk::checked::add(kMax, 1, &out));
  const int64_t s[3] = {2, 0, P(62)};
  EXPECT_FALSE(sdk::checked::numel(3, s, &out));
  EXPECT_EQ(out, 0);
  const int64_t s2[2] = {P(32), P(32)};
  EXPECT_TRUE(sdk::checked::numel(2, s2, &out));
  const int64_t sz[2] = {3, 2}, st[2] = {-5, 1};
  EXPECT_FALSE(sdk::checked::byte_extent(2, sz, st, 4, &out));
  EXPECT_EQ(out, (2 * 5 + 1) * 4);
  EXPECT_FALSE(sdk::checked::byte_extent(2, sz, nullptr, 8, &out));
  EXPECT_EQ(out, 5 * 8);
  const int64_t st2[2] = {kMin, 1};
  EXPECT_TRUE(sdk::checked::byte_extent(2, sz, st2, 1, &out));
}
