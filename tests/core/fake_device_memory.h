// fake_device_memory.h — a DeviceMemory for the allocator's tests and benchmark.
//
// Hands out fake addresses (never dereferenced) unless real_memory is set, so a
// test can give it gigabytes. It enforces a capacity (to reach out of memory),
// counts every raw call, emulates streams whose event completion the test
// controls, and emulates address-space reservation and granule mapping. It
// checks the allocator's use of it: a free of an unknown pointer or with the
// wrong size, a double map, an unmap while work is queued, a release of a
// mapped reservation each count in errors().
// Thread-safe: one mutex (the tests call it from several threads).
#pragma once

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <tessera/error.h>

#include "memory/device_memory.h"

namespace tsrtest {

struct FakeDeviceOptions {
  std::string name = "fake:0";
  size_t capacity = size_t{1} << 30;
  bool report_total = true;      // total_memory() returns capacity (else 0)
  bool async = true;
  bool expandable = true;
  size_t granularity = size_t{2} << 20;
  size_t alignment = 256;
  size_t va_limit = size_t{1} << 44;  // address space reservable in all
  bool auto_complete = false;    // events complete as soon as recorded
  bool real_memory = false;      // malloc/free behind allocate/deallocate (benchmark)
  int latency_ns = 0;            // busy wait in each raw allocate/deallocate
  bool fail_hard = false;        // allocate throws tessera::InternalError (not out of memory)
};

class FakeDevice final : public tessera::memory::DeviceMemory {
 public:
  using Options = FakeDeviceOptions;

  FakeDevice() = default;
  explicit FakeDevice(Options o) : o_(std::move(o)) {}
  ~FakeDevice() override {
    for (TsrEvent e : events_) delete reinterpret_cast<Event*>(e);
  }

  static TsrStream stream(int i) { return reinterpret_cast<TsrStream>(static_cast<uintptr_t>(i) * 64); }

  // ------------------------------------------------------- DeviceMemory
  std::string device_name() const override { return o_.name; }
  bool async() const override { return o_.async; }
  size_t alignment() const override { return o_.alignment; }

  void* allocate(size_t nbytes, TsrStream, std::string* oom) override {
    spin();
    std::lock_guard lock(mu_);
    ++n_alloc_;
    if (o_.fail_hard) throw tessera::InternalError(o_.name + ": the device failed");
    if (used_ + nbytes > o_.capacity) {
      ++n_alloc_failed_;
      if (oom) *oom = "fake device: no room for " + std::to_string(nbytes) + " bytes (" + std::to_string(used_) +
                      " of " + std::to_string(o_.capacity) + " in use)";
      return nullptr;
    }
    used_ += nbytes;
    void* p;
    if (o_.real_memory) {
      p = std::aligned_alloc(o_.alignment, (nbytes + o_.alignment - 1) / o_.alignment * o_.alignment);
    } else {
      p = reinterpret_cast<void*>(next_addr_);
      next_addr_ += (nbytes + o_.alignment - 1) / o_.alignment * o_.alignment + o_.alignment;
    }
    live_[p] = nbytes;
    return p;
  }
  void deallocate(void* ptr, size_t nbytes, TsrStream stream) noexcept override {
    spin();
    std::lock_guard lock(mu_);
    ++n_free_;
    ++frees_on_[stream];
    auto it = live_.find(ptr);
    if (it == live_.end() || it->second != nbytes) {
      ++errors_;
      return;
    }
    used_ -= nbytes;
    live_.erase(it);
    if (o_.real_memory) std::free(ptr);
  }

