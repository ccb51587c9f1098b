// C++ tests of the indexing ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include "kernel_log.h"

#include <string>
#include <vector>

using namespace tessera;

namespace {

Tensor longs(std::initializer_list<int64_t> v) { return tensor(v); }
Tensor floats(std::initializer_list<double> v) { return tensor(v, kFloat); }

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

TEST(Indexing, IndexSelectFunctionAndMethod) {
  const Tensor a = arange(12, kFloat).view({3, 4});
  const Tensor i = longs({2, 0, 2});
  const Tensor r = index_select(a, 0, i);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_TRUE(equal(a.index_select(-1, i.to(kInt)), a.t().index_select(0, i).t()));
}

TEST(Indexing, GatherAndScatter) {
  const Tensor a = arange(6, kFloat).view({2, 3});
  const Tensor i = longs({2, 0, 1, 1}).view({2, 2});
  EXPECT_EQ(gather(a, 1, i).to_vector<float>(), (std::vector<float>{2, 0, 4, 4}));
  EXPECT_EQ(a.gather(1, i).to_vector<float>(), (std::vector<float>{2, 0, 4, 4}));
  Tensor z = zeros({2, 3});
  const Tensor src = floats({1, 2, 3, 4}).view({2, 2});
  EXPECT_EQ(scatter(z, 1, i, src).to_vector<float>(), (std::vector<float>{2, 0, 1, 0, 4, 0}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));  // the functional form copies
  Tensor& same = z.scatter_(1, i, 7.5);
  EXPECT_TRUE(same.is_same(z));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{7.5, 0, 7.5, 0, 7.5, 0}));
}

TEST(Indexing, ScatterAddAccumulatesDuplicates) {
  // Many duplicates across a size that runs on several threads.
  const int64_t n = 1 << 18;
  Tensor idx = zeros({n}, kLong);
  Tensor out = zeros({4}, kDouble);
  out.scatter_add_(0, idx, ones({n}, kDouble));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{double(n), 0, 0, 0}));
  EXPECT_EQ(scatter_add(zeros({2}, kLong), 0, longs({1, 1, 0}), longs({5, 6, 7})).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 11}));
}

TEST(Indexing, FunctionalScatterRunsOneKernelIntoANewTensor) {
  // scatter / scatter_add run one _scatter call on cpu (no clone + in-place
  // op); _scatter's errors are reported under the public op's name.
  const Tensor a = arange(12, kDouble).view({3, 4});
  const Tensor i = longs({3, 3, 0, 1, 2, 2, 2, 2, 0, 1, 2, 3}).view({3, 4});
  const Tensor src = arange(12, kDouble).view({3, 4}) * 10;
  Tensor got;
  tsrtest::Names ran = tsrtest::kernels_of([&] { got = scatter_add(a, 1, i, src); });
  EXPECT_EQ(ran, (tsrtest::Names{"_scatter"}));
  // Row 0: 0 1 2 3 + 10*(2 at col 0), 0+10 at col 3 twice; by hand:
  EXPECT_EQ(got.to_vector<double>(), (std::vector<double>{20, 31, 2, 13, 4, 5, 6 + 40 + 50 + 60 + 70, 7,
                                                          8 + 80, 9 + 90, 10 + 100, 11 + 110}));
  EXPECT_EQ(a.to_vector<double>(), arange(12, kDouble).to_vector<double>());
  const Tensor perm = longs({1, 0, 3, 2, 0, 1, 2, 3, 3, 2, 1, 0}).view({3, 4});
  ran = tsrtest::kernels_of([&] { got = scatter(a, 1, perm, src); });
  EXPECT_EQ(ran, (tsrtest::Names{"_scatter"}));
  EXPECT_EQ(got.to_vector<double>(),
            (std::vector<double>{10, 0, 30, 20, 40, 50, 60, 70, 110, 100, 90, 80}));
  const std::string what = error_of<IndexError>([&] { (void)scatter_add(a, 1, longs({0, 4}).view({1, 2}), src); });
  EXPECT_EQ(what.rfind("scatter_add: ", 0), 0u) << what;
  EXPECT_NE(what.find("index 4 is out of bounds for dimension 1 with size 4"), std::string::npos) << what;
  EXPECT_THROW((void)scatter(a, 1, perm, src.to(kFloat)), TypeError);
}

