// New tensors on a device: the core's caching allocator (or, for a device that
// does not ask for it, the plugin's allocator) behind the core's per-thread
// caches of small blocks and dead tensors, with release-and-retry on out of
// memory (allocation.h).
#include "allocation.h"

#include <tessera/error.h>

#include <cstdint>
#include <utility>

#include "abi_bridge.h"
#include "checked_math.h"
#include "current_stream.h"
#include "memory/device_allocators.h"
#include "memory/pinned_host_allocator.h"
#include "output_placement.h"
#include "plugin_host.h"
#include "recorded_streams.h"
#include "small_block_cache.h"
#include "tensor_cache.h"

namespace tessera {

namespace {
// Memory of a device without the core's allocator: back to its plugin, in the
// order of the stream it was allocated on (after the streams record_stream named).
void device_deleter(StorageImpl& s) noexcept {
  const auto* e = static_cast<const DeviceTypeEntry*>(s.deleter_context());
  const TsrStream stream = stream_handle(s.stream());
  if (recorded_streams::any()) [[unlikely]] recorded_streams::order_free(s, *e, stream);
  try {
    e->desc.deallocate(e->desc.context, s.device().index(), s.data(), s.nbytes(), stream);
  } catch (...) {  // ABI rule 4 violated; a destructor cannot report it otherwise
    std::fprintf(stderr, "[tessera] plugin %s: deallocate threw a C++ exception across the C ABI\n",
                 e->plugin_name.c_str());
  }
}

// Memory from the core's caching allocator: small blocks of a synchronous
// device to this thread's cache, the rest back to the allocator.
void allocator_deleter(StorageImpl& s) noexcept {
  auto* a = static_cast<memory::DeviceAllocator*>(s.deleter_context());
  if (small_blocks::eligible(a->entry(), s.device(), s.nbytes()) && !device_registry::retired(s.device().type()) &&
      small_blocks::give(s.device().type(), s.data(), s.nbytes(), s.owner_ref()))
    return;
  memory::device_allocators::free(*a, s.data());
}

// Memory from the caching allocator whose data starts past its block's start
// (allocate_placed): the block starts at data rounded down to 512 bytes.
void placed_deleter(StorageImpl& s) noexcept {
  memory::device_allocators::free(*static_cast<memory::DeviceAllocator*>(s.deleter_context()), allocation_start(s));
}
}  // namespace

namespace {
void pinned_deleter(StorageImpl& s) noexcept {
  static_cast<memory::PinnedHostAllocator*>(s.deleter_context())->free(s.data());
}
}  // namespace

bool is_allocator_storage(const StorageImpl& s) noexcept {
  return s.deleter() == &allocator_deleter || s.deleter() == &placed_deleter;
}

void* allocation_start(const StorageImpl& s) noexcept {
  if (s.deleter() != &placed_deleter) return s.data();
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(s.data()) & ~(placement::kBlockAlign - 1));
}

bool is_pinned_storage(const StorageImpl& s, DeviceTypeId type) noexcept {
  if (s.deleter() != &pinned_deleter) return false;
  return type == kAnyDeviceType || static_cast<memory::PinnedHostAllocator*>(s.deleter_context())->entry().id == type;
}

Tensor empty_pinned(IntArrayRef sizes, ScalarType dtype, const DeviceTypeEntry& pinner) {
  const int64_t numel = checked::check_shape("pin_memory", sizes, dtype);
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  memory::PinnedHostAllocator& a = memory::pinned_allocators::get(pinner);
  void* ptr = a.allocate(nbytes == 0 ? 1 : nbytes);
  Storage storage(new StorageImpl(ptr, nbytes, Device(), &pinned_deleter, &a, PluginRef(pinner.plugin)));
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(std::move(storage), dtype, sizes)));
}

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

// Releases the blocks the core keeps on this thread (kept small tensors, small
// blocks): they go back to their allocator or plugin. Returns the bytes released.
size_t release_thread_caches(size_t* kept, size_t* blocks) {
  // Disjoint: a kept tensor's block is its storage's, not in the block cache.
  *kept = TensorCache::thread_cached_bytes();
  *blocks = small_blocks::thread_cached_bytes();
  TensorCache::release_thread();  // their blocks join the block cache or go back
  small_blocks::release_thread();
  return *kept + *blocks;
}

// The caching allocator's OutOfMemoryError (after every stage of recovery,
// this thread's caches included: release_thread_caches_note), prefixed with
// the tensor, the device and the plugin.
[[noreturn, gnu::cold, gnu::noinline]] void fail_cached(const memory::DeviceAllocator& a, size_t nbytes,
                                                         IntArrayRef sizes, ScalarType dtype,
                                                         const OutOfMemoryError& e) {
  throw OutOfMemoryError(detail::str("out of memory allocating ", nbytes, " bytes for a ", dtype_name(dtype), sizes,
                                     " tensor on ", a.device.str(), " (plugin '", a.entry().plugin_name,
                                     "'): ", e.what()));
}

