// tessera/nn/init.h — parameter initialization (torch.nn.init): fills a tensor
// in place without recording history and returns it.
//
// Random fills draw from `generator`, or the default generator when none is
// given. Fan-in/fan-out follow PyTorch: for a [out, in, k...] weight, fan_in =
// in * prod(k), fan_out = out * prod(k). Errors: TypeError for a non-floating
// tensor (random fills), ValueError for fewer than 2 dims where a fan is needed
// or an unknown nonlinearity/mode. Threading: as the ops (tessera/ops/random.h).
#pragma once

#include <tessera/ops/random.h>
#include <tessera/tensor.h>

#include <optional>
#include <string_view>
#include <utility>

namespace tessera::nn::init {

/// (fan_in, fan_out) of a weight of >= 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);
/// The recommended gain of a nonlinearity: "linear", "conv2d", "sigmoid" 1;
/// "tanh" 5/3; "relu" sqrt(2); "leaky_relu" sqrt(2 / (1 + param^2)) (param
/// defaults to 0.01); "selu" 3/4.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

Tensor& uniform_(Tensor& tensor, double a = 0, double b = 1, std::optional<Generator> generator = std::nullopt);
Tensor& normal_(Tensor& tensor, double mean = 0, double std = 1, std::optional<Generator> generator = std::nullopt);
Tensor& constant_(Tensor& tensor, const Scalar& value);
Tensor& zeros_(Tensor& tensor);
Tensor& ones_(Tensor& tensor);
/// Uniform on ±gain * sqrt(3 / fan), fan = fan_in or fan_out (`mode`), gain =
/// calculate_gain(nonlinearity, a).
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0, std::string_view mode = "fan_in",
                         std::string_view nonlinearity = "leaky_relu", std::optional<Generator> generator = std::nullopt);
/// Normal(0, gain / sqrt(fan)).
Tensor& kaiming_normal_(Tensor& tensor, double a = 0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu", std::optional<Generator> generator = std::nullopt);
/// Uniform on ±gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1, std::optional<Generator> generator = std::nullopt);
/// Normal(0, gain * sqrt(2 / (fan_in + fan_out))).
Tensor& xavier_normal_(Tensor& tensor, double gain = 1, std::optional<Generator> generator = std::nullopt);

}  // namespace tessera::nn::init
