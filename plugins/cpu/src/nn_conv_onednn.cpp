// float32 conv2d through oneDNN's forward convolution, and its weight gradient
// through the backward-weights one (nn_conv_onednn.hpp).
//
// Each call: the user's NCHW input and OIHW weight are reordered into the
// layouts oneDNN's kernel prefers (format_tag::any: channels-last for the
// brgconv kernels, else channel-blocked), the convolution runs, and the result
// is reordered back into the NCHW output. NCHW <-> NHWC moves go through the
// caller's Transpose where it takes the shape (oneDNN's reorder for them,
// jit:uni, is slow).
// Building those primitives costs 150-400 us, more than a small convolution,
// so they are cached per problem (shapes, stride, padding, dilation, groups,
// bias, OpenMP thread count) in a mutex-guarded LRU of 64 entries. Refusals
// are cached too, so a problem oneDNN cannot do costs one attempt.
//
// Threads: oneDNN (the OpenMP build Debian ships) runs on the calling thread's
// OpenMP team of omp_get_max_threads() threads, the same libgomp pool as the
// other kernels and OpenBLAS; it does not follow parallel.hpp's load-aware
// thread count (omp_set_num_threads here would change the caller's setting).
#include "nn_conv_onednn.hpp"

#if TESSERA_CPU_HAVE_ONEDNN
#include "onednn_support.hpp"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <unordered_map>
#endif

namespace tessera::cpu::onednn {

#if !TESSERA_CPU_HAVE_ONEDNN

bool conv2d_available() { return false; }
bool conv2d_f32(const Conv2dShape&, const float*, const float*, const float*, float*, Transpose) { return false; }
bool conv2d_backward_weight_f32(const Conv2dShape&, const float*, const float*, float*, Transpose) { return false; }

#else

namespace {

using support::cpu_engine;
using support::enabled_by_env;
using support::make_reorder;
using support::Step;

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// The problem a plan is built for; the thread count too, because oneDNN sizes
// its work split when the primitive is created.
using Key = support::Key<18>;

// A problem's primitives, immutable once built and shared by every thread
// that runs the problem. ok = false: oneDNN refused it.
struct Plan {
  bool ok = false;
  memory::desc x_user, w_user, y_user, bias;
  memory::desc x_conv, w_conv, y_conv;
  Step conv, x_in, w_in, y_out;  // a reorder is empty where the layouts agree
  bool x_nhwc = false, y_nhwc = false;  // x_in / y_out is NCHW <-> NHWC: the caller's Transpose may do it
};

// Whether `d` is the dense channels-last layout of `user`'s (dense NCHW) dims.
bool channels_last(const memory::desc& d, const memory::desc& user) {
  return d == memory::desc(user.dims(), dt::f32, tag::nhwc);
}

// x (dense NCHW, dims [N, C, H, W]) into `staged` (NHWC) by the caller's
// transpose, else by the reorder step.
void stage_nhwc(support::Runner& r, const Step& reorder, bool nhwc, Transpose transpose, const memory::desc& user_desc,
                const float* x, const memory& user, const memory& staged) {
  const memory::dims d = user_desc.dims();
  if (nhwc && transpose != nullptr && transpose(x, static_cast<float*>(staged.get_data_handle()), d[0], d[1], d[2] * d[3]))
    return;
  r.run(reorder, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, staged}});
}

// The user's (dense NCHW / OIHW) descriptors of a problem, the "any" ones
// oneDNN picks its layouts from, and the geometry.
struct Geometry {
  memory::desc x_user, y_user, w_user, x_any, y_any, w_any;
  memory::dims strides, dilates, pad_l, pad_r;
};

Geometry geometry_of(const Conv2dShape& s) {
  Geometry g;
  const int64_t G = s.groups;
  g.x_user = memory::desc({s.N, s.C, s.H, s.W}, dt::f32, tag::nchw);
  g.y_user = memory::desc({s.N, s.O, s.Ho, s.Wo}, dt::f32, tag::nchw);
  g.w_user = G == 1 ? memory::desc({s.O, s.C, s.kH, s.kW}, dt::f32, tag::oihw)
                    : memory::desc({G, s.O / G, s.C / G, s.kH, s.kW}, dt::f32, tag::goihw);
  g.x_any = memory::desc({s.N, s.C, s.H, s.W}, dt::f32, tag::any);
  g.y_any = memory::desc({s.N, s.O, s.Ho, s.Wo}, dt::f32, tag::any);
  g.w_any = memory::desc(g.w_user.dims(), dt::f32, tag::any);
  // The padding after is what the output size implies; where the last input
  // rows are never read (floor in the output size) it is 0, which yields the
  // same output size.
  const int64_t pr_h = std::max<int64_t>(0, (s.Ho - 1) * s.sh + s.dh * (s.kH - 1) + 1 - s.H - s.ph);
  const int64_t pr_w = std::max<int64_t>(0, (s.Wo - 1) * s.sw + s.dw * (s.kW - 1) + 1 - s.W - s.pw);
  g.strides = {s.sh, s.sw};
  g.dilates = {s.dh - 1, s.dw - 1};  // oneDNN: 0 = no dilation
  g.pad_l = {s.ph, s.pw};
  g.pad_r = {pr_h, pr_w};
  return g;
}

