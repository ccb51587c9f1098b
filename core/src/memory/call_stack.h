// memory/call_stack.h — call stacks attached to allocator events when history
// is recorded: C++ return addresses captured cheaply with backtrace() at the
// event, symbolized only when a snapshot is written; plus the frames a context
// recorder adds (the lead's Python hook).
// Thread-safety: capture and symbolize are reentrant; a StackContext is
// immutable once built and shared by shared_ptr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::memory {

/// One frame, as PyTorch's snapshots write it.
struct Frame {
  std::string filename;  // source file, or the shared library for C++ frames
  int64_t line = 0;      // 0 when unknown
  std::string name;      // the function
  bool operator==(const Frame&) const = default;
};

/// Called (outside the allocator's lock) at each recorded event to add frames
/// of another language, innermost first; must not call into the allocator.
using ContextRecorder = std::function<std::vector<Frame>()>;

/// The call stack of one allocator event.
struct StackContext {
  std::vector<void*> cpp;     // return addresses, innermost first
  std::vector<Frame> frames;  // the context recorder's, innermost first (outer to `cpp`)
};

/// Captures the calling thread's C++ stack from the frame whose return address
/// is `outermost_own` (e.g. __builtin_return_address(0) of the allocator's
/// public function: its caller's frame comes first), at most `max_frames`, and
/// the recorder's frames (when set). When that address is not found (it
/// should be), the stack starts after this function.
std::shared_ptr<const StackContext> capture_stack(const void* outermost_own, int max_frames,
                                                  const ContextRecorder* recorder);

/// Turns return addresses into frames (dladdr + demangling); caches per
/// address across calls of one Symbolizer. Not thread-safe (one per writer).
class Symbolizer {
 public:
  /// The C++ frames then the recorder's, innermost first; {} for null.
  std::vector<Frame> frames(const StackContext* context);

 private:
  std::unordered_map<void*, Frame> cache_;
};

}  // namespace tessera::memory
