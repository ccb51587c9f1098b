#include "pointwise_lane.h"

#include "ops/out_target.h"

#include <tessera/error.h>

#include <string>

#include "abi_bridge.h"
#include "local_keys.h"
#include "operator_slots.h"
#include "output_placement.h"
#include "testing_hooks.h"
#include "plugin_kernels.h"
#include "structured.h"
#include "tensor_cache.h"

namespace tessera {

namespace {
// Lane calls have no data-dependent output; a kernel asking gets the error the
// meta-rule path gives for the same mistake.
TsrError* lane_allocate_output(TsrCallHandle, size_t index, TsrDType, int32_t, const int64_t*, DLTensor**) {
  return make_host_error(TSR_ERROR_INVALID_ARGUMENT, "allocate_output: output " + std::to_string(index) +
                                                         " is not a data-dependent output awaiting allocation");
}

// A new output of a's shape when the tensor cache has none to give, placed away
// from a's and b's (may be null) data: one reference, owned by the caller.
// Running out of memory is reported under op's name. (Six arguments, all in
// registers: a seventh on the stack changed the lane's frame.)
[[gnu::noinline]] TensorImpl* new_output(const Operator& op, Device device, const TensorImpl* a, const TensorImpl* b,
                                         int64_t numel, ScalarType dtype) {
  placement::Hint hint;
  hint.add(a->data());
  if (b != nullptr) hint.add(b->data());
  try {
    boost::intrusive_ptr<TensorImpl> t =
        allocate_contiguous(device_entry(device), device, a->sizes(), numel, dtype, &hint).impl();
    return t.detach();
  } catch (const OutOfMemoryError& e) {
    rethrow_out_of_memory(op, e);
  }
}

// The frame holds the lane's arguments: its tensors (defined), then the trailing one.
bool lane_shaped(const PointwiseLane& lane, const Frame& frame) {
  const int n = lane.num_tensors;
  if (frame.num_args != n + (lane.trailing != PointwiseLane::Trailing::Nothing) || frame.num_outputs < 1) return false;
  for (int i = 0; i < n; ++i)
    if (frame.args[i].tag != IValue::Tag::Tensor || !frame.args[i].tensor->defined()) return false;
  return true;
}

// add/sub's alpha as the meta rule hands it over (set_scalar_value); false (the
// rule decides) for a float alpha with an integer dtype (an error) and for a bool
// alpha.
[[gnu::always_inline]] inline bool lane_alpha(const Scalar& alpha, ScalarType t, TsrValue& v) {
  // Each branch fixes alpha's kind, so set_scalar_value's reads fold to one.
  if (alpha.is_integral()) {
    set_scalar_value(v, alpha, t);
    return true;
  }
  if (alpha.is_floating_point() && is_floating_type(t)) {
    set_scalar_value(v, alpha, t);
    return true;
  }
  return false;
}

// The lane's view of a boxed call: a lane-shaped frame.
struct FrameArgs {
  Frame& frame;
  const TensorImpl* tensor(int i) const { return frame.args[i].tensor->unsafeGetTensorImpl(); }
  bool alpha(int n, ScalarType t, TsrValue& v) const {
    const IValue& a = frame.args[n];
    if (a.tag == IValue::Tag::Int) return lane_alpha(Scalar(a.i), t, v);
    return a.tag == IValue::Tag::Double && lane_alpha(Scalar(a.d), t, v);
  }
  bool trailing_none(int n) const { return frame.args[n].is_none(); }
  Tensor& output() const { return frame.outputs[0]; }
  size_t num_args() const { return static_cast<size_t>(frame.num_args); }
  [[noreturn]] void fail(const Operator& op, const DeviceTypeEntry& dev, const PluginKernel& k, ScalarType t,
                         TsrError* err) const {
    fail_plugin_kernel(op, frame, dev, k, t, err);
  }
};

// The boxed form of a typed call a[, b][, alpha] in `args`; returns the count.
int box_typed(const Tensor& a, const Tensor* b, const Scalar* alpha, IValue (&args)[3]) {
  int n = 0;
  args[n++] = IValue::of(a);
  if (b != nullptr) args[n++] = IValue::of(*b);
  if (alpha != nullptr) args[n++] = IValue::of(*alpha);
  return n;
}

// The lane's view of a typed call: one or two defined tensors and an optional
// alpha (the lane's shape, checked by the caller).
struct TypedArgs {
  const Tensor* tensors[2];
  const Scalar* alpha_arg;
  Tensor& out;
  const TensorImpl* tensor(int i) const { return tensors[i]->unsafeGetTensorImpl(); }
  bool alpha(int, ScalarType t, TsrValue& v) const { return lane_alpha(*alpha_arg, t, v); }
  bool trailing_none(int) const { return false; }
  Tensor& output() const { return out; }
  size_t num_args() const { return size_t(tensors[1] != nullptr) + 1 + size_t(alpha_arg != nullptr); }
  // The boxed form of the call, for the error's description of it.
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const Operator& op, const DeviceTypeEntry& dev,
                                                   const PluginKernel& k, ScalarType t, TsrError* err) const {
    IValue boxed[3];
    const Frame frame{boxed, box_typed(*tensors[0], tensors[1], alpha_arg, boxed), &out, 1};
    fail_plugin_kernel(op, frame, dev, k, t, err);
  }
};

// The lane proper, for a lane-shaped call with n tensors and the trailing
// argument `trailing` (the lane's; constants when the caller knows them).
template <class Args>
[[gnu::always_inline]] inline bool run_lane(const Operator& op, const PointwiseLane& lane, int n,
                                            PointwiseLane::Trailing trailing, const Args& args) {
  const TensorImpl* a = args.tensor(0);
  const ScalarType t = a->dtype();
  // The early returns are marked unlikely (see call_pointwise_as).
  if (!(lane.dtypes & (1u << static_cast<int>(t))) || a->is_wrapped_number() || a->numel() == 0) [[unlikely]]
    return false;
  const Device device = a->device();
  if (n == 2) {
    const TensorImpl* b = args.tensor(1);
    if (b->dtype() != t || b->is_wrapped_number() || b->device() != device || !b->sizes().equals(a->sizes()))
        [[unlikely]]
      return false;
  }

  TsrValue values[3];
  for (int i = 0; i < n; ++i) set_value_tag(values[i], TSR_VALUE_TENSOR);  // reserved 0 too
  if (trailing == PointwiseLane::Trailing::Alpha) {
    if (!args.alpha(n, t, values[n])) [[unlikely]] return false;
  } else if (trailing == PointwiseLane::Trailing::NoneOnly) {
    if (!args.trailing_none(n)) [[unlikely]] return false;
    values[n] = TsrValue{};
  }

  const DeviceTypeEntry& dev = device_entry(device);
  if (dev.no_storage() || g_dispatch_trace || g_output_guard_bytes != 0 || g_kernel_recorder != nullptr ||
      ops::t_out_target != nullptr) [[unlikely]]
    return false;
  const PluginKernel* k = find_plugin_kernel(op, device.type(), t);
  if (k == nullptr) [[unlikely]] return false;

  // The output: a kept tensor from the thread's tensor cache when it has one of
  // the size class (the common case, inline), else a new one.
  const ScalarType out_dtype = lane.bool_result ? kBool : t;
  const int64_t numel = a->numel();
  // No overflow: out_dtype is no wider than t, and a's bytes fit int64 (checked_math.h).
  const size_t nbytes = static_cast<size_t>(numel) * element_size(out_dtype);
  TensorImpl* o = nullptr;
  if (small_blocks::eligible(dev, device, nbytes) && !device_registry::retired(device.type()))
    o = TensorCache::reuse(device.type(), nbytes, a->sizes(), numel, out_dtype);
  if (o == nullptr) [[unlikely]] o = new_output(op, device, a, n == 2 ? args.tensor(1) : nullptr, numel, out_dtype);
  args.output() = Tensor(boost::intrusive_ptr<TensorImpl>(o, /*add_ref=*/false));

  const DLDevice dl_device = dl_device_of(dev, device.index());
  DLTensor scratch[2];
  for (int i = 0; i < n; ++i) values[i].as.tensor = arg_view(*args.tensor(i), dl_device, scratch[i]);
  DLTensor dl_out;
  make_dl_of_new(*o, dl_device, dl_out);
  TsrError* err = call_plugin_kernel(op, *k, device, t, values, args.num_args(), &dl_out, 1, nullptr,
                                     &lane_allocate_output);
  if (err != nullptr) [[unlikely]] args.fail(op, dev, *k, t, err);
  return true;
}

// Whether Dispatcher::call would run the op's structured kernel for arguments
// with key bits `bits` (the trailing argument is a number or None): the op's own
// kernel for the call's key set (a key without one goes to a fallback).
[[gnu::always_inline]] inline bool dispatches_to_structured(const Operator& op, uint64_t bits) {
  const int bit = call_key_set(bits).highest();
  return bit >= 0 && op.kernel_for(bit) == structured_kernel_function();
}

}  // namespace

