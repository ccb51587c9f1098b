// C++ tests of the shape ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cstdint>
#include <string>

using namespace tessera;

namespace {

const ScalarType kAll[] = {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

template <typename E, typename F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragment << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ShapeOps, CatStackOnEveryDtype) {
  for (ScalarType t : kAll) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = tensor({1, 0, 1}, t).view({1, 3}), b = tensor({0, 1, 1, 1, 0, 0}, t).view({2, 3});
    const Tensor c = cat({a, b});
    EXPECT_EQ(shape(c), (std::vector<int64_t>{3, 3}));
    EXPECT_EQ(c.scalar_type(), t);
    EXPECT_EQ(vals(c), (std::vector<double>{1, 0, 1, 0, 1, 1, 1, 0, 0}));
    const Tensor s = stack({a, a}, -1);
    EXPECT_EQ(shape(s), (std::vector<int64_t>{1, 3, 2}));
    EXPECT_EQ(vals(s), (std::vector<double>{1, 1, 0, 0, 1, 1}));
  }
}

TEST(ShapeOps, CatPromotesSkipsLegacyEmptyAndWritesOut) {
  const Tensor a = tensor({1, 2}, kByte), b = tensor({-3}, kChar);
  const Tensor c = cat({a, empty({0}, kLong), b});
  EXPECT_EQ(c.scalar_type(), kLong);  // the skipped tensor still promotes
  EXPECT_EQ(vals(c), (std::vector<double>{1, 2, -3}));
  EXPECT_EQ(cat({a, b}).scalar_type(), kShort);
  Tensor out = empty({3}, kDouble);
  EXPECT_TRUE(cat_out(out, {a, b}).is_same(out));
  EXPECT_EQ(vals(out), (std::vector<double>{1, 2, -3}));
  Tensor sout = empty({2, 2}, kFloat);
  stack_out(sout, {tensor({1.f, 2.f}), tensor({3.f, 4.f})}, 1);
  EXPECT_EQ(vals(sout), (std::vector<double>{1, 3, 2, 4}));
  // Strided inputs.
  const Tensor m = arange(6, kFloat).view({2, 3});
  EXPECT_EQ(vals(cat({m.t(), m.t()}, 1)), (std::vector<double>{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5}));
}

