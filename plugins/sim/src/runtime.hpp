// The simulated device: streams that are queues drained by worker threads,
// events that complete when their queue passes them, device memory with a
// capacity, address-space reservation for expandable segments, pinned host
// memory, and the copy rules of CUDA. plugin.cpp turns these methods into the
// C slots of TsrDeviceTypeDesc; kernels.cpp queues kernels through enqueue().
//
// Threading: every public method may be called from any host thread at once.
// Locks, always taken in this order when nested: a Stream's lock, an Event's,
// a Device's, the Checker's. The handle registry's and the pinned-memory lock
// are never held while taking another. Worker threads take their stream's
// lock, an event's, a device's or the pinned lock, one at a time, and never
// the Checker's: completion is judged from what the host knows.
#pragma once

#include "arena.hpp"
#include "checker.hpp"
#include "config.hpp"

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tessera::sim {

/// One item of a stream's queue; runs on the stream's worker thread.
class Work {
 public:
  virtual ~Work() = default;
  /// Kernels and copies are launches: the stream's latency is paid before each.
  /// Event markers, waits and frees are not.
  virtual bool is_launch() const = 0;
  /// Does the work. Throws sdk::Error on failure: the stream keeps the first
  /// error and reports it from its next synchronizing call.
  virtual void run() = 0;
};

/// A queue drained in order by its own worker thread: the simulated hardware
/// queue. The NULL stream of each device is one too.
class Stream {
 public:
  Stream(int32_t device, uint32_t id, std::string name, uint64_t latency_us);
  /// Lets the worker run what is queued, then stops and joins it.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t device() const { return device_; }
  uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }

  /// Enqueueing: hold lock() across the checker and push(), so that the order
  /// the checker sees is the order of the queue.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  /// Appends work (the caller holds lock()); returns its ticket 1, 2, 3, ...
  uint64_t push(std::unique_ptr<Work> work);
  /// Tickets issued so far (the caller holds lock()).
  uint64_t submitted() const { return submitted_; }

  /// Blocks until the work of `ticket` and everything before it has run.
  void wait(uint64_t ticket);
  /// The first error a work item raised since the last call, cleared.
  std::optional<sdk::Error> take_error();

 private:
  void worker_main();

  const int32_t device_;
  const uint32_t id_;
  const std::string name_;
  const std::chrono::microseconds latency_;
  std::mutex mutex_;
  std::condition_variable work_cv_;  // the worker waits for work
  std::condition_variable done_cv_;  // the host waits for tickets
  std::deque<std::unique_ptr<Work>> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  std::optional<sdk::Error> error_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once everything above is built
};

/// An event. Each event_record gives it a new record number; the record is
/// complete when its stream's worker passes the marker. Queries and waits
/// refer to the latest record at the time of the call, as in CUDA.
struct Event {
  Event(int32_t device_index, uint32_t event_flags) : device(device_index), flags(event_flags) {}
  const int32_t device;
  const uint32_t flags;  // TSR_EVENT_*
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t recorded = 0;              // the latest record number; 0: never recorded
  std::set<uint64_t> pending;         // record numbers whose marker has not run
  std::chrono::steady_clock::time_point time;  // when the latest record completed (TSR_EVENT_TIMING)
  bool timed = false;                 // `time` belongs to record `recorded`
  std::weak_ptr<Stream> stream;       // where the latest record was made (for its errors)

  bool complete(uint64_t record) const { return pending.count(record) == 0; }
};

/// One simulated device: its memory and its streams.
struct Device {
  Device(int32_t device_index, size_t capacity_bytes) : index(device_index), capacity(capacity_bytes) {}
  const int32_t index;
  const size_t capacity;
  std::mutex mutex;                           // guards everything below
  std::unique_ptr<Arena> arena;               // reserved at the first allocate
  size_t used = 0;                            // charged bytes: live allocations + mapped granules
  std::set<uintptr_t> freeing;                // blocks whose deallocate is queued
  std::map<uintptr_t, size_t> reservations;   // va_reserve: base -> bytes
  std::map<uintptr_t, size_t> mapped;         // va_map: address -> bytes
  std::shared_ptr<Stream> default_stream;     // created at first use
  std::vector<std::weak_ptr<Stream>> streams; // every stream of the device, for device_synchronize
};

/// The plugin's state: the configuration, the devices, the handles given out.
class Sim {
 public:
  Sim(const Config& config, const TsrHostApi* host);
  /// Runs what is queued and joins every worker. The host destroys its streams
  /// and events before unloading (ABI H20); any left are drained here too.
  ~Sim();
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;

  const Config& config() const { return config_; }
  /// The checker; nullptr with check=off.
  Checker* checker() { return checker_.get(); }
  /// Writes to the host's log (any thread, until shutdown).
  void log(int32_t level, const std::string& message) const;

