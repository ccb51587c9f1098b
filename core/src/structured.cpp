// The structured call (structured.h): a meta rule fills a StructuredCall, run()
// allocates the outputs, finds the plugin kernel and calls it.
#include "structured.h"

#include <tessera/error.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <utility>
#include <vector>

#include "abi_bridge.h"
#include "checked_math.h"
#include "operator_slots.h"
#include "output_placement.h"
#include "testing_hooks.h"
#include "plugin_host.h"
#include "plugin_kernels.h"
#include "pointwise_lane.h"
#include "ops/out_target.h"

namespace tessera {

// ---------------------------------------------------------------------------
// StructuredCall

void StructuredCall::bad_tensor_arg(int i) const {
  const auto& args = op_.schema().arguments;
  throw ValueError(detail::str(op_.name(), ": argument '", i < int(args.size()) ? args[i].name : "?",
                               "' must be a defined tensor"));
}

void StructuredCall::set_tensor(int i, Tensor t) {
  if (held_mask_ & (1u << i)) {
    held_[i].t = std::move(t);
  } else {
    new (&held_[i].t) Tensor(std::move(t));
    held_mask_ |= 1u << i;
  }
  impls_[i] = held_[i].t.unsafeGetTensorImpl();
  set_value_tag(values_[i], TSR_VALUE_TENSOR);  // and reserved 0: values_ is left uninitialized
  values_[i].as.tensor = nullptr;  // filled by run()
  set_mask_ |= 1u << i;
  if (i >= num_args_) num_args_ = i + 1;
}


void StructuredCall::set_int_list(int i, IntArrayRef list) {
  DimVector& store = lists_[num_lists_++].emplace(list.begin(), list.end());
  TsrValue v{};
  v.tag = TSR_VALUE_INT_LIST;
  v.as.int_list.data = store.data();
  v.as.int_list.size = store.size();
  set_value(i, v);
}

void StructuredCall::set_string(int i, std::string_view text) {
  const std::string& store = strings_[num_strings_++].emplace(text);
  TsrValue v{};
  v.tag = TSR_VALUE_STRING;
  v.as.string = store.c_str();
  set_value(i, v);
}

void StructuredCall::add_output(IntArrayRef sizes, ScalarType dtype) {
  (void)checked::check_shape(op_.name(), sizes, dtype);  // the op's name on an overflowing output shape
  const DimVector& store = out_store_[num_outputs_].emplace(sizes.begin(), sizes.end());
  out_shape_[num_outputs_] = IntArrayRef(store.data(), store.size());
  out_dtypes_[num_outputs_] = dtype;
  out_kind_[num_outputs_] = 0;
  ++num_outputs_;
}

void StructuredCall::add_output_borrowed_shape(IntArrayRef sizes, ScalarType dtype) {
  (void)checked::check_shape(op_.name(), sizes, dtype);
  out_shape_[num_outputs_] = sizes;
  out_dtypes_[num_outputs_] = dtype;
  out_kind_[num_outputs_] = 0;
  ++num_outputs_;
}

void StructuredCall::add_aliased_output(const Tensor& t) {
  outputs_[num_outputs_] = t;
  out_shape_[num_outputs_] = t.sizes();  // t is held in outputs_
  out_dtypes_[num_outputs_] = t.scalar_type();
  out_kind_[num_outputs_] = 1;
  ++num_outputs_;
}

void StructuredCall::add_data_dependent_output(ScalarType dtype) {
  out_dtypes_[num_outputs_] = dtype;
  out_kind_[num_outputs_] = 2;
  ++num_outputs_;
}

namespace {
// The call running a kernel with a data-dependent output on this thread: the
// only handle allocate_output accepts. Any other is refused by comparison,
// never dereferenced (a plugin may pass NULL, a stale or a foreign pointer).
constinit thread_local const StructuredCall* t_allocating_call __attribute__((tls_model("initial-exec"))) = nullptr;
}  // namespace

TsrError* structured_allocate_output(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim,
                                     const int64_t* shape, DLTensor** out) {
  if (handle == nullptr || reinterpret_cast<const StructuredCall*>(handle) != t_allocating_call) [[unlikely]] {
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           handle == nullptr
                               ? "allocate_output: output " + std::to_string(index) +
                                     " is not a data-dependent output awaiting allocation (the call has none: its handle is NULL)"
                               : std::string("allocate_output: the handle is not that of the kernel call running on "
                                             "this thread (pass call->handle, during the call, on its thread)"));
  }
  auto* c = reinterpret_cast<StructuredCall*>(handle);
  try {
    const std::string who = c->op_.name() + ": allocate_output";
    if (index >= size_t(c->num_outputs_) || c->out_kind_[index] != 2 || c->outputs_[index].defined())
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": output " + std::to_string(index) +
                                                             " is not a data-dependent output awaiting allocation");
    if (dtype != to_abi_dtype(c->out_dtypes_[index]))
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": output " + std::to_string(index) + " must have dtype " +
                                                             std::string(dtype_name(c->out_dtypes_[index])));
    if (ndim < 0 || (ndim > 0 && shape == nullptr) || out == nullptr)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": bad ndim or NULL pointer");
    for (int32_t d = 0; d < ndim; ++d)
      if (shape[d] < 0) return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": negative size in shape");
    const IntArrayRef sizes(shape, size_t(ndim));
    c->outputs_[index] = g_output_guard_bytes == 0 ? empty_on(sizes, c->out_dtypes_[index], c->device)
                                                   : guarded_empty(sizes, c->out_dtypes_[index], c->device, true);
    make_dl_of_new(*c->outputs_[index].unsafeGetTensorImpl(), c->dl_device_, c->dl_outputs_[index]);
    *out = &c->dl_outputs_[index];
    return nullptr;
  } catch (const Error& e) {
    return make_host_error(e.code() == ErrorCode::OutOfMemory ? TSR_ERROR_OUT_OF_MEMORY
                           : e.code() == ErrorCode::Unavailable ? TSR_ERROR_UNAVAILABLE
                                                                : TSR_ERROR_INVALID_ARGUMENT,
                           e.what());
  } catch (const std::bad_alloc&) {
    return make_host_error(TSR_ERROR_OUT_OF_MEMORY, "out of host memory in allocate_output");
  } catch (const std::exception& e) {
    return make_host_error(TSR_ERROR_INTERNAL, e.what());
  }
}

