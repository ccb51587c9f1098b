// Gradients of the view, shape and indexing ops: gradcheck (finite differences
// in float64) on every differentiable op, gradgradcheck on the views, cat and
// gather, gradients computed by hand where finite differences cannot tell
// (embedding's padding row), and the not-differentiable ops' outputs never
// requiring grad.
#include <tessera/autograd.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/ops/call.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>

using namespace tessera;
namespace ag = tessera::autograd;

namespace {
using VL = ag::variable_list;
using Fn = std::function<Tensor(const VL&)>;

// A float64 leaf of random values (seeded, so each test is reproducible).
Tensor leaf(IntArrayRef sizes, uint64_t seed = 1) {
  return randn(sizes, Generator(seed), kDouble).requires_grad_();
}
Tensor idx(std::initializer_list<int64_t> v) { return tensor(v); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

ag::GradcheckFn wrap(Fn f) {
  return [f](const VL& in) -> VL { return {f(in)}; };
}
void gradcheck(Fn f, const VL& in) { EXPECT_TRUE(ag::gradcheck(wrap(std::move(f)), in)); }
void gradgradcheck(Fn f, const VL& in) {
  EXPECT_TRUE(ag::gradcheck(wrap(f), in));
  EXPECT_TRUE(ag::gradgradcheck(wrap(std::move(f)), in));
}
}  // namespace

// ---------------------------------------------------------------- views

TEST(GradViews, ReshapingViews) {
  Tensor x = leaf({2, 3, 4});
  gradgradcheck([](const VL& in) { return in[0].view({4, -1}); }, {x});
  // reshape of a non-contiguous input copies; the gradient still maps back.
  gradgradcheck([](const VL& in) { return in[0].transpose(0, 2).reshape({-1}); }, {x});
  gradgradcheck([](const VL& in) { return in[0].unsqueeze(-1).unsqueeze(1).squeeze(); }, {x});
  gradgradcheck([](const VL& in) { return in[0].unsqueeze(0).squeeze(0).squeeze(1); }, {x});
  gradgradcheck([](const VL& in) { return in[0].transpose(-1, 0); }, {x});
  gradgradcheck([](const VL& in) { return in[0].permute({-1, 0, 1}); }, {x});
  gradgradcheck([](const VL& in) { return in[0].transpose(0, 1).contiguous() * 2; }, {x});
  gradgradcheck([](const VL& in) { return in[0].clone() * in[0]; }, {x});
}

TEST(GradViews, ExpandSumsTheGradient) {
  Tensor x = leaf({3, 1});
  gradgradcheck([](const VL& in) { return in[0].expand({2, 3, 4}) * in[0].expand({2, 3, 4}); }, {x});
  // By hand: d/dx sum(expand) counts the copies.
  x.expand({2, 3, 4}).sum().backward();
  EXPECT_EQ(vals(x.grad()), std::vector<double>(3, 8.0));
}

TEST(GradViews, ContiguousOfAContiguousLeafKeepsTheLeaf) {
  Tensor x = leaf({2, 3});
  // Through the dispatcher (Tensor::contiguous skips it when contiguous): the
  // op returns x itself, which must not get a history of its own.
  IValue args[1] = {IValue::of(x)};
  Tensor y;
  Frame frame{args, 1, &y, 1};
  Dispatcher::instance().call(Dispatcher::instance().get("contiguous"), frame);
  EXPECT_TRUE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  (y * 3).sum().backward();
  EXPECT_EQ(vals(x.grad()), std::vector<double>(6, 3.0));
}

TEST(GradViews, NarrowSliceSelect) {
  Tensor x = leaf({4, 5});
  gradgradcheck([](const VL& in) { return in[0].narrow(-1, 1, 3); }, {x});
  gradgradcheck([](const VL& in) { return in[0].narrow(0, -3, 2); }, {x});
  gradgradcheck([](const VL& in) { return in[0].select(-1, -2); }, {x});
  gradgradcheck([](const VL& in) { return in[0].select(0, 2) * in[0].select(0, 0); }, {x});
  gradgradcheck([](const VL& in) { return in[0].slice(1, 1, std::nullopt, 2); }, {x});
  gradgradcheck([](const VL& in) { return in[0].slice(-1, std::nullopt, std::nullopt, 3); }, {x});
  gradgradcheck([](const VL& in) { return in[0].slice(0, -3, -1); }, {x});
  gradgradcheck([](const VL& in) { return in[0].slice(0, 1, 100, 2).slice(1, 0, 4, 3); }, {x});
  // An empty slice: zero gradient of the input's shape.
  gradcheck([](const VL& in) { return in[0].slice(0, 3, 1).sum() + in[0].sum(); }, {x});
}

TEST(GradViews, SliceStepGradientByHand) {
  Tensor x = leaf({7});
  x.slice(0, 1, std::nullopt, 3).sum().backward();  // reads 1 and 4
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 1, 0, 0, 1, 0, 0}));
}

