#include "pointwise_lane.h"

#include <tessera/error.h>

#include <string>

#include "abi_bridge.h"
#include "local_keys.h"
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

// A new output when the tensor cache has none to give: one reference, owned by the caller.
[[gnu::noinline]] TensorImpl* new_output(const DeviceTypeEntry& dev, Device device, IntArrayRef sizes, int64_t numel,
                                         ScalarType dtype) {
  boost::intrusive_ptr<TensorImpl> t = allocate_contiguous(dev, device, sizes, numel, dtype).impl();
  return t.detach();
}

// The frame holds the lane's arguments: its tensors (defined), then the trailing one.
bool lane_shaped(const PointwiseLane& lane, const Frame& frame) {
  const int n = lane.num_tensors;
  if (frame.num_args != n + (lane.trailing != PointwiseLane::Trailing::Nothing) || frame.num_outputs < 1) return false;
  for (int i = 0; i < n; ++i)
    if (frame.args[i].tag != IValue::Tag::Tensor || !frame.args[i].tensor->defined()) return false;
  return true;
}

// The lane proper, for a lane-shaped frame.
[[gnu::always_inline]] inline bool run_lane(const Operator& op, const PointwiseLane& lane, Frame& frame) {
  const int n = lane.num_tensors;
  const IValue* args = frame.args;
  const TensorImpl* a = args[0].tensor->unsafeGetTensorImpl();
  const ScalarType t = a->dtype();
  if (!(lane.dtypes & (1u << static_cast<int>(t))) || a->is_wrapped_number() || a->numel() == 0) return false;
  const Device device = a->device();
  if (n == 2) {
    const TensorImpl* b = args[1].tensor->unsafeGetTensorImpl();
    if (b->dtype() != t || b->is_wrapped_number() || b->device() != device || !b->sizes().equals(a->sizes()))
      return false;
  }

  TsrValue values[3];
  for (int i = 0; i < n; ++i) values[i].tag = TSR_VALUE_TENSOR;
  if (lane.trailing == PointwiseLane::Trailing::Alpha) {
    // As the meta rule's set_scalar: BOOL, FLOAT or INT as the dtype wants;
    // a float alpha for an integer dtype (an error) and bool alphas take the rule.
    const IValue& alpha = args[n];
    TsrValue& v = values[n];
    if (alpha.tag == IValue::Tag::Int) {
      if (t == kBool) {
        v.tag = TSR_VALUE_BOOL;
        v.as.b = alpha.i != 0;
      } else if (is_floating_type(t)) {
        v.tag = TSR_VALUE_FLOAT;
        v.as.f = static_cast<double>(alpha.i);
      } else {
        v.tag = TSR_VALUE_INT;
        v.as.i = alpha.i;
      }
    } else if (alpha.tag == IValue::Tag::Double && is_floating_type(t)) {
      v.tag = TSR_VALUE_FLOAT;
      v.as.f = alpha.d;
    } else {
      return false;
    }
  } else if (lane.trailing == PointwiseLane::Trailing::NoneOnly) {
    if (!args[n].is_none()) return false;
    values[n] = TsrValue{};
  }

  const DeviceTypeEntry& dev = device_entry(device);
  if (dev.no_storage() || g_dispatch_trace) return false;
  const PluginKernel* k = find_plugin_kernel(op, device.type(), t);
  if (k == nullptr) return false;

  // The output: a kept tensor from the thread's tensor cache when it has one of
  // the size class (the common case, inline), else a new one.
  const ScalarType out_dtype = lane.bool_result ? kBool : t;
  const int64_t numel = a->numel();
  const size_t nbytes = static_cast<size_t>(numel) * element_size(out_dtype);
  TensorImpl* o = nullptr;
  if (small_blocks::eligible(dev, device, nbytes) && !device_registry::retired(device.type()))
    o = TensorCache::reuse(device.type(), nbytes, a->sizes(), numel, out_dtype);
  if (o == nullptr) [[unlikely]] o = new_output(dev, device, a->sizes(), numel, out_dtype);
  frame.outputs[0] = Tensor(boost::intrusive_ptr<TensorImpl>(o, /*add_ref=*/false));

  const DLDevice dl_device = dl_device_of(dev, device.index());
  DLTensor scratch[2];
  for (int i = 0; i < n; ++i) values[i].as.tensor = arg_view(*args[i].tensor->unsafeGetTensorImpl(), dl_device, scratch[i]);
  DLTensor dl_out;
  make_dl_of_new(*o, dl_device, dl_out);
  TsrError* err = call_plugin_kernel(op, *k, device.index(), t, values, static_cast<size_t>(frame.num_args), &dl_out,
                                     1, nullptr, &lane_allocate_output);
  if (err != nullptr) [[unlikely]] fail_plugin_kernel(op, frame, dev, *k, t, err);
  return true;
}

}  // namespace

bool run_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame) {
  return lane_shaped(lane, frame) && run_lane(op, lane, frame);
}

bool dispatch_pointwise_lane(const Operator& op, const PointwiseLane& lane, Frame& frame) {
  if (!lane_shaped(lane, frame)) return false;
  // The kernel Dispatcher::call would pick: the keys are the tensors' (the
  // trailing argument is a number or None) with the thread's included and
  // excluded keys; only the op's structured kernel leads to the lane.
  uint64_t bits = frame.args[0].tensor->unsafeGetTensorImpl()->key_set().raw();
  if (lane.num_tensors == 2) bits |= frame.args[1].tensor->unsafeGetTensorImpl()->key_set().raw();
  const LocalDispatchKeySet& tls = local_keys();
  const int bit = ((DispatchKeySet(bits) | tls.included) - tls.excluded).highest();
  if (bit < 0 || op.kernel_for(bit) != structured_kernel_function()) return false;
  return run_lane(op, lane, frame);
}

}  // namespace tessera
