// Tensors, factories and views: metadata, sharing of storage, and values checked
// against hand-computed expectations.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <limits>
#include <numeric>
#include <thread>

using namespace tessera;

namespace {
std::vector<int64_t> vec(IntArrayRef a) { return a.vec(); }
}  // namespace

TEST(Factories, ShapesDtypesAndValues) {
  const Tensor z = zeros({2, 3});
  EXPECT_EQ(vec(z.sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(z.strides()), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(z.scalar_type(), kFloat);
  EXPECT_EQ(z.device().type_name(), "cpu");
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({4}, kInt).to_vector<int32_t>(), std::vector<int32_t>(4, 1));
  const Tensor f = full({2, 2}, 7);
  EXPECT_EQ(f.scalar_type(), kLong);  // like torch.full: dtype follows the value
  EXPECT_EQ(f.to_vector<int64_t>(), std::vector<int64_t>(4, 7));
  EXPECT_EQ(full({1}, 2.5, kHalf).item<double>(), 2.5);
  EXPECT_EQ(full({1}, true).scalar_type(), kBool);
  EXPECT_EQ(empty({0, 3}).numel(), 0);
}

TEST(Factories, Arange) {
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).scalar_type(), kLong);
  EXPECT_EQ(arange(1, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(arange(5, 0, -2).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  const Tensor f = arange(0.0, 1.0, 0.25);
  EXPECT_EQ(f.scalar_type(), kFloat);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(3, kDouble).to_vector<double>(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(arange(0).numel(), 0);
}

TEST(Factories, FromInitializerLists) {
  EXPECT_EQ(tensor({1.5, 2.5}).scalar_type(), kDouble);
  EXPECT_EQ(tensor({1.5f, 2.5f}).scalar_type(), kFloat);
  EXPECT_EQ(tensor({1, 2, 3}).scalar_type(), kLong);
  EXPECT_EQ(tensor({true, false}).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(tensor({1, 2, 3}, kFloat).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(scalar_tensor(3.5).dim(), 0);
  EXPECT_EQ(scalar_tensor(3.5).item<double>(), 3.5);
}

TEST(Factories, FromBlobSharesMemoryAndCallsDeleterOnce) {
  static int deleted = 0;
  deleted = 0;
  float* data = new float[6]{0, 1, 2, 3, 4, 5};
  {
    Tensor t = from_blob(data, {2, 3}, [](void* p) { ++deleted; delete[] static_cast<float*>(p); });
    EXPECT_EQ(t.data_ptr(), data);
    Tensor v = t.transpose(0, 1);
    t = Tensor();
    EXPECT_EQ(deleted, 0);  // the view keeps the memory alive
    EXPECT_EQ(v.contiguous().to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    data[0] = 42;  // zero copy: writes through the original pointer are visible
    EXPECT_EQ(v.select(0, 0).select(0, 0).item<float>(), 42);
  }
  EXPECT_EQ(deleted, 1);
  float reversed[4] = {1, 2, 3, 4};
  const Tensor r = from_blob(reversed + 3, {4}, {-1}, nullptr);  // negative stride
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 3, 2, 1}));
  EXPECT_EQ(r.data_ptr(), reversed + 3);
  EXPECT_EQ(r.storage()->data(), reversed);
  EXPECT_EQ(r.storage()->nbytes(), 4 * sizeof(float));
  float borrowed[3] = {1, 2, 3};
  Tensor b = from_blob(borrowed, {3}, nullptr);  // caller keeps ownership
  EXPECT_EQ(b.sum().item<float>(), 6);
}

TEST(Views, ShareStorageAndSeeWrites) {
  Tensor base = arange(12, kFloat).view({3, 4});
  Tensor col = base.select(1, 2);
  EXPECT_EQ(col.storage().get(), base.storage().get());
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{2, 6, 10}));
  col.fill_(-1);
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, -1, 3, 4, 5, -1, 7, 8, 9, -1, 11}));
}