void StructuredCall::fail_data_dependent_on_no_storage(const DeviceTypeEntry& dev) const {
  throw NotImplementedError(detail::str(op_.name(), ": the output shape depends on the data, which device type '",
                                        dev.name, "' does not hold; call: ", describe_call(op_, frame_)));
}

void StructuredCall::fail_no_kernel(const DeviceTypeEntry& dev) const {
  std::string have;
  const uint64_t mask = registered_dtype_mask(op_.kernel_source(), device.type());
  for (int d = 0; d < kNumScalarTypes; ++d)
    if (mask & (uint64_t{1} << d)) have += (have.empty() ? "" : ", ") + std::string(dtype_name(ScalarType(d)));
  // Kernels for one device type may come from several plugins (an op a plugin
  // defined, with kernels for cpu): say which dtypes there are, not whose.
  throw NotImplementedError(detail::str(
      op_.name(), ": no kernel for device type '", dev.name, "' (plugin '", dev.plugin_name, "') and dtype ",
      dtype_name(dispatch_dtype), " (", have.empty() ? "no plugin registered a kernel for this op there" : "kernels exist for: " + have,
      "); call: ", describe_call(op_, frame_)));
}

void StructuredCall::trace_kernel(const DeviceTypeEntry& dev, const PluginKernel& k) const {
  std::fprintf(stderr, "[tessera dispatch]   kernel %s [%s, %s] from plugin '%s'\n", op_.kernel_source().name().c_str(),
               dev.name.c_str(), std::string(dtype_name(dispatch_dtype)).c_str(), k.plugin->name.c_str());
}

void StructuredCall::fail_unset_argument() const {
  throw InternalError(detail::str(op_.name(), ": the meta rule left a kernel argument unset"));
}

