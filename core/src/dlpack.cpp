// DLPack 1.x exchange: zero-copy export (versioned and legacy) and import.
//
// Export. One heap block holds the managed tensor, a Tensor reference (which
// keeps the storage, and through it the device plugin, alive) and the shape and
// strides arrays; manager_ctx points to it and the deleter frees it. dl.data is
// the address of the first element and byte_offset is 0, on every device: that
// is what PyTorch, CuPy and NumPy produce and what every consumer reads (several
// ignore byte_offset), and Tessera's device pointers are plain addresses (the
// core already hands kernels first-element pointers). Strides are always given
// (required since DLPack 1.2). A zero-size tensor exports data = NULL, as the
// DLPack header asks.
//
// Import. Every field is checked first, in one function (check_import, public
// as validate_dlpack): device, dtype, ndim, shape, an aligned first element,
// an extent that neither overflows nor wraps the address space. The storage
// starts at the lowest address any element occupies and spans up to the
// highest one, the tensor's storage_offset points at the first element
// (data + byte_offset), so negative and zero strides work. Legacy imports are
// read-only unless the caller says otherwise (the struct has no flags). The
// storage's deleter calls the producer's deleter; every refusal calls it
// before throwing.
//
// Streams (asynchronous devices). Export makes the consumer's stream wait for
// Tessera's current stream through the plugin's event slots and records the
// storage as used on it. Import: the tensor belongs to the current stream, and
// the deleter of an async import waits on the host for its streams before the
// producer's deleter runs (a producer knows nothing of Tessera's streams, and
// a host wait is simple and always correct; imports are freed rarely compared
// to the allocator's blocks). See docs/dlpack.md.
#include <tessera/dlpack.h>
#include <tessera/error.h>
#include <tessera/plugin.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "abi_bridge.h"
#include "allocation.h"
#include "checked_math.h"
#include "current_stream.h"
#include "device_registry.h"
#include "dlpack_streams.h"
#include "plugin_host.h"
#include "plugin_load_note.h"
#include "recorded_streams.h"

namespace tessera {

// ---------------------------------------------------------------------------
// dtypes

namespace {
const char* dl_code_name(uint8_t code) {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque handle";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return code >= kDLFloat8_e3m4 && code <= kDLFloat4_e2m1fn ? "low-precision float" : "unknown";
  }
}

const char* dl_device_name(int32_t type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    case kDLMAIA: return "kDLMAIA";
    case kDLTrn: return "kDLTrn";
    default: return "unknown";
  }
}

std::string describe_dl_device(int32_t type) { return detail::str(dl_device_name(type), " (", type, ")"); }
}  // namespace

DLDataType to_dlpack_dtype(ScalarType t) {
  DLDataType d{0, static_cast<uint8_t>(element_size(t) * 8), 1};
  switch (t) {
    case kBool: d.code = kDLBool; break;  // one byte per element, as DLPack specifies for bool
    case kByte: d.code = kDLUInt; break;
    case kChar: case kShort: case kInt: case kLong: d.code = kDLInt; break;
    case kHalf: case kFloat: case kDouble: d.code = kDLFloat; break;
    case kBFloat16: d.code = kDLBfloat; break;
    default:
      throw TypeError(detail::str("to_dlpack_dtype: dtype code ", int(t), " has no DLPack equivalent"));
  }
  return d;
}

ScalarType from_dlpack_dtype(DLDataType t) {
  ScalarType r = ScalarType::Undefined;
  if (t.lanes == 1) {
    switch (t.code) {
      case kDLBool: if (t.bits == 8) r = kBool; break;
      case kDLUInt: if (t.bits == 8) r = kByte; break;
      case kDLInt:
        switch (t.bits) {
          case 8: r = kChar; break;
          case 16: r = kShort; break;
          case 32: r = kInt; break;
          case 64: r = kLong; break;
          default: break;
        }
        break;
      case kDLFloat:
        switch (t.bits) {
          case 16: r = kHalf; break;
          case 32: r = kFloat; break;
          case 64: r = kDouble; break;
          default: break;
        }
        break;
      case kDLBfloat: if (t.bits == 16) r = kBFloat16; break;
      default: break;
    }
  }
  if (r == ScalarType::Undefined) [[unlikely]] {
    throw TypeError(detail::str("from_dlpack_dtype: unsupported DLPack dtype (code ", int(t.code), " = ",
                                dl_code_name(t.code), ", bits ", int(t.bits), ", lanes ", t.lanes,
                                "); Tessera takes lanes 1 of: bool/8, uint/8, int/8, int/16, int/32, int/64, "
                                "float/16, float/32, float/64, bfloat/16"));
  }
  return r;
}

