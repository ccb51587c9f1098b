// C++ tests of the linalg ops: the C++ API forms (function, method, in-place,
// out=) against double-precision loops in the test, and error messages.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <random>
#include <string>

using namespace tessera;

namespace {

const ScalarType kNumeric[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

template <typename E, typename F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragment << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// Small integers: exact in every dtype, so every dtype's result is exact.
Tensor small_ints(IntArrayRef shape, uint32_t seed, ScalarType t) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, 3);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return tensor(ArrayRef<double>(v)).view(shape).to(t);
}

// beta * self + alpha * a @ b in double, self broadcast along rows/cols as given.
std::vector<double> addmm_ref(const std::vector<double>& self, bool row_vector, const std::vector<double>& a,
                              const std::vector<double>& b, int64_t M, int64_t K, int64_t N, double beta,
                              double alpha) {
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      out[i * N + j] = beta * (row_vector ? self[j] : self[i * N + j]) + alpha * acc;
    }
  return out;
}

}  // namespace

TEST(LinalgOps, AddmmFormsOnEveryNumericDtype) {
  for (ScalarType t : kNumeric) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = small_ints({3, 4}, 1, t), b = small_ints({4, 5}, 2, t), bias = small_ints({5}, 3, t);
    const auto want = addmm_ref(vals(bias), true, vals(a), vals(b), 3, 4, 5, 2, 3);
    const Tensor r = addmm(bias, a, b, 2, 3);
    EXPECT_EQ(r.scalar_type(), t);
    EXPECT_EQ(vals(r), want);
    EXPECT_EQ(vals(bias.addmm(a, b, 2, 3)), want);
    // A transposed mat2 (BLAS transpose flag, no copy) gives the same result.
    const Tensor bt = b.t().contiguous().t();
    EXPECT_EQ(vals(addmm(bias, a, bt, 2, 3)), want);
    Tensor self = bias.expand({3, 5}).contiguous();
    EXPECT_TRUE(&self.addmm_(a, b, 2, 3) == &self);
    EXPECT_EQ(vals(self), want);
    Tensor out = empty({3, 5}, kDouble);
    EXPECT_TRUE(addmm_out(out, bias, a, b, 2, 3).is_same(out));
    EXPECT_EQ(vals(out), want);
  }
}

TEST(LinalgOps, AddmmIntoStridedSelfAndEmptyK) {
  Tensor base = zeros({5, 3});
  Tensor self = base.t();  // [3, 5] with column-dense storage: no BLAS C layout
  self.fill_(1);
  const Tensor a = arange(6, kFloat).view({3, 2}), b = arange(10, kFloat).view({2, 5});
  self.addmm_(a, b, 0.5, 2);
  const auto want = addmm_ref(std::vector<double>(15, 1), false, vals(a), vals(b), 3, 2, 5, 0.5, 2);
  EXPECT_EQ(vals(self), want);
  const Tensor k0 = addmm(full({2, 3}, 4.0), empty({2, 0}), empty({0, 3}), 3);
  EXPECT_EQ(vals(k0), std::vector<double>(6, 12));
  const Tensor ki = addmm(full({2, 3}, 4, kInt), empty({2, 0}, kInt), empty({0, 3}, kInt), 0);
  EXPECT_EQ(vals(ki), std::vector<double>(6, 0));
}