TEST(Indexing, FunctionalScatterAddWithoutTheKernelOpClonesThenScatters) {
  // A device without _scatter (a plugin built before catalogue 6) runs
  // scatter_add as clone (copy_) + its scatter_add_.
  (void)Device("cpu");
  load_plugin(TSRTEST_CLAMPLESS);
  const Device dev("clampless");
  const Tensor a = arange(12, kFloat).view({3, 4});
  const Tensor i = longs({3, 3, 0, 1, 2, 2, 2, 2, 0, 1, 2, 3}).view({3, 4});
  const Tensor src = arange(12, kFloat).view({3, 4}) * 10;
  const Tensor ad = a.to(dev), id = i.to(dev), sd = src.to(dev);
  Tensor got;
  const tsrtest::Names ran = tsrtest::kernels_of([&] { got = scatter_add(ad, 1, id, sd); });
  EXPECT_EQ(ran, (tsrtest::Names{"copy_", "scatter_add_"}));
  EXPECT_EQ(got.device(), dev);
  EXPECT_TRUE(equal(got.to(Device("cpu")), scatter_add(a, 1, i, src)));
  EXPECT_TRUE(equal(ad.to(Device("cpu")), a));  // self untouched
}

TEST(Indexing, IndexAddWithAlpha) {
  Tensor a = ones({3, 2});
  a.index_add_(0, longs({2, 2, 0}), floats({1, 2, 3, 4, 5, 6}).view({3, 2}), 2);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{11, 13, 1, 1, 9, 13}));
  EXPECT_EQ(index_add(zeros({2}, kInt), 0, longs({1}).to(kInt), ones({1}, kInt)).to_vector<int>(),
            (std::vector<int>{0, 1}));
  EXPECT_THROW(zeros({2}, kInt).index_add(0, longs({1}), ones({1}, kInt), 0.5), TypeError);
}

TEST(Indexing, MaskedFillAndSelect) {
  const Tensor a = arange(6, kFloat).view({2, 3});
  const Tensor m = tensor({true, false, true});
  EXPECT_EQ(masked_fill(a, m, -1).to_vector<float>(), (std::vector<float>{-1, 1, -1, -1, 4, -1}));
  EXPECT_EQ(a.masked_fill(m, scalar_tensor(9.0)).to_vector<float>(), (std::vector<float>{9, 1, 9, 9, 4, 9}));
  Tensor b = a.clone();
  EXPECT_TRUE(b.masked_fill_(m, 0).is_same(b));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 4, 0}));
  EXPECT_EQ(masked_select(a, m).to_vector<float>(), (std::vector<float>{0, 2, 3, 5}));
  Tensor out = empty({2, 3}, kDouble);
  EXPECT_TRUE(masked_fill_out(out, a, m, 4).is_same(out));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{4, 1, 4, 4, 4, 4}));
  Tensor small = empty({3});
  EXPECT_THROW(masked_fill_out(small, a, m, 4), ValueError);
  EXPECT_EQ(a.masked_select(m.view({1, 3})).sizes().vec(), std::vector<int64_t>{4});
  EXPECT_NE(error_of<TypeError>([&] { a.masked_fill(ones({3}, kByte), 1); }).find("bool mask"), std::string::npos);
  EXPECT_THROW(a.masked_fill(m, ones({2})), ValueError);
  Tensor c = ones({3});
  EXPECT_THROW(c.masked_fill_(ones({2, 3}, kBool), 1), ValueError);  // mask must broadcast to self
}

