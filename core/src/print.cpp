// Readable printing in PyTorch's style: tensor([[1., 2.], [3., 4.]], dtype=float64).
#include <tessera/autograd.h>
#include <tessera/error.h>
#include <tessera/ops/shape.h>
#include <tessera/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "device_registry.h"

namespace tessera {
namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements; beyond this, show edges only
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  bool floating = false;
  bool is_bool = false;
  bool all_integral = true;
  bool scientific = false;

  std::string format_real(double v) const {
    char buf[64];
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (scientific) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (all_integral) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
};

// The elements to show, formatted, in row-major order of `shown` (the tensor
// with only its edge items kept when summarized). Integers are read as int64,
// so every value prints exactly (through double, int64's extremes did not).
std::vector<std::string> format_elements(const Tensor& shown) {
  const ScalarType t = shown.scalar_type();
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(shown.numel()));
  if (!is_floating_type(t)) {
    for (int64_t x : shown.to_vector<int64_t>())
      out.push_back(t == kBool ? (x != 0 ? "True" : "False") : std::to_string(x));
    return out;
  }
  const std::vector<double> v = shown.to_vector<double>();
  Formatter f;
  double max_abs = 0, min_abs = INFINITY;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    if (x != std::floor(x)) f.all_integral = false;
    max_abs = std::max(max_abs, std::abs(x));
    if (x != 0) min_abs = std::min(min_abs, std::abs(x));
  }
  f.scientific = max_abs >= 1e8 || (!f.all_integral && min_abs < 1e-4);
  for (double x : v) out.push_back(f.format_real(x));
  return out;
}

// Writes the nested brackets. `sizes` are the tensor's, `kept` the shown
// tensor's (equal, or 2 * kEdgeItems in a summarized dim); `elems` follow
// `kept` in row-major order. Recursion depth = dims, at most 64 (a tensor's limit).
void print_rec(std::ostringstream& os, const std::vector<std::string>& elems, IntArrayRef sizes, IntArrayRef kept,
               size_t dim, int64_t offset, int width, int indent) {
  const int64_t n = kept[dim];
  int64_t inner = 1;
  for (size_t d = dim + 1; d < kept.size(); ++d) inner *= kept[d];
  const bool last = dim + 1 == sizes.size();
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (sizes[dim] > n && i == kEdgeItems) os << (last ? "..., " : "...,\n" + std::string(indent + 1, ' '));
    if (last) {
      const std::string& s = elems[offset + i];
      os << std::string(std::max<int>(0, width - int(s.size())), ' ') << s;
      if (i + 1 < n) os << ", ";
    } else {
      print_rec(os, elems, sizes, kept, dim + 1, offset + i * inner, width, indent + 1);
      if (i + 1 < n) os << "," << std::string(sizes.size() - dim - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
  os << "]";
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  const DeviceTypeEntry& dev = device_entry(device());
  const ScalarType t = scalar_type();
  const bool default_dtype = t == kDefaultFloat || t == kLong || t == kBool;
  std::string suffix;
  if (device().type_name() != "cpu") suffix += ", device='" + device().str() + "'";
  if (!default_dtype) suffix += ", dtype=" + std::string(dtype_name(t));
  if (requires_grad()) suffix += is_leaf() ? ", requires_grad=True" : ", grad_fn=<" + grad_fn()->name() + ">";
  autograd::NoGradGuard no_grad;  // reading the values records nothing
  if (dev.no_storage()) {
    os << "tensor(..., size=" << sizes() << suffix << (default_dtype ? ", dtype=" + std::string(dtype_name(t)) : "")
       << ")";
    return os.str();
  }
  os << "tensor(";
  if (numel() == 0) {
    os << "[]";
    if (dim() > 1) suffix = ", size=" + detail::str(sizes()) + suffix;
    os << suffix << ")";
    return os.str();
  }
  // A large tensor shows its first and last kEdgeItems along each long dim:
  // those are selected where the tensor lives, so only they are copied.
  Tensor shown = *this;
  if (numel() > kSummarizeAbove) {
    for (int64_t d = 0; d < dim(); ++d) {
      const int64_t n = shown.size(d);
      if (n > 2 * kEdgeItems) shown = cat({shown.narrow(d, 0, kEdgeItems), shown.narrow(d, n - kEdgeItems, kEdgeItems)}, d);
    }
  }
  const std::vector<std::string> elems = format_elements(shown);
  int width = 1;
  for (const std::string& e : elems) width = std::max<int>(width, int(e.size()));
  if (dim() == 0) {
    os << elems[0];
  } else {
    print_rec(os, elems, sizes(), shown.sizes(), 0, 0, width, 7);
  }
  os << suffix << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace tessera
