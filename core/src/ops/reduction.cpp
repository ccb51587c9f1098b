// Reductions: sum over a set of dims.
#include <tessera/error.h>

#include <algorithm>

#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {

void sum_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  c.device = self.device();
  const int64_t ndim = self.dim();
  // Which dims: None or [] means all of them (as torch.sum).
  bool reduce[64] = {};
  TSR_CHECK(ndim <= 64, ValueError, c.op().name(), ": tensors of more than 64 dims are not supported");
  const IValue& dim_arg = c.arg(1);
  if (dim_arg.is_none() || dim_arg.int_list().empty()) {
    std::fill(reduce, reduce + ndim, true);
  } else {
    for (int64_t d : dim_arg.int_list()) {
      const int64_t w = wrap_dim(c.op(), d, ndim);
      if (ndim == 0) continue;
      TSR_CHECK(!reduce[w], ValueError, c.op().name(), ": dim ", w, " appears more than once in dim=", dim_arg.int_list());
      reduce[w] = true;
    }
  }
  const bool keepdim = c.arg(2).b;
  ScalarType in_dtype = self.scalar_type();
  ScalarType out_dtype;
  if (!c.arg(3).is_none()) {
    out_dtype = in_dtype = c.arg(3).dtype;
  } else {
    out_dtype = is_floating_type(in_dtype) ? in_dtype : kLong;
  }
  DimVector out_shape, dims;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduce[d]) {
      dims.push_back(d);
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(self.size(d));
    }
  }
  c.add_output(out_shape, out_dtype);
  c.set_tensor(0, self.scalar_type() == in_dtype ? self : self.to(in_dtype));
  c.set_int_list(1, dims);
  TsrValue kd{};
  kd.tag = TSR_VALUE_BOOL;
  kd.as.b = keepdim ? 1 : 0;
  c.set_value(2, kd);
  if (c.arg(3).is_none()) {
    c.set_none(3);
  } else {
    TsrValue dt{};
    dt.tag = TSR_VALUE_DTYPE;
    dt.as.dtype = static_cast<TsrDType>(out_dtype);
    c.set_value(3, dt);
  }
  if (self.numel() == 0) c.set_zero_fill_outputs();  // the sum of nothing is 0
  c.dispatch_dtype = in_dtype;
}

}  // namespace

const Operator& op_sum() {
  static const Operator& op = Dispatcher::instance().declare_structured(
      "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", 0, &sum_meta);
  return op;
}

void declare_reduction_ops() {
  for (auto f : {&op_sum}) f();
}

}  // namespace tessera::ops
