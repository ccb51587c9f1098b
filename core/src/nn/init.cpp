// nn::init: in-place parameter initialization (tessera/nn/init.h).
#include <tessera/autograd.h>
#include <tessera/nn/init.h>

#include <cmath>
#include <string>

namespace tessera::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  TSR_CHECK(tensor.dim() >= 2, ValueError, "nn.init: fan in and fan out need a tensor of at least 2 dims, got ",
            tensor.sizes());
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 0.75;
  throw ValueError(detail::str("nn.init.calculate_gain: unknown nonlinearity '", nonlinearity, "'"));
}

Tensor& uniform_(Tensor& tensor, double a, double b, std::optional<Generator> generator) {
  autograd::NoGradGuard no_grad;
  if (generator)
    tensor.uniform_(a, b, *generator);
  else
    tensor.uniform_(a, b);
  return tensor;
}

Tensor& normal_(Tensor& tensor, double mean, double std, std::optional<Generator> generator) {
  autograd::NoGradGuard no_grad;
  if (generator)
    tensor.normal_(mean, std, *generator);
  else
    tensor.normal_(mean, std);
  return tensor;
}

Tensor& constant_(Tensor& tensor, const Scalar& value) {
  autograd::NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}
Tensor& zeros_(Tensor& tensor) { return constant_(tensor, 0); }
Tensor& ones_(Tensor& tensor) { return constant_(tensor, 1); }

namespace {
int64_t fan(const Tensor& t, std::string_view mode) {
  const auto [in, out] = calculate_fan_in_and_fan_out(t);
  if (mode == "fan_in") return in;
  if (mode == "fan_out") return out;
  throw ValueError(detail::str("nn.init: mode must be 'fan_in' or 'fan_out', got '", mode, "'"));
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& tensor, double a, std::string_view mode, std::string_view nonlinearity,
                         std::optional<Generator> generator) {
  if (tensor.numel() == 0) return tensor;  // nothing to fill (and the fan may be 0)
  const double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / static_cast<double>(fan(tensor, mode)));
  return uniform_(tensor, -bound, bound, generator);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, std::string_view mode, std::string_view nonlinearity,
                        std::optional<Generator> generator) {
  if (tensor.numel() == 0) return tensor;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(tensor, mode)));
  return normal_(tensor, 0, std, generator);
}

Tensor& xavier_uniform_(Tensor& tensor, double gain, std::optional<Generator> generator) {
  if (tensor.numel() == 0) return tensor;
  const auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(tensor, -bound, bound, generator);
}

Tensor& xavier_normal_(Tensor& tensor, double gain, std::optional<Generator> generator) {
  if (tensor.numel() == 0) return tensor;
  const auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(tensor, 0, gain * std::sqrt(2.0 / static_cast<double>(in + out)), generator);
}

}  // namespace tessera::nn::init
