// Tensor methods about memory: record_stream, pin_memory, is_pinned (tensor.h).
#include <tessera/error.h>
#include <tessera/tensor.h>

#include "allocation.h"
#include "current_stream.h"
#include "memory/device_allocators.h"
#include "recorded_streams.h"

namespace tessera {

namespace {
// record_stream of a Tessera stream (`stream`, kept alive) or of a bare plugin
// handle (`stream` null; its owner keeps it valid).
void record_use(const Tensor& t, TsrStream handle, const Stream* stream) {
  const DeviceTypeEntry& e = device_entry(t.device());
  StorageImpl& s = *t.storage();
  if (!e.has(TSR_DEVICE_CAP_ASYNC) || e.no_storage() || s.data() == nullptr) return;  // nothing is queued
  if (is_allocator_storage(s)) {
    static_cast<memory::DeviceAllocator*>(s.deleter_context())->allocator.record_stream(allocation_start(s), handle);
    return;
  }
  // Ours (the plugin's allocator) or a DLPack import; from_blob memory is its owner's business.
  if (s.deleter_context() != &e && !is_dlpack_import(s)) return;
  if (handle == stream_handle(s.stream())) return;  // its own stream
  if (stream != nullptr) {
    recorded_streams::add(s, *stream);
  } else {
    recorded_streams::add_handle(s, handle);
  }
}
}  // namespace

void Tensor::record_stream(const Stream& stream) const {
  TSR_CHECK(stream.device() == device(), ValueError, "record_stream: the stream ", stream.str(),
            " is not on the tensor's device ", device().str());
  record_use(*this, stream.handle(), &stream);
}

void record_stream_handle(const Tensor& t, TsrStream stream) { record_use(t, stream, nullptr); }

namespace {
bool offers_pinned(const DeviceTypeEntry& e) { return e.desc.host_allocate != nullptr && e.device_count > 0; }

// The device type whose pinned memory pin_memory("") uses.
const DeviceTypeEntry& default_pinner() {
  const DeviceTypeEntry* sim = nullptr;
  for (const DeviceTypeEntry* e : device_registry::all()) {
    if (!offers_pinned(*e)) continue;
    if (e->name != "sim") return *e;
    sim = e;
  }
  TSR_CHECK(sim != nullptr, ValueError,
            "pin_memory: no loaded device type offers pinned host memory (a plugin offers it through the "
            "host_allocate and host_deallocate slots; see tessera info)");
  return *sim;
}
}  // namespace

Tensor Tensor::pin_memory(std::string_view device_type) const {
  TSR_CHECK(device_entry(device()).host_accessible() && device() == Device(), ValueError,
            "pin_memory: only cpu tensors can be pinned; this ", dtype_name(scalar_type()), sizes(), " tensor is on ",
            device().str());
  const DeviceTypeEntry* pinner;
  if (device_type.empty()) {
    pinner = &default_pinner();
  } else {
    pinner = device_registry::find(device_type);
    TSR_CHECK(pinner != nullptr, ValueError, "pin_memory: no device type named '", device_type, "' is loaded");
    TSR_CHECK(offers_pinned(*pinner), ValueError, "pin_memory: device type '", device_type, "' (plugin '",
              pinner->plugin_name, "') offers no pinned host memory",
              pinner->device_count == 0 ? " (it has no devices)" : " (its plugin has no host_allocate slot)");
  }
  if (is_pinned_storage(*storage(), pinner->id)) return *this;
  Tensor out = empty_pinned(sizes(), scalar_type(), *pinner);
  out.copy_(*this);
  return out;
}

bool Tensor::is_pinned(std::string_view device_type) const {
  if (!defined()) return false;
  if (device_type.empty()) return is_pinned_storage(*storage());
  const DeviceTypeEntry* e = device_registry::find(device_type);
  return e != nullptr && is_pinned_storage(*storage(), e->id);
}

}  // namespace tessera