TEST(Views, TransposePermuteContiguity) {
  const Tensor a = arange(24).view({2, 3, 4});
  const Tensor p = a.permute({2, 0, 1});
  EXPECT_EQ(vec(p.sizes()), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(vec(p.strides()), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_FALSE(p.is_contiguous());
  const Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage().get(), a.storage().get());
  // element [k, i, j] of p is a[i, j, k] = 12 i + 4 j + k
  const auto v = c.to_vector<int64_t>();
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(v[k * 6 + i * 3 + j], 12 * i + 4 * j + k);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(a.contiguous().storage().get(), a.storage().get());  // no copy when already contiguous
}

TEST(Views, NarrowSliceSelectSqueezeUnsqueeze) {
  const Tensor a = arange(10);
  EXPECT_EQ(a.narrow(0, 2, 3).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.narrow(0, -3, 2).to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(a.slice(0, 1, 8, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(a.slice(0, -4).to_vector<int64_t>(), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(a.slice(0, 5, 100).numel(), 5);   // Python clamps
  EXPECT_EQ(a.slice(0, 8, 2).numel(), 0);     // empty, not an error
  EXPECT_EQ(a.select(0, -1).item<int64_t>(), 9);
  const Tensor b = a.view({1, 10, 1});
  EXPECT_EQ(vec(b.squeeze().sizes()), (std::vector<int64_t>{10}));
  EXPECT_EQ(vec(b.squeeze(0).sizes()), (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(vec(b.squeeze(1).sizes()), (std::vector<int64_t>{1, 10, 1}));  // size != 1: unchanged
  EXPECT_EQ(vec(a.unsqueeze(0).sizes()), (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(vec(a.unsqueeze(-1).sizes()), (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(vec(a.view({2, 5}).t().sizes()), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(vec(a.view({2, 5}).flatten().sizes()), (std::vector<int64_t>{10}));
}

TEST(Views, ExpandAndAsStrided) {
  const Tensor a = tensor({1, 2, 3});
  const Tensor e = a.expand({2, 3});
  EXPECT_EQ(vec(e.strides()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(e.contiguous().to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(vec(a.view({3, 1}).expand({-1, 4}).sizes()), (std::vector<int64_t>{3, 4}));
  const Tensor s = arange(6).as_strided({2, 2}, {1, 2}, 1);
  EXPECT_EQ(s.contiguous().to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 2, 4}));
}

TEST(Views, ViewVersusReshape) {
  const Tensor a = arange(12).view({3, 4});
  const Tensor t = a.t();  // non-contiguous
  EXPECT_THROW(t.view({12}), ValueError);
  const Tensor r = t.reshape({12});  // copies
  EXPECT_NE(r.storage().get(), a.storage().get());
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  const Tensor v = a.reshape({2, -1});  // a view
  EXPECT_EQ(v.storage().get(), a.storage().get());
  EXPECT_EQ(vec(v.sizes()), (std::vector<int64_t>{2, 6}));
  // Splitting one dim of a transposed tensor is still a view.
  const Tensor tv = arange(24).view({4, 6}).t().view({2, 3, 4});
  EXPECT_EQ(vec(tv.strides()), (std::vector<int64_t>{3, 1, 6}));
}

TEST(Conversion, ToDtypeAndItem) {
  const Tensor a = tensor({1.7, -2.5, 0.0});
  EXPECT_EQ(a.to(kInt).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 0}));  // truncation
  EXPECT_EQ(a.to(kBool).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(a.to(kHalf).to(kDouble).to_vector<double>(), (std::vector<double>{1.7001953125, -2.5, 0.0}));
  EXPECT_EQ(a.to(kBFloat16).to(kFloat).to_vector<float>()[0], 1.703125f);
  EXPECT_EQ(a.select(0, 1).item<double>(), -2.5);
  EXPECT_TRUE(a.select(0, 0).item().is_floating_point());
  EXPECT_EQ(tensor({5}).item().to_long(), 5);
  const Tensor same = a.to(kDouble);
  EXPECT_TRUE(same.is_same(a));  // no-op conversion returns the same tensor
}

TEST(Printing, PyTorchStyle) {
  EXPECT_EQ(arange(4, kFloat).view({2, 2}).to_string(), "tensor([[0., 1.],\n        [2., 3.]])");
  EXPECT_EQ(tensor({1, 2}).to_string(), "tensor([1, 2])");
  EXPECT_EQ(tensor({0.5, 1.25}).to_string(), "tensor([0.5000, 1.2500], dtype=float64)");
  EXPECT_EQ(tensor({true, false}).to_string(), "tensor([ True, False])");
  EXPECT_EQ(scalar_tensor(2.0, kFloat).to_string(), "tensor(2.)");
  EXPECT_EQ(zeros({2, 3}, TensorOptions().device("meta")).to_string(),
            "tensor(..., size=[2, 3], device='meta:0', dtype=float32)");
  const std::string big = arange(2000).to_string();
  EXPECT_NE(big.find("..."), std::string::npos);
}

TEST(Printing, IntegersPrintExactlyAndLargeTensorsShowTheirEdges) {
  // int64's extremes went through double (9223372036854775807 printed as its negation).
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(tensor({hi, lo, int64_t{5}}).to_string(),
            "tensor([ 9223372036854775807, -9223372036854775808,                    5])");
  EXPECT_EQ(tensor({(int64_t{1} << 53) + 1}).to_string(), "tensor([9007199254740993])");
  // Summarized: the first and last three along each long dim, from any layout.
  EXPECT_EQ(arange(2000).view({2, 1000}).to_string(),
            "tensor([[   0,    1,    2, ...,  997,  998,  999],\n"
            "        [1000, 1001, 1002, ..., 1997, 1998, 1999]])");
  EXPECT_EQ(arange(2000).view({1000, 2}).t().flip({1}).to_string(),
            "tensor([[1998, 1996, 1994, ...,    4,    2,    0],\n"
            "        [1999, 1997, 1995, ...,    5,    3,    1]])");
  // A tensor has at most 64 dims, so the nested walk is bounded; 64 prints.
  std::vector<int64_t> dims(64, 1);
  EXPECT_EQ(ones(dims, kLong).to_string(), "tensor(" + std::string(64, '[') + "1" + std::string(64, ']') + ")");
  dims.push_back(1);
  try {
    (void)ones(dims);
    FAIL() << "65 dims accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("a shape of 65 dims; tensors have at most 64 dims"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)ones({1}).view(dims), ValueError);
  EXPECT_THROW((void)ones(std::vector<int64_t>(64, 1)).unsqueeze(0), ValueError);
}

TEST(Memory, SmallCpuBlocksAreReusedPerThread) {
  void* first = nullptr;
  {
    const Tensor t = empty({4});  // 16 bytes: the 64-byte class
    first = t.data_ptr();
  }
  const Tensor u = empty({3}, kInt);  // 12 bytes: same class, same thread
  EXPECT_EQ(u.data_ptr(), first);
  EXPECT_NE(u.storage()->owner(), nullptr);  // the reused block still pins its plugin
  EXPECT_EQ(u.storage()->nbytes(), 12u);     // the storage reports what was asked for
  // A thread that made and freed small tensors returns its cache when it exits
  // (the sanitizer build checks that nothing leaks).
  std::thread([] {
    for (int i = 0; i < 100; ++i) (void)(ones({i % 200 + 1}) + 1);
  }).join();
  EXPECT_EQ((ones({2}) + 1).to_vector<float>(), (std::vector<float>{2, 2}));
}
