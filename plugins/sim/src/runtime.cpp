// The simulated device (runtime.hpp): streams, events, memory, copies.
#include "runtime.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace tessera::sim {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void invalid(const std::string& message) { throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, message); }

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  return buf;
}

/// "1.50 GiB (1610612736 bytes)"
std::string bytes_text(size_t n) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (n >= (size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", v / double(size_t{1} << 30));
  else if (n >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", v / double(size_t{1} << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024.0);
  else return std::to_string(n) + " bytes";
  return std::string(buf) + " (" + std::to_string(n) + " bytes)";
}

bool round_up(size_t n, size_t to, size_t* out) {
  if (n > SIZE_MAX - (to - 1)) return false;
  *out = (n + to - 1) / to * to;
  return true;
}

// ---- work items other than kernels (kernels.cpp has those) ----

/// Completes an event's record when the queue reaches it.
class EventMarker final : public Work {
 public:
  EventMarker(std::shared_ptr<Event> event, uint64_t record) : event_(std::move(event)), record_(record) {}
  bool is_launch() const override { return false; }
  void run() override {
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard<std::mutex> lock(event_->mutex);
      event_->pending.erase(record_);
      if (record_ == event_->recorded) {
        event_->time = now;
        event_->timed = true;
      }
    }
    event_->cv.notify_all();
  }

 private:
  std::shared_ptr<Event> event_;
  uint64_t record_;
};

/// stream_wait_event: the queue stops here until the event's record completes.
class EventWait final : public Work {
 public:
  EventWait(std::shared_ptr<Event> event, uint64_t record) : event_(std::move(event)), record_(record) {}
  bool is_launch() const override { return false; }
  void run() override {
    std::unique_lock<std::mutex> lock(event_->mutex);
    event_->cv.wait(lock, [&] { return event_->complete(record_); });
  }

 private:
  std::shared_ptr<Event> event_;
  uint64_t record_;
};

/// A byte copy. Its source is the caller's memory (pinned or device) read when
/// the queue reaches it, or a staging buffer filled when the copy was issued.
class CopyWork final : public Work {
 public:
  CopyWork(void* dst, const void* src, size_t nbytes, std::unique_ptr<std::byte[]> staging,
           std::optional<Sim::PinnedUse> pinned)
      : dst_(dst), src_(src), nbytes_(nbytes), staging_(std::move(staging)), pinned_(std::move(pinned)) {}
  bool is_launch() const override { return true; }
  void run() override { std::memmove(dst_, staging_ ? staging_.get() : src_, nbytes_); }

 private:
  void* dst_;
  const void* src_;
  size_t nbytes_;
  std::unique_ptr<std::byte[]> staging_;
  std::optional<Sim::PinnedUse> pinned_;  // released when the item is destroyed, after run
};

/// The stream-ordered half of deallocate: the block returns to the arena when
/// the queue reaches it, so work queued before the free still sees its bytes.
class FreeWork final : public Work {
 public:
  FreeWork(Device& device, void* ptr) : device_(device), ptr_(ptr) {}
  bool is_launch() const override { return false; }
  void run() override {
    std::lock_guard<std::mutex> lock(device_.mutex);
    device_.arena->free(ptr_);
    device_.freeing.erase(reinterpret_cast<uintptr_t>(ptr_));
  }

 private:
  Device& device_;
  void* ptr_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------

Stream::Stream(int32_t device, uint32_t id, std::string name, uint64_t latency_us)
    : device_(device),
      id_(id),
      name_(std::move(name)),
      latency_(std::chrono::microseconds(latency_us)),
      worker_([this] { worker_main(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  worker_.join();
}

uint64_t Stream::push(std::unique_ptr<Work> work) {
  queue_.push_back(std::move(work));
  work_cv_.notify_one();
  return ++submitted_;
}

void Stream::worker_main() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::unique_ptr<Work> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (latency_.count() > 0 && work->is_launch()) std::this_thread::sleep_for(latency_);
    std::optional<sdk::Error> failure;
    try {
      work->run();
    } catch (const sdk::Error& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure = sdk::Error(TSR_ERROR_INTERNAL, std::string("sim worker: ") + e.what());
    } catch (...) {
      failure = sdk::Error(TSR_ERROR_INTERNAL, "sim worker: unknown exception");
    }
    work.reset();  // release what it holds (staging buffer, pinned block) before it counts as done
    lock.lock();
    if (failure && !error_) error_ = std::move(failure);
    ++completed_;
    done_cv_.notify_all();
  }
}

void Stream::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return completed_ >= ticket; });
}

