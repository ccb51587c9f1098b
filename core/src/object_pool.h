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
    if (state() != State::Dead) [[likely]] {
      Cache& c = cache();
      if (c.head != nullptr) {
        Node* n = c.head;
        c.head = n->next;
        --c.count;
        return n;
      }
    }
    return ::operator new(Size);
  }

  static void deallocate(void* p) noexcept {
    if (state() != State::Dead) [[likely]] {
      Cache& c = cache();
      if (c.count < kMaxCached) {
        auto* n = static_cast<Node*>(p);
        n->next = c.head;
        c.head = n;
        ++c.count;
        return;
      }
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
  struct Cache {
    Node* head = nullptr;
    int count = 0;
    Cache() { state() = State::Alive; }
    ~Cache() {
      state() = State::Dead;  // later frees on this thread go straight to the heap
      while (head != nullptr) {
        Node* next = head->next;
        ::operator delete(head);
        head = next;
      }
    }
  };
  // Trivially destructible, so it stays readable while thread_locals are destroyed.
  static State& state() {
    // initial-exec: a direct %fs-relative access instead of a __tls_get_addr call.
    static thread_local State s __attribute__((tls_model("initial-exec"))) = State::Fresh;
    return s;
  }
  static Cache& cache() {
    static thread_local Cache c __attribute__((tls_model("initial-exec")));  // constructing it marks the state Alive
    return c;
  }
};

}  // namespace tessera::detail
