// Internal: a per-thread cache of fixed-size blocks for the small objects every
// op allocates (TensorImpl, StorageImpl). A cached block costs a few
// instructions to take and return, against ~150 for a malloc/free pair — the
// difference matters for tiny ops. Blocks freed on another thread join that
// thread's cache; each cache holds at most kMaxCached blocks and frees them when
// its thread exits.
#pragma once

#include <cstddef>
#include <new>

namespace tessera::detail {

template <size_t Size>
class ThreadCachedPool {
 public:
  static void* allocate() {
    Cache& c = cache_;
    if (c.head != nullptr) [[likely]] {
      Node* n = c.head;
      c.head = n->next;
      --c.count;
      return n;
    }
    return ::operator new(Size);
  }

  static void deallocate(void* p) noexcept {
    Cache& c = cache_;
    if (c.count < kMaxCached && c.state != State::Dead) [[likely]] {
      if (c.state == State::Fresh) [[unlikely]] arm_cleanup();
      auto* n = static_cast<Node*>(p);
      n->next = c.head;
      c.head = n;
      ++c.count;
      return;
    }
    ::operator delete(p);
  }

 private:
  static_assert(Size >= sizeof(void*), "blocks hold a free-list link");
  static constexpr int kMaxCached = 256;
  struct Node {
    Node* next;
  };
  enum class State : unsigned char { Fresh, Alive, Dead };
  // Plain data, so each access is one %fs-relative load: no constructor guard.
  struct Cache {
    Node* head;
    int count;
    State state;
  };
  static thread_local Cache cache_ __attribute__((tls_model("initial-exec")));

  // Frees the thread's cached blocks when it exits; later frees on the thread
  // (from other thread_locals' destructors) go straight to the heap.
  struct Cleanup {
    ~Cleanup() {
      Cache& c = cache_;
      c.state = State::Dead;
      while (c.head != nullptr) {
        Node* next = c.head->next;
        ::operator delete(c.head);
        c.head = next;
      }
      c.count = 0;
    }
  };
  static void arm_cleanup() {
    static thread_local Cleanup cleanup;
    (void)cleanup;
    cache_.state = State::Alive;
  }
};

template <size_t Size>
thread_local typename ThreadCachedPool<Size>::Cache ThreadCachedPool<Size>::cache_ = {nullptr, 0,
                                                                                     ThreadCachedPool<Size>::State::Fresh};

/// The bodies of a pooled class's operator new / delete: objects of exactly
/// `Size` bytes (the class itself) come from the pool; a derived class of
/// another size uses the global heap.
template <size_t Size>
inline void* pooled_new(size_t size) {
  return size == Size ? ThreadCachedPool<Size>::allocate() : ::operator new(size);
}
template <size_t Size>
inline void pooled_delete(void* p, size_t size) noexcept {
  if (size == Size) {
    ThreadCachedPool<Size>::deallocate(p);
  } else {
    ::operator delete(p);
  }
}

}  // namespace tessera::detail