// ---------------------------------------------------------------------------
// Streams

namespace dlpack_streams {

TsrStream handle_of(int32_t dl_type, DLPackStream value, const char* who, const std::string& where) {
  if (!value) return nullptr;
  const int64_t v = *value;
  auto refuse = [&](const char* why) {
    throw ValueError(detail::str(who, ": stream=", v, " is refused for ", where, ": ", why));
  };
  if (v < kDLPackNoSync) refuse("a stream value is None, -1 (no synchronization) or a stream of the device (>= 0)");
  switch (dl_type) {
    case kDLCUDA:
    case kDLCUDAManaged:
      if (v == 0)
        refuse("0 is ambiguous for CUDA and the array API disallows it; pass 1 (legacy default stream), 2 "
               "(per-thread default stream) or a cudaStream_t");
      if (v == 1) return nullptr;  // the legacy default stream is the plugin's NULL stream
      break;
    case kDLROCM:
      if (v == 1 || v == 2)
        refuse("1 and 2 are not ROCm streams and the array API disallows them; pass 0 or None (default "
               "stream) or a hipStream_t");
      break;
    default: break;
  }
  return reinterpret_cast<TsrStream>(static_cast<uintptr_t>(v));
}

DLPackStream value_of(int32_t dl_type, TsrStream s) {
  if (s == nullptr) {
    if (dl_type == kDLCUDA || dl_type == kDLCUDAManaged) return 1;
    if (dl_type == kDLROCM) return 0;
    return std::nullopt;
  }
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(s));
}

}  // namespace dlpack_streams

namespace {

bool is_async(const DeviceTypeEntry& e) { return e.has(TSR_DEVICE_CAP_ASYNC) && !e.no_storage(); }

std::string where(const DeviceTypeEntry& e, Device d) {
  return detail::str("device ", d.str(), " (device type '", e.name, "' of plugin '", e.plugin_name, "')");
}

// The consumer's stream on `d` (an async device); ValueError for a refused value.
TsrStream consumer_handle(const char* who, const DeviceTypeEntry& e, Device d, DLPackStream consumer) {
  if (!is_async(e)) {
    TSR_CHECK(!consumer || *consumer == kDLPackNoSync, ValueError, who, ": stream=", *consumer, " is refused for ",
              where(e, d), ", which is synchronous (it has no streams); pass None or -1");
    return nullptr;
  }
  if (consumer == kDLPackNoSync) return nullptr;
  return dlpack_streams::handle_of(e.desc.dlpack_device_type, consumer, who, where(e, d));
}

// The producer's half of the array API's stream rule: the consumer's stream
// waits (no host block) for the work queued so far on Tessera's current
// stream, and the memory is recorded as used there.
void hand_off(const char* who, const Tensor& t, const DeviceTypeEntry& e, DLPackStream consumer) {
  const Device d = t.device();
  const TsrStream target = consumer_handle(who, e, d, consumer);
  if (!is_async(e) || consumer == kDLPackNoSync) return;  // -1: the consumer takes responsibility
  const TsrStream current = current_stream_handle(d);
  if (target == current) return;
  const auto& desc = e.desc;
  const int32_t index = d.index();
  TsrEvent ev = nullptr;
  TsrError* err = call_plugin([&] { return desc.event_create(desc.context, index, &ev); });
  if (err == nullptr) err = call_plugin([&] { return desc.event_record(desc.context, index, ev, current); });
  if (err == nullptr) err = call_plugin([&] { return desc.stream_wait_event(desc.context, index, target, ev); });
  if (ev != nullptr) {  // legal once the wait is queued (it captured the event's position)
    TsrError* destroyed = call_plugin([&] { return desc.event_destroy(desc.context, index, ev); });
    if (err == nullptr) {
      err = destroyed;
    } else if (destroyed != nullptr) {
      (void)take_error_message(destroyed);
    }
  }
  if (err != nullptr) [[unlikely]] {
    throw_abi_error(err, detail::str(who, ": making the consumer's stream (stream=",
                                     consumer ? detail::str(*consumer) : std::string("None"),
                                     ") wait for the current stream of ", where(e, d)));
  }
  record_stream_handle(t, target);
}

}  // namespace