TEST(GradViews, AsStrided) {
  Tensor x = leaf({12});
  gradgradcheck([](const VL& in) { return in[0].as_strided({3, 2}, {2, 3}, 1); }, {x});
  // An overlapping result: positions read twice get both gradients.
  gradgradcheck([](const VL& in) { return in[0].as_strided({3, 3}, {1, 1}, 2); }, {x});
  // A non-contiguous input with an offset: positions are storage positions.
  Tensor m = leaf({4, 5}, 2);
  gradgradcheck([](const VL& in) { return in[0].t().narrow(0, 1, 3).as_strided({2, 2}, {5, 1}, 6); }, {m});
  gradcheck([](const VL& in) { return in[0].narrow(0, 1, 2).as_strided({3}, {2}); }, {m});
  // An input with a negative stride (from_blob): rows run backwards in memory.
  std::vector<double> buf = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
  Tensor back = from_blob(buf.data() + 3, {2, 3}, {-3, 1}, nullptr, kDouble).requires_grad_();
  gradgradcheck([](const VL& in) { return in[0].as_strided({2, 2}, {1, 2}, 1); }, {back});
  // An expanded (overlapping) input: its gradient is shared among the copies.
  Tensor r = leaf({1, 3}, 3);
  gradcheck([](const VL& in) { return in[0].expand({2, 3}).as_strided({2, 2}, {1, 1}, 0); }, {r});
}

TEST(GradViews, CopyFillAndFactories) {
  Tensor src = leaf({3});
  Tensor base = leaf({2, 3}, 2);
  // copy_ (broadcast src) overwrites the non-leaf: base gets no gradient from it.
  gradcheck([](const VL& in) {
    Tensor t = in[1] * 1;
    t.copy_(in[0]);
    return t * in[1];
  }, {src, base});
  gradcheck([](const VL& in) {
    Tensor t = in[0] * 2;
    t.fill_(1.5);
    return t + in[0];
  }, {base});
  // copy_ from another dtype: src's gradient comes back in src's dtype.
  Tensor f = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor t = zeros({2, 3}, kDouble);
  (t.copy_(f) * tensor({1.0, 2.0, 3.0})).sum().backward();
  EXPECT_EQ(f.grad().scalar_type(), kFloat);
  EXPECT_EQ(vals(f.grad()), (std::vector<double>{2, 4, 6}));
  EXPECT_FALSE(arange(5, kDouble).requires_grad());
  EXPECT_FALSE(empty({2}, kDouble).requires_grad());
}

TEST(GradViews, InPlaceOnAViewOfALeafIsRefused) {
  Tensor x = leaf({3, 4});
  EXPECT_THROW(x.narrow(0, 0, 1).mul_(2), AutogradError);
}

// ---------------------------------------------------------------- shape ops

