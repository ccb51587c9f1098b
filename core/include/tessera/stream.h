// tessera/stream.h — streams and events: the order of work on a device.
//
// On an asynchronous device (TSR_DEVICE_CAP_ASYNC) kernels and copies are queued
// on a stream and the call returns before the work is done. Work queued on one
// stream runs in queue order; work on different streams may run in any order
// unless ordered with events (wait_event / wait_stream). Every op runs on the
// calling thread's *current stream* of its device (the device's default stream
// unless a StreamGuard or set_current_stream says otherwise). The rules a user
// and a plugin author rely on are in docs/streams.md.
//
// A synchronous device (cpu, meta) has only its default stream: its work is done
// when the call returns, its events complete when recorded, and creating a
// stream on it is a ValueError.
//
// Threading: Stream and Event are values that share their handle (thread-safe
// reference count). Their methods may be called from any thread; the current
// stream is per thread and per device.
//
// Lifetime: a created stream is destroyed (after its queued work completes,
// ABI) when its last Stream value goes; it keeps its plugin loaded until then.
// An event likewise. Errors from the plugin are thrown as tessera::Error naming
// the operation, the device and the plugin.
#pragma once

#include <tessera/abi.h>
#include <tessera/device.h>

#include <boost/intrusive_ptr.hpp>
#include <cstdint>
#include <string>

namespace tessera {

class StreamImpl;
class EventImpl;
void intrusive_ptr_add_ref(StreamImpl* p);
void intrusive_ptr_release(StreamImpl* p);
void intrusive_ptr_add_ref(EventImpl* p);
void intrusive_ptr_release(EventImpl* p);

class Event;

class Stream {
 public:
  /// The default stream of `device` (the plugin's NULL stream; never destroyed).
  static Stream default_stream(Device device = Device());
  /// A new stream on `device`, made by its plugin. ValueError on a synchronous
  /// device or an index the device type does not have; the plugin's error
  /// otherwise (e.g. out of resources).
  static Stream create(Device device);

  /// The default stream of the cpu device.
  Stream() : Stream(default_stream()) {}

  Device device() const { return device_; }
  bool is_default() const { return impl_ == nullptr; }
  /// The plugin's handle (NULL for the default stream), for kernels and copies.
  TsrStream handle() const;
  /// 0 for a default stream; a process-unique number for a created one.
  uint64_t id() const;

  /// Whether all work queued so far has completed (never blocks). It records
  /// an event and asks whether it completed (the ABI has no stream query), so
  /// on an idle asynchronous stream it may answer false until the device has
  /// processed that record, e.g. right after synchronize(): a false answer
  /// means "not yet known to be done", a true one is exact.
  bool query() const;
  /// Blocks the calling thread until all work queued so far has completed.
  void synchronize() const;
  /// Work queued on this stream from now on waits until `event` completes
  /// (the host does not block). An event never recorded is complete.
  void wait_event(const Event& event) const;
  /// Work queued on this stream from now on waits for the work queued on
  /// `other` so far (other's device must be this one's).
  void wait_stream(const Stream& other) const;
  /// Records a new event at the current end of this stream.
  Event record_event() const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && impl_ == o.impl_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }
  /// "Stream(sim:0, default)" or "Stream(sim:0, id 3)".
  std::string str() const;

 private:
  Stream(Device device, boost::intrusive_ptr<StreamImpl> impl) : device_(device), impl_(std::move(impl)) {}
  Device device_;
  boost::intrusive_ptr<StreamImpl> impl_;  // null: the default stream
  friend class StreamAccess;
};

/// The calling thread's current stream for `device`.
Stream current_stream(Device device = Device());
/// Makes `stream` the calling thread's current stream for its device and
/// returns the one it replaces.
Stream set_current_stream(const Stream& stream);
/// Blocks until all work on `device` (every stream) has completed.
void synchronize(Device device);

/// Makes a stream current for its device on this thread for the guard's
/// lifetime, then restores the previous one. Not movable; use on one thread.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) : previous_(set_current_stream(stream)) {}
  ~StreamGuard() { set_current_stream(previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

/// A marker in a stream's work. Created empty; bound to a device by its first
/// record (recording on another device later is a ValueError). An event never
/// recorded counts as complete.
class Event {
 public:
  /// `enable_timing`: the event can measure elapsed_time (ValueError at record
  /// on a device that cannot time).
  explicit Event(bool enable_timing = false);

  /// Records the event at the current end of `stream`'s work (again: it then
  /// marks the new position).
  void record(const Stream& stream);
  /// Whether the recorded work has completed (never blocks).
  bool query() const;
  /// Blocks the calling thread until the recorded work has completed.
  void synchronize() const;
  /// Makes `stream` wait for this event (same as stream.wait_event(*this)).
  void wait(const Stream& stream) const;
  /// Milliseconds from this event to `end`, both timing events, recorded on
  /// one device and completed (ValueError otherwise).
  double elapsed_time(const Event& end) const;

  bool recorded() const;
  bool timing() const;
  /// The device of the first record (ValueError before it).
  Device device() const;

 private:
  boost::intrusive_ptr<EventImpl> impl_;
  friend class StreamAccess;
};

}  // namespace tessera
