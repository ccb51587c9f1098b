// tessera/ref_counted.h — the intrusive reference count of TensorImpl and StorageImpl.
//
// Thread-safe like boost::intrusive_ref_counter, but the two transitions that
// cannot race skip the atomic read-modify-write: 0 -> 1 happens only when the
// object is born (only its creator has the pointer), and releasing the last
// reference when the count reads 1 means nobody else holds one who could copy
// it. A tiny op creates and destroys two such objects, so this saves four
// locked instructions per op.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::detail {

template <typename Derived>
class RefCounted {
 public:
  /// Current number of references (racy by nature; for diagnostics and tests).
  uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }

  friend void intrusive_ptr_add_ref(const Derived* p) noexcept {
    const RefCounted* r = p;
    if (r->refs_.load(std::memory_order_relaxed) == 0) {
      r->refs_.store(1, std::memory_order_relaxed);  // birth: not shared yet
    } else {
      r->refs_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  friend void intrusive_ptr_release(const Derived* p) noexcept {
    const RefCounted* r = p;
    // Acquire pairs with other owners' release decrements, so their writes to
    // the object happen before its destruction.
    if (r->refs_.load(std::memory_order_acquire) == 1 || r->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // A class may take its dead objects back for reuse (TensorImpl does).
      if constexpr (requires { Derived::on_last_release(p); }) {
        Derived::on_last_release(p);
      } else {
        delete p;
      }
    }
  }

 protected:
  RefCounted() = default;
  RefCounted(const RefCounted&) : refs_(0) {}
  RefCounted& operator=(const RefCounted&) { return *this; }
  ~RefCounted() = default;
  /// For an object taken back by on_last_release and handed out again: the
  /// count is set to `n` (0: a newborn's; 1: one reference, adopted by the caller).
  void reset_ref_count(uint32_t n) noexcept { refs_.store(n, std::memory_order_relaxed); }

 private:
  mutable std::atomic<uint32_t> refs_{0};
};

}  // namespace tessera::detail
