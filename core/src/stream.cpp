// Streams and events (tessera/stream.h) over a plugin's stream and event slots,
// and the calling thread's current stream per device (current_stream.h).
#include <tessera/error.h>
#include <tessera/storage.h>
#include <tessera/stream.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#include "abi_bridge.h"
#include "current_stream.h"
#include "device_registry.h"
#include "memory/device_allocators.h"
#include "plugin_host.h"

namespace tessera {

constinit thread_local uint32_t g_stream_overrides = 0;

namespace {

std::string where(const DeviceTypeEntry& e, Device d) {
  return detail::str(d.str(), " (plugin '", e.plugin_name, "')");
}

// The entry of a device that holds memory and exists; `what` names the caller.
const DeviceTypeEntry& checked_entry(Device d, const char* what) {
  const DeviceTypeEntry& e = device_entry(d);
  TSR_CHECK(d.index() < e.device_count, ValueError, what, ": device ", d.str(), " does not exist: device type '",
            e.name, "' has ", e.device_count, " device(s)");
  return e;
}

bool is_async(const DeviceTypeEntry& e) { return e.has(TSR_DEVICE_CAP_ASYNC) && !e.no_storage(); }

void check(TsrError* err, const DeviceTypeEntry& e, Device d, const char* what) {
  if (err != nullptr) throw_abi_error(err, detail::str(what, " on ", where(e, d)));
}

// Reports a plugin error where nothing can throw (destructors).
void report(TsrError* err, const DeviceTypeEntry& e, Device d, const char* what) noexcept {
  if (err == nullptr) return;
  const std::string message = take_error_message(err);
  std::fprintf(stderr, "[tessera] %s on %s failed: %s\n", what, where(e, d).c_str(), message.c_str());
}

uint32_t device_key(Device d) { return (uint32_t(d.type()) << 16) | uint32_t(d.index()); }

std::atomic<uint64_t> g_next_stream_id{1};

}  // namespace

// ---- StreamImpl -------------------------------------------------------------

class StreamImpl {
 public:
  StreamImpl(Device device, const DeviceTypeEntry& entry, TsrStream handle)
      : device_(device), entry_(entry), handle_(handle), owner_(entry.plugin),
        id_(g_next_stream_id.fetch_add(1, std::memory_order_relaxed)) {}
  ~StreamImpl() {
    // The allocator's cached memory of this stream goes back while the stream exists.
    if (memory::DeviceAllocator* a = memory::device_allocators::find(device_)) {
      try {
        a->allocator.release_stream(handle_);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[tessera] returning the cached memory of a stream of %s failed: %s\n",
                     device_.str().c_str(), e.what());
      }
    }
    report(call_plugin([&] { return entry_.desc.stream_destroy(entry_.desc.context, device_.index(), handle_); }),
           entry_, device_, "destroying a stream");
  }
  StreamImpl(const StreamImpl&) = delete;
  StreamImpl& operator=(const StreamImpl&) = delete;

  Device device_;
  const DeviceTypeEntry& entry_;
  TsrStream handle_;
  PluginRef owner_;  // the plugin stays loaded while its stream lives (ABI H20)
  uint64_t id_;
  std::atomic<uint32_t> refs_{0};
};

