#include "structured.h"

#include <tessera/error.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <new>
#include <utility>

#include "abi_bridge.h"
#include "checked_math.h"
#include "plugin_host.h"
#include "plugin_kernels.h"
#include "pointwise_lane.h"
#include "small_block_cache.h"
#include "tensor_cache.h"

namespace tessera {

// ---------------------------------------------------------------------------
// Allocation

namespace {
void device_deleter(StorageImpl& s) noexcept {
  const auto* e = static_cast<const DeviceTypeEntry*>(s.deleter_context());
  size_t nbytes = s.nbytes();
  if (small_blocks::eligible(*e, s.device(), nbytes)) {
    if (!device_registry::retired(s.device().type()) &&
        small_blocks::give(s.device().type(), s.data(), nbytes, s.owner_ref()))
      return;
    nbytes = small_blocks::rounded(nbytes);
  }
  try {
    e->desc.deallocate(e->desc.context, s.device().index(), s.data(), nbytes, nullptr);
  } catch (...) {  // ABI rule 4 violated; a destructor cannot report it otherwise
    std::fprintf(stderr, "[tessera] plugin %s: deallocate threw a C++ exception across the C ABI\n",
                 e->plugin_name.c_str());
  }
}
}  // namespace

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void fail_retired(const DeviceTypeEntry& e, Device device) {
  throw UnavailableError(detail::str("cannot allocate on ", device.str(), ": its plugin '", e.plugin_name,
                                     "' was unloaded"));
}
[[noreturn, gnu::cold, gnu::noinline]] void fail_no_such_device(const DeviceTypeEntry& e, Device device) {
  throw ValueError(detail::str("device ", device.str(), " does not exist: device type '", e.name, "' (plugin '",
                               e.plugin_name, "') has ", e.device_count, " device(s)",
                               e.unavailable_reason.empty() ? "" : " — ", e.unavailable_reason));
}
[[noreturn, gnu::cold, gnu::noinline]] void fail_allocate(const DeviceTypeEntry& e, Device device, size_t nbytes,
                                                           TsrError* err) {
  throw_abi_error(err, detail::str("allocating ", nbytes, " bytes on ", device.str(), " (plugin '", e.plugin_name, "')"));
}

// The plugin's allocate failed with `err`. If it ran out of memory (having
// released its own caches, as a plugin should), the blocks the core keeps on
// this thread may be what is missing: release them and ask once more. Returns
// the block, or throws OutOfMemoryError naming the request, the device, the
// plugin and what was released.
[[gnu::cold, gnu::noinline]] void* allocate_under_pressure(const DeviceTypeEntry& e, Device device, size_t request,
                                                          size_t nbytes, IntArrayRef sizes, ScalarType dtype,
                                                          TsrError* err) {
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail_allocate(e, device, nbytes, err);
  const std::string first = take_error_message(err);
  // Disjoint: a kept tensor's block is its storage's, not in the block cache.
  const size_t kept = TensorCache::thread_cached_bytes(), blocks = small_blocks::thread_cached_bytes();
  TensorCache::release_thread();  // their blocks join the block cache or go to their plugin
  small_blocks::release_thread();
  void* ptr = nullptr;
  err = call_plugin([&] { return e.desc.allocate(e.desc.context, device.index(), request, nullptr, &ptr); });
  if (err == nullptr) return ptr;
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail_allocate(e, device, nbytes, err);
  throw_abi_error(err, detail::str("out of memory allocating ", nbytes, " bytes for a ", dtype_name(dtype), sizes,
                                   " tensor on ", device.str(), " (plugin '", e.plugin_name, "'): the plugin said \"",
                                   first, "\"; the core then released the blocks it cached on this thread (",
                                   kept + blocks, " bytes: ", kept, " in kept small tensors, ", blocks,
                                   " in cached small blocks) and retried; the plugin said"));
}
}  // namespace

[[noreturn, gnu::cold, gnu::noinline]] void rethrow_out_of_memory(const Operator& op, const OutOfMemoryError& e) {
  throw OutOfMemoryError(op.name() + ": " + e.what());
}

Tensor empty_on(IntArrayRef sizes, ScalarType dtype, Device device) {
  const int64_t numel = checked::check_shape("empty", sizes, dtype);
  return allocate_contiguous(device_entry(device), device, sizes, numel, dtype);
}

