// Internal: the calling thread's current stream per device, read on every
// kernel call and copy. The hot path reads one thread-local counter: while no
// thread-local override exists (always, on synchronous devices) the current
// stream of every device is its default (NULL) stream.
#pragma once

#include <tessera/abi.h>
#include <tessera/device.h>
#include <tessera/stream.h>

#include <cstdint>

namespace tessera {

/// How many devices have a non-default current stream on this thread.
extern constinit thread_local uint32_t g_stream_overrides __attribute__((tls_model("initial-exec")));

/// The handle of the current stream of `device` on this thread (NULL: default).
TsrStream current_stream_override(Device device) noexcept;

[[gnu::always_inline]] inline TsrStream current_stream_handle(Device device) noexcept {
  if (g_stream_overrides == 0) [[likely]] return nullptr;
  return current_stream_override(device);
}

boost::intrusive_ptr<StreamImpl> current_stream_override_ref(Device device);
/// The current stream of `device` on this thread as a reference for a storage
/// to hold (null: the default stream).
[[gnu::always_inline]] inline boost::intrusive_ptr<StreamImpl> current_stream_ref(Device device) {
  if (g_stream_overrides == 0) [[likely]] return nullptr;
  return current_stream_override_ref(device);
}
/// The plugin handle of a stream (null: the default stream's, NULL).
TsrStream stream_handle(const StreamImpl* stream) noexcept;

}  // namespace tessera
