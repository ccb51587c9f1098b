// Matrix products: mm and bmm (plugin kernels) and matmul (torch.matmul's rules,
// composed from views, mm and bmm).
#include <tessera/error.h>

#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {

void check_same_dtype(const StructuredCall& c, const Tensor& a, const Tensor& b) {
  TSR_CHECK(a.scalar_type() == b.scalar_type(), TypeError, c.op().name(),
            ": expected both operands to have the same dtype, got ", dtype_name(a.scalar_type()), " and ",
            dtype_name(b.scalar_type()), "; call: ", describe_call(c.op(), c.frame()));
  TSR_CHECK(a.scalar_type() != kBool, TypeError, c.op().name(), ": bool matrices are not supported");
}

void mm_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& b = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  TSR_CHECK(a.dim() == 2 && b.dim() == 2, ValueError, c.op().name(), ": expected 2-D tensors, got shapes ", a.sizes(),
            " and ", b.sizes());
  TSR_CHECK(a.size(1) == b.size(0), ValueError, c.op().name(), ": shapes ", a.sizes(), " and ", b.sizes(),
            " cannot be multiplied (", a.size(1), " != ", b.size(0), ")");
  check_same_dtype(c, a, b);
  c.add_output({a.size(0), b.size(1)}, a.scalar_type());
  c.set_tensor(0, a);
  c.set_tensor(1, b);
  if (a.size(1) == 0) c.set_zero_fill_outputs();
  c.dispatch_dtype = a.scalar_type();
}

void bmm_meta(StructuredCall& c) {
  const Tensor& a = c.tensor_arg(0);
  const Tensor& b = c.tensor_arg(1);
  c.device = common_device(c, {0, 1});
  TSR_CHECK(a.dim() == 3 && b.dim() == 3, ValueError, c.op().name(), ": expected 3-D tensors, got shapes ", a.sizes(),
            " and ", b.sizes());
  TSR_CHECK(a.size(0) == b.size(0), ValueError, c.op().name(), ": batch sizes differ: shapes ", a.sizes(), " and ",
            b.sizes());
  TSR_CHECK(a.size(2) == b.size(1), ValueError, c.op().name(), ": shapes ", a.sizes(), " and ", b.sizes(),
            " cannot be multiplied (", a.size(2), " != ", b.size(1), ")");
  check_same_dtype(c, a, b);
  c.add_output({a.size(0), a.size(1), b.size(2)}, a.scalar_type());
  c.set_tensor(0, a);
  c.set_tensor(1, b);
  if (a.size(2) == 0) c.set_zero_fill_outputs();
  c.dispatch_dtype = a.scalar_type();
}

void matmul_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& a = *f.args[0].tensor;
  const Tensor& b = *f.args[1].tensor;
  TSR_CHECK(a.defined() && b.defined(), ValueError, "matmul: undefined tensor argument");
  const int64_t da = a.dim(), db = b.dim();
  TSR_CHECK(da >= 1 && db >= 1, ValueError, "matmul: both arguments need at least 1 dimension, got shapes ",
            a.sizes(), " and ", b.sizes());
  (void)op;
  if (da == 1 && db == 1) {
    TSR_CHECK(a.size(0) == b.size(0), ValueError, "matmul: 1-D tensors of different sizes ", a.size(0), " and ",
              b.size(0));
    f.outputs[0] = a.unsqueeze(0).mm(b.unsqueeze(1)).view({});
  } else if (da <= 2 && db <= 2) {
    const Tensor a2 = da == 1 ? a.unsqueeze(0) : a;
    const Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    Tensor r = a2.mm(b2);
    if (da == 1) r = r.squeeze(0);
    if (db == 1) r = r.squeeze(-1);
    f.outputs[0] = r;
  } else {
    // Batched: 1-D operands get a temporary matrix dim; batch dims broadcast.
    const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
    const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
    const int64_t n = a3.size(a3.dim() - 2), k = a3.size(a3.dim() - 1);
    const int64_t k2 = b3.size(b3.dim() - 2), p = b3.size(b3.dim() - 1);
    TSR_CHECK(k == k2, ValueError, "matmul: shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (", k,
              " != ", k2, ")");
    const IntArrayRef ba(a3.sizes().data(), a3.dim() - 2), bb(b3.sizes().data(), b3.dim() - 2);
    const DimVector batch = broadcast_shapes(op, ba, bb);
    int64_t nbatch = 1;
    for (int64_t s : batch) nbatch *= s;
    DimVector ea(batch.begin(), batch.end()), eb(batch.begin(), batch.end());
    ea.push_back(n); ea.push_back(k);
    eb.push_back(k); eb.push_back(p);
    const Tensor am = a3.expand(ea).reshape({nbatch, n, k});
    const Tensor bm = b3.expand(eb).reshape({nbatch, k, p});
    DimVector out_shape(batch.begin(), batch.end());
    if (da > 1) out_shape.push_back(n);
    if (db > 1) out_shape.push_back(p);
    f.outputs[0] = am.bmm(bm).view(out_shape);
  }
}

}  // namespace

const Operator& op_mm() {
  static const Operator& op = Dispatcher::instance().declare_structured("mm(Tensor self, Tensor mat2) -> Tensor", 0, &mm_meta);
  return op;
}
const Operator& op_bmm() {
  static const Operator& op = Dispatcher::instance().declare_structured("bmm(Tensor self, Tensor mat2) -> Tensor", 0, &bmm_meta);
  return op;
}
const Operator& op_matmul() {
  static const Operator& op =
      Dispatcher::instance().declare_composite("matmul(Tensor self, Tensor other) -> Tensor", 0, &matmul_kernel);
  return op;
}

void declare_linalg_ops() {
  for (auto f : {&op_mm, &op_bmm, &op_matmul}) f();
}

}  // namespace tessera::ops