Tensor allocate_contiguous(const DeviceTypeEntry& e, Device device, IntArrayRef sizes, int64_t numel,
                           ScalarType dtype) {
  if (device_registry::retired(device.type())) [[unlikely]] fail_retired(e, device);
  // Fits: callers checked the shape (checked::check_shape), so numel * size <= INT64_MAX.
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  Storage storage;
  if (e.no_storage() || nbytes == 0) {
    storage = Storage(new StorageImpl(nullptr, nbytes, device, nullptr, nullptr, PluginRef(e.plugin)));
  } else {
    if (device.index() < 0 || device.index() >= e.device_count) [[unlikely]] fail_no_such_device(e, device);
    void* ptr = nullptr;
    PluginRef owner;
    const bool small = small_blocks::eligible(e, device, nbytes);
    if (small) {
      if (TensorImpl* kept = TensorCache::reuse(device.type(), nbytes, sizes, numel, dtype))
        return Tensor(boost::intrusive_ptr<TensorImpl>(kept, /*add_ref=*/false));
      ptr = small_blocks::take(device.type(), nbytes, owner);
    }
    if (ptr == nullptr) {
      const size_t request = small ? small_blocks::rounded(nbytes) : nbytes;
      TsrError* err =
          call_plugin([&] { return e.desc.allocate(e.desc.context, device.index(), request, nullptr, &ptr); });
      if (err != nullptr) [[unlikely]] ptr = allocate_under_pressure(e, device, request, nbytes, sizes, dtype, err);
      owner = PluginRef(e.plugin);
    }
    storage = Storage(new StorageImpl(ptr, nbytes, device, &device_deleter, const_cast<DeviceTypeEntry*>(&e),
                                      std::move(owner)));
    if (small) storage->set_recyclable();
  }
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(std::move(storage), dtype, sizes)));
}

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
    c->outputs_[index] = empty_on(IntArrayRef(shape, size_t(ndim)), c->out_dtypes_[index], c->device);
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
  throw NotImplementedError(detail::str(
      op_.name(), ": no kernel for device type '", dev.name, "' and dtype ", dtype_name(dispatch_dtype), " (plugin '",
      dev.plugin_name, "' ", have.empty() ? "registers no kernel for this op" : "has kernels for: " + have,
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

void StructuredCall::run() {
  const DeviceTypeEntry& dev = device_entry(device);
  bool all_empty = num_outputs_ > 0;
  bool data_dependent = false;
  for (int i = 0; i < num_outputs_; ++i) {
    if (out_kind_[i] == 0) {
      try {
        outputs_[i] = empty_on(out_shape_[i], out_dtypes_[i], device);
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
      dl_device_ = dl_device_of(dev, device.index());
      DLTensor dl_args[kMaxKernelArgs];
      DLTensor dl_outs[kMaxKernelOutputs];
      if (set_mask_ != (1u << num_args_) - 1) [[unlikely]] fail_unset_argument();
      for (int i = 0; i < num_args_; ++i) {
        if (values_[i].tag == TSR_VALUE_TENSOR) {
          values_[i].as.tensor = arg_view(*impls_[i], dl_device_, dl_args[i]);
        }
      }
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
      TsrError* err = call_plugin_kernel(op_, *k, device.index(), dispatch_dtype, values_, static_cast<size_t>(num_args_),
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
  if (const PointwiseLane* lane = op.pointwise_lane()) [[likely]]
    if (run_pointwise_lane(op, *lane, frame)) return;
  StructuredCall call(op, ks, frame);
  op.meta()(call);
  call.run();
}

const KernelFunction g_structured_kernel{&run_structured, nullptr, "structured"};

// ---------------------------------------------------------------------------
// Helpers for meta rules

Device common_device(const StructuredCall& c, std::initializer_list<int> tensor_args) {
  Device d = c.tensor_arg(*tensor_args.begin()).device();
  for (int i : tensor_args) {
    const Tensor& t = c.tensor_arg(i);
    if (t.device() != d) [[unlikely]] {
      // A 0-d wrapped number may live anywhere; it is moved to the device.
      if (t.unsafeGetTensorImpl()->is_wrapped_number()) continue;
      throw ValueError(detail::str(c.op().name(), ": expected all tensors on one device, found ", d.str(), " and ",
                                   t.device().str(), "; call: ", describe_call(c.op(), c.frame())));
    }
  }
  return d;
}

namespace {
ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promote_types(a, b);
}
// PyTorch's combine_categories: the higher-priority result wins unless the lower
// one has a higher category.
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (is_floating_type(higher)) return higher;
  if (higher == kBool || is_floating_type(lower)) return promote_skip_undefined(higher, lower);
  return higher;
}
}  // namespace

ScalarType result_type(std::initializer_list<const TensorImpl*> tensors) {
  ScalarType dim_result = ScalarType::Undefined, zero_result = ScalarType::Undefined,
             wrapped_result = ScalarType::Undefined;
  for (const TensorImpl* t : tensors) {
    if (t->is_wrapped_number()) {
      // Numbers count by category only: a float number is "the default float".
      ScalarType cur = t->dtype();
      if (is_floating_type(cur)) cur = kDefaultFloat;
      wrapped_result = promote_skip_undefined(wrapped_result, cur);
    } else if (t->dim() == 0) {
      zero_result = promote_skip_undefined(zero_result, t->dtype());
    } else {
      dim_result = promote_skip_undefined(dim_result, t->dtype());
    }
  }
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

DimVector broadcast_shapes(const Operator& op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) [[unlikely]] {
      throw ValueError(detail::str(op.name(), ": shapes ", a, " and ", b, " are not broadcastable (size ", da, " vs ",
                                   db, " at dimension ", i, " of the broadcast shape)"));
    }
    out[i] = da == 1 ? db : da;
  }
  int64_t span = 0;
  if (checked::span(out, span)) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": shapes ", a, " and ", b, " broadcast to ", IntArrayRef(out),
                                 ", which has more elements than int64 can count"));
  }
  return out;
}

