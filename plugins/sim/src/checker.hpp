// The shadow-memory checker: finds unsynchronized cross-stream access to device
// memory at the moment the second access is enqueued — typically memory freed
// on one stream and handed out again while a kernel queued on another stream
// still uses it (what Tensor.record_stream prevents).
//
// Happens-before, as in PyTorch's CUDA sanitizer (torch/cuda/_sanitizer.py):
//  - every stream has a vector clock; each kernel or copy enqueued on stream s
//    gets the sequence number clock_s[s] + 1;
//  - event_record snapshots the stream's clock into the event;
//    stream_wait_event joins the event's clock into the waiting stream's;
//  - what the host learns (stream/event/device synchronize, an event_query
//    answering 1, a device-to-host copy it waited for) joins into a host
//    clock, which every later enqueue joins: work enqueued after the host saw
//    X complete is ordered after X;
//  - per device, an interval map of byte ranges holds the accesses that may
//    still be pending: for each range, the last write and the last read of
//    each stream since that write.
// A new access conflicts with a recorded one when they come from different
// streams, at least one of them writes, and the new stream's clock does not
// cover the recorded one (its sequence number is above the clock's entry for
// its stream). Accesses the host clock covers are pruned.
//
// The checker judges what the host *knows*, not what the workers happened to
// finish: a race is reported whether or not the timing of this run exposed it.
//
// Thread-safe: one mutex. Callers hold the stream's own lock around on_launch
// and the push onto the queue, so sequence numbers follow queue order.
#pragma once

#include "config.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::sim {

/// One clock entry per stream id (ids are dense, never reused).
class VectorClock {
 public:
  uint64_t get(uint32_t stream) const { return stream < v_.size() ? v_[stream] : 0; }
  void set(uint32_t stream, uint64_t seq) {
    if (stream >= v_.size()) v_.resize(stream + 1, 0);
    v_[stream] = seq;
  }
  void join(const VectorClock& other) {
    if (other.v_.size() > v_.size()) v_.resize(other.v_.size(), 0);
    for (size_t i = 0; i < other.v_.size(); ++i) v_[i] = v_[i] > other.v_[i] ? v_[i] : other.v_[i];
  }

 private:
  std::vector<uint64_t> v_;
};

/// A byte range [begin, end) of one device that a kernel or copy reads or writes.
struct MemoryRange {
  int32_t device;
  uintptr_t begin;
  uintptr_t end;
  bool write;
};

class Checker {
 public:
  using LogFn = std::function<void(int32_t level, const std::string& message)>;

  Checker(CheckMode mode, int32_t devices, LogFn log);

  CheckMode mode() const { return mode_; }

  /// A new stream with a new id (ids are dense: 0, 1, 2, ... in creation
  /// order, never reused); `name` is how messages call it ("sim:0 stream 3").
  void add_stream(uint32_t id, std::string name);

  /// Checks the accesses of a kernel or copy about to be enqueued on `stream`
  /// and records them. On a conflict: check=error throws sdk::Error
  /// (TSR_ERROR_INVALID_ARGUMENT) and records nothing; check=warn logs a
  /// warning and records. Call with the stream's lock held, right before the
  /// push.
  void on_launch(uint32_t stream, const std::string& op, const std::vector<MemoryRange>& ranges);

  /// event_record(event, stream), this being the event's record number `record`.
  void on_record(uint32_t stream, const void* event, uint64_t record);
  /// stream_wait_event(stream, event): later work on stream is ordered after the event's record.
  void on_wait(uint32_t stream, const void* event);
  void on_event_destroyed(const void* event);

  /// The stream's clock now (taken under the stream's lock, with the queue length it matches).
  VectorClock stream_clock(uint32_t stream) const;
  /// The host saw the work of `clock` complete.
  void host_learned(const VectorClock& clock);
  /// The host saw the event's record `record` complete (a newer record is not joined).
  void host_learned_event(const void* event, uint64_t record);

  /// deallocate(range) on `stream`: accesses ordered before the free are done
  /// once the free runs (the memory is only handed out again after it), so they
  /// are dropped; any other stream's access not ordered before the free is a
  /// use after free, logged (deallocate cannot fail).
  void on_free(uint32_t stream, int32_t device, uintptr_t begin, uintptr_t end);
  /// va_map / va_unmap: the range gets new physical memory (or none): its
  /// history ends. On unmap, an access the host has not seen complete is a
  /// violation of va_unmap's contract, logged.
  void on_remap(int32_t device, uintptr_t begin, uintptr_t end, bool unmap);

  /// Segments held for `device` (tests and cost measurement).
  size_t segment_count(int32_t device) const;

 private:
  struct Access {
    uint32_t stream;
    uint64_t seq;
    uint32_t label;  // index into labels_
  };
  struct Segment {
    uintptr_t end;
    std::optional<Access> write;  // the last write
    std::vector<Access> reads;    // the last read of each stream since that write
  };
  using SegmentMap = std::map<uintptr_t, Segment>;  // keyed by begin; disjoint

  static bool covered(const VectorClock& c, const Access& a) { return a.seq <= c.get(a.stream); }
  uint32_t label_id(const std::string& op);
  SegmentMap::iterator split_at(SegmentMap& map, uintptr_t addr);
  std::string describe_conflict(uint32_t stream, const std::string& op, const MemoryRange& r, const Access& old,
                                bool old_write, uintptr_t lo, uintptr_t hi) const;
  void prune_locked();

  const CheckMode mode_;
  const LogFn log_;
  mutable std::mutex mutex_;
  std::vector<SegmentMap> maps_;        // per device
  std::vector<VectorClock> clocks_;     // per stream id
  std::vector<std::string> stream_names_;
  VectorClock host_;
  struct EventClock {
    uint64_t record;
    VectorClock clock;
  };
  std::unordered_map<const void*, EventClock> events_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, uint32_t> label_ids_;
};

}  // namespace tessera::sim
