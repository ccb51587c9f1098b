// Memory pressure: before an allocation fails, the core releases the blocks it
// caches (kept small tensors, small blocks) and asks the plugin once more; the
// error that remains names the op, the bytes, the tensor, the device, the
// plugin and what was released. The test plugin "capped"
// (tests/plugins/capped_plugin.cpp) is an 8 KiB device, so the core's cached
// blocks alone can fill it.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <string>
#include <vector>

using namespace tessera;

namespace {

Device capped() {
  static const bool loaded = [] {
    (void)Device("cpu");  // the default plugins first
    load_plugin(TSRTEST_CAPPED);
    return true;
  }();
  (void)loaded;
  return Device("capped");
}

// Makes `n` 1 KiB tensors (the largest cached size class) and drops them: their
// blocks stay on the device, kept by this thread's caches.
void fill_and_drop(Device d, int n = 8) {
  std::vector<Tensor> ts;
  for (int i = 0; i < n; ++i) ts.push_back(empty({256}, TensorOptions(kFloat).device(d)));
}

void expect_oom(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

}  // namespace

TEST(MemoryPressure, CachedBlocksAreReleasedBeforeAnAllocationFails) {
  const Device d = capped();
  fill_and_drop(d);
  // 4 KiB, larger than any cached class: fits only once the cached blocks go back.
  Tensor big = empty({1024}, TensorOptions(kFloat).device(d));
  EXPECT_EQ(big.numel(), 1024);
  big = Tensor();
  // The same for an op's output (the pointwise lane allocates it): 2 KiB in
  // src (too large to be cached), the other 6 KiB in cached blocks.
  Tensor src = empty({512}, TensorOptions(kFloat).device(d));
  fill_and_drop(d, 6);
  Tensor y = neg(src);
  EXPECT_EQ(y.numel(), 512);
}

TEST(MemoryPressure, AnImpossibleAllocationNamesWhatItAskedAndWhatWasReleased) {
  const Device d = capped();
  fill_and_drop(d);
  expect_oom([&] { (void)empty({4096}, TensorOptions(kFloat).device(d)); },
             {"empty", "16384 bytes", "float32[4096]", "capped:0", "plugin 'capped'",
              "released the blocks it cached on this thread (8192 bytes", "16384 bytes asked, 0 of 8192 in use"});
  // An op's output: the lane's allocation and the structured path's (no
  // float64 kernel: the meta-rule path allocates before it looks for one).
  Tensor a = empty({1024}, TensorOptions(kFloat).device(d));
  Tensor b = empty({512}, TensorOptions(kDouble).device(d));
  expect_oom([&] { (void)neg(a); }, {"neg", "4096 bytes", "float32[1024]", "capped:0", "plugin 'capped'"});
  expect_oom([&] { (void)neg(b); }, {"neg", "4096 bytes", "float64[512]", "capped:0", "plugin 'capped'"});
  // Nothing is left behind: once the tensors are gone, the whole device is free.
  a = Tensor();
  b = Tensor();
  EXPECT_EQ(empty({2048}, TensorOptions(kFloat).device(d)).numel(), 2048);
}