std::shared_ptr<const Plan> build_plan(const Conv2dShape& s, bool has_bias) {
  auto plan = std::make_shared<Plan>();
  try {
    dnnl::engine& eng = cpu_engine();
    const Geometry g = geometry_of(s);
    plan->x_user = g.x_user;
    plan->y_user = g.y_user;
    plan->w_user = g.w_user;
    plan->bias = memory::desc({s.O}, dt::f32, tag::x);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    const dnnl::convolution_forward::desc desc =
        has_bias ? dnnl::convolution_forward::desc(prop, alg, g.x_any, g.w_any, plan->bias, g.y_any, g.strides,
                                                   g.dilates, g.pad_l, g.pad_r)
                 : dnnl::convolution_forward::desc(prop, alg, g.x_any, g.w_any, g.y_any, g.strides, g.dilates,
                                                   g.pad_l, g.pad_r);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
    plan->x_conv = pd.src_desc();
    plan->w_conv = pd.weights_desc();
    plan->y_conv = pd.dst_desc();
    plan->conv = {dnnl::convolution_forward(pd), pd.scratchpad_desc()};
    plan->x_in = make_reorder(plan->x_user, plan->x_conv, attr);
    plan->w_in = make_reorder(plan->w_user, plan->w_conv, attr);
    plan->y_out = make_reorder(plan->y_conv, plan->y_user, attr);
    plan->x_nhwc = plan->x_in && channels_last(plan->x_conv, plan->x_user);
    plan->y_nhwc = plan->y_out && channels_last(plan->y_conv, plan->y_user);
    plan->ok = true;
  } catch (const dnnl::error&) {
    // Refused (unsupported shape or layout, no kernel for this CPU): the
    // caller's im2col path handles it. DNNL_VERBOSE=1 shows oneDNN's reasons.
    *plan = Plan{};
  }
  return plan;
}

support::PlanCache<18, Plan>& plan_cache() {
  static support::PlanCache<18, Plan> cache;
  return cache;
}

// Fits oneDNN's int-sized internals and our size_t byte counts.
bool small_enough(const Conv2dShape& s) {
  constexpr int64_t kMax = int64_t{1} << 31;
  auto fits = [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    return a < kMax && b < kMax / a && c < kMax / (a * b) && d < kMax / (a * b * c);
  };
  return fits(s.N, s.C, s.H, s.W) && fits(s.N, s.O, s.Ho, s.Wo) && fits(s.O, s.C / s.groups, s.kH, s.kW) &&
         s.sh < kMax && s.sw < kMax && s.ph < kMax && s.pw < kMax && s.dh < kMax && s.dw < kMax;
}

// The weight gradient's primitives: x and grad_out in, grad_w out, each
// through a reorder where oneDNN's kernel wants another layout.
struct BackwardWeightPlan {
  bool ok = false;
  memory::desc x_user, y_user, w_user;
  memory::desc x_conv, y_conv, w_conv;
  Step conv, x_in, y_in, w_out;
  bool x_nhwc = false, y_nhwc = false;  // x_in / y_in is NCHW -> NHWC
};

std::shared_ptr<const BackwardWeightPlan> build_backward_weight_plan(const Conv2dShape& s) {
  auto plan = std::make_shared<BackwardWeightPlan>();
  try {
    dnnl::engine& eng = cpu_engine();
    const Geometry g = geometry_of(s);
    plan->x_user = g.x_user;
    plan->y_user = g.y_user;
    plan->w_user = g.w_user;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto alg = dnnl::algorithm::convolution_direct;
    // oneDNN builds backward primitives from the forward (training) one's choices.
    const dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, g.x_any, g.w_any, g.y_any, g.strides,
                                        g.dilates, g.pad_l, g.pad_r),
        eng);
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(alg, g.x_any, g.w_any, g.y_any, g.strides, g.dilates, g.pad_l,
                                                 g.pad_r),
        attr, eng, hint);
    plan->x_conv = pd.src_desc();
    plan->y_conv = pd.diff_dst_desc();
    plan->w_conv = pd.diff_weights_desc();
    plan->conv = {dnnl::convolution_backward_weights(pd), pd.scratchpad_desc()};
    plan->x_in = make_reorder(plan->x_user, plan->x_conv, attr);
    plan->y_in = make_reorder(plan->y_user, plan->y_conv, attr);
    plan->w_out = make_reorder(plan->w_conv, plan->w_user, attr);
    plan->x_nhwc = plan->x_in && channels_last(plan->x_conv, plan->x_user);
    plan->y_nhwc = plan->y_in && channels_last(plan->y_conv, plan->y_user);
    plan->ok = true;
  } catch (const dnnl::error&) {
    *plan = BackwardWeightPlan{};  // refused: the caller's im2col path
  }
  return plan;
}

support::PlanCache<17, BackwardWeightPlan>& backward_weight_plan_cache() {
  static support::PlanCache<17, BackwardWeightPlan> cache;
  return cache;
}

