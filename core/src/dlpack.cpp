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
// before throwing. See docs/dlpack.md.
#include <tessera/dlpack.h>
#include <tessera/error.h>
#include <tessera/plugin.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "checked_math.h"
#include "device_registry.h"
#include "plugin_host.h"

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
Managed* export_tensor(const char* who, const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  const DeviceTypeEntry& e = device_entry(impl.device());
  if (e.desc.dlpack_device_type == 0) [[unlikely]] {
    throw ValueError(detail::str(who, ": cannot export a tensor on device '", impl.device().str(), "' (device type '",
                                 e.name, "' of plugin '", e.plugin_name,
                                 "' has no DLPack device type", e.no_storage() ? ": it holds no memory" : "",
                                 "); tensor ", dtype_name(impl.dtype()), impl.sizes()));
  }
  auto ctx = std::make_unique<ExportContext<Managed>>();
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

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, bool read_only) {
  defined_tensor("to_dlpack_versioned", t);
  DLManagedTensorVersioned* m = export_tensor<DLManagedTensorVersioned>("to_dlpack_versioned", t);
  m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->flags = (read_only || t.is_read_only()) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  return m;
}

DLManagedTensor* to_dlpack(const Tensor& t) {
  defined_tensor("to_dlpack", t);
  // The legacy struct cannot say "read-only"; a consumer would be free to write
  // (NumPy refuses the same way). The versioned export carries the flag.
  TSR_CHECK(!t.is_read_only(), ValueError, "to_dlpack: cannot export a read-only tensor (",
            dtype_name(t.scalar_type()), t.sizes(), " on ", t.device().str(),
            ") through legacy DLManagedTensor, which cannot signal read-only; use to_dlpack_versioned");
  return export_tensor<DLManagedTensor>("to_dlpack", t);
}

// ---------------------------------------------------------------------------
// Import

namespace {

// Storage deleters: the producer's deleter, read when the storage dies (the
// producer owns the struct until then).
void versioned_storage_deleter(StorageImpl& s) noexcept {
  auto* m = static_cast<DLManagedTensorVersioned*>(s.deleter_context());
  if (m->deleter != nullptr) m->deleter(m);
}
void legacy_storage_deleter(StorageImpl& s) noexcept {
  auto* m = static_cast<DLManagedTensor*>(s.deleter_context());
  if (m->deleter != nullptr) m->deleter(m);
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
                                 "device types: ", known.empty() ? "none" : known, ")"));
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
Tensor import_tensor(const char* who, Managed* managed, bool read_only, StorageImpl::Deleter storage_deleter,
                     DeleterGuard<Managed>& guard) {
  const ImportPlan plan = check_import(who, managed->dl_tensor);
  // The storage pins the device's plugin (like storages the plugin allocated):
  // every op on the tensor calls that plugin, so it must stay loaded while the
  // tensor lives. The memory itself is freed by the producer's deleter.
  Storage storage(new StorageImpl(plan.base, plan.nbytes, plan.device, storage_deleter, managed,
                                  PluginRef(plan.entry->plugin), read_only));
  guard.release();  // from here on the storage calls the producer's deleter, also if what follows throws
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
  return import_tensor("from_dlpack", managed, read_only, &versioned_storage_deleter, guard);
}

Tensor from_dlpack(DLManagedTensor* managed, LegacyAccess access) {
  TSR_CHECK(managed != nullptr, ValueError, "from_dlpack: the DLManagedTensor pointer is NULL");
  DeleterGuard<DLManagedTensor> guard(managed);
  // No flags in the legacy struct: read-only unless the caller vouches for it.
  return import_tensor("from_dlpack", managed, access != LegacyAccess::Writable, &legacy_storage_deleter, guard);
}

void validate_dlpack(const DLTensor& t) { (void)check_import("validate_dlpack", t); }

}  // namespace tessera
