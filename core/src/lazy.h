// Internal: Lazy<T>, an optional value built in place on first use.
// Not thread-safe (one owner, like std::optional); the destructor destroys the
// value if it was built.
#pragma once

#include <new>
#include <utility>

namespace tessera {

/// A T constructed on demand, with no work (no zeroing) when unused — unlike
/// std::optional, whose default constructor GCC may compile to a memset.
template <typename T>
class Lazy {
 public:
  Lazy() {}
  ~Lazy() {
    if (engaged_) value_.~T();
  }
  Lazy(const Lazy&) = delete;
  Lazy& operator=(const Lazy&) = delete;
  template <typename... Args>
  T& emplace(Args&&... args) {
    if (engaged_) value_.~T();
    new (&value_) T(std::forward<Args>(args)...);
    engaged_ = true;
    return value_;
  }

 private:
  union {
    T value_;
  };
  bool engaged_ = false;
};

}  // namespace tessera
