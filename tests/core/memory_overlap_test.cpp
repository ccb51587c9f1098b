// In-place ops and copy_ judge aliasing by memory, not by storage: tensors made
// separately over one buffer (from_blob here; DLPack imports in
// tests/python/test_memory_overlap.py) give the results that views of one
// storage give, which are those of the same computation on separate memory.
// The expected values are computed by hand (plain loops over a copy).
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <numeric>
#include <vector>

using namespace tessera;

namespace {

// A float64 tensor over buf[first], stepping `step` elements, `n` long; the
// caller keeps buf alive (no deleter).
Tensor blob(std::vector<double>& buf, int64_t first, int64_t step, int64_t n) {
  return from_blob(buf.data() + first, {n}, {step}, [](void*) {}, TensorOptions(kDouble));
}

std::vector<double> iota(size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

}  // namespace

TEST(MemoryOverlap, InPlaceAddWithAReversedBlobOfTheSameBuffer) {
  std::vector<double> buf = iota(8);
  Tensor x = blob(buf, 0, 1, 8);
  x.add_(blob(buf, 7, -1, 8));  // the example, through from_blob
  EXPECT_EQ(buf, std::vector<double>(8, 7.0));
}

TEST(MemoryOverlap, CopyBetweenShiftedBlobsInBothDirections) {
  // Strided, so the kernel's general loop runs (no memmove to rescue it).
  for (const bool forward : {true, false}) {
    std::vector<double> buf = iota(40), want = buf;
    const int64_t dst = forward ? 2 : 0, src = forward ? 0 : 2;
    for (int64_t i = 0; i < 19; ++i) want[dst + 2 * i] = buf[src + 2 * i];
    blob(buf, dst, 2, 19).copy_(blob(buf, src, 2, 19));
    EXPECT_EQ(buf, want) << (forward ? "forward" : "backward");
  }
}

TEST(MemoryOverlap, PartiallyOverlappingBlobsAndOutEqualToAnInput) {
  std::vector<double> buf = iota(30), want = buf;
  for (int64_t i = 0; i < 20; ++i) want[10 + i] = buf[10 + i] * buf[i];
  Tensor a = blob(buf, 10, 1, 20);
  a.mul_(blob(buf, 0, 1, 20));  // reads elements the kernel has already written
  EXPECT_EQ(buf, want);

  buf = iota(30);
  want = buf;
  for (int64_t i = 0; i < 20; ++i) want[10 + i] = buf[i] - buf[10 + i];
  Tensor out = blob(buf, 10, 1, 20);
  sub_out(out, blob(buf, 0, 1, 20), blob(buf, 10, 1, 20));
  EXPECT_EQ(buf, want);
}

TEST(MemoryOverlap, ABlobAndAViewOfAnotherTensorOverTheSameBytes) {
  Tensor t = arange(0, 10, 1, TensorOptions(kDouble));
  auto* p = static_cast<double*>(t.data_ptr());
  std::vector<double> want(p, p + 10);
  for (int i = 0; i < 9; ++i) want[i + 1] = p[i];
  Tensor src = from_blob(p, {9}, [](void*) {}, TensorOptions(kDouble));
  t.narrow(0, 1, 9).copy_(src);
  EXPECT_EQ(std::vector<double>(p, p + 10), want);
}

TEST(MemoryOverlap, DisjointAndInterleavedBlobsAreComputedDirectly) {
  // Interleaved: the byte spans intersect, no element is shared; still correct.
  std::vector<double> buf = iota(20), want = buf;
  for (int64_t i = 0; i < 10; ++i) want[2 * i] = buf[2 * i] + buf[2 * i + 1];
  blob(buf, 0, 2, 10).add_(blob(buf, 1, 2, 10));
  EXPECT_EQ(buf, want);
  buf = iota(20);
  want = buf;
  for (int64_t i = 0; i < 10; ++i) want[i] = buf[10 + i];
  blob(buf, 0, 1, 10).copy_(blob(buf, 10, 1, 10));
  EXPECT_EQ(buf, want);
}