TEST(GradShape, CatWithSomeInputsNotRequiringGrad) {
  Tensor a = leaf({2, 3}, 1), b = leaf({2, 1}, 2).detach(), c = leaf({2, 2}, 3);
  gradgradcheck([](const VL& in) { return cat({in[0], in[1], in[2]}, -1); }, {a, b, c});
  gradgradcheck([](const VL& in) { return cat({in[0], in[0].t().reshape({2, 3})}, 0); }, {a});
  // A legacy empty 1-D tensor takes no part.
  Tensor e = zeros({0}, kDouble).requires_grad_();
  gradcheck([](const VL& in) { return cat({in[0], in[1]}, 1); }, {a, e});
  cat({a, b}, 1).sum().backward();
  EXPECT_EQ(vals(a.grad()), std::vector<double>(6, 1.0));
  EXPECT_FALSE(b.grad().defined());
}

TEST(GradShape, CatOfMixedDtypesGivesEachInputItsOwnDtype) {
  Tensor a = leaf({2}, 1);
  Tensor f = tensor({1.5f, -2.0f, 0.5f}).requires_grad_();
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0, 5.0});
  (cat({a, f}) * w).sum().backward();  // float64 result: f's gradient comes back as float32
  EXPECT_EQ(f.grad().scalar_type(), kFloat);
  EXPECT_EQ(vals(f.grad()), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{1, 2}));
}

TEST(GradShape, Stack) {
  Tensor a = leaf({2, 3}, 1), b = leaf({2, 3}, 2).detach(), c = leaf({2, 3}, 3);
  gradgradcheck([](const VL& in) { return stack({in[0], in[1], in[2]}, -1); }, {a, b, c});
  gradgradcheck([](const VL& in) { return stack({in[0], in[1] * in[0]}, 0); }, {a, c});
}

TEST(GradShape, FlipRoll) {
  Tensor x = leaf({3, 4});
  gradgradcheck([](const VL& in) { return in[0].flip({0, -1}) * in[0]; }, {x});
  gradcheck([](const VL& in) { return in[0].t().flip({1}); }, {x});
  gradgradcheck([](const VL& in) { return in[0].roll({1, -5}, {0, -1}) * in[0]; }, {x});
  gradcheck([](const VL& in) { return in[0].roll({7}); }, {x});
}

TEST(GradShape, RepeatTile) {
  Tensor x = leaf({2, 3});
  gradgradcheck([](const VL& in) { return in[0].repeat({2, 1, 3}); }, {x});
  gradcheck([](const VL& in) { return in[0].repeat({1, 0}); }, {x});
  gradgradcheck([](const VL& in) { return in[0].tile({2}) * in[0].tile({1, 2}); }, {x});
  Tensor s = leaf({}, 4);
  gradcheck([](const VL& in) { return in[0].repeat({2, 2}); }, {s});
}

TEST(GradShape, PadAndCrop) {
  Tensor x = leaf({3, 4});
  gradgradcheck([](const VL& in) { return in[0].pad({1, 2}, "constant", 0.5); }, {x});
  gradgradcheck([](const VL& in) { return in[0].pad({-1, 2, 1, -2}); }, {x});
  gradcheck([](const VL& in) { return in[0].pad({-3, -1}).sum() + in[0].sum(); }, {x});  // everything cropped
}

TEST(GradShape, TrilTriuAndInPlaceVariants) {
  Tensor x = leaf({2, 3, 4});
  gradgradcheck([](const VL& in) { return in[0].tril(1) + in[0].triu(-1); }, {x});
  gradcheck([](const VL& in) { return (in[0] * 2).tril_(-1); }, {x});
  gradcheck([](const VL& in) { return (in[0] + 0).triu_(2) * in[0]; }, {x});
}

// ---------------------------------------------------------------- indexing ops

TEST(GradIndexing, IndexSelectWithRepeatsAndInt32) {
  Tensor x = leaf({4, 3});
  Tensor i = idx({3, 0, 3, 1});
  gradgradcheck([i](const VL& in) { return in[0].index_select(-2, i); }, {x});
  Tensor i32 = tensor({2, 0, 2}).to(kInt);
  gradcheck([i32](const VL& in) { return in[0].index_select(1, i32); }, {x});
  x.index_select(0, i).sum().backward();  // row 3 is read twice
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 1, 1, 1, 1, 1, 0, 0, 0, 2, 2, 2}));
}