Tensor cast_and_expand(const Tensor& t, ScalarType dtype, IntArrayRef shape) {
  Tensor r = t.scalar_type() == dtype ? t : t.to(dtype);
  if (!r.sizes().equals(shape)) r = r.expand(shape);
  return r;
}

int64_t wrap_dim(const Operator& op, int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  if (dim < -n || dim >= n) [[unlikely]] {
    throw IndexError(detail::str(op.name(), ": dimension ", dim, " is out of range for a tensor of ", ndim,
                                 " dimension(s) (expected a value in [", -n, ", ", n - 1, "])"));
  }
  return dim < 0 ? dim + n : dim;
}

namespace {
// The first and one-past-the-last byte a tensor with data and elements can touch.
struct ByteSpan {
  uintptr_t lo, hi;
};
ByteSpan byte_span(const TensorImpl& t) {
  const int64_t es = static_cast<int64_t>(element_size(t.dtype()));
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  int64_t lo = 0, hi = 0;  // in elements, relative to the first element
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t extent = (sizes[i] - 1) * strides[i];
    (extent < 0 ? lo : hi) += extent;
  }
  const auto base = reinterpret_cast<uintptr_t>(t.data());
  return {base + static_cast<uintptr_t>(lo * es), base + static_cast<uintptr_t>((hi + 1) * es)};
}
}  // namespace

MemoryOverlap memory_overlap(const Tensor& a, const Tensor& b) noexcept {
  const TensorImpl* x = a.unsafeGetTensorImpl();
  const TensorImpl* y = b.unsafeGetTensorImpl();
  if (x == nullptr || y == nullptr || x->device() != y->device() || x->numel() == 0 || y->numel() == 0)
    return MemoryOverlap::kNone;
  if (x->data() == nullptr || y->data() == nullptr) return MemoryOverlap::kNone;
  if (x->data() == y->data() && element_size(x->dtype()) == element_size(y->dtype()) &&
      x->sizes().equals(y->sizes()) && x->strides().equals(y->strides()))
    return MemoryOverlap::kFull;
  const ByteSpan p = byte_span(*x), q = byte_span(*y);
  return p.lo < q.hi && q.lo < p.hi ? MemoryOverlap::kPartial : MemoryOverlap::kNone;
}

Tensor snapshot_if_overlapping(const Tensor& in, const Tensor& self) {
  return memory_overlap(in, self) == MemoryOverlap::kNone ? in : in.clone();
}

void check_value_fits(const Operator& op, const Scalar& value, ScalarType dtype) {
  if (dtype == kBool || value.is_bool()) return;
  bool fits = true;
  if (is_floating_type(dtype)) {
    // The least finite magnitude that rounds to inf in each format.
    const double v = value.to_double();
    const double limit = dtype == kHalf ? 65520.0 : dtype == kBFloat16 ? 0x1.ffp127 : dtype == kFloat ? 0x1.ffffffp127 : 0;
    fits = limit == 0 || !std::isfinite(v) || std::fabs(v) < limit;
  } else {
    int64_t lo = 0, hi = 0;
    switch (dtype) {
      case kByte: lo = 0, hi = 255; break;
      case kChar: lo = -128, hi = 127; break;
      case kShort: lo = -32768, hi = 32767; break;
      case kInt: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
      default: lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max(); break;
    }
    if (value.is_integral()) {
      fits = value.to_long() >= lo && value.to_long() <= hi;
    } else {  // truncated toward zero, as the conversion does; 2^63 is exact in double
      const double t = std::trunc(value.to_double());
      fits = t >= static_cast<double>(lo) && t < -static_cast<double>(std::numeric_limits<int64_t>::min()) &&
             static_cast<int64_t>(t) <= hi;
    }
  }
  if (!fits) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": value ", value, " cannot be converted to ", dtype_name(dtype),
                                 " without overflow"));
  }
}

void check_writable(const Operator& op, const Tensor& t) {
  if (t.is_read_only()) [[unlikely]] {
    throw ValueError(detail::str(op.name(), ": cannot write into a read-only tensor (", dtype_name(t.scalar_type()),
                                 t.sizes(), " on ", t.device().str(), ", e.g. imported from a read-only DLPack producer)"));
  }
  if (t.numel() == 0) return;  // nothing is written, whatever the strides
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > 1 && strides[i] == 0) [[unlikely]] {
      throw ValueError(detail::str(op.name(), ": cannot write in place into a tensor where several elements share one "
                                   "memory location (shape ", sizes, ", strides ", strides, ", e.g. from expand); clone it first"));
    }
  }
}

}  // namespace tessera
