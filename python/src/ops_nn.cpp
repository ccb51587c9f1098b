// Python bindings of the nn ops (tessera/ops/nn.h): methods and module functions.


#include "common.h"

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;
using OptTensor = std::optional<Tensor>;

std::optional<ScalarType> unwrap(const OptDType& d) {
  if (d) return d->type;
  return std::nullopt;
}

// An int or a sequence of ints (stride=2, stride=(2, 1)).
std::vector<int64_t> int_pair(nb::handle obj, const char* what) {
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) return {int64_of(obj, what)};
  return sizes_from_object(obj, what);
}

Tensor conv2d_impl(const Tensor& input, const Tensor& weight, const OptTensor& bias, nb::handle stride,
                   nb::handle padding, nb::handle dilation, int64_t groups) {
  const std::vector<int64_t> s = int_pair(stride, "conv2d: stride"), d = int_pair(dilation, "conv2d: dilation");
  if (PyUnicode_Check(padding.ptr())) {
    const std::string p = nb::cast<std::string>(padding);
    nb::gil_scoped_release release;
    return conv2d(input, weight, bias, s, std::string_view(p), d, groups);
  }
  const std::vector<int64_t> p = int_pair(padding, "conv2d: padding");
  nb::gil_scoped_release release;
  return conv2d(input, weight, bias, s, IntArrayRef(p), d, groups);
}

Tensor max_pool2d_impl(const Tensor& input, nb::handle kernel_size, nb::handle stride, nb::handle padding,
                       nb::handle dilation, bool ceil_mode) {
  const std::vector<int64_t> k = int_pair(kernel_size, "max_pool2d: kernel_size");
  const std::vector<int64_t> s = stride.is_none() ? std::vector<int64_t>{} : int_pair(stride, "max_pool2d: stride");
  const std::vector<int64_t> p = int_pair(padding, "max_pool2d: padding");
  const std::vector<int64_t> d = int_pair(dilation, "max_pool2d: dilation");
  nb::gil_scoped_release release;
  return max_pool2d(input, k, s, p, d, ceil_mode);
}

Tensor avg_pool2d_impl(const Tensor& input, nb::handle kernel_size, nb::handle stride, nb::handle padding,
                       bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const std::vector<int64_t> k = int_pair(kernel_size, "avg_pool2d: kernel_size");
  const std::vector<int64_t> s = stride.is_none() ? std::vector<int64_t>{} : int_pair(stride, "avg_pool2d: stride");
  const std::vector<int64_t> p = int_pair(padding, "avg_pool2d: padding");
  nb::gil_scoped_release release;
  return avg_pool2d(input, k, s, p, ceil_mode, count_include_pad, divisor_override);
}

Tensor layer_norm_impl(const Tensor& input, nb::handle normalized_shape, const OptTensor& weight,
                       const OptTensor& bias, double eps) {
  const std::vector<int64_t> ns = int_pair(normalized_shape, "layer_norm: normalized_shape");
  return layer_norm(input, ns, weight, bias, eps);
}

}  // namespace

void register_nn_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("softmax", [](const Tensor& t, int64_t dim, const OptDType& dtype) { return t.softmax(dim, unwrap(dtype)); },
          nb::arg("dim"), nb::arg("dtype") = nb::none())
      .def("log_softmax",
           [](const Tensor& t, int64_t dim, const OptDType& dtype) { return t.log_softmax(dim, unwrap(dtype)); },
           nb::arg("dim"), nb::arg("dtype") = nb::none());

  m.def("softmax", [](const Tensor& t, int64_t dim, const OptDType& dtype) { return softmax(t, dim, unwrap(dtype)); },
        nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  m.def("log_softmax",
        [](const Tensor& t, int64_t dim, const OptDType& dtype) { return log_softmax(t, dim, unwrap(dtype)); },
        nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  m.def("layer_norm", &layer_norm_impl,
        nb::sig("def layer_norm(input: Tensor, normalized_shape: int | tuple[int, ...] | list[int], "
                "weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-05) -> Tensor"),
        nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = nb::none(),
        nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5);
  m.def("mse_loss",
        [](const Tensor& input, const Tensor& target, const std::string& reduction) {
          return mse_loss(input, target, reduction);
        },
        nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean");
  m.def("nll_loss",
        [](const Tensor& input, const Tensor& target, const OptTensor& weight, int64_t ignore_index,
           const std::string& reduction) { return nll_loss(input, target, weight, reduction, ignore_index); },
        nb::arg("input"), nb::arg("target"), nb::arg("weight") = nb::none(), nb::arg("ignore_index") = -100,
        nb::arg("reduction") = "mean");
  m.def("cross_entropy",
        [](const Tensor& input, const Tensor& target, const OptTensor& weight, int64_t ignore_index,
           const std::string& reduction, double label_smoothing) {
          return cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing);
        },
        nb::arg("input"), nb::arg("target"), nb::arg("weight") = nb::none(), nb::arg("ignore_index") = -100,
        nb::arg("reduction") = "mean", nb::arg("label_smoothing") = 0.0);
  m.def("conv2d", &conv2d_impl,
        nb::sig("def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, "
                "stride: int | tuple[int, ...] | list[int] = 1, padding: int | tuple[int, ...] | list[int] | str = 0, "
                "dilation: int | tuple[int, ...] | list[int] = 1, groups: int = 1) -> Tensor"),
        nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(),
        nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1);
  m.def("max_pool2d", &max_pool2d_impl,
        nb::sig("def max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...] | list[int], "
                "stride: int | tuple[int, ...] | list[int] | None = None, padding: int | tuple[int, ...] | list[int] = 0, "
                "dilation: int | tuple[int, ...] | list[int] = 1, ceil_mode: bool = False) -> Tensor"),
        nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(),
        nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("ceil_mode") = false);
  m.def("avg_pool2d", &avg_pool2d_impl,
        nb::sig("def avg_pool2d(input: Tensor, kernel_size: int | tuple[int, ...] | list[int], "
                "stride: int | tuple[int, ...] | list[int] | None = None, padding: int | tuple[int, ...] | list[int] = 0, "
                "ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor"),
        nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(),
        nb::arg("padding") = 0, nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true,
        nb::arg("divisor_override") = nb::none());
}

}  // namespace tessera::python