void check_dlpack_stream(Device d, DLPackStream consumer_stream, const char* who) {
  (void)consumer_handle(who, device_entry(d), d, consumer_stream);
}

DLPackStream dlpack_consumer_stream(Device d) {
  const DeviceTypeEntry& e = device_entry(d);
  TSR_CHECK(d.index() >= 0 && d.index() < e.device_count, ValueError, "dlpack_consumer_stream: device ", d.str(),
            " does not exist: device type '", e.name, "' (plugin '", e.plugin_name, "') has ", e.device_count,
            " device(s)");
  if (!is_async(e)) return std::nullopt;
  return dlpack_streams::value_of(e.desc.dlpack_device_type, current_stream_handle(d));
}

bool dlpack_has_async_devices() noexcept {
  for (int i = 0; i < kMaxDeviceTypes; ++i) {
    const auto id = static_cast<DeviceTypeId>(i);
    const DeviceTypeEntry* e = device_registry::get(id);
    if (e == nullptr) break;  // entries are added in id order and never removed
    if (e->desc.dlpack_device_type != 0 && e->device_count > 0 && is_async(*e) && !device_registry::retired(id) &&
        device_registry::g_published[i].load(std::memory_order_acquire))
      return true;
  }
  return false;
}

DLPackStream dlpack_consumer_stream(DLDevice d) {
  // A type that is not loaded has no current stream but its default: no need
  // to load plugins here (the import will, and refuses what none provides).
  const DeviceTypeEntry* e = device_registry::find_dlpack(d.device_type);
  if (e == nullptr || d.device_id < 0 || d.device_id >= e->device_count || !is_async(*e)) return std::nullopt;
  return dlpack_streams::value_of(e->desc.dlpack_device_type, current_stream_handle(Device(e->id, d.device_id)));
}

// ---------------------------------------------------------------------------
// Export

namespace {

template <typename Managed>
struct ExportContext {
  Managed managed{};
  Tensor tensor;  // keeps the storage (and the device plugin) alive
  DimVector shape;
  DimVector strides;

  static void deleter(Managed* self) noexcept {
    if (self != nullptr) delete static_cast<ExportContext*>(self->manager_ctx);
  }
};

template <typename Managed>
Managed* export_tensor(const char* who, const Tensor& t, DLPackStream consumer_stream) {
  const TensorImpl& impl = *t.impl();
  const DeviceTypeEntry& e = device_entry(impl.device());
  if (e.desc.dlpack_device_type == 0) [[unlikely]] {
    throw ValueError(detail::str(who, ": cannot export a tensor on device '", impl.device().str(), "' (device type '",
                                 e.name, "' of plugin '", e.plugin_name,
                                 "' has no DLPack device type", e.no_storage() ? ": it holds no memory" : "",
                                 "); tensor ", dtype_name(impl.dtype()), impl.sizes()));
  }
  auto ctx = std::make_unique<ExportContext<Managed>>();
  hand_off(who, t, e, consumer_stream);
  ctx->tensor = t;
  ctx->shape.assign(impl.sizes().begin(), impl.sizes().end());
  ctx->strides.assign(impl.strides().begin(), impl.strides().end());

  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = impl.numel() == 0 ? nullptr : impl.data();
  dl.device = DLDevice{static_cast<DLDeviceType>(e.desc.dlpack_device_type), impl.device().index()};
  dl.ndim = static_cast<int32_t>(impl.dim());
  dl.dtype = to_dlpack_dtype(impl.dtype());
  dl.shape = ctx->shape.data();  // non-null even for 0-d (inline buffer)
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = &ExportContext<Managed>::deleter;
  return &ctx.release()->managed;
}

const Tensor& defined_tensor(const char* who, const Tensor& t) {
  TSR_CHECK(t.defined(), ValueError, who, ": cannot export an undefined tensor");
  return t;
}

}  // namespace

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only, DLPackStream consumer_stream) {
  defined_tensor("to_dlpack_versioned", t);
  DLManagedTensorVersioned* m = export_tensor<DLManagedTensorVersioned>("to_dlpack_versioned", t, consumer_stream);
  m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->flags = (read_only || t.is_read_only()) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  return m;
}

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only) {
  return to_dlpack_versioned(t, read_only, std::nullopt);
}