std::optional<sdk::Error> Stream::take_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<sdk::Error> e = std::move(error_);
  error_.reset();
  return e;
}

// ---------------------------------------------------------------------------
// Sim: handles and streams
// ---------------------------------------------------------------------------

Sim::Sim(const Config& config, const TsrHostApi* host) : config_(config), host_(host) {
  if (config_.check != CheckMode::kOff) {
    checker_ = std::make_unique<Checker>(config_.check, config_.devices,
                                         [this](int32_t level, const std::string& m) { log(level, m); });
  }
  for (int32_t i = 0; i < config_.devices; ++i)
    devices_.push_back(std::make_unique<Device>(i, static_cast<size_t>(config_.memory_bytes())));
}

Sim::~Sim() {
  // Streams first (their queues may hold frees that touch the devices), then
  // events, then the devices with their memory.
  std::unordered_map<const void*, std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    streams.swap(streams_);
    events_.clear();
  }
  streams.clear();
  for (auto& d : devices_) d->default_stream.reset();
  for (auto& d : devices_) {
    for (const auto& [base, bytes] : d->reservations) ::munmap(reinterpret_cast<void*>(base), bytes);
  }
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  for (const auto& [ptr, block] : pinned_) std::free(reinterpret_cast<void*>(ptr));
}

void Sim::log(int32_t level, const std::string& message) const {
  if (host_ != nullptr && host_->struct_size >= offsetof(TsrHostApi, log) + sizeof(host_->log) &&
      host_->log != nullptr) {
    host_->log(host_->context, level, message.c_str());
  }
}

Device& Sim::device(int32_t index) {
  if (index < 0 || index >= config_.devices) {
    throw sdk::Error(TSR_ERROR_OUT_OF_RANGE, "sim: device index " + std::to_string(index) + " is out of range (" +
                                                 std::to_string(config_.devices) +
                                                 " sim device(s); TESSERA_SIM devices=N sets the count)");
  }
  return *devices_[static_cast<size_t>(index)];
}

std::shared_ptr<Stream> Sim::make_stream(Device& d, bool is_default, uint64_t latency_us) {
  const uint32_t id = next_stream_id_.fetch_add(1);
  const std::string name = "sim:" + std::to_string(d.index) +
                           (is_default ? std::string(" default stream") : " stream " + std::to_string(id));
  if (checker_) checker_->add_stream(id, name);
  return std::make_shared<Stream>(d.index, id, name, latency_us);
}

std::shared_ptr<Stream> Sim::default_stream(Device& d) {
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!d.default_stream) {
    d.default_stream = make_stream(d, true, config_.latency_us);
    d.streams.push_back(d.default_stream);
  }
  return d.default_stream;
}

std::shared_ptr<Stream> Sim::stream(int32_t index, TsrStream handle) {
  Device& d = device(index);
  if (handle == nullptr) return default_stream(d);
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    const auto it = streams_.find(handle);
    if (it != streams_.end()) s = it->second;
  }
  if (!s) invalid("sim: unknown stream handle " + hex(handle) + " (destroyed, or not created by this plugin)");
  if (s->device() != index) {
    invalid("sim: " + s->name() + " belongs to sim:" + std::to_string(s->device()) + ", not to sim:" +
            std::to_string(index));
  }
  return s;
}

std::shared_ptr<Event> Sim::event(TsrEvent handle) {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  const auto it = events_.find(handle);
  if (it == events_.end()) invalid("sim: unknown event handle " + hex(handle) + " (destroyed, or not created by this plugin)");
  return it->second;
}

