// The per-thread tensor cache (core/src/tensor_cache.h): a small output that
// dies as it was born is handed to the next output of its size class on the
// thread (the same TensorImpl comes back), reset to that output's shape, dtype
// and a fresh version; a tensor anything else still refers to is never reused.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <thread>
#include <vector>

using namespace tessera;

namespace {
const TensorImpl* impl_of(const Tensor& t) { return t.unsafeGetTensorImpl(); }

// t's own DLTensor view (TensorImpl::dl_tensor) says what the DLPack exporter,
// an independent path, says of t.
void expect_view_matches_export(const Tensor& t) {
  const DLTensor& v = impl_of(t)->dl_tensor();
  DLManagedTensorVersioned* m = to_dlpack_versioned(t);
  const DLTensor& e = m->dl_tensor;
  EXPECT_EQ(static_cast<char*>(v.data), static_cast<char*>(e.data) + e.byte_offset);
  EXPECT_EQ(v.byte_offset, 0u);
  EXPECT_EQ(v.device.device_type, e.device.device_type);
  EXPECT_EQ(v.device.device_id, e.device.device_id);
  ASSERT_EQ(v.ndim, e.ndim);
  EXPECT_EQ(v.dtype.code, e.dtype.code);
  EXPECT_EQ(v.dtype.bits, e.dtype.bits);
  EXPECT_EQ(v.dtype.lanes, e.dtype.lanes);
  for (int i = 0; i < v.ndim; ++i) {
    EXPECT_EQ(v.shape[i], e.shape[i]) << "dim " << i;
    EXPECT_EQ(v.strides[i], e.strides[i]) << "dim " << i;
  }
  m->deleter(m);
}
}  // namespace

TEST(TensorCache, TheNextOutputOfTheSizeClassReusesADeadTensorAsNew) {
  const Tensor a = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  // Same size class (<= 64 bytes), another shape and dtype; made first, so no
  // temporary of its making takes the dead tensor below.
  const Tensor i = tensor({1, 2, 3, 4}).to(kInt).reshape({2, 2});
  const TensorImpl* first = nullptr;
  {
    Tensor r = add(a, a);
    r.add_(a);  // an in-place write bumps the storage's version
    ASSERT_GT(r._version(), 0u);
    first = impl_of(r);
  }
  const Tensor s = mul(i, i);
  EXPECT_EQ(impl_of(s), first);  // taken back from the cache
  EXPECT_EQ(s.scalar_type(), kInt);
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.strides().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s._version(), 0u);
  EXPECT_EQ(s.storage_offset(), 0);
  EXPECT_FALSE(s.requires_grad());
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 9, 16}));
  expect_view_matches_export(s);  // its DLTensor view was reset too
}

TEST(TensorCache, EveryTensorsDLTensorViewDescribesIt) {
  // Fresh, viewed (offset, strides, expanded), reused with another rank and
  // dtype, and zero-size.
  for (ScalarType t : {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor x = arange(24).to(t).reshape({2, 3, 4});
    expect_view_matches_export(x);
    expect_view_matches_export(x.transpose(0, 2));
    expect_view_matches_export(x.narrow(2, 1, 2));
    expect_view_matches_export(x.select(1, 2));
    expect_view_matches_export(x.narrow(0, 1, 1).expand({3, 1, 3, 4}));
    expect_view_matches_export(empty({0, 3}, TensorOptions().dtype(t)));
  }
  const Tensor a = ones({2, 2});
  { Tensor r = add(a, a); }
  const Tensor r = add(ones({1, 1, 1}, TensorOptions().dtype(kDouble)), ones({1, 1, 1}, TensorOptions().dtype(kDouble)));
  expect_view_matches_export(r);
}

TEST(TensorCache, ATensorWhoseStorageIsStillSharedIsNeverReused) {
  const Tensor a = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  // A view keeps its base alive; a detached alias shares only the storage.
  Tensor view, alias;
  {
    Tensor r = add(a, a);
    view = r.view({2, 2});
  }
  {
    Tensor r = add(a, a);
    alias = r.detach();
  }
  for (int k = 0; k < 20; ++k) {  // more outputs than the cache holds per class
    const Tensor s = mul(a, a);
    EXPECT_NE(s.storage().get(), view.storage().get());
    EXPECT_NE(s.storage().get(), alias.storage().get());
  }
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));  // untouched
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
}

TEST(TensorCache, TensorsWithAutogradStateOrFromInferenceModeComeBackClean) {
  const Tensor a = tensor({1.0f, 2.0f});
  const TensorImpl* dead = nullptr;
  {
    autograd::InferenceMode guard;
    const Tensor r = add(a, a);
    ASSERT_TRUE(r.is_inference());
    dead = impl_of(r);
  }
  const Tensor s = add(a, a);
  EXPECT_EQ(impl_of(s), dead);
  EXPECT_FALSE(s.is_inference());  // read from this call's mode, not the dead tensor's
  // A tensor that required grad carries autograd state: deleted, not kept.
  const TensorImpl* with_grad = nullptr;
  {
    Tensor x = add(a, a);
    x.requires_grad_();
    with_grad = impl_of(x);
  }
  const Tensor t = add(a, a);
  if (impl_of(t) == with_grad) {  // the pool may hand out the same memory, but as a new tensor
    EXPECT_FALSE(t.requires_grad());
    EXPECT_EQ(t.grad_fn(), nullptr);
  }
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 4}));
}

TEST(TensorCache, ATensorThatDiesOnAnotherThreadServesThatThread) {
  const Tensor a = tensor({1.0f, 2.0f, 3.0f});
  Tensor made_here = add(a, a);
  const TensorImpl* moved = impl_of(made_here);
  std::thread([&] {
    { Tensor dying = std::move(made_here); }  // the last reference goes on this thread
    const Tensor s = sub(a, a);
    EXPECT_EQ(impl_of(s), moved);
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  }).join();  // the thread's exit deletes what it still keeps (checked by the ASan build)
  EXPECT_EQ(add(a, a).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}
