// Internal: this thread's dispatch key sets and autograd modes, read inline.
// tls_local_dispatch_key_set() (tessera/dispatch_key.h) is the same object for
// code outside the core; the hot paths (dispatch, every new tensor) read it
// here without a call.
#pragma once

#include <tessera/dispatch_key.h>

namespace tessera {

extern constinit thread_local LocalDispatchKeySet g_local_keys __attribute__((tls_model("initial-exec")));

inline LocalDispatchKeySet& local_keys() { return g_local_keys; }

}  // namespace tessera