bool run_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame) {
  return lane_shaped(lane, frame) && run_lane(op, lane, lane.num_tensors, lane.trailing, FrameArgs{frame});
}

bool dispatch_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame) {
  if (!lane_shaped(lane, frame)) return false;
  uint64_t bits = frame.args[0].tensor->unsafeGetTensorImpl()->key_set().raw();
  if (lane.num_tensors == 2) bits |= frame.args[1].tensor->unsafeGetTensorImpl()->key_set().raw();
  return dispatches_to_structured(op, bits) && run_lane(op, lane, lane.num_tensors, lane.trailing, FrameArgs{frame});
}

namespace {
// The typed call boxed for the dispatcher, when the lane does not take it.
[[gnu::noinline]] Tensor call_boxed(const Operator& op, const Tensor& a, const Tensor* b, const Scalar* alpha) {
  Tensor out;
  IValue args[3];
  Frame frame{args, box_typed(a, b, alpha, args), &out, 1};
  Dispatcher::instance().call(op, frame);
  return out;
}

// call_pointwise for a call of N tensors and an alpha when kAlpha: the lane's
// shape is then known at compile time.
template <int N, bool kAlpha>
[[gnu::always_inline]] inline Tensor call_pointwise_as(const Operator& op, const Tensor& a, const Tensor* b,
                                                       const Scalar* alpha) {
  constexpr auto kTrailing = kAlpha ? PointwiseLane::Trailing::Alpha : PointwiseLane::Trailing::Nothing;
  Tensor out;
  const PointwiseLane* lane = detail::OperatorSlots::pointwise_lane(op);
  const TensorImpl* ai = a.unsafeGetTensorImpl();
  const TensorImpl* bi = N == 2 ? b->unsafeGetTensorImpl() : ai;
  // Every way off the lane is marked unlikely: unmarked, the compiler's guess
  // at a dozen branches makes the lane cold and leaves its helpers as calls.
  if (lane == nullptr || lane->num_tensors != N || lane->trailing != kTrailing || ai == nullptr || bi == nullptr ||
      !dispatches_to_structured(op, ai->key_set().raw() | bi->key_set().raw()) ||
      !run_lane(op, *lane, N, kTrailing, TypedArgs{{&a, b}, alpha, out})) [[unlikely]]
    out = call_boxed(op, a, b, alpha);
  return out;
}
}  // namespace

Tensor call_pointwise(const Operator& op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_pointwise_as<2, true>(op, a, &b, &alpha);
}
Tensor call_pointwise(const Operator& op, const Tensor& a, const Tensor& b) {
  return call_pointwise_as<2, false>(op, a, &b, nullptr);
}
Tensor call_pointwise(const Operator& op, const Tensor& a) { return call_pointwise_as<1, false>(op, a, nullptr, nullptr); }

}  // namespace tessera