TEST(GradIndexing, Gather) {
  Tensor x = leaf({3, 4});
  Tensor i = tensor({2, 0, 2, 1, 0, 0}).view({2, 3});  // repeats within a column
  gradgradcheck([i](const VL& in) { return in[0].gather(0, i); }, {x});
  gradgradcheck([i](const VL& in) { return in[0].gather(-1, i) * in[0].narrow(1, 0, 3).narrow(0, 0, 2); }, {x});
}

TEST(GradIndexing, TakeWithNegativeAndRepeatedIndices) {
  Tensor x = leaf({3, 4});
  Tensor i = tensor({-1, 0, 11, 5, -12, 5}).view({3, 2});
  gradgradcheck([i](const VL& in) { return in[0].take(i); }, {x});
  gradcheck([i](const VL& in) { return in[0].t().take(i); }, {x});
}

TEST(GradIndexing, Scatter) {
  Tensor self = leaf({3, 4}, 1), src = leaf({3, 5}, 2);
  Tensor i = tensor({2, 0, 1, 1, 1, 2, 0, 2}).view({2, 4});  // each column's indices distinct
  gradgradcheck([i](const VL& in) { return in[0].scatter(0, i, in[1]); }, {self, src});
  gradcheck([i](const VL& in) { return in[0].scatter(0, i, 0.25); }, {self});
  gradcheck([i](const VL& in) { return (in[0] * 1).scatter_(-2, i, in[1]); }, {self, src});
  gradcheck([i](const VL& in) { return (in[0] * 1).scatter_(0, i, 2.0); }, {self});
  // scatter.value with a repeated index: the position is overwritten either way.
  Tensor rep = tensor({1, 1, 0, 1}).view({1, 4});
  gradcheck([rep](const VL& in) { return in[0].scatter(0, rep, -3.0) * in[0]; }, {self});
  // src alone requiring grad, written into a tensor that does not.
  gradcheck([i](const VL& in) { return zeros({3, 4}, kDouble).scatter_(0, i, in[0]); }, {src});
}

TEST(GradIndexing, ScatterAddWithRepeatedIndices) {
  Tensor self = leaf({3, 4}, 1), src = leaf({4, 4}, 2);
  Tensor i = tensor({2, 0, 2, 2, 2, 1, 2, 0, 0, 0, 1, 0}).view({3, 4});
  gradgradcheck([i](const VL& in) { return in[0].scatter_add(0, i, in[1]); }, {self, src});
  gradcheck([i](const VL& in) { return (in[0] * 1).scatter_add_(0, i, in[1] * in[1]); }, {self, src});
}

TEST(GradIndexing, TheScatterKernelOpDirectly) {
  // _scatter, the kernel op behind the functional forms, called by name.
  Tensor self = leaf({3, 4}, 1), src = leaf({4, 4}, 2);
  Tensor rep = tensor({2, 0, 2, 2, 2, 1, 2, 0, 0, 0, 1, 0}).view({3, 4});
  Tensor distinct = tensor({2, 0, 1, 1, 1, 2, 0, 2}).view({2, 4});
  gradgradcheck([rep](const VL& in) { return ops::call("_scatter", {in[0], int64_t{0}, rep, in[1], true})[0]; },
                {self, src});
  gradgradcheck(
      [distinct](const VL& in) { return ops::call("_scatter", {in[0], int64_t{0}, distinct, in[1], false})[0]; },
      {self, src});
}

TEST(GradIndexing, IndexAdd) {
  Tensor self = leaf({4, 3}, 1), src = leaf({5, 3}, 2);
  Tensor i = idx({3, 0, 3, 3, 1});
  gradgradcheck([i](const VL& in) { return in[0].index_add(0, i, in[1], -1.5); }, {self, src});
  gradcheck([i](const VL& in) { return (in[0] * 1).index_add_(-2, i, in[1]); }, {self, src});
  Tensor s2 = leaf({4, 2}, 3);
  gradcheck([](const VL& in) { return in[0].index_add(1, idx({2, 2}), in[1]); }, {self, s2});
}