std::vector<std::shared_ptr<Stream>> Sim::streams_of(Device& d) {
  std::vector<std::shared_ptr<Stream>> out;
  std::lock_guard<std::mutex> lock(d.mutex);
  for (auto it = d.streams.begin(); it != d.streams.end();) {
    if (auto s = it->lock()) {
      out.push_back(std::move(s));
      ++it;
    } else {
      it = d.streams.erase(it);
    }
  }
  return out;
}

uint64_t Sim::enqueue(Stream& stream, const std::string& op, const std::vector<MemoryRange>& ranges,
                      std::unique_ptr<Work> work, VectorClock* clock) {
  std::unique_lock<std::mutex> lock = stream.lock();
  if (checker_) {
    checker_->on_launch(stream.id(), op, ranges);  // throws on a violation with check=error
    if (clock != nullptr) *clock = checker_->stream_clock(stream.id());
  }
  return stream.push(std::move(work));
}

void Sim::synchronize(Stream& stream) {
  uint64_t ticket;
  VectorClock clock;
  {
    std::unique_lock<std::mutex> lock = stream.lock();
    ticket = stream.submitted();
    if (checker_) clock = checker_->stream_clock(stream.id());
  }
  stream.wait(ticket);
  if (checker_) checker_->host_learned(clock);
  if (std::optional<sdk::Error> e = stream.take_error()) throw *e;
}

void Sim::run_inline(Stream& stream, const std::string& op, const std::vector<MemoryRange>& ranges,
                     const std::function<void()>& body) {
  synchronize(stream);
  VectorClock clock;
  if (checker_) {
    std::unique_lock<std::mutex> lock = stream.lock();
    checker_->on_launch(stream.id(), op, ranges);
    clock = checker_->stream_clock(stream.id());
  }
  body();
  if (checker_) checker_->host_learned(clock);  // it ran to completion on this thread
}

void Sim::quiesce(Device& d) {
  for (const std::shared_ptr<Stream>& s : streams_of(d)) {
    uint64_t ticket;
    {
      std::unique_lock<std::mutex> lock = s->lock();
      ticket = s->submitted();
    }
    s->wait(ticket);
  }
}

// ---------------------------------------------------------------------------
// Device, streams and events
// ---------------------------------------------------------------------------

std::string Sim::describe(int32_t index) {
  device(index);
  return "simulated asynchronous device (host memory; " + std::to_string(config_.memory_mb) +
         " MiB; launch latency " + std::to_string(config_.latency_us) + " us; checker " +
         check_mode_name(config_.check) + ")";
}

TsrStream Sim::stream_create(int32_t index) {
  Device& d = device(index);
  const uint64_t latency = parse_stream_latency(std::getenv("TESSERA_SIM_STREAM_LATENCY_US"), config_.latency_us);
  std::shared_ptr<Stream> s = make_stream(d, false, latency);
  const auto handle = reinterpret_cast<TsrStream>(s.get());
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    d.streams.push_back(s);
  }
  std::lock_guard<std::mutex> lock(handles_mutex_);
  streams_.emplace(handle, std::move(s));
  return handle;
}

void Sim::stream_destroy(int32_t index, TsrStream handle) {
  if (handle == nullptr) invalid("sim: stream_destroy of the default (NULL) stream");
  std::shared_ptr<Stream> s = stream(index, handle);
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    streams_.erase(handle);
  }
  // Its pending work completes first (ABI: "after its pending work completes").
  uint64_t ticket;
  {
    std::unique_lock<std::mutex> lock = s->lock();
    ticket = s->submitted();
  }
  s->wait(ticket);
  if (std::optional<sdk::Error> e = s->take_error()) {
    log(TSR_LOG_WARNING, s->name() + " was destroyed with an error nobody synchronized to see: " + e->what());
  }
  // The worker is joined when the last reference goes (here, unless a call on
  // another thread still holds one).
}

void Sim::stream_synchronize(int32_t index, TsrStream handle) { synchronize(*stream(index, handle)); }

void Sim::device_synchronize(int32_t index) {
  std::optional<sdk::Error> first;
  for (const std::shared_ptr<Stream>& s : streams_of(device(index))) {
    try {
      synchronize(*s);
    } catch (const sdk::Error& e) {
      if (!first) first = e;
    }
  }
  if (first) throw *first;
}

