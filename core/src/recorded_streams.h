// Internal: Tensor::record_stream on a device without the core's caching
// allocator (an asynchronous plugin that allocates for itself), and on DLPack
// imports of an asynchronous device.
//
// The plugin frees in the order of the allocation stream only, so when such a
// storage is freed the core first makes that stream wait (stream_wait_event)
// for the work queued so far on every stream record_stream named: the free is
// then ordered after that work too, and the host never blocks. Storages from
// the caching allocator keep their streams in the allocator instead. A DLPack
// import is freed by its producer, which knows nothing of Tessera's streams, so
// its deleter waits on the host for them (synchronize_all).
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
/// The same for a plugin stream handle Tessera does not own (a DLPack
/// consumer's stream): its owner keeps it valid until the storage is freed.
void add_handle(StorageImpl& storage, TsrStream stream);

/// Called by the storage's deleter before the plugin's deallocate on
/// `free_stream`: orders that stream after the recorded streams' work and
/// forgets the storage. A plugin failure is reported on stderr, and the stream
/// is then synchronized with the host instead (never freed too early). No throw.
void order_free(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream free_stream) noexcept;

/// Called by a DLPack import's deleter before the producer's deleter: blocks
/// until the work queued so far on `own` (the stream the import belongs to)
/// and on every recorded stream has completed, and forgets the storage. A
/// plugin failure is reported on stderr (the producer's deleter still runs
/// after the other streams). No throw.
void synchronize_all(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream own) noexcept;

}  // namespace tessera::recorded_streams