TEST(LinalgOps, DotOuterAndOutForms) {
  for (ScalarType t : kNumeric) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = tensor({1, 2, 3}, t), b = tensor({4, 0, 2}, t);
    EXPECT_EQ(dot(a, b).dim(), 0);
    EXPECT_EQ(dot(a, b).item<double>(), 10);
    EXPECT_EQ(a.dot(b).item<double>(), 10);
    EXPECT_EQ(vals(outer(a, tensor({1, 2}, t))), (std::vector<double>{1, 2, 2, 4, 3, 6}));
    EXPECT_EQ(vals(a.outer(b)).size(), 9u);
    Tensor o = empty({}, kDouble);
    EXPECT_TRUE(dot_out(o, a, b).is_same(o));
    EXPECT_EQ(o.item<double>(), 10);
  }
  const Tensor m = arange(6, kFloat).view({2, 3});
  Tensor out = empty({2, 2});
  EXPECT_TRUE(mm_out(out, m, m.t()).is_same(out));
  EXPECT_EQ(vals(out), (std::vector<double>{5, 14, 14, 50}));
  Tensor bo = empty({1, 2, 2});
  bmm_out(bo, m.unsqueeze(0), m.t().unsqueeze(0));
  EXPECT_EQ(vals(bo), vals(out));
  Tensor mo = empty({2}, kDouble);
  matmul_out(mo, m, tensor({1.f, 0.f, 1.f}));
  EXPECT_EQ(vals(mo), (std::vector<double>{2, 8}));
  Tensor oo = empty({3, 2});
  outer_out(oo, tensor({1.f, 2.f, 3.f}), tensor({1.f, -1.f}));
  EXPECT_EQ(vals(oo), (std::vector<double>{1, -1, 2, -2, 3, -3}));
  EXPECT_EQ(dot(empty({0}), empty({0})).item<double>(), 0);
}

TEST(LinalgOps, MatmulBatchBroadcastFoldsIntoOneGemm) {
  // [2, 3, 4] @ [4, 5] and [3] @ [2, 3, 4] against loops.
  const Tensor a = small_ints({2, 3, 4}, 4, kFloat), b = small_ints({4, 5}, 5, kFloat);
  const Tensor r = a.matmul(b);
  ASSERT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  const auto av = vals(a), bv = vals(b), rv = vals(r);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 4; ++k) acc += av[n * 12 + i * 4 + k] * bv[k * 5 + j];
        EXPECT_EQ(rv[n * 15 + i * 5 + j], acc);
      }
  const Tensor v = matmul(a.transpose(1, 2), tensor({1.f, 1.f, 1.f}));
  ASSERT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(v.to_vector<double>()[0], av[0] + av[4] + av[8]);
  EXPECT_EQ(matmul(empty({2, 3, 0}), empty({0, 4})).sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
}

TEST(LinalgOps, Errors) {
  expect_error<ValueError>([] { addmm(ones({3}), ones({2, 3}), ones({3, 2})); }, "addmm: self of shape [3] cannot be broadcast");
  expect_error<ValueError>([] { addmm(ones({2}), ones({2, 3}), ones({2, 2})); }, "cannot be multiplied (3 != 2)");
  expect_error<TypeError>([] { addmm(ones({2}, kInt), ones({2, 2}, kInt), ones({2, 2}, kInt), 1.5); }, "must not be floating");
  expect_error<TypeError>([] { addmm(ones({2}, kBool), ones({2, 2}, kBool), ones({2, 2}, kBool)); }, "bool");
  expect_error<TypeError>([] { addmm(ones({2}, kDouble), ones({2, 2}), ones({2, 2})); }, "self and mat1 must have the same dtype");
  expect_error<ValueError>([] { Tensor s = ones({2}); s.addmm_(ones({2, 2}), ones({2, 2})); }, "addmm_: self of shape [2] does not match");
  expect_error<ValueError>([] { dot(ones({2, 2}), ones({2})); }, "dot: expected 1-D self");
  expect_error<ValueError>([] { dot(ones({2}), ones({3})); }, "dot: inconsistent tensor sizes");
  expect_error<TypeError>([] { dot(ones({2}), ones({2}, kInt)); }, "same dtype");
  expect_error<ValueError>([] { outer(ones({2}), ones({})); }, "outer: expected 1-D vec2");
  expect_error<ValueError>([] { Tensor o = empty({3}); mm_out(o, ones({2, 2}), ones({2, 2})); }, "mm: out= tensor has shape");
}
