// New tensors on a device: the plugin's allocator behind the core's caches of
// small blocks and dead tensors, with release-and-retry on out of memory
// (allocation.h).
#include "allocation.h"

#include <tessera/error.h>

#include <cstdint>
#include <utility>

#include "abi_bridge.h"
#include "checked_math.h"
#include "current_stream.h"
#include "plugin_host.h"
#include "small_block_cache.h"
#include "tensor_cache.h"

namespace tessera {

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
    e->desc.deallocate(e->desc.context, s.device().index(), s.data(), nbytes, stream_handle(s.stream()));
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
                                                          TsrStream stream, size_t nbytes, IntArrayRef sizes,
                                                          ScalarType dtype, TsrError* err) {
  if (err->code != TSR_ERROR_OUT_OF_MEMORY) fail_allocate(e, device, nbytes, err);
  const std::string first = take_error_message(err);
  // Disjoint: a kept tensor's block is its storage's, not in the block cache.
  const size_t kept = TensorCache::thread_cached_bytes(), blocks = small_blocks::thread_cached_bytes();
  TensorCache::release_thread();  // their blocks join the block cache or go to their plugin
  small_blocks::release_thread();
  void* ptr = nullptr;
  err = call_plugin([&] { return e.desc.allocate(e.desc.context, device.index(), request, stream, &ptr); });
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
    // On an asynchronous device the memory is the current stream's (stream-ordered).
    boost::intrusive_ptr<StreamImpl> stream = current_stream_ref(device);
    if (ptr == nullptr) {
      const size_t request = small ? small_blocks::rounded(nbytes) : nbytes;
      TsrStream handle = stream_handle(stream.get());
      TsrError* err =
          call_plugin([&] { return e.desc.allocate(e.desc.context, device.index(), request, handle, &ptr); });
      if (err != nullptr) [[unlikely]]
        ptr = allocate_under_pressure(e, device, request, handle, nbytes, sizes, dtype, err);
      owner = PluginRef(e.plugin);
    }
    storage = Storage(new StorageImpl(ptr, nbytes, device, &device_deleter, const_cast<DeviceTypeEntry*>(&e),
                                      std::move(owner)));
    if (stream) [[unlikely]] storage->set_stream(std::move(stream));
    if (small) storage->set_recyclable();
  }
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(std::move(storage), dtype, sizes)));
}

}  // namespace tessera