TEST(Indexing, TakeEmbeddingOneHot) {
  const Tensor a = arange(6, kFloat).view({2, 3});
  EXPECT_EQ(take(a, longs({0, -1, 4}).view({3, 1})).to_vector<float>(), (std::vector<float>{0, 5, 4}));
  EXPECT_EQ(a.t().take(longs({1})).to_vector<float>(), std::vector<float>{3});
  const Tensor e = embedding(a, longs({1, 1, 0}).view({3, 1}));
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{3, 1, 3}));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{3, 4, 5, 3, 4, 5, 0, 1, 2}));
  EXPECT_THROW(embedding(a, longs({0}), 2), ValueError);
  const Tensor h = one_hot(longs({0, 2}));
  EXPECT_EQ(h.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.scalar_type(), kLong);
  EXPECT_EQ(h.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 0, 1}));
  EXPECT_THROW(one_hot(longs({-1})), ValueError);
  EXPECT_THROW(one_hot(floats({1})), TypeError);
  EXPECT_NE(error_of<IndexError>([&] { one_hot(longs({3}), 3); }).find("one_hot"), std::string::npos);
}

TEST(Indexing, OutOfRangeIndexNamesOpValueAndSize) {
  const Tensor a = zeros({3, 2});
  std::string msg = error_of<IndexError>([&] { index_select(a, 0, longs({0, 5})); });
  EXPECT_NE(msg.find("index_select"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size 3"), std::string::npos) << msg;
  msg = error_of<IndexError>([&] { gather(a, 1, longs({-1}).view({1, 1})); });
  EXPECT_NE(msg.find("gather"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index -1"), std::string::npos) << msg;
  msg = error_of<IndexError>([&] { take(a, longs({-7})); });
  EXPECT_NE(msg.find("take"), std::string::npos) << msg;
  msg = error_of<IndexError>([&] { embedding(a, longs({3})); });
  EXPECT_NE(msg.find("embedding"), std::string::npos) << msg;
  // A bad index leaves the in-place target untouched.
  Tensor b = zeros({3});
  EXPECT_THROW(b.scatter_add_(0, longs({0, 3}), ones({2})), IndexError);
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(Indexing, ArgumentErrors) {
  const Tensor a = zeros({3, 2});
  EXPECT_NE(error_of<TypeError>([&] { gather(a, 0, longs({0}).view({1, 1}).to(kInt)); }).find("int64"),
            std::string::npos);
  EXPECT_THROW(gather(a, 0, longs({0})), ValueError);     // dims differ
  EXPECT_THROW(gather(a, 2, longs({0}).view({1, 1})), IndexError);  // dim out of range
  EXPECT_THROW(index_select(a, 0, longs({0}).view({1, 1})), ValueError);
  EXPECT_THROW(index_select(a, 0, floats({0})), TypeError);
  Tensor b = zeros({3});
  EXPECT_THROW(b.scatter_(0, longs({0}), ones({1}, kDouble)), TypeError);  // src dtype
  EXPECT_THROW(b.scatter_(0, longs({0, 1}), ones({1})), ValueError);       // index larger than src
  EXPECT_THROW(b.index_add_(0, longs({0, 1}), ones({3})), ValueError);
}

TEST(Indexing, StridedAndZeroSize) {
  const Tensor a = arange(12, kLong).view({3, 4}).t();  // [4, 3], non-contiguous
  EXPECT_EQ(a.index_select(0, longs({3})).to_vector<int64_t>(), (std::vector<int64_t>{3, 7, 11}));
  EXPECT_EQ(index_select(a, 1, zeros({0}, kLong)).sizes().vec(), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(masked_select(zeros({0, 2}), zeros({2}, kBool)).sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(gather(a, 0, zeros({0, 3}, kLong)).sizes().vec(), (std::vector<int64_t>{0, 3}));
}

}  // namespace
