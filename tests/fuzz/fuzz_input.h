// Helpers shared by the fuzz harnesses (docs/testing.md).
//
// FuzzInput reads fixed-size fields from the front of a fuzz input and yields
// zeros once the bytes run out, so every input, however short, is a complete
// set of fields: a mutation that drops bytes still reaches the code under test.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tessera::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  /// The next sizeof(T) bytes as a little-endian T; missing bytes read as 0.
  template <typename T>
  T take() {
    static_assert(std::is_trivially_copyable_v<T>);
    unsigned char bytes[sizeof(T)] = {};
    const size_t n = std::min(sizeof(T), size_ - pos_);
    if (n != 0) std::memcpy(bytes, data_ + pos_, n);
    pos_ += n;
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }
  /// Everything not read yet.
  std::string_view rest() const {
    return {reinterpret_cast<const char*>(data_ + pos_), size_ - pos_};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/// A property of the code under test does not hold: report and abort, so that
/// libFuzzer saves the input and the replay test fails.
[[noreturn]] inline void violated(const char* harness, const char* what) {
  std::fprintf(stderr, "fuzz %s: property violated: %s\n", harness, what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tessera::fuzz

#define TSR_FUZZ_CHECK(harness, cond) \
  do {                                \
    if (!(cond)) ::tessera::fuzz::violated(harness, #cond); \
  } while (0)
