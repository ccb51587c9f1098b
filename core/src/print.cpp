// Readable printing in PyTorch's style: tensor([[1., 2.], [3., 4.]], dtype=float64).
#include <tessera/autograd.h>
#include <tessera/error.h>
#include <tessera/tensor.h>

#include <cmath>
#include <cstdio>
#include <sstream>

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
  int width = 1;

  std::string format(double v) const {
    char buf[64];
    if (is_bool) return v != 0 ? "True" : "False";
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (scientific) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (all_integral) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
};

void print_rec(std::ostringstream& os, const std::vector<double>& v, IntArrayRef sizes, size_t dim, int64_t offset,
               int64_t stride_elems, const Formatter& f, bool summarize, int indent) {
  const int64_t n = sizes[dim];
  int64_t inner = 1;
  for (size_t d = dim + 1; d < sizes.size(); ++d) inner *= sizes[d];
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << (dim + 1 == sizes.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdgeItems;
    }
    if (dim + 1 == sizes.size()) {
      std::string s = f.format(v[offset + i]);
      os << std::string(std::max<int>(0, f.width - int(s.size())), ' ') << s;
      if (i + 1 < n) os << ", ";
    } else {
      print_rec(os, v, sizes, dim + 1, offset + i * inner, stride_elems, f, summarize, indent + 1);
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
  const std::vector<double> v = to_vector<double>();
  Formatter f;
  f.floating = is_floating_type(t);
  f.is_bool = t == kBool;
  double max_abs = 0, min_abs = INFINITY;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    if (x != std::floor(x)) f.all_integral = false;
    max_abs = std::max(max_abs, std::abs(x));
    if (x != 0) min_abs = std::min(min_abs, std::abs(x));
  }
  f.scientific = f.floating && (max_abs >= 1e8 || (!f.all_integral && min_abs < 1e-4));
  for (double x : v) f.width = std::max<int>(f.width, int(f.format(x).size()));
  os << "tensor(";
  if (dim() == 0) {
    os << f.format(v[0]);
  } else if (numel() == 0) {
    os << "[]";
    if (dim() > 1) suffix = ", size=" + detail::str(sizes()) + suffix;
  } else {
    print_rec(os, v, sizes(), 0, 0, 1, f, numel() > kSummarizeAbove, 7);
  }
  os << suffix << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace tessera