// The problems both directions take: positive sizes, padding >= 0, whole
// groups, sizes within oneDNN's int range.
bool acceptable(const Conv2dShape& s) {
  const int64_t dims[] = {s.N, s.C, s.H, s.W, s.O, s.kH, s.kW, s.Ho, s.Wo, s.sh, s.sw, s.dh, s.dw, s.groups};
  for (int64_t d : dims)
    if (d <= 0) return false;  // empty tensors and degenerate parameters: im2col's business
  return s.ph >= 0 && s.pw >= 0 && s.C % s.groups == 0 && s.O % s.groups == 0 && small_enough(s);
}

}  // namespace

bool conv2d_backward_weight_f32(const Conv2dShape& s, const float* grad_out, const float* x, float* grad_w,
                                Transpose transpose) {
  if (!conv2d_available() || !acceptable(s)) return false;
  const support::Key<17> key{s.N,  s.C,  s.H,  s.W,  s.O,  s.kH, s.kW, s.Ho,    s.Wo,
                             s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.groups, omp_get_max_threads()};
  try {
    const std::shared_ptr<const BackwardWeightPlan> plan =
        backward_weight_plan_cache().get(key, [&] { return build_backward_weight_plan(s); });
    if (!plan->ok) return false;
    support::Runner r({&plan->conv, &plan->x_in, &plan->y_in, &plan->w_out});
    // oneDNN reads, never writes, src and diff_dst: the const_casts are for its API.
    const memory x_user = r.wrap(plan->x_user, const_cast<float*>(x));
    const memory y_user = r.wrap(plan->y_user, const_cast<float*>(grad_out));
    const memory w_user = r.wrap(plan->w_user, grad_w);
    const memory x_conv = r.stage(plan->x_in, plan->x_conv, 0, x_user);
    const memory y_conv = r.stage(plan->y_in, plan->y_conv, 1, y_user);
    const memory w_conv = r.stage(plan->w_out, plan->w_conv, 2, w_user);
    if (plan->x_in) stage_nhwc(r, plan->x_in, plan->x_nhwc, transpose, plan->x_user, x, x_user, x_conv);
    if (plan->y_in) stage_nhwc(r, plan->y_in, plan->y_nhwc, transpose, plan->y_user, grad_out, y_user, y_conv);
    r.run(plan->conv, {{DNNL_ARG_SRC, x_conv}, {DNNL_ARG_DIFF_DST, y_conv}, {DNNL_ARG_DIFF_WEIGHTS, w_conv}});
    if (plan->w_out) r.run(plan->w_out, {{DNNL_ARG_FROM, w_conv}, {DNNL_ARG_TO, w_user}});
    r.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller recomputes the whole gradient
  }
}

bool conv2d_available() {
  static const bool on = enabled_by_env();
  return on;
}

bool conv2d_f32(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* out,
                Transpose transpose) {
  if (!conv2d_available() || !acceptable(s)) return false;
  const Key key{s.N, s.C, s.H, s.W, s.O, s.kH, s.kW, s.Ho, s.Wo, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.groups,
                bias != nullptr, omp_get_max_threads()};
  try {
    const std::shared_ptr<const Plan> plan = plan_cache().get(key, [&] { return build_plan(s, bias != nullptr); });
    if (!plan->ok) return false;
    support::Runner r({&plan->conv, &plan->x_in, &plan->w_in, &plan->y_out});
    // oneDNN reads, never writes, src, weights and bias: the const_casts are for its API.
    const memory x_user = r.wrap(plan->x_user, const_cast<float*>(x));
    const memory w_user = r.wrap(plan->w_user, const_cast<float*>(w));
    const memory y_user = r.wrap(plan->y_user, out);
    const memory x_conv = r.stage(plan->x_in, plan->x_conv, 0, x_user);
    const memory w_conv = r.stage(plan->w_in, plan->w_conv, 1, w_user);
    const memory y_conv = r.stage(plan->y_out, plan->y_conv, 2, y_user);
    if (plan->x_in) stage_nhwc(r, plan->x_in, plan->x_nhwc, transpose, plan->x_user, x, x_user, x_conv);
    if (plan->w_in) r.run(plan->w_in, {{DNNL_ARG_FROM, w_user}, {DNNL_ARG_TO, w_conv}});
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x_conv}, {DNNL_ARG_WEIGHTS, w_conv}, {DNNL_ARG_DST, y_conv}};
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, r.wrap(plan->bias, const_cast<float*>(bias)));
    r.run(plan->conv, std::move(args));
    if (plan->y_out) {
      // NHWC [N, Ho, Wo, O] back to NCHW: n blocks of (Ho Wo) x O, transposed.
      r.wait();  // the convolution's result first
      if (!(plan->y_nhwc && transpose != nullptr &&
            transpose(static_cast<const float*>(y_conv.get_data_handle()), out, s.N, s.Ho * s.Wo, s.O)))
        r.run(plan->y_out, {{DNNL_ARG_FROM, y_conv}, {DNNL_ARG_TO, y_user}});
    }
    r.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller recomputes the whole output
  }
}

#endif  // TESSERA_CPU_HAVE_ONEDNN

}  // namespace tessera::cpu::onednn
