// tessera/autograd/hook_handle.h — the handle that removes a registered hook.
#pragma once

#include <functional>
#include <utility>

namespace tessera::autograd {

/// Removes a registered hook; harmless after the tensor is gone or a second
/// time. Not thread-safe itself (one owner); the hook lists it edits are.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  void remove() {
    if (remover_) remover_();
    remover_ = nullptr;
  }

 private:
  std::function<void()> remover_;
};

class Node;

}  // namespace tessera::autograd