TsrEvent Sim::event_create(int32_t index, uint32_t flags) {
  device(index);
  if ((flags & ~TSR_EVENT_TIMING) != 0) {
    invalid("sim: event_create_flags: unknown flag bits " + std::to_string(flags & ~TSR_EVENT_TIMING) +
            " (known: TSR_EVENT_TIMING = 1)");
  }
  auto e = std::make_shared<Event>(index, flags);
  const auto handle = reinterpret_cast<TsrEvent>(e.get());
  std::lock_guard<std::mutex> lock(handles_mutex_);
  events_.emplace(handle, std::move(e));
  return handle;
}

void Sim::event_destroy(int32_t index, TsrEvent handle) {
  device(index);
  std::shared_ptr<Event> e;
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    const auto it = events_.find(handle);
    if (it == events_.end()) invalid("sim: event_destroy of an unknown event handle " + hex(handle));
    e = std::move(it->second);
    events_.erase(it);
  }
  // Queued markers and waits hold the event's state until they have run.
  if (checker_) checker_->on_event_destroyed(e.get());
}

void Sim::event_record(int32_t index, TsrEvent handle, TsrStream stream_handle) {
  const std::shared_ptr<Event> e = event(handle);
  if (e->device != index) {
    invalid("sim: event_record on sim:" + std::to_string(index) + " of an event created on sim:" +
            std::to_string(e->device));
  }
  const std::shared_ptr<Stream> s = stream(index, stream_handle);
  std::unique_lock<std::mutex> lock = s->lock();
  uint64_t record;
  {
    std::lock_guard<std::mutex> event_lock(e->mutex);
    record = ++e->recorded;
    e->pending.insert(record);
    e->timed = false;
    e->stream = s;
  }
  if (checker_) checker_->on_record(s->id(), e.get(), record);
  s->push(std::make_unique<EventMarker>(e, record));
}

bool Sim::event_query(int32_t index, TsrEvent handle) {
  device(index);
  const std::shared_ptr<Event> e = event(handle);
  uint64_t record;
  bool done;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    record = e->recorded;
    done = e->complete(record);
  }
  if (done && checker_) checker_->host_learned_event(e.get(), record);
  return done;
}

void Sim::event_synchronize(int32_t index, TsrEvent handle) {
  device(index);
  const std::shared_ptr<Event> e = event(handle);
  uint64_t record;
  std::shared_ptr<Stream> s;
  {
    std::unique_lock<std::mutex> lock(e->mutex);
    record = e->recorded;
    s = e->stream.lock();
    e->cv.wait(lock, [&] { return e->complete(record); });
  }
  if (checker_) checker_->host_learned_event(e.get(), record);
  if (s) {
    if (std::optional<sdk::Error> err = s->take_error()) throw *err;
  }
}

void Sim::stream_wait_event(int32_t index, TsrStream stream_handle, TsrEvent handle) {
  const std::shared_ptr<Event> e = event(handle);
  const std::shared_ptr<Stream> s = stream(index, stream_handle);
  std::unique_lock<std::mutex> lock = s->lock();
  uint64_t record;
  bool done;
  {
    std::lock_guard<std::mutex> event_lock(e->mutex);
    record = e->recorded;
    done = e->complete(record);
  }
  if (checker_) checker_->on_wait(s->id(), e.get());
  if (!done) s->push(std::make_unique<EventWait>(e, record));  // a completed record needs no wait
}

