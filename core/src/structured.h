// Internal: running a structured op — the generic backend kernel.
//
// The op's meta rule (MetaFn) reads the boxed arguments, checks them, and fills
// in a StructuredCall: the device, the dispatch dtype, the kernel arguments (the
// tensors possibly cast and broadcast) and the outputs. run() then allocates
// the outputs on the device, builds the DLTensor views, finds the plugin kernel
// for (op, device type, dtype) and calls it. Everything lives on the stack; the
// only heap allocations are outputs and the tensors a rule had to make.
// The helpers meta rules use (meta_helpers.h) and output allocation
// (allocation.h) come with this header.
#pragma once

#include <tessera/abi.h>
#include <tessera/dispatcher.h>

#include "abi_bridge.h"
#include "allocation.h"
#include "current_stream.h"
#include "device_registry.h"
#include "dispatch_trace.h"
#include "kernel_workspace.h"
#include "lazy.h"
#include "meta_helpers.h"
#include "plugin_kernels.h"
#include "structured_kernel.h"

#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace tessera {

inline constexpr int kMaxKernelArgs = 8;

inline constexpr int kMaxKernelOutputs = 4;
/// int[] and str arguments a call can copy (set_int_list, set_string).
inline constexpr int kMaxKernelLists = 2;
inline constexpr int kMaxKernelStrings = 2;

struct PluginKernel;

class StructuredCall {
 public:
  StructuredCall(const Operator& op, DispatchKeySet ks, Frame& frame) : op_(op), ks_(ks), frame_(frame) {}
  ~StructuredCall() {
    for (int i = 0; held_mask_ != 0; ++i, held_mask_ >>= 1)
      if (held_mask_ & 1u) held_[i].t.~Tensor();
  }
  StructuredCall(const StructuredCall&) = delete;
  StructuredCall& operator=(const StructuredCall&) = delete;

  const Operator& op() const { return op_; }
  DispatchKeySet keys() const { return ks_; }
  const Frame& frame() const { return frame_; }
  const IValue& arg(int i) const { return frame_.args[i]; }
  /// The tensor argument i (ValueError naming the op if it is undefined).
  const Tensor& tensor_arg(int i) const {
    const IValue& v = frame_.args[i];
    if (v.tag != IValue::Tag::Tensor || !v.tensor->defined()) [[unlikely]] bad_tensor_arg(i);
    return *v.tensor;
  }

  // ---- filled in by the meta rule ----
  Device device{DeviceTypeId{0}, 0};  // not Device(): that looks up "cpu"
  ScalarType dispatch_dtype = ScalarType::Undefined;

  /// Kernel argument i is tensor t (kept alive for the call).
  void set_tensor(int i, Tensor t);
  /// Kernel argument i is t, borrowed: t must outlive run() (a frame argument).
  /// Saves the reference-count traffic of set_tensor on the hot path.
  void set_tensor_borrowed(int i, const Tensor& t) {
    impls_[i] = t.unsafeGetTensorImpl();
    set_value_tag(values_[i], TSR_VALUE_TENSOR);  // and reserved 0: values_ is left uninitialized
    values_[i].as.tensor = nullptr;  // filled by run()
    mark_set(i);
  }
  /// Kernel argument i is the tensor list `list`, borrowed: its tensors must
  /// outlive run() (a frame argument's list). At most one list per call; run()
  /// gives the kernel each tensor's own view (as set_tensor_borrowed).
  void set_tensor_list_borrowed(int i, ArrayRef<Tensor> list) {
    list_ = list;
    list_arg_ = i;
    TsrValue v{};
    v.tag = TSR_VALUE_TENSOR_LIST;  // data filled by run()
    set_value(i, v);
  }
  void set_value(int i, const TsrValue& v) {
    values_[i] = v;
    mark_set(i);
  }
  /// A number, as the kernel's dtype wants it: BOOL, FLOAT or INT.
  void set_scalar(int i, const Scalar& s, ScalarType as_dtype) {
    set_scalar_value(values_[i], s, as_dtype);
    mark_set(i);
  }
  void set_none(int i) { set_value(i, TsrValue{}); }
  void set_int(int i, int64_t v) {
    TsrValue x{};
    x.tag = TSR_VALUE_INT;
    x.as.i = v;
    set_value(i, x);
  }
  void set_float(int i, double v) {
    TsrValue x{};
    x.tag = TSR_VALUE_FLOAT;
    x.as.f = v;
    set_value(i, x);
  }
  void set_bool(int i, bool v) {
    TsrValue x{};
    x.tag = TSR_VALUE_BOOL;
    x.as.b = v ? 1 : 0;
    set_value(i, x);
  }
  void set_int_list(int i, IntArrayRef list);  // copied; at most kMaxKernelLists per call
  void set_string(int i, std::string_view text);  // copied (NUL-terminated); at most kMaxKernelStrings per call
  /// A new output of this shape and dtype, allocated by run().
  void add_output(IntArrayRef sizes, ScalarType dtype);
  /// As add_output, without copying `sizes`: they must outlive run() (e.g. the
  /// sizes of a frame argument).
  void add_output_borrowed_shape(IntArrayRef sizes, ScalarType dtype);
  /// An output that is an existing tensor (in-place ops).
  void add_aliased_output(const Tensor& t);
  /// An output whose shape the kernel decides (allocate_output).
  void add_data_dependent_output(ScalarType dtype);
  /// After the kernel, output 0 is copied into `target`, which becomes the result
  /// (in-place ops computing in a dtype other than self's).
  void copy_result_into(const Tensor& target) { copy_into_ = target; }
  /// run() zero-fills the outputs instead of calling the kernel (empty reductions).
  void set_zero_fill_outputs() { zero_fill_ = true; }

