// Internal: Tensor::record_stream on a device without the core's caching
// allocator (an asynchronous plugin that allocates for itself).
//
// The plugin frees in the order of the allocation stream only, so when such a
// storage is freed the core first makes that stream wait (stream_wait_event)
// for the work queued so far on every stream record_stream named: the free is
// then ordered after that work too, and the host never blocks. Storages from
// the caching allocator keep their streams in the allocator instead.
//
// Thread-safe (one mutex; the deleter's check is one relaxed load while no
// storage has recorded streams).
#pragma once

#include <tessera/abi.h>
#include <tessera/storage.h>
#include <tessera/stream.h>

#include <atomic>
#include <cstdint>

#include "device_registry.h"

namespace tessera::recorded_streams {

extern std::atomic<uint32_t> g_storages;
/// Whether any storage has recorded streams (the deleter's fast check).
inline bool any() noexcept { return g_storages.load(std::memory_order_relaxed) != 0; }

/// Remembers that `storage`'s memory is used on `stream` (a stream of its device
/// other than its allocation stream); the storage keeps the stream alive.
void add(StorageImpl& storage, const Stream& stream);

/// Called by the storage's deleter before the plugin's deallocate on
/// `free_stream`: orders that stream after the recorded streams' work and
/// forgets the storage. A plugin failure is reported on stderr, and the stream
/// is then synchronized with the host instead (never freed too early). No throw.
void order_free(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream free_stream) noexcept;

}  // namespace tessera::recorded_streams
