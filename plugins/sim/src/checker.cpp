// The shadow-memory checker (checker.hpp): vector clocks per stream and event,
// a host clock, and one interval map of pending accesses per device.
#include "checker.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iterator>

namespace tessera::sim {

namespace {

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, v);
  return buf;
}

}  // namespace

Checker::Checker(CheckMode mode, int32_t devices, LogFn log)
    : mode_(mode), log_(std::move(log)), maps_(static_cast<size_t>(devices > 0 ? devices : 0)) {}

void Checker::add_stream(uint32_t id, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id >= clocks_.size()) {
    clocks_.resize(id + 1);
    stream_names_.resize(id + 1);
  }
  stream_names_[id] = std::move(name);
}

uint32_t Checker::label_id(const std::string& op) {
  const auto it = label_ids_.find(op);
  if (it != label_ids_.end()) return it->second;
  labels_.push_back(op);
  return label_ids_[op] = static_cast<uint32_t>(labels_.size() - 1);
}

// Makes `addr` a segment boundary (splitting the segment that contains it) and
// returns the first segment that begins at or after addr.
Checker::SegmentMap::iterator Checker::split_at(SegmentMap& map, uintptr_t addr) {
  auto it = map.upper_bound(addr);
  if (it != map.begin()) {
    auto prev = std::prev(it);
    if (prev->first < addr && addr < prev->second.end) {
      Segment tail = prev->second;  // same accesses, second half
      prev->second.end = addr;
      return map.emplace_hint(it, addr, std::move(tail));
    }
    if (prev->first == addr) return prev;
  }
  return it;
}

std::string Checker::describe_conflict(uint32_t stream, const std::string& op, const MemoryRange& r,
                                       const Access& old, bool old_write, uintptr_t lo, uintptr_t hi) const {
  const std::string& here = stream_names_[stream];
  const std::string& there = stream_names_[old.stream];
  std::string m = "sim checker: unsynchronized cross-stream access: " + op + " on " + here + " would " +
                  (r.write ? "write" : "read") + " bytes [" + hex(lo) + ", " + hex(hi) + ") (" +
                  std::to_string(hi - lo) + " bytes) of sim:" + std::to_string(r.device) + ", which " +
                  labels_[old.label] + " " + (old_write ? "writes" : "reads") + " in work queued on " + there +
                  " that may not have run yet. Nothing orders " + here + " after that work: no event recorded on " +
                  there + " after it has been waited for by " + here +
                  ", and the host has not synchronized with it since. If the memory was freed and handed out "
                  "again while " + labels_[old.label] + " was queued, call Tensor.record_stream(" + there +
                  ") on the tensor before freeing it; otherwise make " + here + " wait for " + there +
                  " (Stream.wait_stream or wait_event).";
  return m;
}

void Checker::on_launch(uint32_t stream, const std::string& op, const std::vector<MemoryRange>& ranges) {
  std::string violation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    VectorClock& clock = clocks_[stream];
    clock.join(host_);  // enqueued after everything the host saw complete
    // 1. Check every range before recording any: a refused launch leaves no
    // trace. Of the conflicting accesses, the latest is reported (the work most
    // likely still queued); the others are counted.
    struct Conflict {
      Access old;
      bool old_write;
      const MemoryRange* range;
      uintptr_t lo, hi;
    };
    std::optional<Conflict> worst;
    std::vector<std::pair<uint32_t, uint64_t>> distinct;  // (stream, seq) of every conflicting access
    for (const MemoryRange& r : ranges) {
      if (r.begin >= r.end || r.device < 0 || static_cast<size_t>(r.device) >= maps_.size()) continue;
      const SegmentMap& map = maps_[static_cast<size_t>(r.device)];
      auto it = map.upper_bound(r.begin);
      if (it != map.begin() && std::prev(it)->second.end > r.begin) --it;
      for (; it != map.end() && it->first < r.end; ++it) {
        const Segment& seg = it->second;
        auto conflict = [&](const Access& a, bool a_write) {
          if (a.stream == stream || covered(clock, a)) return;
          const std::pair<uint32_t, uint64_t> key{a.stream, a.seq};
          if (std::find(distinct.begin(), distinct.end(), key) == distinct.end()) distinct.push_back(key);
          if (!worst || a.seq > worst->old.seq) {
            worst = Conflict{a, a_write, &r, std::max(it->first, r.begin), std::min(seg.end, r.end)};
          }
        };
        if (seg.write) conflict(*seg.write, true);
        if (r.write) {
          for (const Access& a : seg.reads) conflict(a, false);
        }
      }
    }
    if (worst) {
      violation = describe_conflict(stream, op, *worst->range, worst->old, worst->old_write, worst->lo, worst->hi);
      if (distinct.size() > 1)
        violation += " (" + std::to_string(distinct.size() - 1) + " more conflicting queued work item(s))";
    }
    if (!violation.empty() && mode_ == CheckMode::kError) {
      violation += " Nothing was queued (TESSERA_SIM check=error; check=warn logs and runs it).";
    } else {
      // 2. Record: this launch becomes the last write, or the stream's last read, of each byte.
      const Access access{stream, clock.get(stream) + 1, label_id(op)};
      clock.set(stream, access.seq);
      for (const MemoryRange& r : ranges) {
        if (r.begin >= r.end || r.device < 0 || static_cast<size_t>(r.device) >= maps_.size()) continue;
        SegmentMap& map = maps_[static_cast<size_t>(r.device)];
        split_at(map, r.end);
        auto it = split_at(map, r.begin);
        uintptr_t cur = r.begin;
        while (cur < r.end) {
          if (it == map.end() || it->first > cur) {  // a gap: a new segment
            const uintptr_t gap_end = (it == map.end()) ? r.end : std::min(r.end, it->first);
            it = map.emplace_hint(it, cur, Segment{gap_end, std::nullopt, {}});
          }
          Segment& seg = it->second;
          if (r.write) {
            seg.write = access;
            seg.reads.clear();
          } else {
            bool replaced = false;
            for (Access& a : seg.reads) {
              if (a.stream == stream) {
                a = access;
                replaced = true;
              }
            }
            if (!replaced) seg.reads.push_back(access);
          }
          cur = seg.end;
          ++it;
        }
      }
      if (!violation.empty()) violation += " Queued anyway (TESSERA_SIM check=warn).";
    }
  }
  if (violation.empty()) return;
  if (mode_ == CheckMode::kError) throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, violation);
  log_(TSR_LOG_WARNING, violation);
}