  /// The meta rule's outputs' sizes (e.g. for in-place checks).
  IntArrayRef output_sizes(int i) const { return out_shape_[i]; }

  /// Allocates outputs, calls the kernel, stores results into the frame.
  void run();

 private:
  friend TsrError* structured_allocate_output(TsrCallHandle, size_t, TsrDType, int32_t, const int64_t*, DLTensor**);
  [[noreturn]] void bad_tensor_arg(int i) const;
  // Error and trace paths, kept out of run()'s hot path.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_data_dependent_on_no_storage(const DeviceTypeEntry& dev) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_no_kernel(const DeviceTypeEntry& dev) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_unset_argument() const;
  // An out= form of this op is running (ops/out_target.h): output 0 becomes
  // its tensor when that fits.
  [[gnu::cold, gnu::noinline]] void adopt_out_target();
  void fill_placement_hint(placement::Hint& hint) const;
  [[gnu::cold, gnu::noinline]] void trace_kernel(const DeviceTypeEntry& dev, const struct PluginKernel& k) const;
  void mark_set(int i) {
    set_mask_ |= 1u << i;
    if (i >= num_args_) num_args_ = i + 1;
  }
  DLDevice dl_device_{};

  const Operator& op_;
  DispatchKeySet ks_;
  Frame& frame_;
  int num_args_ = 0;
  int num_outputs_ = 0;
  bool zero_fill_ = false;
  // Left uninitialized on purpose: zeroing these arrays (a `rep stos` per call)
  // cost more than the rest of a tiny op's bookkeeping. Entry i is valid once a
  // set_* call wrote it; held_ entries are constructed on demand (held_mask_).
  union HeldTensor {
    HeldTensor() {}
    ~HeldTensor() {}
    Tensor t;
  };
  HeldTensor held_[kMaxKernelArgs];
  uint32_t held_mask_ = 0;
  uint32_t set_mask_ = 0;  // which kernel arguments a set_* call wrote
  const TensorImpl* impls_[kMaxKernelArgs];
  TsrValue values_[kMaxKernelArgs];
  Lazy<DimVector> lists_[kMaxKernelLists];  // most calls never build one
  ArrayRef<Tensor> list_;  // set_tensor_list_borrowed's
  int list_arg_ = -1;
  struct ListViews;  // the list's DLTensor views, built by run() (structured.cpp)
  [[gnu::cold, gnu::noinline]] void fill_list_views(ListViews& views);
  int num_lists_ = 0;
  Lazy<std::string> strings_[kMaxKernelStrings];
  int num_strings_ = 0;
  Tensor outputs_[kMaxKernelOutputs];
  IntArrayRef out_shape_[kMaxKernelOutputs];  // into out_store_ or a live tensor's sizes
  Lazy<DimVector> out_store_[kMaxKernelOutputs];
  ScalarType out_dtypes_[kMaxKernelOutputs];
  uint8_t out_kind_[kMaxKernelOutputs];  // 0 new, 1 aliased, 2 data-dependent
  DLTensor* dl_outputs_ = nullptr;
  Tensor copy_into_;
};


