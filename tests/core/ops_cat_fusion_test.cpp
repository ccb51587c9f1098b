// cat runs as one _cat call (core/src/ops/shape.cpp) where the device has the
// kernel and every input already has the result's dtype, and as one copy_ per
// input otherwise. The oracle is each element placed by hand from the inputs'
// values (their index arithmetic, not cat); the kernel recorder
// (tessera/testing.h) shows which path ran.
#include <gtest/gtest.h>
#include <tessera/ops/call.h>
#include <tessera/testing.h>
#include <tessera/tessera.h>

#include "kernel_log.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace tessera;

namespace {

using tsrtest::kernels_of;
using tsrtest::Names;

int count(const Names& names, const std::string& op) {
  return static_cast<int>(std::count(names.begin(), names.end(), op));
}

// Distinct values per input that every dtype holds exactly (bool: alternating).
Tensor values(IntArrayRef shape, ScalarType t, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = t == kBool ? double((i + seed) % 2) : double((i * 7 + seed * 31) % 97);
  return tensor(v).to(t).view(shape);
}

// The concatenation along dim of row-major inputs, element by element: output
// index (o, j, r) with o over the dims before dim, j along dim, r after.
std::vector<double> expected(const std::vector<Tensor>& list, int64_t dim) {
  const IntArrayRef s0 = list[0].sizes();
  int64_t outer = 1, inner = 1, total = 0;
  for (int64_t d = 0; d < dim; ++d) outer *= s0[size_t(d)];
  for (size_t d = size_t(dim) + 1; d < s0.size(); ++d) inner *= s0[d];
  std::vector<std::vector<double>> in;
  for (const Tensor& t : list) {
    in.push_back(t.to(kDouble).contiguous().to_vector<double>());
    total += t.size(dim);
  }
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < list.size(); ++k) {
      const int64_t len = list[k].size(dim);
      for (int64_t j = 0; j < len * inner; ++j) out.push_back(in[k][size_t(o * len * inner + j)]);
    }
  EXPECT_EQ(int64_t(out.size()), outer * total * inner);
  return out;
}

void expect_cat(const Tensor& got, const std::vector<Tensor>& list, int64_t dim) {
  ASSERT_EQ(got.scalar_type(), list[0].scalar_type());
  EXPECT_EQ(got.to(kDouble).contiguous().to_vector<double>(), expected(list, dim));
}

const ScalarType kDtypes[] = {kFloat, kDouble, kHalf, kBFloat16, kInt, kLong, kByte, kChar, kShort, kBool};

}  // namespace

TEST(CatFusion, EveryDtypeAndDimRunsOneKernelCall) {
  for (ScalarType t : kDtypes) {
    for (int64_t dim : {0, 1, 2}) {
      std::vector<Tensor> list;
      for (int k = 0; k < 3; ++k) {
        std::vector<int64_t> shape = {3, 4, 5};
        shape[size_t(dim)] = k + 1;
        list.push_back(values(shape, t, k));
      }
      Tensor got;
      const Names ran = kernels_of([&] { got = cat(list, dim); });
      EXPECT_EQ(count(ran, "_cat"), 1) << dtype_name(t) << " dim " << dim;
      EXPECT_EQ(count(ran, "copy_"), 0) << dtype_name(t) << " dim " << dim;
      expect_cat(got, list, dim);
    }
  }
}

TEST(CatFusion, StridedInputsAndANegativeDim) {
  const Tensor base = values({6, 8}, kFloat, 1);
  const std::vector<Tensor> list = {base.t(),                                  // transposed [8, 6]
                                    base.narrow(1, 2, 3).t(),                   // sliced, transposed [3, 6]
                                    values({1, 6}, kFloat, 2).expand({4, 6}),   // broadcast [4, 6]
                                    values({5, 6}, kFloat, 3).flip({0})};       // reversed
  Tensor got;
  const Names ran = kernels_of([&] { got = cat(list, -2); });
  EXPECT_EQ(count(ran, "_cat"), 1);
  expect_cat(got, list, 0);
  const std::vector<Tensor> cols = {base, base.narrow(1, 1, 4), values({6, 1}, kFloat, 4).expand({6, 3})};
  expect_cat(cat(cols, -1), cols, 1);
}

