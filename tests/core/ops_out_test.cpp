// out= forms write into `out` (core/src/ops/out_target.h): the plugin kernel
// gets `out` as its output when dtype, device, shape, layout and memory allow,
// with no second kernel (no copy_); otherwise the result is computed and copied,
// as before. The kernel recorder (tessera/testing.h) shows which kernels ran;
// the values are checked against the functional ops.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/ops/call.h>
#include <tessera/testing.h>
#include <tessera/tessera.h>

#include "kernel_log.h"

#include <string>
#include <vector>

using namespace tessera;

namespace {

using tsrtest::kernels_of;
using tsrtest::Names;

}  // namespace

TEST(OutForms, TheKernelWritesIntoAFittingOut) {
  const Tensor a = arange(6, TensorOptions(kFloat)).view({2, 3}), b = full({2, 3}, 0.5f);
  Tensor out = empty({2, 3});
  const void* data = out.data_ptr();
  EXPECT_EQ(kernels_of([&] { add_out(out, a, b, 2.0); }), Names{"add"});
  EXPECT_EQ(out.data_ptr(), data);
  EXPECT_TRUE(equal(out, add(a, b, 2.0)));
  // A unary op, a reduction, a matrix product, a softmax, and the by-name route.
  EXPECT_EQ(kernels_of([&] { exp_out(out, a); }), Names{"exp"});
  EXPECT_TRUE(equal(out, a.exp()));
  Tensor s = empty({2});
  EXPECT_EQ(kernels_of([&] { sum_out(s, a, {1}); }), Names{"sum"});
  EXPECT_TRUE(equal(s, a.sum({1})));
  Tensor m = empty({2, 2});
  const Tensor at = a.t().contiguous();
  EXPECT_EQ(kernels_of([&] { mm_out(m, a, at); }), Names{"mm"});
  EXPECT_TRUE(allclose(m, mm(a, a.t())));
  EXPECT_EQ(kernels_of([&] { ops::call("add", {a, b}, {{"out", out}}); }), Names{"add"});
  EXPECT_TRUE(equal(out, a + b));
}

TEST(OutForms, AnOutThatDoesNotFitGetsTheResultCopied) {
  const Tensor a = arange(6, TensorOptions(kFloat)).view({2, 3}), b = full({2, 3}, 0.5f);
  Tensor wide = empty({2, 3}, TensorOptions(kDouble));  // another dtype: computed in float32, cast
  EXPECT_EQ(kernels_of([&] { add_out(wide, a, b); }), (Names{"add", "copy_"}));
  EXPECT_TRUE(equal(wide, (a + b).to(kDouble)));
  Tensor base = empty({3, 2});
  Tensor strided = base.t();  // not contiguous
  EXPECT_EQ(kernels_of([&] { add_out(strided, a, b); }), (Names{"add", "copy_"}));
  EXPECT_TRUE(equal(base.t(), a + b));
  Tensor small = empty({3});
  EXPECT_THROW(add_out(small, a, b), ValueError);  // the shape must be the result's
}

TEST(OutForms, OverlapWithAnInputIsWrittenOnlyWherePointwiseAllowsIt) {
  // Pointwise, out is an input: the kernel reads each element before writing it.
  Tensor a = arange(6, TensorOptions(kFloat)).view({2, 3});
  const Tensor want = a * 2.0f, two = full({2, 3}, 2.0f);
  EXPECT_EQ(kernels_of([&] { mul_out(a, a, two); }), Names{"mul"});
  EXPECT_TRUE(equal(a, want));
  // A matrix product whose out is an input: computed first, then copied (a
  // kernel writing out while reading it would be wrong).
  Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2});
  const Tensor prod = mm(x, x);
  EXPECT_EQ(kernels_of([&] { mm_out(x, x, x); }), (Names{"mm", "copy_"}));
  EXPECT_TRUE(equal(x, prod));
  // Partial overlap with a pointwise input: copied too.
  Tensor v = arange(5, TensorOptions(kFloat));
  Tensor head = v.slice(0, 0, 4), tail = v.slice(0, 1, 5);
  const Tensor sum = tail + 1.0f, one = full({4}, 1.0f);
  EXPECT_EQ(kernels_of([&] { add_out(head, tail, one); }), (Names{"add", "copy_"}));
  EXPECT_TRUE(equal(v.slice(0, 0, 4), sum));
}

TEST(OutForms, UnderAutogradTheResultIsCopiedAsBefore) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor out = empty({2});
  EXPECT_EQ(kernels_of([&] { mul_out(out, w, w); }), (Names{"mul", "copy_"}));
  EXPECT_TRUE(equal(out.detach(), tensor({1.0f, 4.0f})));
  out.sum().backward();
  EXPECT_TRUE(equal(w.grad(), tensor({2.0f, 4.0f})));
  // Without grad mode the kernel writes into out.
  autograd::NoGradGuard no_grad;
  Tensor plain = empty({2});
  EXPECT_EQ(kernels_of([&] { mul_out(plain, w, w); }), Names{"mul"});
}

TEST(OutForms, AWrittenOutBumpsItsVersionSoSavedTensorsNotice) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor saved = tensor({3.0f, 4.0f});
  const Tensor y = w * saved;  // saves `saved`
  {
    autograd::NoGradGuard no_grad;
    mul_out(saved, tensor({1.0f, 1.0f}), tensor({5.0f, 5.0f}));  // written in place
  }
  EXPECT_THROW(y.sum().backward(), AutogradError);
}