DLManagedTensor* to_dlpack(const Tensor& t, DLPackStream consumer_stream) {
  defined_tensor("to_dlpack", t);
  // The legacy struct cannot say "read-only"; a consumer would be free to write
  // (NumPy refuses the same way). The versioned export carries the flag.
  TSR_CHECK(!t.is_read_only(), ValueError, "to_dlpack: cannot export a read-only tensor (",
            dtype_name(t.scalar_type()), t.sizes(), " on ", t.device().str(),
            ") through legacy DLManagedTensor, which cannot signal read-only; use to_dlpack_versioned");
  return export_tensor<DLManagedTensor>("to_dlpack", t, consumer_stream);
}

DLManagedTensor* to_dlpack(const Tensor& t) { return to_dlpack(t, std::nullopt); }

// ---------------------------------------------------------------------------
// Import

namespace {

// Storage deleters: the producer's deleter, read when the storage dies (the
// producer owns the struct until then).
template <typename Managed>
void storage_deleter(StorageImpl& s) noexcept {
  auto* m = static_cast<Managed*>(s.deleter_context());
  if (m->deleter != nullptr) m->deleter(m);
}
// On an asynchronous device, Tessera's queued work may still use the memory:
// the host waits for the import's stream and the recorded ones first.
template <typename Managed>
void async_storage_deleter(StorageImpl& s) noexcept {
  if (const DeviceTypeEntry* e = device_registry::get(s.device().type()))
    recorded_streams::synchronize_all(s, *e, stream_handle(s.stream()));
  storage_deleter<Managed>(s);
}

// Calls the producer's deleter if the import does not complete.
template <typename Managed>
class DeleterGuard {
 public:
  explicit DeleterGuard(Managed* m) : m_(m) {}
  ~DeleterGuard() {
    if (m_ != nullptr && m_->deleter != nullptr) m_->deleter(m_);
  }
  void release() { m_ = nullptr; }
  DeleterGuard(const DeleterGuard&) = delete;
  DeleterGuard& operator=(const DeleterGuard&) = delete;

