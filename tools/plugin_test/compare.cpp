// Value comparison of device and cpu results (compare.h).
#include "compare.h"

#include <tessera/tessera.h>

#include <cmath>
#include <cstring>

namespace tessera::kit {

namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

// The device's bytes under t move to the host as they are, then the host
// makes them contiguous: reading a result needs only the device's copy slot,
// not its copy_ kernel (which may be the kernel under test, or missing).
Tensor host_copy(const Tensor& t) {
  const Device cpu("cpu");
  if (t.device() == cpu || !t.defined() || t.numel() == 0 || t.storage() == nullptr) return t.to(cpu).contiguous();
  for (int64_t s : t.strides())
    if (s < 0) return t.to(cpu).contiguous();  // a negative-stride import: the core's own path
  const size_t total = t.storage()->nbytes();
  const Tensor bytes(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(t.storage(), kByte, {static_cast<int64_t>(total)}, {1}, 0)));
  const Tensor host = bytes.to(cpu);
  const Tensor view(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(host.storage(), t.scalar_type(), t.sizes(), t.strides(), t.storage_offset())));
  return view.contiguous();
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t s = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % s;
    flat /= s;
  }
  return shape_text(idx);
}

std::optional<std::string> compare_values(const Tensor& device, const Tensor& cpu, Tolerance tol) {
  if (device.sizes().vec() != cpu.sizes().vec())
    return "shape " + shape_text(device.sizes().vec()) + " where cpu gives " + shape_text(cpu.sizes().vec());
  if (device.scalar_type() != cpu.scalar_type())
    return std::string("dtype ") + dtype_text(device.scalar_type()) + " where cpu gives " + dtype_text(cpu.scalar_type());
  const std::vector<int64_t> shape = cpu.sizes().vec();
  const int64_t n = cpu.numel();
  if (n == 0) return std::nullopt;
  int64_t bad = 0, first = -1;
  std::string first_text;
  if (is_floating_type(cpu.scalar_type())) {
    const Tensor a = host_copy(device).to(kDouble), b = host_copy(cpu).to(kDouble);
    const double* pa = a.data_ptr<double>();
    const double* pb = b.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = pa[i], y = pb[i];
      bool ok;
      if (std::isnan(y) || std::isnan(x)) ok = std::isnan(x) && std::isnan(y);
      else if (std::isinf(y) || std::isinf(x)) ok = x == y;
      else ok = std::fabs(x - y) <= tol.atol + tol.rtol * std::fabs(y);
      if (ok) continue;
      if (bad++ == 0) {
        first = i;
        first_text = "device " + number(x) + ", cpu " + number(y);
        if (!std::isnan(x) && !std::isnan(y) && !std::isinf(x) && !std::isinf(y))
          first_text += " (|diff| " + number(std::fabs(x - y)) + " > " + number(tol.atol + tol.rtol * std::fabs(y)) + ")";
      }
    }
  } else {
    const Tensor a = host_copy(device).to(kLong), b = host_copy(cpu).to(kLong);
    const int64_t* pa = a.data_ptr<int64_t>();
    const int64_t* pb = b.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (pa[i] == pb[i]) continue;
      if (bad++ == 0) {
        first = i;
        first_text = "device " + std::to_string(pa[i]) + ", cpu " + std::to_string(pb[i]);
      }
    }
  }
  if (bad == 0) return std::nullopt;
  return "element " + index_text(shape, first) + " (flat " + std::to_string(first) + "): " + first_text + "; " +
         std::to_string(bad) + " of " + std::to_string(n) + " elements differ";
}

std::optional<std::string> check_finite(const Tensor& t) {
  if (!t.defined() || !is_floating_type(t.scalar_type()) || t.numel() == 0) return std::nullopt;
  const Tensor h = host_copy(t).to(kDouble);
  const double* p = h.data_ptr<double>();
  const int64_t n = h.numel();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i]) && bad++ == 0) first = i;
  if (bad == 0) return std::nullopt;
  return "element " + index_text(h.sizes().vec(), first) + " (flat " + std::to_string(first) + ") is " +
         number(p[first]) + "; " + std::to_string(bad) + " of " + std::to_string(n) + " elements are not finite";
}

std::optional<std::string> compare_bitwise(const Tensor& a, const Tensor& b) {
  if (a.sizes().vec() != b.sizes().vec() || a.scalar_type() != b.scalar_type())
    return "shape or dtype changed: " + shape_text(a.sizes().vec()) + " " + dtype_text(a.scalar_type()) + " vs " +
           shape_text(b.sizes().vec()) + " " + dtype_text(b.scalar_type());
  const Tensor x = host_copy(a), y = host_copy(b);
  const size_t elem = x.element_size();
  const auto* px = static_cast<const unsigned char*>(x.data_ptr());
  const auto* py = static_cast<const unsigned char*>(y.data_ptr());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(px + i * elem, py + i * elem, elem) == 0) continue;
    int64_t bad = 0;
    for (int64_t j = i; j < n; ++j) bad += std::memcmp(px + j * elem, py + j * elem, elem) != 0;
    const Tensor xd = is_floating_type(x.scalar_type()) ? x.to(kDouble) : x.to(kLong);
    const Tensor yd = is_floating_type(y.scalar_type()) ? y.to(kDouble) : y.to(kLong);
    auto value = [&](const Tensor& t) {
      return is_floating_type(t.scalar_type()) ? number(t.data_ptr<double>()[i]) : std::to_string(t.data_ptr<int64_t>()[i]);
    };
    return "element " + index_text(x.sizes().vec(), i) + " (flat " + std::to_string(i) + "): " + value(xd) +
           " then " + value(yd) + "; " + std::to_string(bad) + " of " + std::to_string(n) + " elements differ";
  }
  return std::nullopt;
}

}  // namespace tessera::kit
