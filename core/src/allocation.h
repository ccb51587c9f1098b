// Internal: new tensors on a device. The plugin allocates; the core keeps
// small freed blocks and dead tensors per thread (small_block_cache.h,
// tensor_cache.h) and releases them before reporting out of memory.
// Thread-safe: the caches are per thread, the plugin's allocator is its own.
#pragma once

#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/tensor.h>

#include "device_registry.h"

namespace tessera {

namespace placement {
struct Hint;
}

/// Creates an uninitialized tensor on a device (used by rules and factories).
/// When the plugin runs out of memory, the core releases the blocks it caches
/// on the calling thread (kept small tensors, small blocks) and asks once more;
/// then OutOfMemoryError naming the bytes, dtype and shape, the device, the
/// plugin and what was released (the plugin's message says what it released).
/// `hint` (may be null; read during the call only) names the inputs of the op
/// the tensor is the output of: on a host device with the core's allocator, its
/// data is placed away from their page offsets (output_placement.h).
Tensor empty_on(IntArrayRef sizes, ScalarType dtype, Device device, const placement::Hint* hint = nullptr);
/// The caching allocators' release hook (CachingAllocator::set_cache_release_hook):
/// returns this thread's kept small tensors and small blocks to their
/// allocators; says what it returned ("" for nothing).
std::string release_thread_caches_note();
/// Throws `e` again with "<op name>: " in front (an op's output allocation failed).
[[noreturn, gnu::cold, gnu::noinline]] void rethrow_out_of_memory(const Operator& op, const OutOfMemoryError& e);
/// Whether the storage's memory came from the core's caching allocator.
bool is_allocator_storage(const StorageImpl& s) noexcept;
/// The start of the allocator block holding s's memory: s.data(), or before it
/// for an output placed by a hint (empty_on).
void* allocation_start(const StorageImpl& s) noexcept;
/// Tensor::record_stream for a plugin stream handle of t's device that
/// Tessera does not own (a DLPack consumer's, docs/dlpack.md): the memory is
/// not reused (caching allocator), freed (plugin allocator) or handed back to
/// its DLPack producer before the work queued on `stream` by then completes.
/// The stream's owner keeps it valid until the storage is freed.
void record_stream_handle(const Tensor& t, TsrStream stream);
/// Whether the storage wraps memory imported through DLPack (dlpack.cpp).
bool is_dlpack_import(const StorageImpl& s) noexcept;
/// Whether the storage is pinned host memory (of device type `type`, unless kAnyDeviceType).
inline constexpr DeviceTypeId kAnyDeviceType = 0xFF;
bool is_pinned_storage(const StorageImpl& s, DeviceTypeId type = kAnyDeviceType) noexcept;
/// An uninitialized contiguous cpu tensor in pinned host memory of `pinner`'s
/// device type (its plugin has the host slots). OutOfMemoryError when none is left.
Tensor empty_pinned(IntArrayRef sizes, ScalarType dtype, const DeviceTypeEntry& pinner);
/// empty_on for a caller that knows `sizes` are valid (none negative) and
/// `numel` is their product: `e` is device's entry.
Tensor allocate_contiguous(const DeviceTypeEntry& e, Device device, IntArrayRef sizes, int64_t numel, ScalarType dtype,
                           const placement::Hint* hint = nullptr);

}  // namespace tessera
