// The standard layers (tessera/nn/modules.h): thin modules over the op library.
#include <tessera/autograd.h>
#include <tessera/nn/init.h>
#include <tessera/nn/modules.h>

#include <cmath>
#include <sstream>

namespace tessera::nn {
namespace {

TensorOptions float_options(const TensorOptions& options, const char* who) {
  const ScalarType dt = options.dtype_or(kDefaultFloat);
  TSR_CHECK(is_floating_type(dt), TypeError, who, ": parameters must have a floating dtype, got ", dt);
  return TensorOptions(dt).device(options.device_or_cpu());
}

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

// Both dims of a 2-D conv argument ({k} -> {k, k}).
std::vector<int64_t> pair_of(const std::vector<int64_t>& v, const char* what) {
  TSR_CHECK(v.size() == 1 || v.size() == 2, ValueError, "Conv2d: ", what, " must have 1 or 2 values, got ",
            v.size());
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

// Uniform on ±1/sqrt(fan_in): PyTorch's default bias init (also the weight's, for kaiming a = sqrt(5)).
void init_bias(Tensor& bias, int64_t fan_in, const std::optional<Generator>& gen) {
  if (!bias.defined()) return;
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  init::uniform_(bias, -bound, bound, gen);
}

// x @ w^T + b for a 2-D x (b may be undefined): one addmm, as torch's F.linear.
Tensor affine(const Tensor& x, const Tensor& w, const Tensor& b) {
  return b.defined() ? addmm(b, x, w.t()) : x.mm(w.t());
}

}  // namespace

// ---- Linear ----

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, const TensorOptions& options,
               std::optional<Generator> generator)
    : Module("Linear"),
      in_(in_features),
      out_(out_features),
      weight_(register_parameter("weight", Tensor())),
      bias_(register_parameter("bias", Tensor())) {
  TSR_CHECK(in_features >= 0 && out_features >= 0, ValueError, "Linear: in_features and out_features must be >= 0, got ",
            in_features, " and ", out_features);
  const TensorOptions opts = float_options(options, "Linear");
  weight_ = empty({out_, in_}, opts).requires_grad_(true);
  if (bias) bias_ = empty({out_}, opts).requires_grad_(true);
  reset_parameters(std::move(generator));
}

void Linear::reset_parameters(std::optional<Generator> generator) {
  init::kaiming_uniform_(weight_, std::sqrt(5.0), "fan_in", "leaky_relu", generator);
  init_bias(bias_, in_, generator);
}

Tensor Linear::forward(const Tensor& input) {
  TSR_CHECK(input.dim() >= 1 && input.size(-1) == in_, ValueError, "Linear.forward: the input's last dim must be ",
            "in_features = ", in_, ", got an input of shape ", input.sizes());
  if (input.dim() == 2) return affine(input, weight_, bias_);
  // Other ranks: fold the leading dims into one and do the 2-D product.
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < input.dim(); ++d) rows *= input.size(d);
  DimVector out_shape(input.sizes().begin(), input.sizes().end());
  out_shape.back() = out_;
  return affine(input.reshape({rows, in_}), weight_, bias_).reshape(out_shape);
}

std::string Linear::extra_repr() const {
  return detail::str("in_features=", in_, ", out_features=", out_, ", bias=", bias_.defined() ? "True" : "False");
}

// ---- Conv2d ----

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
               std::vector<int64_t> stride, Conv2dPadding padding, std::vector<int64_t> dilation, int64_t groups,
               bool bias, const TensorOptions& options, std::optional<Generator> generator)
    : Module("Conv2d"),
      in_(in_channels),
      out_(out_channels),
      groups_(groups),
      kernel_(pair_of(kernel_size, "kernel_size")),
      stride_(pair_of(stride, "stride")),
      dilation_(pair_of(dilation, "dilation")),
      padding_(std::move(padding)),
      weight_(register_parameter("weight", Tensor())),
      bias_(register_parameter("bias", Tensor())) {
  TSR_CHECK(in_ > 0 && out_ > 0, ValueError, "Conv2d: in_channels and out_channels must be positive, got ", in_,
            " and ", out_);
  TSR_CHECK(groups_ > 0 && in_ % groups_ == 0 && out_ % groups_ == 0, ValueError, "Conv2d: groups = ", groups_,
            " must be positive and divide in_channels = ", in_, " and out_channels = ", out_);
  TSR_CHECK(kernel_[0] > 0 && kernel_[1] > 0, ValueError, "Conv2d: kernel_size must be positive, got ",
            list_str(kernel_));
  if (padding_.mode.empty()) {
    padding_.sizes = pair_of(padding_.sizes, "padding");
  } else {
    TSR_CHECK(padding_.mode == "same" || padding_.mode == "valid", ValueError,
              "Conv2d: padding must be sizes, 'same' or 'valid', got '", padding_.mode, "'");
  }
  const TensorOptions opts = float_options(options, "Conv2d");
  weight_ = empty({out_, in_ / groups_, kernel_[0], kernel_[1]}, opts).requires_grad_(true);
  if (bias) bias_ = empty({out_}, opts).requires_grad_(true);
  reset_parameters(std::move(generator));
}

