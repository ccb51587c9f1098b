// memory/device_memory.h — what the caching allocator needs from one device.
//
// The caching allocator (caching_allocator.h) is device-generic: it sees a device
// only through this interface. The core implements it over a plugin's
// TsrDeviceTypeDesc (raw stream-ordered allocate/free, events, and the optional
// address-space slots); tests and benchmarks implement it with fakes.
#pragma once

#include <cstddef>
#include <string>

#include <tessera/abi.h>

namespace tessera::memory {

/// One device's raw memory, streams' events and (optionally) address-space slots.
/// Thread-safe: called concurrently from any thread. Streams are the plugin's
/// TsrStream handles (NULL = default stream); events are TsrEvent handles.
///
/// Lifetime: the object outlives every CachingAllocator built over it.
/// Errors: functions that may fail throw tessera::Error (except where a return
/// value reports the expected failure, out of memory); noexcept functions
/// cannot report failure (the allocator has nothing better to do than go on).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  /// The device for messages, e.g. "sim:0".
  virtual std::string device_name() const = 0;
  /// TSR_DEVICE_CAP_ASYNC: work is queued on streams. When false, streams and
  /// events are never used (record_stream is a no-op).
  virtual bool async() const = 0;
  /// The alignment of raw allocations (a power of two).
  virtual size_t alignment() const = 0;
  /// Raw memory of `nbytes`, usable in `stream`'s order. nullptr when the device
  /// is out of memory (*oom_message, when not null, gets the plugin's words);
  /// throws tessera::Error for any other failure.
  virtual void* allocate(size_t nbytes, TsrStream stream, std::string* oom_message) = 0;
  /// Returns memory from allocate(); stream-ordered: the device may reuse it
  /// only after the work queued on `stream` so far has completed.
  virtual void deallocate(void* ptr, size_t nbytes, TsrStream stream) noexcept = 0;
  /// A new event; throws on failure. The allocator pools its events.
  virtual TsrEvent event_create() = 0;
  virtual void event_destroy(TsrEvent event) noexcept = 0;
  /// Records `event` at the current end of `stream`'s queue.
  virtual void event_record(TsrEvent event, TsrStream stream) = 0;
  /// Whether the work before the event's last record has completed; never blocks.
  virtual bool event_query(TsrEvent event) = 0;
  /// Blocks until the event has completed.
  virtual void event_synchronize(TsrEvent event) = 0;
  /// Blocks until all queued work on every stream has completed.
  virtual void device_synchronize() = 0;
  /// The device's memory capacity in bytes; 0 when the device cannot tell.
  virtual size_t total_memory() = 0;

  // Expandable segments; supported only when expandable() (then granularity() > 0).
  virtual bool expandable() const = 0;
  /// The mapping unit: va_map/va_unmap addresses and sizes are its multiples.
  virtual size_t granularity() = 0;
  /// Reserves `nbytes` of address space (no memory); nullptr when none is left.
  virtual void* va_reserve(size_t nbytes) = 0;
  virtual void va_release(void* base, size_t nbytes) noexcept = 0;
  /// Backs [addr, addr + nbytes) of a reservation with memory; false when the
  /// device is out of memory (*oom_message gets the plugin's words).
  virtual bool va_map(void* addr, size_t nbytes, std::string* oom_message) = 0;
  /// Removes the backing; only after the range's queued work has completed.
  virtual void va_unmap(void* addr, size_t nbytes) noexcept = 0;
};

}  // namespace tessera::memory