void fail_plugin_kernel(const Operator& op, const Frame& frame, const DeviceTypeEntry& dev, const PluginKernel& k,
                        ScalarType dtype, TsrError* err) {
  throw_abi_error(err, detail::str(op.name(), ": kernel of plugin '", k.plugin->name, "' for ", dev.name, "/",
                                   dtype_name(dtype), " failed; call: ", describe_call(op, frame)));
}

void StructuredCall::adopt_out_target() {
  const ops::OutTarget& target = *ops::t_out_target;
  if (op_.name() != target.op || num_outputs_ != 1 || out_kind_[0] != 0 || copy_into_.defined() || zero_fill_) return;
  const Tensor& out = *target.out;
  if (out.scalar_type() != out_dtypes_[0] || out.device() != device || !out.sizes().equals(out_shape_[0]) ||
      !out.is_contiguous() || out.is_read_only())
    return;
  // An input sharing memory with out: only a pointwise op may write the very
  // elements it reads (full overlap); anything else is computed, then copied.
  const bool pointwise = (op_.flags() & kPointwise) != 0;
  const auto fits = [&](const Tensor& in) {
    const MemoryOverlap o = memory_overlap(in, out);
    return o == MemoryOverlap::kNone || (pointwise && o == MemoryOverlap::kFull);
  };
  for (int i = 0; i < frame_.num_args; ++i) {
    const IValue& v = frame_.args[i];
    if (v.tag == IValue::Tag::Tensor && v.tensor->defined() && !fits(*v.tensor)) return;
    if (v.tag == IValue::Tag::TensorList)
      for (size_t j = 0; j < v.tensors.size; ++j)
        if (v.tensors.data[j].defined() && !fits(v.tensors.data[j])) return;
  }
  for (int i = 0; i < num_args_; ++i)  // converted or expanded copies the rule made
    if ((held_mask_ & (1u << i)) && !fits(held_[i].t)) return;
  outputs_[0] = out;
  out_shape_[0] = out.sizes();
  out_kind_[0] = 1;
  ops::t_out_target = nullptr;  // taken: no other call uses it
}

// A tensor list's views for the kernel: the tensors' own, copies only for
// another device's. They live in `views` (run()'s frame) for the call.
struct StructuredCall::ListViews {
  std::vector<const DLTensor*> ptrs;
  std::vector<DLTensor> scratch;
};

void StructuredCall::fill_list_views(ListViews& views) {
  views.ptrs.resize(list_.size());
  views.scratch.resize(list_.size());
  for (size_t j = 0; j < list_.size(); ++j)
    views.ptrs[j] = arg_view(*list_[j].unsafeGetTensorImpl(), dl_device_, views.scratch[j]);
  values_[list_arg_].as.tensor_list.data = views.ptrs.data();
  values_[list_arg_].as.tensor_list.size = views.ptrs.size();
}

// The first three tensor arguments of 4 KiB and more: the inputs a new output
// is placed away from (output_placement.h). A smaller one (a number's tensor, a
// bias) stays in L1 and does not stream beside the output.
void StructuredCall::fill_placement_hint(placement::Hint& hint) const {
  for (int i = 0; i < num_args_ && hint.count < 3; ++i) {
    if (!(set_mask_ >> i & 1u) || values_[i].tag != TSR_VALUE_TENSOR) continue;
    const TensorImpl& t = *impls_[i];
    if (t.numel() * int64_t(element_size(t.dtype())) >= 4096) hint.add(t.data());
  }
}