  struct Event {
    TsrStream stream = nullptr;
    uint64_t seq = 0;
  };
  TsrEvent event_create() override {
    std::lock_guard lock(mu_);
    ++n_event_create_;
    auto* e = new Event;
    events_.insert(reinterpret_cast<TsrEvent>(e));
    return reinterpret_cast<TsrEvent>(e);
  }
  void event_destroy(TsrEvent ev) noexcept override {
    std::lock_guard lock(mu_);
    if (events_.erase(ev) == 0) ++errors_;
    else delete reinterpret_cast<Event*>(ev);
  }
  void event_record(TsrEvent ev, TsrStream s) override {
    std::lock_guard lock(mu_);
    ++n_event_record_;
    auto* e = reinterpret_cast<Event*>(ev);
    e->stream = s;
    // The event completes when the work queued on s so far (enqueue_work) has.
    auto& st = streams_[s];
    if (o_.auto_complete) st.completed = st.recorded;
    e->seq = st.recorded;
  }
  bool event_query(TsrEvent ev) override {
    std::lock_guard lock(mu_);
    ++n_event_query_;
    auto* e = reinterpret_cast<Event*>(ev);
    return streams_[e->stream].completed >= e->seq;
  }
  void event_synchronize(TsrEvent ev) override {
    std::lock_guard lock(mu_);
    ++n_event_sync_;
    auto* e = reinterpret_cast<Event*>(ev);
    auto& st = streams_[e->stream];
    if (st.completed < e->seq) st.completed = e->seq;
  }
  void device_synchronize() override {
    std::lock_guard lock(mu_);
    ++n_device_sync_;
    for (auto& [s, st] : streams_) st.completed = st.recorded;
  }
  size_t total_memory() override { return o_.report_total ? o_.capacity : 0; }

  bool expandable() const override { return o_.expandable; }
  size_t granularity() override { return o_.granularity; }
  void* va_reserve(size_t nbytes) override {
    std::lock_guard lock(mu_);
    ++n_va_reserve_;
    if (va_used_ + nbytes > o_.va_limit) return nullptr;
    va_used_ += nbytes;
    const uintptr_t base = next_va_;
    next_va_ += (nbytes + o_.granularity - 1) / o_.granularity * o_.granularity + o_.granularity;
    reservations_[base] = nbytes;
    return reinterpret_cast<void*>(base);
  }
  void va_release(void* base, size_t nbytes) noexcept override {
    std::lock_guard lock(mu_);
    auto it = reservations_.find(reinterpret_cast<uintptr_t>(base));
    if (it == reservations_.end() || it->second != nbytes) {
      ++errors_;
      return;
    }
    const uintptr_t b = it->first;
    auto m = mapped_.lower_bound(b);
    if (m != mapped_.end() && *m < b + nbytes) ++errors_;  // still mapped
    va_used_ -= nbytes;
    reservations_.erase(it);
  }
  bool va_map(void* addr, size_t nbytes, std::string* oom) override {
    std::lock_guard lock(mu_);
    ++n_map_;
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (a % o_.granularity != 0 || nbytes % o_.granularity != 0 || nbytes == 0 || !reserved(a, nbytes)) {
      ++errors_;
      return false;
    }
    if (used_ + nbytes > o_.capacity) {
      ++n_map_failed_;
      if (oom) *oom = "fake device: no room to map " + std::to_string(nbytes) + " bytes";
      return false;
    }
    for (uintptr_t g = a; g < a + nbytes; g += o_.granularity)
      if (!mapped_.insert(g).second) ++errors_;
    used_ += nbytes;
    return true;
  }
  void va_unmap(void* addr, size_t nbytes) noexcept override {
    std::lock_guard lock(mu_);
    ++n_unmap_;
    for (auto& [s, st] : streams_)
      if (st.completed < st.recorded) ++unmap_while_busy_;
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (a % o_.granularity != 0 || nbytes % o_.granularity != 0) ++errors_;
    for (uintptr_t g = a; g < a + nbytes; g += o_.granularity)
      if (mapped_.erase(g) == 0) ++errors_;
    used_ -= nbytes;
  }