TEST(ShapeOps, SplitAndChunkAreViews) {
  const Tensor t = arange(10, kInt).view({5, 2});
  const auto parts = t.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(shape(parts[2]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(parts[1].data_ptr(), static_cast<char*>(t.data_ptr()) + 4 * sizeof(int32_t));
  const auto sized = split(t, {1, 4});
  EXPECT_EQ(vals(sized[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(shape(sized[1]), (std::vector<int64_t>{4, 2}));
  const auto chunks = t.chunk(2, 1);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(vals(chunks[1]), (std::vector<double>{1, 3, 5, 7, 9}));
  EXPECT_EQ(chunk(t, 4).size(), 3u);  // ceil(5 / 4) = 2 per chunk: 3 chunks
  EXPECT_EQ(chunk(empty({0, 2}), 3).size(), 3u);
  expect_error<ValueError>([&] { t.split_with_sizes({2, 2}); }, "sum exactly to 5");
  expect_error<ValueError>([&] { t.chunk(0); }, "greater than 0");
  expect_error<IndexError>([&] { t.split(1, 3); }, "split: dimension 3 is out of range");
}

TEST(ShapeOps, FlipRollRepeatTile) {
  for (ScalarType t : kAll) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor m = tensor({1, 0, 0, 1, 1, 0}, t).view({2, 3});
    EXPECT_EQ(vals(m.flip({0, 1})), (std::vector<double>{0, 1, 1, 0, 0, 1}));
    EXPECT_EQ(vals(flip(m, {-1})), (std::vector<double>{0, 0, 1, 0, 1, 1}));
    EXPECT_EQ(vals(m.roll({1})), (std::vector<double>{0, 1, 0, 0, 1, 1}));
    EXPECT_EQ(vals(roll(m, {-1, 4}, {1, 0})), (std::vector<double>{0, 0, 1, 1, 0, 1}));
    EXPECT_EQ(shape(m.repeat({2, 1, 2})), (std::vector<int64_t>{2, 2, 6}));
    EXPECT_EQ(vals(m.repeat({1, 2})), (std::vector<double>{1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0}));
    EXPECT_EQ(vals(tile(m, {2})), vals(m.repeat({1, 2})));
    EXPECT_EQ(m.flip({0}).scalar_type(), t);
  }
  const Tensor m = arange(6, kFloat).view({2, 3});
  EXPECT_TRUE(m.flip({0}).is_contiguous());
  EXPECT_EQ(vals(m.t().flip({0})), (std::vector<double>{2, 5, 1, 4, 0, 3}));
  expect_error<ValueError>([&] { m.flip({1, -1}); }, "appears multiple times");
  expect_error<ValueError>([&] { m.roll({1, 2}, {0}); }, "shifts and dims must align");
  expect_error<ValueError>([&] { m.repeat({2}); }, "can not be smaller than the number of dimensions");
  expect_error<ValueError>([&] { m.repeat({1, -2}); }, "non-negative");
}

TEST(ShapeOps, PadConstantAndCrop) {
  const Tensor m = arange(6, kLong).view({2, 3});
  const Tensor p = pad(m, {1, -1, 0, 1}, "constant", 7);
  EXPECT_EQ(shape(p), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(vals(p), (std::vector<double>{7, 0, 1, 7, 3, 4, 7, 7, 7}));
  EXPECT_EQ(vals(m.pad({0, 0, -2, 1})), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(pad(tensor({1.5f}, kHalf), {2, 0}).scalar_type(), kHalf);
  expect_error<NotImplementedError>([&] { pad(m, {1, 1}, "reflect"); }, "only mode='constant'");
  expect_error<ValueError>([&] { pad(m, {1}); }, "divisible by 2");
  expect_error<ValueError>([&] { pad(m, {-2, -2}); }, "negative output size");
}

TEST(ShapeOps, TrilTriuForms) {
  for (ScalarType t : kAll) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor m = ones({2, 3, 3}, t);
    EXPECT_EQ(vals(m.tril().select(0, 1)), (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
    EXPECT_EQ(vals(triu(m, 1).select(0, 0)), (std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
    Tensor w = ones({3, 2}, t);
    EXPECT_TRUE(&w.triu_(-1) == &w);
    EXPECT_EQ(vals(w), (std::vector<double>{1, 1, 1, 1, 0, 1}));
    Tensor out = empty({3, 3}, kDouble);
    EXPECT_TRUE(tril_out(out, ones({3, 3}, t), -1).is_same(out));
    EXPECT_EQ(vals(out), (std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0}));
  }
  Tensor big = ones({2, 2});
  EXPECT_EQ(vals(big.tril(INT64_MAX)), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(vals(big.tril(INT64_MIN)), (std::vector<double>{0, 0, 0, 0}));
  expect_error<ValueError>([] { ones({3}).tril(); }, "tril: input tensor must have at least 2 dimensions");
  expect_error<ValueError>([] { Tensor a = ones({2, 2}).expand({3, 2, 2}); a.tril_(); }, "tril_");
}

TEST(ShapeOps, CatErrors) {
  expect_error<ValueError>([] { cat(std::vector<Tensor>{}); }, "cat: expected a non-empty list");
  expect_error<ValueError>([] { cat({ones({}), ones({})}); }, "zero-dimensional tensor (at position 0)");
  expect_error<ValueError>([] { cat({ones({2, 3}), ones({3, 3})}, 1); }, "sizes of tensors must match except in dimension 1");
  expect_error<ValueError>([] { stack({ones({2}), ones({3})}); }, "stack: expects each tensor to be equal size");
  expect_error<IndexError>([] { cat({ones({2})}, 1); }, "cat");
}
