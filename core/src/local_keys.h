// Internal: this thread's dispatch key sets and autograd modes, read inline, and
// the key set of a call made on this thread.
// tls_local_dispatch_key_set() (tessera/dispatch_key.h) is the same object for
// code outside the core; the hot paths (dispatch, every new tensor) read it
// here without a call.
#pragma once

#include <tessera/dispatch_key.h>

namespace tessera {

extern constinit thread_local LocalDispatchKeySet g_local_keys __attribute__((tls_model("initial-exec")));

inline LocalDispatchKeySet& local_keys() { return g_local_keys; }

/// The key set a call dispatches on (Dispatcher::call's rule): the keys of its
/// tensor and device arguments, `argument_bits`, with this thread's included
/// keys added and its excluded ones removed. The pointwise lane asks the same.
[[gnu::always_inline]] inline DispatchKeySet call_key_set(uint64_t argument_bits) {
  const LocalDispatchKeySet& tls = local_keys();
  return (DispatchKeySet(argument_bits) | tls.included) - tls.excluded;
}

}  // namespace tessera
