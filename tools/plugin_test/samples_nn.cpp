// Samples of the nn family (docs/ops/nn.md): softmax over each dim, layer_norm
// with and without affine parameters, its backward with each output mask, the losses with their reductions,
// weights and ignored targets, conv2d and pooling with strides, padding,
// dilation, groups and ceil_mode.
#include "samples.h"

namespace tessera::kit {

namespace {

SampleArg ints(std::vector<int64_t> v) { return SampleArg::int_list(std::move(v)); }
}  // namespace

void add_nn_samples() {
  for (const char* op : {"softmax", "log_softmax"}) {
    register_samples(op, [](const SampleContext& ctx) {
      std::vector<Sample> out;
      auto& rng = ctx.rng;
      const ScalarType t = ctx.dtype;
      for (int64_t dim : {0, 1, -1})
        out.push_back(make_sample("[4, 5, 6] dim " + std::to_string(dim),
                           {SampleArg::tensor(contiguous(random_tensor(rng, {4, 5, 6}, t, Domain::Any))),
                            SampleArg::integer(dim), SampleArg::none()}));
      out.push_back(make_sample("0-d", {SampleArg::tensor(contiguous(random_tensor(rng, {}, t))), SampleArg::integer(0),
                                 SampleArg::none()}));
      out.push_back(make_sample("[3, 1100] dim 1", {SampleArg::tensor(contiguous(random_tensor(rng, {3, 1100}, t, Domain::Finite))),
                                             SampleArg::integer(1), SampleArg::none()}));
      out.push_back(make_sample("transposed [5, 6] dim 1", {SampleArg::tensor(transposed(rng, {5, 6}, t, Domain::Finite)),
                                                     SampleArg::integer(1), SampleArg::none()}));
      out.push_back(make_sample("[0, 4] dim 1", {SampleArg::tensor(contiguous(random_tensor(rng, {0, 4}, t))),
                                          SampleArg::integer(1), SampleArg::none()}));
      return out;
    }, 4.0);
  }
  register_samples("layer_norm", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    for (int affine = 0; affine < 3; ++affine) {
      for (int k = 1; k <= 2; ++k) {
        std::vector<int64_t> ns = k == 1 ? std::vector<int64_t>{6} : std::vector<int64_t>{5, 6};
        out.push_back(make_sample("[4, 5, 6] over " + shape_text(ns) + (affine == 0 ? "" : affine == 1 ? ", weight" : ", weight and bias"),
                           {SampleArg::tensor(contiguous(random_tensor(rng, {4, 5, 6}, t, Domain::Finite))), ints(ns),
                            affine >= 1 ? SampleArg::tensor(contiguous(random_tensor(rng, ns, t, Domain::Finite))) : SampleArg::none(),
                            affine == 2 ? SampleArg::tensor(contiguous(random_tensor(rng, ns, t, Domain::Finite))) : SampleArg::none(),
                            SampleArg::real(1e-5)}));
      }
    }
    out.push_back(make_sample("[3, 1100] over [1100], eps 0.1",
                       {SampleArg::tensor(contiguous(random_tensor(rng, {3, 1100}, t, Domain::Finite))), ints({1100}),
                        SampleArg::none(), SampleArg::none(), SampleArg::real(0.1)}));
    out.push_back(make_sample("transposed [5, 6] over [5]", {SampleArg::tensor(transposed(rng, {6, 5}, t, Domain::Finite)),
                                                      ints({5}), SampleArg::none(), SampleArg::none(), SampleArg::real(1e-5)}));
    return out;
  }, 20.0);
  // _layer_norm_backward(grad_output, input, normalized_shape, weight, eps,
  // input_grad, affine_grads): each output mask, with and without weight.
  register_samples("_layer_norm_backward", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    auto finite = [&](std::vector<int64_t> shape) {
      return SampleArg::tensor(contiguous(random_tensor(rng, std::move(shape), t, Domain::Finite)));
    };
    for (int mask = 1; mask < 4; ++mask) {
      for (int weighted = 0; weighted < 2; ++weighted) {
        const bool input_grad = (mask & 1) != 0, affine = (mask & 2) != 0;
        out.push_back(make_sample(std::string("[4, 5, 6] over [5, 6]") + (weighted ? ", weight" : "") +
                                      (input_grad ? ", input grad" : "") + (affine ? ", affine grads" : ""),
                                  {finite({4, 5, 6}), finite({4, 5, 6}), ints({5, 6}),
                                   weighted ? finite({5, 6}) : SampleArg::none(), SampleArg::real(1e-5),
                                   SampleArg::boolean(input_grad), SampleArg::boolean(affine)}));
      }
    }
    out.push_back(make_sample("[3, 1100] over [1100], weight, eps 0.1",
                              {finite({3, 1100}), finite({3, 1100}), ints({1100}), finite({1100}), SampleArg::real(0.1),
                               SampleArg::boolean(true), SampleArg::boolean(true)}));
    out.push_back(make_sample("transposed [5, 6] over [5]",
                              {SampleArg::tensor(transposed(rng, {6, 5}, t, Domain::Finite)),
                               SampleArg::tensor(transposed(rng, {6, 5}, t, Domain::Finite)), ints({5}), SampleArg::none(),
                               SampleArg::real(1e-5), SampleArg::boolean(true), SampleArg::boolean(true)}));
    out.push_back(make_sample("[0, 4] over [4]", {finite({0, 4}), finite({0, 4}), ints({4}), finite({4}),
                                                  SampleArg::real(1e-5), SampleArg::boolean(true), SampleArg::boolean(true)}));
    return out;
  }, 40.0);
  // _conv2d_backward_weight(grad_output, input, weight_size, stride, padding,
  // dilation, groups): 3x3 with padding, stride and dilation, groups, an
  // output size that leaves the last input rows unread, a transposed input.
  register_samples("_conv2d_backward_weight", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    struct Case {
      std::vector<int64_t> in, grad, w, s, p, d;
      int64_t groups;
    };
    const Case cases[] = {{{2, 3, 6, 5}, {2, 4, 6, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                          {{1, 4, 7, 8}, {1, 6, 3, 4}, {6, 2, 3, 2}, {2, 2}, {1, 0}, {1, 1}, 2},
                          {{2, 2, 9, 7}, {2, 3, 5, 3}, {3, 2, 3, 3}, {1, 2}, {0, 1}, {2, 1}, 1},
                          {{1, 3, 8, 8}, {1, 2, 3, 3}, {2, 3, 2, 2}, {3, 3}, {0, 0}, {1, 1}, 1}};
    for (const Case& c : cases) {
      out.push_back(make_sample(shape_text(c.in) + " w " + shape_text(c.w) + " s " + shape_text(c.s) + " p " +
                                    shape_text(c.p) + " d " + shape_text(c.d) + " g " + std::to_string(c.groups),
                                {SampleArg::tensor(contiguous(random_tensor(rng, c.grad, t, Domain::Finite))),
                                 SampleArg::tensor(contiguous(random_tensor(rng, c.in, t, Domain::Finite))), ints(c.w),
                                 ints(c.s), ints(c.p), ints(c.d), SampleArg::integer(c.groups)}));
    }
    out.push_back(make_sample("transposed input [1, 2, 5, 6], w [2, 2, 3, 3]",
                              {SampleArg::tensor(contiguous(random_tensor(rng, {1, 2, 3, 4}, t, Domain::Finite))),
                               SampleArg::tensor(transposed(rng, {1, 2, 5, 6}, t, Domain::Finite)), ints({2, 2, 3, 3}),
                               ints({1, 1}), ints({0, 0}), ints({1, 1}), SampleArg::integer(1)}));
    return out;
  }, 8.0);
  // _max_pool2d_backward(grad_output, self, kernel_size, stride, padding,
  // dilation, ceil_mode): the 2x2 pool, overlapping windows, padding with
  // ceil_mode, dilation, a transposed input.
  register_samples("_max_pool2d_backward", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    struct Case {
      std::vector<int64_t> in, grad, k, s, p, d;
      bool ceil;
    };
    const Case cases[] = {{{2, 3, 8, 18}, {2, 3, 4, 9}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
                          {{3, 7, 7}, {3, 3, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                          {{1, 2, 5, 6}, {1, 2, 3, 4}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, true},
                          {{2, 6, 5}, {2, 4, 4}, {2, 2}, {1, 1}, {0, 0}, {2, 1}, false}};
    for (const Case& c : cases) {
      out.push_back(make_sample(shape_text(c.in) + " k " + shape_text(c.k) + " s " + shape_text(c.s) + " p " +
                                    shape_text(c.p) + " d " + shape_text(c.d) + (c.ceil ? " ceil" : ""),
                                {SampleArg::tensor(contiguous(random_tensor(rng, c.grad, t, Domain::Finite))),
                                 SampleArg::tensor(contiguous(random_tensor(rng, c.in, t, Domain::Finite))), ints(c.k),
                                 ints(c.s), ints(c.p), ints(c.d), SampleArg::boolean(c.ceil)}));
    }
    out.push_back(make_sample("transposed [4, 6] planes, k 2",
                              {SampleArg::tensor(contiguous(random_tensor(rng, {1, 2, 3}, t, Domain::Finite))),
                               SampleArg::tensor(transposed(rng, {1, 4, 6}, t, Domain::Finite)), ints({2, 2}),
                               ints({2, 2}), ints({0, 0}), ints({1, 1}), SampleArg::boolean(false)}));
    return out;
  }, 4.0);
  // nll_loss(self, target, weight, reduction, ignore_index) and the smoothed form (+ label_smoothing).
  for (const char* op : {"nll_loss", "_nll_loss_smoothed"}) {
    register_samples(op, [](const SampleContext& ctx) {
      std::vector<Sample> out;
      auto& rng = ctx.rng;
      const ScalarType t = ctx.dtype;
      const bool smoothed = ctx.op.name() == "_nll_loss_smoothed";
      for (const char* reduction : {"none", "mean", "sum"}) {
        for (int weighted = 0; weighted < 2; ++weighted) {
          for (int64_t ignore : {-100, 2}) {
            std::vector<SampleArg> args = {
                SampleArg::tensor(contiguous(random_tensor(rng, {7, 5}, t, Domain::Finite))),
                SampleArg::tensor(contiguous(random_index(rng, {7}, 0, 5))),
                weighted ? SampleArg::tensor(contiguous(random_tensor(rng, {5}, t, Domain::Positive))) : SampleArg::none(),
                SampleArg::string(reduction), SampleArg::integer(ignore)};
            if (smoothed) args.push_back(SampleArg::real(0.1));
            out.push_back(make_sample(std::string("[7, 5], reduction ") + reduction + (weighted ? ", weight" : "") +
                                   ", ignore_index " + std::to_string(ignore),
                               std::move(args)));
          }
        }
      }
      std::vector<SampleArg> one = {SampleArg::tensor(contiguous(random_tensor(rng, {5}, t, Domain::Finite))),
                                    SampleArg::tensor(contiguous(random_index(rng, {}, 0, 5))), SampleArg::none(),
                                    SampleArg::string("mean"), SampleArg::integer(-100)};
      if (smoothed) one.push_back(SampleArg::real(0.25));
      out.push_back(make_sample("[5] with a 0-d target", std::move(one)));
      std::vector<SampleArg> tr = {SampleArg::tensor(transposed(rng, {6, 4}, t, Domain::Finite)),
                                   SampleArg::tensor(contiguous(random_index(rng, {6}, 0, 4))), SampleArg::none(),
                                   SampleArg::string("sum"), SampleArg::integer(-100)};
      if (smoothed) tr.push_back(SampleArg::real(0.0));
      out.push_back(make_sample("transposed [6, 4]", std::move(tr)));
      return out;
    }, 8.0);
  }
  register_samples("conv2d", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    struct C {
      std::vector<int64_t> in, w;
      bool bias;
      std::vector<int64_t> stride, pad, dil;
      int64_t groups;
    };
    const std::vector<C> cs = {
        {{2, 3, 7, 8}, {4, 3, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, 1},
        {{1, 4, 9, 9}, {6, 2, 3, 2}, false, {2, 1}, {1, 2}, {1, 1}, 2},
        {{2, 2, 10, 9}, {3, 2, 3, 3}, true, {1, 2}, {2, 0}, {2, 1}, 1},
        {{3, 6, 6}, {2, 6, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1},  // unbatched, 1x1
        {{1, 16, 12, 12}, {16, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 16},  // depthwise
        {{0, 3, 5, 5}, {2, 3, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, 1},  // empty batch
    };
    for (const C& c : cs) {
      const int64_t o = c.w[0];
      out.push_back(make_sample("input " + shape_text(c.in) + ", weight " + shape_text(c.w) + ", stride " +
                             shape_text(c.stride) + ", padding " + shape_text(c.pad) + ", dilation " +
                             shape_text(c.dil) + ", groups " + std::to_string(c.groups),
                         {SampleArg::tensor(contiguous(random_tensor(rng, c.in, t, Domain::Finite))),
                          SampleArg::tensor(contiguous(random_tensor(rng, c.w, t, Domain::Finite))),
                          c.bias ? SampleArg::tensor(contiguous(random_tensor(rng, {o}, t, Domain::Finite))) : SampleArg::none(),
                          ints(c.stride), ints(c.pad), ints(c.dil), SampleArg::integer(c.groups)}));
    }
    out.push_back(make_sample("transposed input", {SampleArg::tensor(transposed(rng, {1, 2, 6, 7}, t, Domain::Finite)),
                                            SampleArg::tensor(contiguous(random_tensor(rng, {3, 2, 2, 2}, t, Domain::Finite))),
                                            SampleArg::none(), ints({1, 1}), ints({0, 0}), ints({1, 1}),
                                            SampleArg::integer(1)}));
    return out;
  }, 30.0);
  register_samples("max_pool2d", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    const Domain d = is_floating_type(t) ? Domain::Any : Domain::Any;
    struct P {
      std::vector<int64_t> in, k, stride, pad, dil;
      bool ceil;
    };
    const std::vector<P> ps = {{{2, 3, 8, 9}, {2, 2}, {}, {0, 0}, {1, 1}, false},
                               {{1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
                               {{2, 7, 8}, {3, 2}, {1, 2}, {1, 0}, {2, 1}, false},
                               {{1, 1, 5, 5}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, false}};
    for (const P& p : ps)
      out.push_back(make_sample("input " + shape_text(p.in) + ", kernel " + shape_text(p.k) + ", stride " + shape_text(p.stride) +
                             ", padding " + shape_text(p.pad) + ", dilation " + shape_text(p.dil) + (p.ceil ? ", ceil" : ""),
                         {SampleArg::tensor(contiguous(random_tensor(rng, p.in, t, d))), ints(p.k), ints(p.stride),
                          ints(p.pad), ints(p.dil), SampleArg::boolean(p.ceil)}));
    out.push_back(make_sample("transposed input", {SampleArg::tensor(transposed(rng, {1, 2, 6, 7}, t, d)), ints({2, 2}),
                                            ints({}), ints({0, 0}), ints({1, 1}), SampleArg::boolean(false)}));
    return out;
  });
  register_samples("avg_pool2d", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    auto& rng = ctx.rng;
    const ScalarType t = ctx.dtype;
    struct P {
      std::vector<int64_t> in, k, stride, pad;
      bool ceil, include_pad;
      int64_t divisor;  // 0: None
    };
    const std::vector<P> ps = {{{2, 3, 8, 9}, {2, 2}, {}, {0, 0}, false, true, 0},
                               {{1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, true, true, 0},
                               {{1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, true, false, 0},
                               {{2, 7, 8}, {3, 2}, {1, 2}, {1, 0}, false, false, 5}};
    for (const P& p : ps)
      out.push_back(make_sample("input " + shape_text(p.in) + ", kernel " + shape_text(p.k) + ", stride " + shape_text(p.stride) +
                             ", padding " + shape_text(p.pad) + (p.ceil ? ", ceil" : "") +
                             (p.include_pad ? "" : ", padding not counted") +
                             (p.divisor ? ", divisor " + std::to_string(p.divisor) : ""),
                         {SampleArg::tensor(contiguous(random_tensor(rng, p.in, t, Domain::Finite))), ints(p.k),
                          ints(p.stride), ints(p.pad), SampleArg::boolean(p.ceil), SampleArg::boolean(p.include_pad),
                          p.divisor ? SampleArg::integer(p.divisor) : SampleArg::none()}));
    return out;
  }, 4.0);
}

}  // namespace tessera::kit