// ---- pieces of a plugin kernel call, shared with the pointwise lane ----

/// The DLTensor view of t on the call's device: a copy of its own view (the
/// device set to the call's), field by field: a wide copy could stall on store
/// forwarding when the tensor was made a moment ago (the previous op's output).
inline void make_dl(const TensorImpl& t, DLDevice device, DLTensor& dl) {
  const DLTensor& v = t.dl_tensor();
  dl.data = v.data;
  dl.device = device;
  dl.ndim = v.ndim;
  dl.dtype = v.dtype;
  dl.shape = v.shape;
  dl.strides = v.strides;
  dl.byte_offset = 0;
}
/// What a kernel gets for argument tensor t on the call's device: t's own view,
/// which kernels only read (TsrValue holds a const DLTensor*) and only during the
/// call, and which carries the call's device by construction; should the device
/// differ, a copy in `scratch` with the call's device.
inline const DLTensor* arg_view(const TensorImpl& t, DLDevice device, DLTensor& scratch) {
  const DLTensor& v = t.dl_tensor();
  if (v.device.device_type == device.device_type && v.device.device_id == device.device_id) [[likely]] return &v;
  make_dl(t, device, scratch);
  return &scratch;
}
/// The same view built from t's own fields, for an output made a moment ago:
/// copying its just-written view in wide loads would stall on store forwarding
/// (the data pointer is read alone, as it was written).
inline void make_dl_of_new(const TensorImpl& t, DLDevice device, DLTensor& dl) {
  dl.data = t.dl_tensor().data;
  dl.device = device;
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl_dtype(t.dtype());
  dl.shape = const_cast<int64_t*>(t.sizes_data());
  dl.strides = const_cast<int64_t*>(t.strides_data());
  dl.byte_offset = 0;
}
/// Calls plugin kernel k for `op` on `device` with dispatch dtype `dtype`
/// (arguments and outputs borrowed for the call), ordered on the thread's
/// current stream of the device; returns the kernel's error, owned by the
/// caller, or null. Workspace the kernel asked for is freed when it returns.
[[gnu::always_inline]] inline TsrError* call_plugin_kernel(const Operator& op, const PluginKernel& k, Device device, ScalarType dtype,
                                    const TsrValue* args, size_t num_args, DLTensor* outputs, size_t num_outputs,
                                    TsrCallHandle handle, decltype(TsrKernelCall::allocate_output) allocate_output) {
  HostKernelCall host;
  TsrKernelCall& call = host.abi;
  call.struct_size = sizeof(TsrKernelCall);
  call.op_name = op.kernel_source().name().c_str();
  call.kernel_context = k.context;
  call.device_index = device.index();
  call.dtype = to_abi_dtype(dtype);
  call.stream = current_stream_handle(device);
  call.args = args;
  call.num_args = num_args;
  call.outputs = outputs;
  call.num_outputs = num_outputs;
  call.handle = handle;
  call.allocate_output = allocate_output;
  call.workspace = &kernel_workspace;
  host.device_type = device.type();
  const HostKernelCall* outer = g_running_call;
  g_running_call = &host;
  TsrError* err = call_plugin([&] { return k.fn(&call); });
  g_running_call = outer;
  if (g_workspace_blocks != 0) [[unlikely]] release_workspaces(&call);
  return err;
}

/// Throws the error a plugin kernel returned (taking ownership of err), naming the
/// op, plugin, device type, dtype and the call.
[[noreturn, gnu::cold, gnu::noinline]] void fail_plugin_kernel(const Operator& op, const Frame& frame,
                                                               const DeviceTypeEntry& dev, const PluginKernel& k,
                                                               ScalarType dtype, TsrError* err);

}  // namespace tessera