float Sim::event_elapsed_time(int32_t index, TsrEvent start_handle, TsrEvent end_handle) {
  device(index);
  // The time its latest record completed at, or INVALID_ARGUMENT saying why there is none.
  auto completed_at = [this](TsrEvent handle, const char* which) {
    const std::shared_ptr<Event> e = event(handle);
    const std::string what = std::string("sim: event_elapsed_time: the ") + which + " event ";
    if ((e->flags & TSR_EVENT_TIMING) == 0) invalid(what + "was not created with TSR_EVENT_TIMING");
    std::lock_guard<std::mutex> lock(e->mutex);
    if (e->recorded == 0) invalid(what + "was never recorded");
    if (!e->complete(e->recorded) || !e->timed) invalid(what + "has not completed yet");
    return e->time;
  };
  const Clock::time_point start = completed_at(start_handle, "start"), end = completed_at(end_handle, "end");
  return std::chrono::duration<float, std::milli>(end - start).count();
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

void Sim::out_of_memory(const Device& d, size_t nbytes, const std::string& detail) const {
  throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY,
                   "sim:" + std::to_string(d.index) + " is out of memory: cannot allocate " + bytes_text(nbytes) +
                       "; " + bytes_text(d.used) + " of its " + bytes_text(d.capacity) + " capacity in use" + detail +
                       " (TESSERA_SIM memory_mb sets the capacity)");
}

void* Sim::allocate(int32_t index, size_t nbytes, TsrStream stream_handle) {
  Device& d = device(index);
  if (stream_handle != nullptr) stream(index, stream_handle);  // checks the handle; the memory is usable at once
  if (nbytes == 0) invalid("sim: allocate of 0 bytes");
  if (config_.alloc_latency_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(config_.alloc_latency_us));
  size_t bytes;
  if (!round_up(nbytes, Arena::kAlignment, &bytes)) out_of_memory(d, nbytes, "");
  std::lock_guard<std::mutex> lock(d.mutex);
  if (bytes > d.capacity - d.used) out_of_memory(d, nbytes, "");
  // The arena spans twice the capacity: capacity returns when deallocate is
  // called, the bytes when the queue reaches the free, so blocks whose free is
  // still queued must not starve new allocations.
  if (!d.arena) d.arena = std::make_unique<Arena>(2 * d.capacity);
  void* p = d.arena->allocate(bytes);
  if (p == nullptr) {
    out_of_memory(d, nbytes, ", and no free block is large enough (the largest is " +
                                 bytes_text(d.arena->largest_free()) +
                                 "; frees still queued behind unfinished work hold the rest)");
  }
  d.used += bytes;
  return p;
}

void Sim::deallocate(int32_t index, void* ptr, size_t nbytes, TsrStream stream_handle) noexcept {
  try {
    Device& d = device(index);
    std::shared_ptr<Stream> s;
    try {
      s = stream(index, stream_handle);
    } catch (const sdk::Error& e) {
      log(TSR_LOG_ERROR, std::string("sim: deallocate: ") + e.what() + "; freeing on the default stream");
      s = stream(index, nullptr);
    }
    size_t bytes = 0;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    {
      std::lock_guard<std::mutex> lock(d.mutex);
      if (!round_up(nbytes, Arena::kAlignment, &bytes) || !d.arena || d.arena->size_of(ptr) != bytes ||
          d.freeing.count(p) != 0) {
        log(TSR_LOG_ERROR, "sim: deallocate of " + hex(ptr) + " (" + std::to_string(nbytes) + " bytes) on sim:" +
                               std::to_string(index) +
                               ", which is not a live allocation of that size (a double free, or another pointer); "
                               "ignored");
        return;
      }
      d.freeing.insert(p);
      d.used -= bytes;
    }
    std::unique_lock<std::mutex> lock = s->lock();
    if (checker_) checker_->on_free(s->id(), index, p, p + bytes);
    s->push(std::make_unique<FreeWork>(d, ptr));
  } catch (const std::exception& e) {
    log(TSR_LOG_ERROR, std::string("sim: deallocate failed: ") + e.what());
  }
}

void Sim::memory_info(int32_t index, size_t* free_bytes, size_t* total_bytes) {
  Device& d = device(index);
  std::lock_guard<std::mutex> lock(d.mutex);
  *free_bytes = d.capacity - d.used;
  *total_bytes = d.capacity;
}