TEST(GradIndexing, MaskedFillWithBroadcastMasks) {
  Tensor x = leaf({2, 3});
  Tensor m = tensor({true, false, true}).view({1, 3});
  gradgradcheck([m](const VL& in) { return in[0].masked_fill(m, 3.0); }, {x});
  // self broadcasts up to the mask's shape: its gradient sums over the copies.
  Tensor row = leaf({3}, 2);
  Tensor m2 = tensor({true, false, false, false, true, false}).view({2, 3});
  gradcheck([m2](const VL& in) { return in[0].masked_fill(m2, -1.0); }, {row});
  gradcheck([m](const VL& in) { return (in[0] * 1).masked_fill_(m, 0.5); }, {x});
  // The 0-d tensor value gets the gradient of the filled positions.
  Tensor v = leaf({}, 3);
  gradgradcheck([m](const VL& in) { return in[0].masked_fill(m, in[1]) * in[0]; }, {x, v});
  gradcheck([m2](const VL& in) { return in[0].masked_fill(m2, in[1]); }, {row, v});
  gradcheck([m](const VL& in) { return (in[0] * 1).masked_fill_(m, in[1]); }, {x, v});
  gradcheck([m, x](const VL& in) { return (x.detach() * 1).masked_fill_(m, in[0]); }, {v});
}

TEST(GradIndexing, MaskedSelectWithBroadcasts) {
  Tensor x = leaf({2, 3});
  Tensor m = tensor({true, false, true}).view({1, 3});
  gradgradcheck([m](const VL& in) { return in[0].masked_select(m); }, {x});
  Tensor row = leaf({3}, 2);
  Tensor m2 = tensor({true, true, false, false, true, true}).view({2, 3});
  gradcheck([m2](const VL& in) { return in[0].masked_select(m2); }, {row});
}

TEST(GradIndexing, Embedding) {
  Tensor w = leaf({5, 3});
  Tensor i = tensor({4, 0, 4, 2, 2, 4}).view({2, 3});
  gradgradcheck([i](const VL& in) { return embedding(in[0], i); }, {w});
  gradcheck([i](const VL& in) { return embedding(in[0], i.to(kInt)); }, {w});
  // padding_idx: that row gets no gradient (finite differences would say otherwise).
  embedding(w, i, -1).sum().backward();  // row 4 is the padding row
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 1, 1, 0, 0, 0, 2, 2, 2, 0, 0, 0, 0, 0, 0}));
  w.set_grad(Tensor());
  (embedding(w, i, 2) * 3).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9}));
}

TEST(GradIndexing, NotDifferentiableOps) {
  Tensor x = leaf({2, 3});
  Tensor nz = x.nonzero();
  EXPECT_EQ(nz.scalar_type(), kLong);
  EXPECT_FALSE(nz.requires_grad());
  EXPECT_FALSE(one_hot(idx({0, 2}), 3).requires_grad());
  // And they do not stop gradients of the ops around them.
  Tensor rows = x.nonzero().select(1, 0);
  x.index_select(0, rows).sum().backward();
  EXPECT_EQ(vals(x.grad()), std::vector<double>(6, 3.0));
}
TEST(GradViews, ReshapeViewIsAViewForInPlaceChecks) {
  Tensor x = leaf({2, 3});
  Tensor y = x * 1;
  Tensor z = y.reshape({-1});  // a view of y: writing it rewrites y's history
  z.mul_(2);
  Tensor c = y.t().reshape({-1});  // a copy: in place leaves y alone
  c.mul_(2);
  (y.sum() + c.sum()).backward();  // y = 2x, c = 4x
  EXPECT_EQ(vals(x.grad()), std::vector<double>(6, 6.0));
}
TEST(GradViews, AsStridedBackwardAfterInputModifiedInPlace) {
  Tensor x = leaf({6});
  Tensor y = x * 1;
  Tensor w = (y.as_strided({2}, {2}, 1) * 1).sum();
  y.add_(1);
  w.backward();  // as_strided saves nothing: its geometry is enough
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 1, 0, 1, 0, 0}));
}
