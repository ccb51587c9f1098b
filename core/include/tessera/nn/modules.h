// tessera/nn/modules.h — the standard layers: Linear, Conv2d, ReLU, Dropout,
// LayerNorm, Sequential. Each is a thin nn::Module over the op library
// (tessera/ops/*.h), with PyTorch's parameter names, shapes and default
// initialization, so state dicts match torch.nn's. Make them with
// std::make_shared; forward() has the op's errors (shapes, dtypes, devices).
//
// Initialization draws from a tessera::Generator: the one passed in `generator`,
// else the default generator (tessera::manual_seed makes it reproducible).
// Threading: as nn::Module.
#pragma once

#include <tessera/nn/module.h>
#include <tessera/ops/random.h>

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::nn {

/// y = x W^T + b. weight [out_features, in_features], bias [out_features].
/// Input [..., in_features] (1-D or more); output [..., out_features].
/// Init (PyTorch's): weight kaiming-uniform with a = sqrt(5), i.e. uniform on
/// ±1/sqrt(in_features), bias uniform on ±1/sqrt(in_features).
class Linear : public Module {
 public:
  /// ValueError for negative sizes. `options` sets the dtype (floating; float32
  /// by default) and device of the parameters.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, const TensorOptions& options = {},
         std::optional<Generator> generator = std::nullopt);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// Re-draws weight and bias as at construction.
  void reset_parameters(std::optional<Generator> generator = std::nullopt);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor& weight() { return weight_; }
  /// Undefined when built with bias = false.
  Tensor& bias() { return bias_; }

 private:
  int64_t in_, out_;
  Tensor& weight_;
  Tensor& bias_;
};

/// Padding of a Conv2d: explicit sizes ({p} or {pH, pW}) or "same" / "valid".
struct Conv2dPadding {
  Conv2dPadding(std::initializer_list<int64_t> p) : sizes(p) {}  // NOLINT
  template <std::integral I>
  Conv2dPadding(I p) : sizes{static_cast<int64_t>(p)} {}         // NOLINT
  Conv2dPadding(const char* mode) : mode(mode) {}                 // NOLINT
  Conv2dPadding(std::string mode) : mode(std::move(mode)) {}      // NOLINT
  std::vector<int64_t> sizes;
  std::string mode;  // empty when sizes are used
};

/// 2-D convolution over [N, C, H, W] (or [C, H, W]). weight [out, in/groups, kH,
/// kW], bias [out]. kernel_size, stride, dilation: {k} or {kH, kW}. Init as
/// PyTorch: kaiming-uniform a = sqrt(5) (uniform on ±1/sqrt(fan_in), fan_in =
/// in/groups * kH * kW), bias uniform on ±1/sqrt(fan_in).
class Conv2d : public Module {
 public:
  /// ValueError for non-positive channels or kernel sizes, groups not dividing
  /// both channel counts, a padding mode other than "same"/"valid", or two-value
  /// lists of the wrong length. Other checks happen in forward (the conv2d op).
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
         std::vector<int64_t> stride = {1}, Conv2dPadding padding = 0, std::vector<int64_t> dilation = {1},
         int64_t groups = 1, bool bias = true, const TensorOptions& options = {},
         std::optional<Generator> generator = std::nullopt);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters(std::optional<Generator> generator = std::nullopt);

  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }

 private:
  int64_t in_, out_, groups_;
  std::vector<int64_t> kernel_, stride_, dilation_;
  Conv2dPadding padding_;
  Tensor& weight_;
  Tensor& bias_;
};

/// max(x, 0) elementwise.
class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

/// In training mode, zeroes each element with probability p and scales the
/// rest by 1/(1-p) (tessera::dropout); the identity in eval mode.
class Dropout : public Module {
 public:
  /// ValueError unless 0 <= p <= 1.
  explicit Dropout(double p = 0.5, std::optional<Generator> generator = std::nullopt);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p() const { return p_; }

 private:
  double p_;
  std::optional<Generator> generator_;
};

/// Normalizes over the trailing `normalized_shape` dims (tessera::layer_norm);
/// with elementwise_affine, weight (ones) and bias (zeros) of that shape.
class LayerNorm : public Module {
 public:
  /// ValueError for an empty or non-positive normalized_shape or eps < 0.
  LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
            const TensorOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }

 private:
  std::vector<int64_t> shape_;
  double eps_;
  bool affine_;
  Tensor& weight_;
  Tensor& bias_;
};

/// Runs its modules in order, each on the previous one's output. Children are
/// named "0", "1", ... so state dict keys are "0.weight", "2.bias", ...
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  /// ValueError for a null module.
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  /// Appends a module (named by its position). Returns *this.
  Sequential& push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  /// The i-th module; IndexError when out of range.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  /// The input itself for an empty Sequential.
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace tessera::nn
