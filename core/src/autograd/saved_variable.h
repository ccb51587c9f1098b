// Internal: a tensor saved for backward, checked against its version counter.
#pragma once

#include <tessera/autograd/node.h>

#include <memory>
#include <string>

namespace tessera::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  /// Saves `t` (undefined is fine). An output of `owner` is saved without its
  /// history (no reference cycle) and gets it back on unpack. AutogradError if
  /// t is an inference tensor; `what` names it in that message.
  SavedVariable(const Tensor& t, bool is_output, const std::string& what);
  /// The tensor, with its history when grad mode is on. AutogradError naming
  /// `node`'s op and `what` if it was modified in place or released.
  Tensor unpack(const Node& node, const std::string& what, const std::shared_ptr<Node>& owner = nullptr) const;
  void release() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return defined_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool defined_ = false;
  bool released_ = false;
  bool requires_grad_ = false;
};

}  // namespace tessera::autograd