void Sim::check_device_memory(Device& d, const void* ptr, size_t nbytes, const char* what) {
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr || begin > UINTPTR_MAX - nbytes) invalid(std::string("sim: copy: the ") + what + " is NULL");
  const uintptr_t end = begin + nbytes;
  std::lock_guard<std::mutex> lock(d.mutex);
  if (d.arena && d.arena->contains(begin, end)) return;
  // Or mapped granules of an expandable segment, possibly several adjacent maps.
  auto it = d.mapped.upper_bound(begin);
  if (it != d.mapped.begin()) {
    --it;
    uintptr_t covered = begin;
    while (it != d.mapped.end() && it->first <= covered && it->first + it->second > covered) {
      covered = it->first + it->second;
      if (covered >= end) return;
      ++it;
    }
  }
  invalid(std::string("sim: copy: the ") + what + " [" + hex(ptr) + ", +" + std::to_string(nbytes) +
          ") is not memory allocated on sim:" + std::to_string(d.index));
}

std::optional<Sim::PinnedUse> Sim::pin(const void* ptr, size_t nbytes) {
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  auto it = pinned_.upper_bound(begin);
  if (it == pinned_.begin()) return std::nullopt;
  --it;
  if (begin + nbytes > it->first + it->second.bytes) return std::nullopt;  // not (wholly) pinned
  ++it->second.in_flight;
  return PinnedUse(this, it->first);
}

Sim::PinnedUse::~PinnedUse() {
  if (sim_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(sim_->pinned_mutex_);
    --sim_->pinned_.at(block_).in_flight;
  }
  sim_->pinned_cv_.notify_all();
}

void Sim::copy(const TsrCopyRequest& r) {
  if (r.struct_size < offsetof(TsrCopyRequest, stream) + sizeof(r.stream)) {
    invalid("sim: copy: TsrCopyRequest.struct_size " + std::to_string(r.struct_size) + " is too small");
  }
  if (r.nbytes == 0) invalid("sim: copy of 0 bytes");
  const size_t n = r.nbytes;
  const auto dst = reinterpret_cast<uintptr_t>(r.dst), src = reinterpret_cast<uintptr_t>(r.src);
  switch (r.kind) {
    case TSR_COPY_HOST_TO_DEVICE: {
      Device& d = device(r.dst_device_index);
      const std::shared_ptr<Stream> s = stream(d.index, r.stream);
      check_device_memory(d, r.dst, n, "destination");
      if (r.src == nullptr) invalid("sim: copy: the source is NULL");
      // Pinned source: read when the queue reaches the copy. Pageable source:
      // staged now, so the caller may reuse its buffer as soon as we return.
      std::optional<PinnedUse> pinned = pin(r.src, n);
      std::unique_ptr<std::byte[]> staging;
      if (!pinned) {
        staging.reset(new std::byte[n]);
        std::memcpy(staging.get(), r.src, n);
      }
      enqueue(*s, "copy (host to device)", {{d.index, dst, dst + n, true}},
              std::make_unique<CopyWork>(r.dst, r.src, n, std::move(staging), std::move(pinned)));
      return;
    }
    case TSR_COPY_DEVICE_TO_HOST: {
      Device& d = device(r.src_device_index);
      const std::shared_ptr<Stream> s = stream(d.index, r.stream);
      check_device_memory(d, r.src, n, "source");
      if (r.dst == nullptr) invalid("sim: copy: the destination is NULL");
      std::optional<PinnedUse> pinned = pin(r.dst, n);
      const bool is_pinned = pinned.has_value();
      VectorClock clock;
      const uint64_t ticket = enqueue(*s, "copy (device to host)", {{d.index, src, src + n, false}},
                                      std::make_unique<CopyWork>(r.dst, r.src, n, nullptr, std::move(pinned)), &clock);
      if (is_pinned) return;  // the host waits for an event or the stream before reading
      // Pageable destination: like cudaMemcpyAsync, the call returns once the
      // stream has reached and done the copy (reporting the stream's errors).
      s->wait(ticket);
      if (checker_) checker_->host_learned(clock);
      if (std::optional<sdk::Error> e = s->take_error()) throw *e;
      return;
    }
    case TSR_COPY_DEVICE_TO_DEVICE: {
      Device& to = device(r.dst_device_index);
      Device& from = device(r.src_device_index);
      const std::shared_ptr<Stream> s = stream(to.index, r.stream);
      check_device_memory(to, r.dst, n, "destination");
      check_device_memory(from, r.src, n, "source");
      enqueue(*s, "copy (device to device)", {{from.index, src, src + n, false}, {to.index, dst, dst + n, true}},
              std::make_unique<CopyWork>(r.dst, r.src, n, nullptr, std::nullopt));
      return;
    }
    default:
      invalid("sim: copy: unknown TsrCopyKind " + std::to_string(r.kind));
  }
}

