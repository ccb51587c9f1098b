// Dispatch key names and this thread's included/excluded key sets with their
// scoped guards (tessera/dispatch_key.h).
#include <tessera/dispatch_key.h>

#include <string>

#include "device_registry.h"
#include "local_keys.h"

namespace tessera {

std::string dispatch_key_name(int bit) {
  switch (bit) {
    case static_cast<int>(DispatchKey::Autocast): return "Autocast";
    case static_cast<int>(DispatchKey::Autograd): return "Autograd";
    case static_cast<int>(DispatchKey::User0): return "User0";
    case static_cast<int>(DispatchKey::User1): return "User1";
    default: break;
  }
  if (bit < kMaxDeviceTypes) {
    if (const DeviceTypeEntry* e = device_registry::get(static_cast<DeviceTypeId>(bit))) return e->name;
    return "backend" + std::to_string(bit);
  }
  return "key" + std::to_string(bit);
}

std::string to_string(DispatchKeySet ks) {
  std::string s = "[";
  bool first = true;
  for (int bit = 63; bit >= 0; --bit) {
    if (!ks.has(bit)) continue;
    s += (first ? "" : ", ") + dispatch_key_name(bit);
    first = false;
  }
  return s + "]";
}

// initial-exec: read on every dispatch, so no __tls_get_addr call; constinit:
// no TLS-init check where core/src/local_keys.h reads it inline.
constinit thread_local LocalDispatchKeySet g_local_keys __attribute__((tls_model("initial-exec")));

LocalDispatchKeySet& tls_local_dispatch_key_set() { return g_local_keys; }

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.included;  // restore only what we added
  tls.included = tls.included | added_;
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.included = tls.included - added_;
}
ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.excluded;
  tls.excluded = tls.excluded | added_;
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.excluded = tls.excluded - added_;
}

}  // namespace tessera
