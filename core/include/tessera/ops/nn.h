// tessera/ops/nn.h — neural-network ops (softmax, log_softmax, layer_norm, losses, conv2d, pooling): free functions.
// Included by tessera/tensor.h; the method forms are in nn_methods.inc.
// Floating dtypes only (float16/bfloat16 compute in float32), PyTorch semantics.
#pragma once

#include <tessera/tensor.h>

#include <optional>
#include <string_view>

namespace tessera {

/// exp(x - max) / sum(exp(x - max)) along `dim` (any dim, wrapped). With `dtype`
/// the input is cast to it first. TypeError for a non-floating input without a
/// floating `dtype`; IndexError for a dim out of range.
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
/// x - max - log(sum(exp(x - max))) along `dim`; as softmax otherwise.
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

/// Normalizes over the trailing dims `normalized_shape` (biased variance, `eps`
/// added inside the square root), then * weight + bias (each of shape
/// normalized_shape, optional). ValueError when the input's trailing dims differ.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);

/// (input - target)^2 with broadcasting, reduced by `reduction` ('none', 'mean',
/// 'sum'; ValueError otherwise). Composite of sub, mul, sum, div.
Tensor mse_loss(const Tensor& self, const Tensor& target, std::string_view reduction = "mean");

/// Negative log-likelihood of log-probabilities `self` ([C], [N, C] or
/// [N, C, d1...]) at integer class indices `target` ([], [N] or [N, d1...]):
/// -weight[t] * self[n, t]. Targets equal to `ignore_index` contribute 0; 'mean'
/// divides by the summed weights of the other targets. IndexError for a target
/// outside [0, C); ValueError for a target of the wrong shape.
Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                std::string_view reduction = "mean", int64_t ignore_index = -100);

/// nll_loss(log_softmax(self, class dim), target) for class indices (integer
/// target), or -sum(weight * target * log_softmax(self)) over the class dim for
/// class probabilities (floating target of the input's shape; 'mean' divides by
/// the number of samples). `label_smoothing` in [0, 1] mixes the target with the
/// uniform distribution, as torch.nn.functional.cross_entropy. Composite.
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                     std::string_view reduction = "mean", int64_t ignore_index = -100, double label_smoothing = 0.0);

/// 2-D cross-correlation of input [N, C, H, W] (or unbatched [C, H, W]) with
/// weight [O, C/groups, kH, kW], plus bias [O]. stride/padding/dilation: one int
/// for both dims or two. ValueError for wrong ranks, channel mismatch, groups not
/// dividing the channels, a kernel larger than the padded input, non-positive
/// stride/dilation or negative padding; TypeError for mixed or non-floating dtypes.
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
/// conv2d with padding "valid" (none) or "same" (output size = input size; stride 1 only).
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              std::string_view padding, IntArrayRef dilation = {1}, int64_t groups = 1);

/// Max over kernel_size windows of the last two dims of [C, H, W] / [N, C, H, W]
/// (stride defaults to kernel_size; implicit padding is -inf; NaN propagates).
/// ValueError for padding above half the kernel, non-positive kernel/stride/
/// dilation, or an empty output. Floating and integer dtypes.
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
/// Mean over windows, as torch.nn.functional.avg_pool2d: the divisor is the
/// window clipped to the padded input (count_include_pad) or to the input, or
/// divisor_override. Floating dtypes.
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

}  // namespace tessera