void intrusive_ptr_add_ref(StreamImpl* p) { p->refs_.fetch_add(1, std::memory_order_relaxed); }
void intrusive_ptr_release(StreamImpl* p) {
  if (p->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

// ---- EventImpl --------------------------------------------------------------

class EventImpl {
 public:
  explicit EventImpl(bool timing) : timing_(timing) {}
  ~EventImpl() {
    if (handle_ != nullptr)
      report(call_plugin([&] { return entry_->desc.event_destroy(entry_->desc.context, device_.index(), handle_); }),
             *entry_, device_, "destroying an event");
  }
  EventImpl(const EventImpl&) = delete;
  EventImpl& operator=(const EventImpl&) = delete;

  const bool timing_;
  std::mutex mutex_;  // guards everything below
  bool recorded_ = false;
  Device device_{Device()};
  const DeviceTypeEntry* entry_ = nullptr;
  TsrEvent handle_ = nullptr;  // async devices: made at the first record
  PluginRef owner_;
  // Synchronous devices: the work is done at record time, so the host clock times it.
  std::chrono::steady_clock::time_point host_time_{};
  std::atomic<uint32_t> refs_{0};
};

void intrusive_ptr_add_ref(EventImpl* p) { p->refs_.fetch_add(1, std::memory_order_relaxed); }
void intrusive_ptr_release(EventImpl* p) {
  if (p->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

// Reads a Stream's or Event's insides for code in this file.
class StreamAccess {
 public:
  static StreamImpl* impl(const Stream& s) { return s.impl_.get(); }
  static Stream make(Device d, boost::intrusive_ptr<StreamImpl> impl) { return Stream(d, std::move(impl)); }
  static EventImpl& impl(const Event& e) { return *e.impl_; }
};

// ---- Stream -----------------------------------------------------------------

Stream Stream::default_stream(Device device) {
  checked_entry(device, "default_stream");
  return StreamAccess::make(device, nullptr);
}

Stream Stream::create(Device device) {
  const DeviceTypeEntry& e = checked_entry(device, "Stream.create");
  TSR_CHECK(is_async(e), ValueError, "Stream.create: device ", device.str(), " (type '", e.name, "', plugin '",
            e.plugin_name, "') is synchronous: it has only its default stream");
  TSR_CHECK(!device_registry::retired(device.type()), UnavailableError, "Stream.create: the plugin '", e.plugin_name,
            "' of ", device.str(), " was unloaded");
  TsrStream handle = nullptr;
  check(call_plugin([&] { return e.desc.stream_create(e.desc.context, device.index(), &handle); }), e, device,
        "creating a stream");
  return StreamAccess::make(device, boost::intrusive_ptr<StreamImpl>(new StreamImpl(device, e, handle)));
}

TsrStream Stream::handle() const { return impl_ ? impl_->handle_ : nullptr; }
uint64_t Stream::id() const { return impl_ ? impl_->id_ : 0; }

bool Stream::query() const {
  const DeviceTypeEntry& e = device_entry(device_);
  if (!is_async(e)) return true;
  Event done;
  done.record(*this);
  return done.query();
}

void Stream::synchronize() const {
  const DeviceTypeEntry& e = device_entry(device_);
  if (!is_async(e)) return;
  check(call_plugin([&] { return e.desc.stream_synchronize(e.desc.context, device_.index(), handle()); }), e,
        device_, "synchronizing a stream");
}

void Stream::wait_event(const Event& event) const { event.wait(*this); }

void Stream::wait_stream(const Stream& other) const {
  TSR_CHECK(other.device_ == device_, ValueError, "wait_stream: ", str(), " cannot wait for ", other.str(),
            " of another device (record an event there and synchronize it)");
  if (other == *this || !is_async(device_entry(device_))) return;
  wait_event(other.record_event());
}

Event Stream::record_event() const {
  Event e;
  e.record(*this);
  return e;
}

std::string Stream::str() const {
  return impl_ ? detail::str("Stream(", device_.str(), ", id ", impl_->id_, ")")
               : detail::str("Stream(", device_.str(), ", default)");
}

// ---- current stream ---------------------------------------------------------

namespace {
// This thread's non-default current streams; g_stream_overrides is its size.
struct Overrides {
  std::vector<std::pair<uint32_t, Stream>> list;
  ~Overrides() { g_stream_overrides = 0; }
};
thread_local Overrides t_overrides;
}  // namespace

TsrStream current_stream_override(Device device) noexcept {
  const uint32_t key = device_key(device);
  for (const auto& [k, s] : t_overrides.list)
    if (k == key) return s.handle();
  return nullptr;
}

boost::intrusive_ptr<StreamImpl> current_stream_override_ref(Device device) {
  const uint32_t key = device_key(device);
  for (const auto& [k, s] : t_overrides.list)
    if (k == key) return boost::intrusive_ptr<StreamImpl>(StreamAccess::impl(s));
  return nullptr;
}

TsrStream stream_handle(const StreamImpl* stream) noexcept { return stream ? stream->handle_ : nullptr; }

Stream current_stream(Device device) {
  const uint32_t key = device_key(device);
  for (const auto& [k, s] : t_overrides.list)
    if (k == key) return s;
  return Stream::default_stream(device);
}

Stream set_current_stream(const Stream& stream) {
  const uint32_t key = device_key(stream.device());
  auto& list = t_overrides.list;
  Stream previous = StreamAccess::make(stream.device(), nullptr);
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].first != key) continue;
    previous = std::move(list[i].second);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  if (!stream.is_default()) list.emplace_back(key, stream);
  g_stream_overrides = static_cast<uint32_t>(list.size());
  return previous;
}

void synchronize(Device device) {
  const DeviceTypeEntry& e = checked_entry(device, "synchronize");
  if (!is_async(e)) return;
  check(call_plugin([&] { return e.desc.device_synchronize(e.desc.context, device.index()); }), e, device,
        "synchronizing the device");
}

// ---- Event ------------------------------------------------------------------

Event::Event(bool enable_timing) : impl_(new EventImpl(enable_timing)) {}

void Event::record(const Stream& stream) {
  EventImpl& ev = *impl_;
  const Device d = stream.device();
  const DeviceTypeEntry& e = checked_entry(d, "Event.record");
  std::lock_guard<std::mutex> lock(ev.mutex_);
  TSR_CHECK(ev.entry_ == nullptr || ev.device_ == d, ValueError, "Event.record: the event belongs to ",
            ev.device_.str(), " (its first record); it cannot be recorded on ", stream.str());
  if (!is_async(e)) {
    ev.device_ = d;
    ev.entry_ = &e;
    ev.host_time_ = std::chrono::steady_clock::now();
    ev.recorded_ = true;
    return;
  }
  if (ev.handle_ == nullptr) {
    TSR_CHECK(!ev.timing_ || e.desc.event_elapsed_time != nullptr, ValueError, "Event.record: ", where(e, d),
              " cannot time events (its plugin has no event_elapsed_time); create the event without timing");
    TsrEvent h = nullptr;
    if (e.desc.event_create_flags != nullptr) {
      const uint32_t flags = ev.timing_ ? TSR_EVENT_TIMING : 0;
      check(call_plugin([&] { return e.desc.event_create_flags(e.desc.context, d.index(), flags, &h); }), e, d,
            "creating an event");
    } else {
      check(call_plugin([&] { return e.desc.event_create(e.desc.context, d.index(), &h); }), e, d,
            "creating an event");
    }
    ev.handle_ = h;
    ev.device_ = d;
    ev.entry_ = &e;
    ev.owner_ = PluginRef(e.plugin);
  }
  check(call_plugin([&] { return e.desc.event_record(e.desc.context, d.index(), ev.handle_, stream.handle()); }), e,
        d, "recording an event");
  ev.recorded_ = true;
}

bool Event::query() const {
  EventImpl& ev = *impl_;
  std::lock_guard<std::mutex> lock(ev.mutex_);
  if (!ev.recorded_ || ev.handle_ == nullptr) return true;
  int32_t done = 0;
  const DeviceTypeEntry& e = *ev.entry_;
  check(call_plugin([&] { return e.desc.event_query(e.desc.context, ev.device_.index(), ev.handle_, &done); }), e,
        ev.device_, "querying an event");
  return done != 0;
}

void Event::synchronize() const {
  EventImpl& ev = *impl_;
  TsrEvent h;
  const DeviceTypeEntry* e;
  Device d;
  {
    std::lock_guard<std::mutex> lock(ev.mutex_);
    if (!ev.recorded_ || ev.handle_ == nullptr) return;
    h = ev.handle_, e = ev.entry_, d = ev.device_;
  }
  // Not under the lock: another thread may record or query meanwhile.
  check(call_plugin([&] { return e->desc.event_synchronize(e->desc.context, d.index(), h); }), *e, d,
        "synchronizing an event");
}

void Event::wait(const Stream& stream) const {
  EventImpl& ev = *impl_;
  std::lock_guard<std::mutex> lock(ev.mutex_);
  if (!ev.recorded_ || ev.handle_ == nullptr) return;  // complete: nothing to wait for
  // Across devices of one type (peer copies); the plugin's events span its devices.
  TSR_CHECK(ev.device_.type() == stream.device().type(), ValueError, "wait_event: an event of ", ev.device_.str(),
            " cannot order ", stream.str(), " of another device type (synchronize the event on the host instead)");
  const DeviceTypeEntry& e = *ev.entry_;
  check(call_plugin(
            [&] { return e.desc.stream_wait_event(e.desc.context, stream.device().index(), stream.handle(), ev.handle_); }),
        e, stream.device(), "making a stream wait for an event");
}

double Event::elapsed_time(const Event& end) const {
  EventImpl& a = *impl_;
  EventImpl& b = *end.impl_;
  TSR_CHECK(a.timing_ && b.timing_, ValueError, "elapsed_time: both events must be created with enable_timing=True");
  std::unique_lock<std::mutex> la(a.mutex_, std::defer_lock), lb(b.mutex_, std::defer_lock);
  if (&a == &b) {
    la.lock();
  } else {
    std::lock(la, lb);
  }
  TSR_CHECK(a.recorded_ && b.recorded_, ValueError, "elapsed_time: both events must be recorded first");
  TSR_CHECK(a.device_ == b.device_, ValueError, "elapsed_time: the events were recorded on ", a.device_.str(),
            " and ", b.device_.str());
  if (a.handle_ == nullptr) {  // synchronous device: host timestamps
    return std::chrono::duration<double, std::milli>(b.host_time_ - a.host_time_).count();
  }
  const DeviceTypeEntry& e = *a.entry_;
  float ms = 0;
  check(call_plugin([&] { return e.desc.event_elapsed_time(e.desc.context, a.device_.index(), a.handle_, b.handle_, &ms); }),
        e, a.device_, "measuring the time between events");
  return ms;
}

bool Event::recorded() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->recorded_;
}
bool Event::timing() const { return impl_->timing_; }
Device Event::device() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  TSR_CHECK(impl_->entry_ != nullptr, ValueError, "Event.device: the event was never recorded");
  return impl_->device_;
}

}  // namespace tessera