 private:
  Managed* m_;
};

// What an import wraps, computed from a DLTensor by check_import (which makes
// every check validate_dlpack documents).
struct ImportPlan {
  const DeviceTypeEntry* entry = nullptr;
  Device device{0, 0};  // set from the entry (Device() would look up "cpu")
  ScalarType dtype = ScalarType::Undefined;
  IntArrayRef sizes;
  DimVector strides;
  void* base = nullptr;  // the lowest address any element occupies
  size_t nbytes = 0;     // from base to the end of the highest element
  int64_t offset = 0;    // the first element, in elements from base
};

ImportPlan check_import(const char* who, const DLTensor& dl) {
  ImportPlan plan;
  // ---- device ----
  const DeviceTypeEntry* e = device_registry::find_dlpack(dl.device.device_type);
  if (e == nullptr) {
    load_default_plugins();
    e = device_registry::find_dlpack(dl.device.device_type);
  }
  if (e == nullptr) [[unlikely]] {
    std::string known;
    for (const DeviceTypeEntry* x : device_registry::all())
      if (x->desc.dlpack_device_type != 0)
        known += detail::str(known.empty() ? "" : ", ", x->name, " = ", describe_dl_device(x->desc.dlpack_device_type));
    throw ValueError(detail::str(who, ": DLPack device type ", describe_dl_device(dl.device.device_type),
                                 " is not provided by any loaded plugin (DLPack device types of the registered "
                                 "device types: ", known.empty() ? "none" : known, ")", detail::plugin_load_note()));
  }
  if (dl.device.device_id < 0 || dl.device.device_id >= e->device_count) [[unlikely]] {
    throw ValueError(detail::str(who, ": DLPack device ", describe_dl_device(dl.device.device_type), " index ",
                                 dl.device.device_id, " does not exist: device type '", e->name, "' (plugin '",
                                 e->plugin_name, "') has ",
                                 e->device_count, " device(s)", e->unavailable_reason.empty() ? "" : " — ",
                                 e->unavailable_reason));
  }
  plan.entry = e;
  plan.device = Device(e->id, dl.device.device_id);

  // ---- dtype and shape ----
  plan.dtype = from_dlpack_dtype(dl.dtype);  // TypeError naming code/bits/lanes
  const int64_t esize = static_cast<int64_t>(element_size(plan.dtype));
  TSR_CHECK(dl.ndim >= 0, ValueError, who, ": negative ndim ", dl.ndim);
  TSR_CHECK(dl.ndim <= kDLPackMaxDims, ValueError, who, ": ndim ", dl.ndim, " exceeds the ", kDLPackMaxDims,
            " dims an imported tensor may have");
  TSR_CHECK(dl.ndim == 0 || dl.shape != nullptr, ValueError, who, ": shape is NULL for ndim ", dl.ndim);
  const IntArrayRef sizes(dl.shape, static_cast<size_t>(dl.ndim));
  // The shape rule of every tensor (checked_math.h), with the importer named:
  // a negative size, or a span whose bytes overflow int64 (also with a 0).
  const int64_t numel = checked::check_shape(who, sizes, plan.dtype);
  plan.sizes = sizes;
  // Strides may be NULL (DLPack < 1.2): row-major.
  plan.strides = dl.strides != nullptr ? DimVector(dl.strides, dl.strides + dl.ndim) : contiguous_strides(sizes);
  const DimVector& strides = plan.strides;

  // ---- memory extent ----
  // first = data + byte_offset; elements lie at first + k*esize for k in [lo, hi].
  uintptr_t first = 0;
  TSR_CHECK(!__builtin_add_overflow(reinterpret_cast<uintptr_t>(dl.data), dl.byte_offset, &first), ValueError, who,
            ": data ", dl.data, " + byte_offset ", dl.byte_offset, " overflows the address space");
  if (numel == 0) {
    plan.base = dl.data == nullptr ? nullptr : reinterpret_cast<void*>(first);
    return plan;
  }
  TSR_CHECK(dl.data != nullptr, ValueError, who, ": data is NULL for a non-empty tensor of shape ", sizes);
  // The kernels load whole elements: a first element off its alignment is
  // undefined behaviour on the CPU and a fault on some devices.
  const uintptr_t align = static_cast<uintptr_t>(std::min<int64_t>(esize, 16));
  TSR_CHECK(first % align == 0, ValueError, who, ": the first element (data ", dl.data, " + byte_offset ",
            dl.byte_offset, " = ", reinterpret_cast<void*>(first), ") is not aligned to the ", align,
            " bytes a ", dtype_name(plan.dtype), " element needs; copy the data to an aligned buffer first");
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t step = 0;
    const bool overflow = __builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
                          __builtin_add_overflow(strides[i] < 0 ? lo : hi, step, strides[i] < 0 ? &lo : &hi);
    TSR_CHECK(!overflow, ValueError, who, ": shape ", sizes, " and strides ", IntArrayRef(strides),
              " address more memory than exists");
  }
  // span = hi - lo + 1 elements; since it did not overflow, neither does -lo.
  int64_t span = 0, bytes = 0;
  TSR_CHECK(!__builtin_sub_overflow(hi, lo, &span) && !__builtin_add_overflow(span, 1, &span) &&
                !__builtin_mul_overflow(span, esize, &bytes),
            ValueError, who, ": shape ", sizes, " and strides ", IntArrayRef(strides),
            " address more memory than exists");
  const uintptr_t below = static_cast<uintptr_t>(-lo) * static_cast<uintptr_t>(esize);
  uintptr_t end = 0;
  TSR_CHECK(below <= first && !__builtin_add_overflow(first - below, static_cast<uintptr_t>(bytes), &end),
            ValueError, who, ": shape ", sizes, " and strides ", IntArrayRef(strides), " from the first element at ",
            reinterpret_cast<void*>(first), " wrap around the address space");
  plan.base = reinterpret_cast<void*>(first - below);
  plan.nbytes = static_cast<size_t>(bytes);
  plan.offset = -lo;
  return plan;
}