void Checker::on_record(uint32_t stream, const void* event, uint64_t record) {
  std::lock_guard<std::mutex> lock(mutex_);
  EventClock& e = events_[event];
  e.record = record;
  e.clock = clocks_[stream];
}

void Checker::on_wait(uint32_t stream, const void* event) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = events_.find(event);
  if (it != events_.end()) clocks_[stream].join(it->second.clock);
}

void Checker::on_event_destroyed(const void* event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.erase(event);
}

VectorClock Checker::stream_clock(uint32_t stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return clocks_[stream];
}

void Checker::host_learned(const VectorClock& clock) {
  std::lock_guard<std::mutex> lock(mutex_);
  host_.join(clock);
  prune_locked();
}

void Checker::host_learned_event(const void* event, uint64_t record) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = events_.find(event);
  if (it == events_.end() || it->second.record != record) return;
  host_.join(it->second.clock);
  prune_locked();
}

// Drops the accesses the host has seen complete, and segments left empty.
// Linear in the segments held, which is what the host queued since it last
// synchronized with the streams involved.
void Checker::prune_locked() {
  for (SegmentMap& map : maps_) {
    for (auto it = map.begin(); it != map.end();) {
      Segment& seg = it->second;
      if (seg.write && covered(host_, *seg.write)) seg.write.reset();
      seg.reads.erase(std::remove_if(seg.reads.begin(), seg.reads.end(),
                                     [&](const Access& a) { return covered(host_, a); }),
                      seg.reads.end());
      it = (!seg.write && seg.reads.empty()) ? map.erase(it) : std::next(it);
    }
  }
}

void Checker::on_free(uint32_t stream, int32_t device, uintptr_t begin, uintptr_t end) {
  std::string violation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (device < 0 || static_cast<size_t>(device) >= maps_.size() || begin >= end) return;
    VectorClock clock = clocks_[stream];
    clock.join(host_);
    SegmentMap& map = maps_[static_cast<size_t>(device)];
    split_at(map, end);
    for (auto it = split_at(map, begin); it != map.end() && it->first < end;) {
      Segment& seg = it->second;
      auto report = [&](const Access& a, bool a_write) {
        if (!violation.empty()) return;
        violation = "sim checker: use after free: " + stream_names_[stream] + " frees bytes [" + hex(it->first) +
                    ", " + hex(seg.end) + ") of sim:" + std::to_string(device) + ", which " + labels_[a.label] +
                    (a_write ? " writes" : " reads") + " in work queued on " + stream_names_[a.stream] +
                    " that is not ordered before the free (call Tensor.record_stream for the other stream, or "
                    "synchronize before freeing)";
      };
      if (seg.write) {
        if (covered(clock, *seg.write)) seg.write.reset();
        else report(*seg.write, true);
      }
      for (auto r = seg.reads.begin(); r != seg.reads.end();) {
        if (covered(clock, *r)) {
          r = seg.reads.erase(r);
        } else {
          report(*r, false);
          ++r;
        }
      }
      it = (!seg.write && seg.reads.empty()) ? map.erase(it) : std::next(it);
    }
  }
  if (!violation.empty()) log_(TSR_LOG_WARNING, violation);
}

void Checker::on_remap(int32_t device, uintptr_t begin, uintptr_t end, bool unmap) {
  std::string violation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (device < 0 || static_cast<size_t>(device) >= maps_.size() || begin >= end) return;
    SegmentMap& map = maps_[static_cast<size_t>(device)];
    split_at(map, end);
    for (auto it = split_at(map, begin); it != map.end() && it->first < end;) {
      const Segment& seg = it->second;
      const Access* pending = seg.write && !covered(host_, *seg.write) ? &*seg.write : nullptr;
      for (const Access& a : seg.reads)
        if (pending == nullptr && !covered(host_, a)) pending = &a;
      if (unmap && pending != nullptr && violation.empty()) {
        violation = "sim checker: va_unmap of bytes [" + hex(it->first) + ", " + hex(seg.end) + ") of sim:" +
                    std::to_string(device) + " while " + labels_[pending->label] + " queued on " +
                    stream_names_[pending->stream] +
                    " may still use them (the host must see that work complete first); sim waited for the "
                    "device's queued work before unmapping";
      }
      it = map.erase(it);
    }
  }
  if (!violation.empty()) log_(TSR_LOG_WARNING, violation);
}

size_t Checker::segment_count(int32_t device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return device >= 0 && static_cast<size_t>(device) < maps_.size() ? maps_[static_cast<size_t>(device)].size() : 0;
}

}  // namespace tessera::sim