void Conv2d::reset_parameters(std::optional<Generator> generator) {
  init::kaiming_uniform_(weight_, std::sqrt(5.0), "fan_in", "leaky_relu", generator);
  init_bias(bias_, init::calculate_fan_in_and_fan_out(weight_).first, generator);
}

Tensor Conv2d::forward(const Tensor& input) {
  const std::optional<Tensor> b = bias_.defined() ? std::optional<Tensor>(bias_) : std::nullopt;
  if (!padding_.mode.empty()) return conv2d(input, weight_, b, stride_, padding_.mode, dilation_, groups_);
  return conv2d(input, weight_, b, stride_, padding_.sizes, dilation_, groups_);
}

std::string Conv2d::extra_repr() const {
  std::string s = detail::str(in_, ", ", out_, ", kernel_size=", list_str(kernel_), ", stride=", list_str(stride_));
  if (!padding_.mode.empty())
    s += ", padding=" + padding_.mode;
  else if (padding_.sizes != std::vector<int64_t>{0, 0})
    s += ", padding=" + list_str(padding_.sizes);
  if (dilation_ != std::vector<int64_t>{1, 1}) s += ", dilation=" + list_str(dilation_);
  if (groups_ != 1) s += detail::str(", groups=", groups_);
  if (!bias_.defined()) s += ", bias=False";
  return s;
}

// ---- ReLU ----

Tensor ReLU::forward(const Tensor& input) { return input.relu(); }

// ---- Dropout ----

Dropout::Dropout(double p, std::optional<Generator> generator)
    : Module("Dropout"), p_(p), generator_(std::move(generator)) {
  TSR_CHECK(p >= 0 && p <= 1, ValueError, "Dropout: p must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& input) { return dropout(input, p_, is_training(), generator_); }

std::string Dropout::extra_repr() const { return detail::str("p=", p_, ", inplace=False"); }

// ---- LayerNorm ----

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine,
                     const TensorOptions& options)
    : Module("LayerNorm"),
      shape_(std::move(normalized_shape)),
      eps_(eps),
      affine_(elementwise_affine),
      weight_(register_parameter("weight", Tensor())),
      bias_(register_parameter("bias", Tensor())) {
  TSR_CHECK(!shape_.empty(), ValueError, "LayerNorm: normalized_shape is empty");
  for (int64_t d : shape_)
    TSR_CHECK(d > 0, ValueError, "LayerNorm: normalized_shape must be positive, got ", list_str(shape_));
  TSR_CHECK(eps >= 0, ValueError, "LayerNorm: eps must be >= 0, got ", eps);
  if (affine_) {
    const TensorOptions opts = float_options(options, "LayerNorm");
    weight_ = ones(shape_, opts).requires_grad_(true);
    bias_ = zeros(shape_, opts).requires_grad_(true);
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  return layer_norm(input, shape_, affine_ ? std::optional<Tensor>(weight_) : std::nullopt,
                    affine_ ? std::optional<Tensor>(bias_) : std::nullopt, eps_);
}

std::string LayerNorm::extra_repr() const {
  return detail::str(list_str(shape_), ", eps=", eps_, ", elementwise_affine=", affine_ ? "True" : "False");
}

// ---- Sequential ----

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

Sequential& Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
  return *this;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t i) const {
  TSR_CHECK(i < modules_.size(), IndexError, "Sequential: index ", i, " out of range for ", modules_.size(),
            " modules");
  return modules_[i];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = m->forward(x);
  return x;
}

}  // namespace tessera::nn