// ---- expandable segments: reserve address space, map and unmap granules ----

void* Sim::va_reserve(int32_t index, size_t nbytes) {
  Device& d = device(index);
  if (nbytes == 0 || nbytes % kGranularity != 0) {
    invalid("sim: va_reserve of " + std::to_string(nbytes) + " bytes, not a positive multiple of the granularity (" +
            std::to_string(kGranularity) + ")");
  }
  // Over-reserve by one granule to align the base, then give the slack back.
  if (nbytes > SIZE_MAX - kGranularity) out_of_memory(d, nbytes, " (no address space that large)");
  void* raw = ::mmap(nullptr, nbytes + kGranularity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "sim:" + std::to_string(index) + ": va_reserve of " + bytes_text(nbytes) +
                                                  " failed: no address space left (" + std::strerror(errno) + ")");
  }
  const auto r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = (r + kGranularity - 1) / kGranularity * kGranularity;
  if (base > r) ::munmap(raw, base - r);
  if (base + nbytes < r + nbytes + kGranularity)
    ::munmap(reinterpret_cast<void*>(base + nbytes), r + nbytes + kGranularity - (base + nbytes));
  std::lock_guard<std::mutex> lock(d.mutex);
  d.reservations.emplace(base, nbytes);
  return reinterpret_cast<void*>(base);
}

void Sim::va_map(int32_t index, void* addr, size_t nbytes) {
  Device& d = device(index);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (nbytes == 0 || nbytes % kGranularity != 0 || a % kGranularity != 0) {
    invalid("sim: va_map of [" + hex(addr) + ", +" + std::to_string(nbytes) +
            "): address and size must be multiples of the granularity (" + std::to_string(kGranularity) + ")");
  }
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    auto res = d.reservations.upper_bound(a);
    if (res == d.reservations.begin() || (--res, a + nbytes > res->first + res->second) || a + nbytes < a) {
      invalid("sim: va_map of [" + hex(addr) + ", +" + std::to_string(nbytes) + ") outside any va_reserve range of sim:" +
              std::to_string(index));
    }
    auto m = d.mapped.lower_bound(a);
    const bool overlaps_next = m != d.mapped.end() && m->first < a + nbytes;
    const bool overlaps_prev = m != d.mapped.begin() && std::prev(m)->first + std::prev(m)->second > a;
    if (overlaps_next || overlaps_prev) invalid("sim: va_map of [" + hex(addr) + ", +" + std::to_string(nbytes) + "): part of it is mapped already");
    if (nbytes > d.capacity - d.used) out_of_memory(d, nbytes, " (va_map)");
    if (::mprotect(addr, nbytes, PROT_READ | PROT_WRITE) != 0) {
      throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "sim: va_map: mprotect failed: " + std::string(std::strerror(errno)));
    }
    d.mapped.emplace(a, nbytes);
    d.used += nbytes;
  }
  if (checker_) checker_->on_remap(index, a, a + nbytes, false);  // new memory: no history
}

void Sim::va_unmap(int32_t index, void* addr, size_t nbytes) noexcept {
  try {
    Device& d = device(index);
    const auto a = reinterpret_cast<uintptr_t>(addr);
    {
      // The range must be a union of whole earlier va_map ranges.
      std::lock_guard<std::mutex> lock(d.mutex);
      uintptr_t covered = a;
      for (auto it = d.mapped.find(a); it != d.mapped.end() && it->first == covered && covered < a + nbytes; ++it)
        covered += it->second;
      if (nbytes == 0 || covered != a + nbytes) {
        log(TSR_LOG_ERROR, "sim: va_unmap of [" + hex(addr) + ", +" + std::to_string(nbytes) + ") on sim:" +
                               std::to_string(index) + " is not a union of whole va_map ranges; ignored");
        return;
      }
    }
    if (checker_) checker_->on_remap(index, a, a + nbytes, true);  // reports work the host has not seen finish
    quiesce(d);  // never pull memory from under a queued kernel (it would fault)
    std::lock_guard<std::mutex> lock(d.mutex);
    ::madvise(addr, nbytes, MADV_DONTNEED);  // give the pages back
    ::mprotect(addr, nbytes, PROT_NONE);
    for (auto it = d.mapped.find(a); it != d.mapped.end() && it->first < a + nbytes;) it = d.mapped.erase(it);
    d.used -= nbytes;
  } catch (const std::exception& e) {
    log(TSR_LOG_ERROR, std::string("sim: va_unmap failed: ") + e.what());
  }
}