  // ------------------------------------------------------- test control
  /// Queues "work" on s: its later events stay incomplete until complete(s).
  void enqueue_work(TsrStream s) {
    std::lock_guard lock(mu_);
    ++streams_[s].recorded;
  }
  void complete(TsrStream s) {
    std::lock_guard lock(mu_);
    streams_[s].completed = streams_[s].recorded;
  }
  void complete_all() {
    std::lock_guard lock(mu_);
    for (auto& [s, st] : streams_) st.completed = st.recorded;
  }
  void set_capacity(size_t c) {
    std::lock_guard lock(mu_);
    o_.capacity = c;
  }
  void set_fail_hard(bool v) {
    std::lock_guard lock(mu_);
    o_.fail_hard = v;
  }

#define TSRTEST_COUNTER(name) \
  size_t name() const {       \
    std::lock_guard lock(mu_); \
    return n_##name##_;        \
  }
  TSRTEST_COUNTER(alloc)
  TSRTEST_COUNTER(alloc_failed)
  TSRTEST_COUNTER(free)
  TSRTEST_COUNTER(event_record)
  TSRTEST_COUNTER(event_query)
  TSRTEST_COUNTER(event_sync)
  TSRTEST_COUNTER(device_sync)
  TSRTEST_COUNTER(va_reserve)
  TSRTEST_COUNTER(map)
  TSRTEST_COUNTER(map_failed)
  TSRTEST_COUNTER(unmap)
#undef TSRTEST_COUNTER
  size_t events_created() const {
    std::lock_guard lock(mu_);
    return n_event_create_;
  }
  /// Blocking waits of any kind (the hot path must cause none).
  size_t blocking_waits() const { return event_sync() + device_sync(); }
  size_t errors() const {
    std::lock_guard lock(mu_);
    return errors_;
  }
  size_t unmap_while_busy() const {
    std::lock_guard lock(mu_);
    return unmap_while_busy_;
  }
  size_t used() const {
    std::lock_guard lock(mu_);
    return used_;
  }
  /// deallocate calls ordered on stream s.
  size_t frees_on(TsrStream s) const {
    std::lock_guard lock(mu_);
    auto it = frees_on_.find(s);
    return it == frees_on_.end() ? 0 : it->second;
  }
  size_t live_allocations() const {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  size_t reservations() const {
    std::lock_guard lock(mu_);
    return reservations_.size();
  }
  size_t mapped_bytes() const {
    std::lock_guard lock(mu_);
    return mapped_.size() * o_.granularity;
  }

 private:
  struct StreamState {
    uint64_t recorded = 0;
    uint64_t completed = 0;
  };
  void spin() const {
    if (o_.latency_ns <= 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(o_.latency_ns);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  bool reserved(uintptr_t a, size_t n) const {
    auto it = reservations_.upper_bound(a);
    if (it == reservations_.begin()) return false;
    --it;
    return a >= it->first && a + n <= it->first + it->second;
  }

  Options o_;
  mutable std::mutex mu_;
  size_t used_ = 0;
  uintptr_t next_addr_ = uintptr_t{1} << 40;
  uintptr_t next_va_ = uintptr_t{1} << 46;
  size_t va_used_ = 0;
  std::map<void*, size_t> live_;
  std::map<uintptr_t, size_t> reservations_;
  std::set<uintptr_t> mapped_;
  std::map<TsrStream, StreamState> streams_;
  std::set<TsrEvent> events_;
  std::map<TsrStream, size_t> frees_on_;
  size_t n_alloc_ = 0, n_alloc_failed_ = 0, n_free_ = 0, n_event_create_ = 0, n_event_record_ = 0,
         n_event_query_ = 0, n_event_sync_ = 0, n_device_sync_ = 0, n_va_reserve_ = 0, n_map_ = 0,
         n_map_failed_ = 0, n_unmap_ = 0;
  size_t errors_ = 0, unmap_while_busy_ = 0;
};

}  // namespace tsrtest