TEST(CatFusion, ManyRowsAcrossThreadsAndAnOutTensor) {
  // 600 rows of 1.6 KB + 2.4 KB: past the kernel's parallel grain.
  const std::vector<Tensor> list = {values({600, 400}, kFloat, 5), values({600, 600}, kFloat, 6)};
  expect_cat(cat(list, 1), list, 1);
  Tensor out = empty({600, 1000});
  const Names ran = kernels_of([&] { cat_out(out, list, 1); });
  EXPECT_EQ(count(ran, "_cat"), 1);
  EXPECT_EQ(count(ran, "copy_"), 0) << "a contiguous out of the result's dtype is written directly";
  expect_cat(out, list, 1);
}

TEST(CatFusion, EmptyInputsAndLegacyEmptyTensors) {
  const std::vector<Tensor> list = {values({2, 0}, kLong, 1), values({2, 3}, kLong, 2), values({2, 0}, kLong, 3)};
  expect_cat(cat(list, 1), list, 1);
  // A 1-D size-0 tensor takes no part in cat (PyTorch's legacy rule) and is left out of the _cat call.
  const Tensor a = values({2, 3}, kInt, 4);
  Tensor got;
  const Names ran = kernels_of([&] { got = cat({a, empty({0}, kInt), a}, 1); });
  EXPECT_EQ(count(ran, "_cat"), 1);
  expect_cat(got, {a, a}, 1);
  EXPECT_TRUE(cat({values({0, 4}, kFloat, 1), values({0, 2}, kFloat, 2)}, 1).sizes().equals({0, 6}));
}

TEST(CatFusion, MixedDtypesConvertThroughCopies) {
  const std::vector<Tensor> list = {values({2, 3}, kInt, 1), values({2, 2}, kFloat, 2)};
  Tensor got;
  const Names ran = kernels_of([&] { got = cat(list, 1); });
  EXPECT_EQ(count(ran, "_cat"), 0);
  EXPECT_EQ(count(ran, "copy_"), 2);
  ASSERT_EQ(got.scalar_type(), kFloat);
  EXPECT_EQ(got.to(kDouble).to_vector<double>(), expected({list[0].to(kFloat), list[1]}, 1));
}

TEST(CatFusion, GradientsFlowThroughTheFusedPath) {
  const Tensor a = values({2, 3}, kDouble, 1).requires_grad_(), b = values({2, 2}, kDouble, 2).requires_grad_();
  const Tensor w = values({2, 5}, kDouble, 3);
  (cat({a, b}, 1) * w).sum().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), w.narrow(1, 0, 3).contiguous().to_vector<double>());
  EXPECT_EQ(b.grad().to_vector<double>(), w.narrow(1, 3, 2).contiguous().to_vector<double>());
}

TEST(CatFusion, TheKernelOpChecksItsContract) {
  const Tensor a = ones({2, 3}), b = ones({2, 3}, kDouble);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{a, b}, int64_t{0}}), TypeError);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{a, ones({3})}, int64_t{0}}), ValueError);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{a, ones({3, 3})}, int64_t{1}}), ValueError);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{a, a}, int64_t{2}}), IndexError);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{ones({})}, int64_t{0}}), ValueError);
  EXPECT_THROW(ops::call("_cat", {std::vector<Tensor>{}, int64_t{0}}), ValueError);
  try {
    ops::call("_cat", {std::vector<Tensor>{a, b}, int64_t{0}});
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("_cat: expected all tensors of one dtype, got float32 (tensor 0) and float64 (tensor 1)"),
              std::string::npos)
        << e.what();
  }
}

TEST(CatFusion, ADeviceWithoutTheKernelCopiesEachInput) {
  (void)Device("cpu");
  load_plugin(TSRTEST_CLAMPLESS);
  const Device dev("clampless");
  const std::vector<Tensor> list = {values({3, 2}, kFloat, 1), values({3, 4}, kFloat, 2)};
  const Tensor x = list[0].to(dev), y = list[1].to(dev);
  Tensor got;
  const Names ran = kernels_of([&] { got = cat({x, y}, 1); });
  EXPECT_EQ(count(ran, "_cat"), 0);
  EXPECT_EQ(count(ran, "copy_"), 2);
  EXPECT_EQ(got.device(), dev);
  expect_cat(got.to(Device("cpu")), list, 1);
}