[[gnu::always_inline]] inline void* allocate_cached(memory::DeviceAllocator& a, size_t request, TsrStream stream,
                                                    size_t nbytes, IntArrayRef sizes, ScalarType dtype) {
  try {
    return a.allocator.allocate(request, stream);
  } catch (const OutOfMemoryError& e) {
    fail_cached(a, nbytes, sizes, dtype, e);
  }
}

// A host output's memory, its data placed away from its inputs' page offsets
// (output_placement.h). Returns the data pointer; *shifted says whether it lies
// past its block's start. When no shift that fits the block's slack clears
// every input, the block goes back and one with room for every shift is taken
// (the output's bytes plus kMaxShift; for our own inputs, which sit on 512-byte
// boundaries as the output does, that never happens).
[[gnu::noinline]] void* allocate_placed(memory::DeviceAllocator& a, size_t nbytes, TsrStream stream,
                                        IntArrayRef sizes, ScalarType dtype, const placement::Hint& hint,
                                        bool* shifted) {
  using namespace placement;
  void* p = allocate_cached(a, nbytes, stream, nbytes, sizes, dtype);
  uintptr_t block = reinterpret_cast<uintptr_t>(p);
  if ((block & (kBlockAlign - 1)) != 0 || worst_cost(block, hint) == 0) [[likely]] return p;
  const size_t slack = a.allocator.round_size(nbytes) - nbytes;
  uintptr_t shift = best_shift(block, hint, std::min<uintptr_t>(slack, kMaxShift) & ~(kStep - 1));
  if (worst_cost(block + shift, hint) != 0 && slack < kMaxShift) {
    memory::device_allocators::free(a, p);
    try {
      p = a.allocator.allocate(nbytes + kMaxShift, stream);
    } catch (const OutOfMemoryError&) {  // no room for the shift: unplaced, as any output
      return allocate_cached(a, nbytes, stream, nbytes, sizes, dtype);
    }
    block = reinterpret_cast<uintptr_t>(p);
    if ((block & (kBlockAlign - 1)) != 0) return p;
    shift = best_shift(block, hint, kMaxShift);
  }
  *shifted = shift != 0;
  return static_cast<char*>(p) + shift;
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
  size_t kept = 0, blocks = 0;
  release_thread_caches(&kept, &blocks);
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

std::string release_thread_caches_note() {
  size_t kept = 0, blocks = 0;
  if (release_thread_caches(&kept, &blocks) == 0) return {};
  return detail::str("The core had also released the blocks it cached on this thread (", kept + blocks, " bytes: ",
                     kept, " in kept small tensors, ", blocks, " in cached small blocks) and retried.");
}

[[noreturn, gnu::cold, gnu::noinline]] void rethrow_out_of_memory(const Operator& op, const OutOfMemoryError& e) {
  throw OutOfMemoryError(op.name() + ": " + e.what());
}

Tensor empty_on(IntArrayRef sizes, ScalarType dtype, Device device, const placement::Hint* hint) {
  const int64_t numel = checked::check_shape("empty", sizes, dtype);
  return allocate_contiguous(device_entry(device), device, sizes, numel, dtype, hint);
}

Tensor allocate_contiguous(const DeviceTypeEntry& e, Device device, IntArrayRef sizes, int64_t numel,
                           ScalarType dtype, const placement::Hint* hint) {
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
    const size_t request = small ? small_blocks::rounded(nbytes) : nbytes;
    if (e.core_allocator) [[likely]] {
      memory::DeviceAllocator& a = memory::device_allocators::get(e, device);
      StorageImpl::Deleter deleter = &allocator_deleter;
      if (ptr == nullptr) {
        if (hint != nullptr && hint->count != 0 && !small && e.desc.dlpack_device_type == kDLCPU &&
            e.desc.memory_alignment <= placement::kStep) {
          bool shifted = false;
          ptr = allocate_placed(a, request, stream_handle(stream.get()), sizes, dtype, *hint, &shifted);
          if (shifted) deleter = &placed_deleter;
        } else {
          ptr = allocate_cached(a, request, stream_handle(stream.get()), nbytes, sizes, dtype);
        }
        owner = PluginRef(e.plugin);
      }
      storage = Storage(new StorageImpl(ptr, nbytes, device, deleter, &a, std::move(owner)));
    } else {
      TsrStream handle = stream_handle(stream.get());
      TsrError* err =
          call_plugin([&] { return e.desc.allocate(e.desc.context, device.index(), request, handle, &ptr); });
      if (err != nullptr) [[unlikely]]
        ptr = allocate_under_pressure(e, device, request, handle, nbytes, sizes, dtype, err);
      owner = PluginRef(e.plugin);
      storage = Storage(new StorageImpl(ptr, nbytes, device, &device_deleter, const_cast<DeviceTypeEntry*>(&e),
                                        std::move(owner)));
    }
    if (stream) [[unlikely]] storage->set_stream(std::move(stream));
    if (small) storage->set_recyclable();
  }
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(std::move(storage), dtype, sizes)));
}

}  // namespace tessera