template <typename Managed>
Tensor import_tensor(const char* who, Managed* managed, bool read_only, DeleterGuard<Managed>& guard) {
  const ImportPlan plan = check_import(who, managed->dl_tensor);
  // The storage pins the device's plugin (like storages the plugin allocated):
  // every op on the tensor calls that plugin, so it must stay loaded while the
  // tensor lives. The memory itself is freed by the producer's deleter.
  const bool async = is_async(*plan.entry);
  Storage storage(new StorageImpl(plan.base, plan.nbytes, plan.device,
                                  async ? &async_storage_deleter<Managed> : &storage_deleter<Managed>, managed,
                                  PluginRef(plan.entry->plugin), read_only));
  guard.release();  // from here on the storage calls the producer's deleter, also if what follows throws
  // The producer ordered its work before the current stream (dlpack_consumer_stream): the memory is its.
  if (async) storage->set_stream(current_stream_ref(plan.device));
  return Tensor(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(std::move(storage), plan.dtype, plan.sizes, plan.strides, plan.offset)));
}

}  // namespace

Tensor from_dlpack(DLManagedTensorVersioned* managed) {
  TSR_CHECK(managed != nullptr, ValueError, "from_dlpack: the DLManagedTensorVersioned pointer is NULL");
  DeleterGuard<DLManagedTensorVersioned> guard(managed);
  // Only version, manager_ctx and deleter are readable before the major matches.
  if (managed->version.major != DLPACK_MAJOR_VERSION) [[unlikely]] {
    throw ValueError(detail::str("from_dlpack: the producer speaks DLPack ", managed->version.major, ".",
                                 managed->version.minor, " and Tessera speaks DLPack ", DLPACK_MAJOR_VERSION, ".",
                                 DLPACK_MINOR_VERSION, "; major versions differ, so the tensor was refused (its "
                                 "deleter was called)"));
  }
  const bool read_only = (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  return import_tensor("from_dlpack", managed, read_only, guard);
}

Tensor from_dlpack(DLManagedTensor* managed, LegacyAccess access) {
  TSR_CHECK(managed != nullptr, ValueError, "from_dlpack: the DLManagedTensor pointer is NULL");
  DeleterGuard<DLManagedTensor> guard(managed);
  // No flags in the legacy struct: read-only unless the caller vouches for it.
  return import_tensor("from_dlpack", managed, access != LegacyAccess::Writable, guard);
}

void validate_dlpack(const DLTensor& t) { (void)check_import("validate_dlpack", t); }

bool is_dlpack_import(const StorageImpl& s) noexcept {
  const StorageImpl::Deleter d = s.deleter();
  return d == &storage_deleter<DLManagedTensorVersioned> || d == &storage_deleter<DLManagedTensor> ||
         d == &async_storage_deleter<DLManagedTensorVersioned> || d == &async_storage_deleter<DLManagedTensor>;
}

}  // namespace tessera
