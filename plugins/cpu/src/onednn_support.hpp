// What the oneDNN-backed kernels share (nn_conv_onednn.cpp, matmul_onednn.cpp;
// included only where TESSERA_CPU_HAVE_ONEDNN): the engine and per-thread
// streams, primitives with user-managed scratchpads, a cache of built plans,
// per-thread buffers, a runner for a plan's steps, and the TESSERA_CPU_ONEDNN
// switch.
#pragma once

#include "aligned_memory.hpp"

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

namespace tessera::cpu::onednn::support {

/// TESSERA_CPU_ONEDNN: on unless the value starts with '0' (as
/// TESSERA_CPU_LOAD_AWARE). Read by each caller once.
inline bool enabled_by_env() {
  const char* v = std::getenv("TESSERA_CPU_ONEDNN");
  return v == nullptr || v[0] != '0';
}

/// The CPU engine, one for the process. Never destroyed: threads' streams
/// (thread_local) may outlive static destructors. Throws dnnl::error if oneDNN
/// cannot make one (retried on the next call).
inline dnnl::engine& cpu_engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

/// The calling thread's stream on cpu_engine().
inline dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

/// One primitive and the scratchpad it wants (user-managed, so that concurrent
/// calls never share oneDNN's own). Empty: nothing to run.
struct Step {
  dnnl::primitive prim;
  dnnl::memory::desc scratch;
  explicit operator bool() const { return static_cast<bool>(prim); }
};

/// The reorder from one layout to another, or an empty Step where they agree.
/// Throws dnnl::error where oneDNN has none.
inline Step make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                         const dnnl::primitive_attr& attr) {
  if (from == to) return {};
  dnnl::engine& eng = cpu_engine();
  dnnl::reorder::primitive_desc pd(eng, from, eng, to, attr);
  return {dnnl::reorder(pd), pd.scratchpad_desc()};
}

/// A plan key: the sizes, strides and options a plan depends on.
template <size_t N>
using Key = std::array<int64_t, N>;

template <size_t N>
struct KeyHash {
  size_t operator()(const Key<N>& k) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

/// The most recently used plans, at most kCacheSize; a refused problem is
/// cached too (as the plan build() returns for it). Thread-safe: a plan is
/// immutable once built and shared by every thread that runs its problem.
template <size_t N, typename Plan>
class PlanCache {
 public:
  template <typename Build>
  std::shared_ptr<const Plan> get(const Key<N>& key, const Build& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    // Built unlocked: other problems' calls go on meanwhile. Two threads may
    // build the same plan; the second one is dropped.
    std::shared_ptr<const Plan> plan = build();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    lru_.emplace_front(key, plan);
    index_.emplace(key, lru_.begin());
    if (lru_.size() > kCacheSize) {
      index_.erase(lru_.back().first);
      lru_.pop_back();  // a thread still running it holds its own reference
    }
    return plan;
  }

 private:
  static constexpr size_t kCacheSize = 64;
  using Entry = std::pair<Key<N>, std::shared_ptr<const Plan>>;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<Key<N>, typename std::list<Entry>::iterator, KeyHash<N>> index_;
};

/// A per-thread block that grows to the largest request; blocks above kKeep
/// bytes are given back by trim() after the call, so one huge problem does not
/// pin its buffers on every thread that ran it. get() throws std::bad_alloc.
class Buffer {
 public:
  static constexpr size_t kKeep = size_t{16} << 20;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { aligned_free(ptr_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      aligned_free(ptr_);
      ptr_ = nullptr;
      size_ = 0;
      ptr_ = aligned_malloc(bytes);
      if (ptr_ == nullptr) throw std::bad_alloc();
      size_ = bytes;
    }
    return ptr_;
  }
  void trim() {
    if (size_ > kKeep) {
      aligned_free(ptr_);
      ptr_ = nullptr;
      size_ = 0;
    }
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Runs a plan's steps on the calling thread's stream: the scratchpads and the
/// reordered copies of operands live in the thread's buffers, trimmed when the
/// Runner goes (exceptions included). One Runner per call, on one thread.
class Runner {
 public:
  static constexpr int kSlots = 3;  // reordered operands of one call

  /// `steps`: every step the call may run (empty ones allowed), to size the
  /// scratchpad once.
  explicit Runner(std::initializer_list<const Step*> steps)
      : eng_(cpu_engine()), strm_(thread_stream()), buf_(thread_buffers()) {
    size_t bytes = 0;
    for (const Step* st : steps)
      if (*st) bytes = std::max(bytes, st->scratch.get_size());
    scratch_ = bytes != 0 ? buf_.scratch.get(bytes) : nullptr;
  }
  ~Runner() { buf_.trim(); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// An operand in the caller's memory (oneDNN reads inputs only; the
  /// const_cast some callers need is for its API).
  dnnl::memory wrap(const dnnl::memory::desc& d, void* data) { return dnnl::memory(d, eng_, data); }
  /// Where `reorder` puts or takes an operand: `user` itself where the step is
  /// empty, else buffer `slot` (0 .. kSlots-1) in layout `d`.
  dnnl::memory stage(const Step& reorder, const dnnl::memory::desc& d, int slot, const dnnl::memory& user) {
    return reorder ? dnnl::memory(d, eng_, buf_.slots[slot].get(d.get_size())) : user;
  }
  /// Runs `st` (not empty) with `args`, adding its scratchpad.
  void run(const Step& st, std::unordered_map<int, dnnl::memory> args) {
    if (st.scratch.get_size() != 0) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(st.scratch, eng_, scratch_));
    st.prim.execute(strm_, args);
  }
  /// Waits for every step run so far.
  void wait() { strm_.wait(); }

 private:
  struct Buffers {
    Buffer slots[kSlots], scratch;
    void trim() {
      for (Buffer& b : slots) b.trim();
      scratch.trim();
    }
  };
  static Buffers& thread_buffers() {
    thread_local Buffers buffers;
    return buffers;
  }

  dnnl::engine& eng_;
  dnnl::stream& strm_;
  Buffers& buf_;
  void* scratch_ = nullptr;
};

}  // namespace tessera::cpu::onednn::support
