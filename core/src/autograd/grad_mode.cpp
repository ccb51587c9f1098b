// Per-thread grad, inference and anomaly modes. Grad mode off or inference mode
// on excludes the Autograd key from this thread's dispatches, so ops skip the
// autograd layer entirely.
#include <tessera/autograd.h>

#include "autograd_meta.h"

namespace tessera::autograd {
void refresh_exclusion(LocalDispatchKeySet& tls) {
  const DispatchKeySet ag(DispatchKey::Autograd);
  const bool off = !tls.grad_enabled || tls.inference_mode || tls.below_autograd > 0;
  tls.excluded = off ? (tls.excluded | ag) : (tls.excluded - ag);
}

bool is_grad_enabled() {
  const LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  return tls.grad_enabled && !tls.inference_mode;
}
void set_grad_enabled(bool enabled) {
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.grad_enabled = enabled;
  refresh_exclusion(tls);
}
bool is_inference_mode_enabled() { return tls_local_dispatch_key_set().inference_mode; }

NoGradGuard::NoGradGuard() : prev_(tls_local_dispatch_key_set().grad_enabled) { set_grad_enabled(false); }
NoGradGuard::~NoGradGuard() { set_grad_enabled(prev_); }
EnableGradGuard::EnableGradGuard() : prev_(tls_local_dispatch_key_set().grad_enabled) { set_grad_enabled(true); }
EnableGradGuard::~EnableGradGuard() { set_grad_enabled(prev_); }
SetGradEnabledGuard::SetGradEnabledGuard(bool enabled) : prev_(tls_local_dispatch_key_set().grad_enabled) {
  set_grad_enabled(enabled);
}
SetGradEnabledGuard::~SetGradEnabledGuard() { set_grad_enabled(prev_); }

InferenceMode::InferenceMode(bool enabled) {
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  prev_inference_ = tls.inference_mode;
  prev_grad_ = tls.grad_enabled;
  if (enabled) {
    tls.inference_mode = true;
    refresh_exclusion(tls);
  }
}
InferenceMode::~InferenceMode() {
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.inference_mode = prev_inference_;
  tls.grad_enabled = prev_grad_;
  refresh_exclusion(tls);
}

bool is_anomaly_enabled() { return tls_local_dispatch_key_set().anomaly_mode; }
void set_anomaly_enabled(bool enabled) { tls_local_dispatch_key_set().anomaly_mode = enabled; }
DetectAnomalyGuard::DetectAnomalyGuard() : prev_(is_anomaly_enabled()) { set_anomaly_enabled(true); }
DetectAnomalyGuard::~DetectAnomalyGuard() { set_anomaly_enabled(prev_); }

}  // namespace tessera::autograd