void Sim::va_release(int32_t index, void* base, size_t nbytes) noexcept {
  try {
    Device& d = device(index);
    const auto b = reinterpret_cast<uintptr_t>(base);
    std::vector<std::pair<uintptr_t, size_t>> still_mapped;
    {
      std::lock_guard<std::mutex> lock(d.mutex);
      const auto res = d.reservations.find(b);
      if (res == d.reservations.end() || res->second != nbytes) {
        log(TSR_LOG_ERROR, "sim: va_release of [" + hex(base) + ", +" + std::to_string(nbytes) + ") on sim:" +
                               std::to_string(index) + ", which is not a va_reserve range; ignored");
        return;
      }
      for (auto it = d.mapped.lower_bound(b); it != d.mapped.end() && it->first < b + nbytes; ++it)
        still_mapped.push_back(*it);
    }
    if (!still_mapped.empty()) {
      log(TSR_LOG_WARNING, "sim: va_release of a reservation of sim:" + std::to_string(index) + " with " +
                               std::to_string(still_mapped.size()) + " range(s) still mapped; unmapping them");
      for (const auto& [addr, bytes] : still_mapped) va_unmap(index, reinterpret_cast<void*>(addr), bytes);
    }
    std::lock_guard<std::mutex> lock(d.mutex);
    ::munmap(base, nbytes);
    d.reservations.erase(b);
  } catch (const std::exception& e) {
    log(TSR_LOG_ERROR, std::string("sim: va_release failed: ") + e.what());
  }
}

// ---- pinned host memory ----

void* Sim::host_allocate(size_t nbytes) {
  constexpr size_t kPage = 4096;
  size_t bytes;
  if (nbytes == 0) invalid("sim: host_allocate of 0 bytes");
  if (!round_up(nbytes, kPage, &bytes)) throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "sim: host_allocate: too large");
  void* p = std::aligned_alloc(kPage, bytes);
  if (p == nullptr) {
    throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "sim: host_allocate: no host memory for " + bytes_text(nbytes));
  }
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  pinned_.emplace(reinterpret_cast<uintptr_t>(p), PinnedBlock{nbytes, 0});
  return p;
}

void Sim::host_deallocate(void* ptr, size_t nbytes) noexcept {
  std::unique_lock<std::mutex> lock(pinned_mutex_);
  const auto it = pinned_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == pinned_.end() || it->second.bytes != nbytes) {
    lock.unlock();
    log(TSR_LOG_ERROR, "sim: host_deallocate of " + hex(ptr) + " (" + std::to_string(nbytes) +
                           " bytes), which is not a host_allocate block of that size; ignored");
    return;
  }
  if (it->second.in_flight > 0) {
    // A contract violation (the host frees pinned memory only once its copies
    // completed); waiting keeps the queued copies from touching freed memory.
    const uint32_t n = it->second.in_flight;
    lock.unlock();
    log(TSR_LOG_WARNING, "sim: host_deallocate of " + hex(ptr) + " while " + std::to_string(n) +
                             " queued copy(ies) still use it; waiting for them");
    lock.lock();
    pinned_cv_.wait(lock, [&] { return pinned_.at(reinterpret_cast<uintptr_t>(ptr)).in_flight == 0; });
  }
  pinned_.erase(reinterpret_cast<uintptr_t>(ptr));
  std::free(ptr);
}

}  // namespace tessera::sim