void StructuredCall::run() {
  if (ops::t_out_target != nullptr) [[unlikely]] adopt_out_target();
  const DeviceTypeEntry& dev = device_entry(device);
  bool all_empty = num_outputs_ > 0;
  bool data_dependent = false;
  placement::Hint hint;  // filled when the first new output needs it
  for (int i = 0; i < num_outputs_; ++i) {
    if (out_kind_[i] == 0) {
      if (hint.count == 0) fill_placement_hint(hint);
      try {
        outputs_[i] = g_output_guard_bytes == 0 ? empty_on(out_shape_[i], out_dtypes_[i], device, &hint)
                                                : guarded_empty(out_shape_[i], out_dtypes_[i], device, false);
      } catch (const OutOfMemoryError& e) {
        rethrow_out_of_memory(op_, e);
      }
    }
    if (out_kind_[i] == 2) {
      if (dev.no_storage()) [[unlikely]] fail_data_dependent_on_no_storage(dev);
      all_empty = false;
      data_dependent = true;
    } else if (outputs_[i].numel() != 0) {
      all_empty = false;
    }
  }

  if (!dev.no_storage() && !all_empty) {
    if (zero_fill_) {
      for (int i = 0; i < num_outputs_; ++i) outputs_[i].zero_();
    } else {
      const PluginKernel* k = find_plugin_kernel(op_, device.type(), dispatch_dtype);
      if (k == nullptr) [[unlikely]] fail_no_kernel(dev);
      if (Dispatcher::trace_enabled()) [[unlikely]] trace_kernel(dev, *k);
      if (g_kernel_recorder != nullptr) [[unlikely]]
        g_kernel_recorder(g_kernel_recorder_context, op_.kernel_source().name().c_str(), dev.name.c_str(),
                          dispatch_dtype);
      dl_device_ = dl_device_of(dev, device.index());
      DLTensor dl_args[kMaxKernelArgs];
      DLTensor dl_outs[kMaxKernelOutputs];
      if (set_mask_ != (1u << num_args_) - 1) [[unlikely]] fail_unset_argument();
      for (int i = 0; i < num_args_; ++i) {
        if (values_[i].tag == TSR_VALUE_TENSOR) {
          values_[i].as.tensor = arg_view(*impls_[i], dl_device_, dl_args[i]);
        }
      }
      Lazy<ListViews> list_views;  // built only for an op with a tensor list
      if (list_arg_ >= 0) [[unlikely]] fill_list_views(list_views.emplace());
      for (int i = 0; i < num_outputs_; ++i) {
        if (out_kind_[i] == 2) {
          dl_outs[i] = DLTensor{};
        } else {
          make_dl_of_new(*outputs_[i].unsafeGetTensorImpl(), dl_device_, dl_outs[i]);
        }
      }
      dl_outputs_ = dl_outs;
      // A handle only for a call that has something to allocate (abi.h allows
      // NULL otherwise), accepted by allocate_output only during the call.
      TsrCallHandle handle = nullptr;
      const StructuredCall* outer = nullptr;
      if (data_dependent) [[unlikely]] {
        outer = std::exchange(t_allocating_call, this);
        handle = reinterpret_cast<TsrCallHandle>(this);
      }
      TsrError* err = call_plugin_kernel(op_, *k, device, dispatch_dtype, values_, static_cast<size_t>(num_args_),
                                         dl_outs, static_cast<size_t>(num_outputs_), handle, &structured_allocate_output);
      if (data_dependent) [[unlikely]] t_allocating_call = outer;
      dl_outputs_ = nullptr;
      if (err != nullptr) [[unlikely]] fail_plugin_kernel(op_, frame_, dev, *k, dispatch_dtype, err);
      for (int i = 0; i < num_outputs_; ++i) {
        if (out_kind_[i] == 2 && !outputs_[i].defined()) [[unlikely]] {
          throw InternalError(detail::str(op_.name(), ": kernel of plugin '", k->plugin->name, "' did not allocate output ", i));
        }
      }
    }
  }

  if (copy_into_.defined()) {
    copy_into_.copy_(outputs_[0]);
    outputs_[0] = std::move(copy_into_);
    out_kind_[0] = 0;  // copy_ already bumped the version
  }
  for (int i = 0; i < num_outputs_ && i < frame_.num_outputs; ++i) {
    if (out_kind_[i] == 1) outputs_[i].storage()->bump_version();
    frame_.outputs[i] = std::move(outputs_[i]);
  }
}

void run_structured(const Operator& op, DispatchKeySet ks, Frame& frame, void*) {
  if (const PointwiseLane* lane = detail::OperatorSlots::pointwise_lane(op)) [[likely]]
    if (run_pointwise_lane(op, *lane, frame)) return;
  StructuredCall call(op, ks, frame);
  op.meta()(call);
  call.run();
}

const KernelFunction g_structured_kernel{&run_structured, nullptr, "structured"};

}  // namespace tessera