  Device& device(int32_t index);
  /// The stream a call names: NULL is the device's default stream. Throws
  /// sdk::Error for a handle this plugin did not give out (or destroyed) and
  /// for a stream of another device.
  std::shared_ptr<Stream> stream(int32_t index, TsrStream handle);
  std::shared_ptr<Event> event(TsrEvent handle);

  /// Queues `work` on `stream` after the checker accepted `ranges` (it throws
  /// on a violation with check=error, and nothing is queued). Returns the
  /// ticket; `clock` (nullable) receives the stream's clock including this work.
  uint64_t enqueue(Stream& stream, const std::string& op, const std::vector<MemoryRange>& ranges,
                   std::unique_ptr<Work> work, VectorClock* clock = nullptr);
  /// Blocks until everything queued on `stream` so far has run; throws the
  /// stream's pending error.
  void synchronize(Stream& stream);
  /// Runs `body` on the calling thread as if it were work queued on `stream`:
  /// after everything queued there so far (whose errors it throws first), with
  /// the checker judging `ranges` as for a launch. For kernels that must run on
  /// the host's thread (data-dependent outputs).
  void run_inline(Stream& stream, const std::string& op, const std::vector<MemoryRange>& ranges,
                  const std::function<void()>& body);

  // ---- the slots of TsrDeviceTypeDesc (plugin.cpp wraps each in sdk::guard) ----
  std::string describe(int32_t index);
  void* allocate(int32_t index, size_t nbytes, TsrStream stream);
  void deallocate(int32_t index, void* ptr, size_t nbytes, TsrStream stream) noexcept;
  void copy(const TsrCopyRequest& request);
  TsrStream stream_create(int32_t index);
  void stream_destroy(int32_t index, TsrStream stream);
  void stream_synchronize(int32_t index, TsrStream stream);
  void stream_wait_event(int32_t index, TsrStream stream, TsrEvent event);
  TsrEvent event_create(int32_t index, uint32_t flags);
  void event_destroy(int32_t index, TsrEvent event);
  void event_record(int32_t index, TsrEvent event, TsrStream stream);
  bool event_query(int32_t index, TsrEvent event);
  void event_synchronize(int32_t index, TsrEvent event);
  float event_elapsed_time(int32_t index, TsrEvent start, TsrEvent end);
  void device_synchronize(int32_t index);
  void memory_info(int32_t index, size_t* free_bytes, size_t* total_bytes);
  static constexpr size_t kGranularity = size_t{2} << 20;  // va_* granule: 2 MiB, as CUDA's
  void* va_reserve(int32_t index, size_t nbytes);
  void va_release(int32_t index, void* base, size_t nbytes) noexcept;
  void va_map(int32_t index, void* addr, size_t nbytes);
  void va_unmap(int32_t index, void* addr, size_t nbytes) noexcept;
  void* host_allocate(size_t nbytes);
  void host_deallocate(void* ptr, size_t nbytes) noexcept;

  /// A queued copy's hold on a pinned block: host_deallocate waits until no
  /// copy holds the block. Moved into the copy's work item.
  class PinnedUse {
   public:
    PinnedUse(Sim* sim, uintptr_t block) : sim_(sim), block_(block) {}
    PinnedUse(PinnedUse&& o) noexcept : sim_(o.sim_), block_(o.block_) { o.sim_ = nullptr; }
    PinnedUse& operator=(PinnedUse&&) = delete;
    ~PinnedUse();

   private:
    Sim* sim_;
    uintptr_t block_;
  };

 private:
  std::shared_ptr<Stream> make_stream(Device& d, bool is_default, uint64_t latency_us);
  std::shared_ptr<Stream> default_stream(Device& d);
  std::vector<std::shared_ptr<Stream>> streams_of(Device& d);
  /// Waits for the work queued on every stream of d so far (no errors taken).
  void quiesce(Device& d);
  /// Throws unless [ptr, ptr + nbytes) is memory of d (an allocation or mapped granules).
  void check_device_memory(Device& d, const void* ptr, size_t nbytes, const char* what);
  /// A hold on the pinned block holding [ptr, ptr + nbytes), if there is one.
  std::optional<PinnedUse> pin(const void* ptr, size_t nbytes);
  [[noreturn]] void out_of_memory(const Device& d, size_t nbytes, const std::string& detail) const;

  const Config config_;
  const TsrHostApi* const host_;
  std::unique_ptr<Checker> checker_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::atomic<uint32_t> next_stream_id_{0};

  std::mutex handles_mutex_;  // guards the two maps of live handles
  std::unordered_map<const void*, std::shared_ptr<Stream>> streams_;
  std::unordered_map<const void*, std::shared_ptr<Event>> events_;

  std::mutex pinned_mutex_;
  std::condition_variable pinned_cv_;
  struct PinnedBlock {
    size_t bytes;
    uint32_t in_flight;  // queued copies reading or writing it
  };
  std::map<uintptr_t, PinnedBlock> pinned_;
};

}  // namespace tessera::sim
