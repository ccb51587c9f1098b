// Matrix products: mm, bmm and addmm (plugin kernels); matmul (torch.matmul's
// rules, composed from views, mm and bmm), dot and outer (composites).
#include <tessera/error.h>

#include "../checked_math.h"
#include "../structured.h"
#include "ops.h"
#include "out_target.h"

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
  } else if (db <= 2) {
    // A batch of matrices times one matrix (or vector) is a single mm: fold the
    // batch into the rows (a copy only if a's batch cannot be viewed as rows).
    const Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    const int64_t k = a.size(-1);
    TSR_CHECK(k == b2.size(0), ValueError, "matmul: shapes ", a.sizes(), " and ", b.sizes(),
              " cannot be multiplied (", k, " != ", b2.size(0), ")");
    // A product of a's sizes: fits int64, as a's shape does (checked_math.h).
    int64_t rows = 1;
    (void)checked::numel(IntArrayRef(a.sizes().data(), size_t(da - 1)), rows);
    Tensor r = a.reshape({rows, k}).mm(b2);
    DimVector out_shape(a.sizes().begin(), a.sizes().end() - 1);
    if (db == 2) out_shape.push_back(b.size(1));
    f.outputs[0] = r.view(out_shape);
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
    (void)checked::numel(batch, nbatch);  // broadcast_shapes checked it fits
    DimVector ea(batch.begin(), batch.end()), eb(batch.begin(), batch.end());
    ea.push_back(n); ea.push_back(k);
    eb.push_back(k); eb.push_back(p);
    for (const DimVector* shape : {&ea, &eb}) (void)checked::check_shape("matmul", *shape, a.scalar_type());
    const Tensor am = a3.expand(ea).reshape({nbatch, n, k});
    const Tensor bm = b3.expand(eb).reshape({nbatch, k, p});
    DimVector out_shape(batch.begin(), batch.end());
    if (da > 1) out_shape.push_back(n);
    if (db > 1) out_shape.push_back(p);
    f.outputs[0] = am.bmm(bm).view(out_shape);
  }
}

// addmm: out = beta * self + alpha * (mat1 @ mat2), self broadcast to [M, N].
template <bool InPlace>
void addmm_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& a = c.tensor_arg(1);
  const Tensor& b = c.tensor_arg(2);
  c.device = common_device(c, {0, 1, 2});
  TSR_CHECK(a.dim() == 2 && b.dim() == 2, ValueError, c.op().name(), ": expected 2-D mat1 and mat2, got shapes ",
            a.sizes(), " and ", b.sizes());
  TSR_CHECK(a.size(1) == b.size(0), ValueError, c.op().name(), ": mat1 and mat2 shapes ", a.sizes(), " and ",
            b.sizes(), " cannot be multiplied (", a.size(1), " != ", b.size(0), ")");
  check_same_dtype(c, a, b);
  TSR_CHECK(self.scalar_type() == a.scalar_type(), TypeError, c.op().name(),
            ": self and mat1 must have the same dtype, got ", dtype_name(self.scalar_type()), " and ",
            dtype_name(a.scalar_type()));
  const ScalarType t = a.scalar_type();
  const Scalar beta = c.arg(3).to_scalar(), alpha = c.arg(4).to_scalar();
  TSR_CHECK(is_floating_type(t) || (!beta.is_floating_point() && !alpha.is_floating_point()), TypeError,
            c.op().name(), ": for integer inputs beta and alpha must not be floating-point numbers (got beta=", beta,
            ", alpha=", alpha, ")");
  const int64_t shape[2] = {a.size(0), b.size(1)};
  const IntArrayRef out_shape(shape, 2);
  Tensor mat1 = a, mat2 = b;
  if constexpr (InPlace) {
    if (self.numel() != 0) check_writable(c.op(), self);  // nothing is written otherwise
    TSR_CHECK(self.sizes().equals(out_shape), ValueError, c.op().name(), ": self of shape ", self.sizes(),
              " does not match the product's shape ", out_shape);
    // The kernel writes self while reading the matrices: read those from copies.
    mat1 = snapshot_if_overlapping(a, self);
    mat2 = snapshot_if_overlapping(b, self);
    c.add_aliased_output(self);
    c.set_tensor(0, self);
  } else {
    bool fits = self.dim() <= 2;
    for (int64_t i = 1; fits && i <= self.dim(); ++i) {
      const int64_t s = self.size(-i);
      fits = s == 1 || s == shape[2 - i];
    }
    TSR_CHECK(fits, ValueError, c.op().name(), ": self of shape ", self.sizes(),
              " cannot be broadcast to the product's shape ", out_shape);
    c.add_output(out_shape, t);
    c.set_tensor(0, self.sizes().equals(out_shape) ? self : self.expand(out_shape));
  }
  c.set_tensor(1, mat1);
  c.set_tensor(2, mat2);
  c.set_scalar(3, beta, t);
  c.set_scalar(4, alpha, t);
  c.dispatch_dtype = t;
}

void check_vector(const Operator& op, const Tensor& t, const char* name) {
  TSR_CHECK(t.dim() == 1, ValueError, op.name(), ": expected 1-D ", name, ", got shape ", t.sizes());
}

void dot_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& a = *f.args[0].tensor;
  const Tensor& b = *f.args[1].tensor;
  TSR_CHECK(a.defined() && b.defined(), ValueError, "dot: undefined tensor argument");
  check_vector(op, a, "self");
  check_vector(op, b, "tensor");
  TSR_CHECK(a.size(0) == b.size(0), ValueError, "dot: inconsistent tensor sizes: self has ", a.size(0),
            " elements and tensor has ", b.size(0));
  TSR_CHECK(a.scalar_type() == b.scalar_type(), TypeError, "dot: expected both vectors to have the same dtype, got ",
            dtype_name(a.scalar_type()), " and ", dtype_name(b.scalar_type()));
  f.outputs[0] = a.unsqueeze(0).mm(b.unsqueeze(1)).view({});
}

void outer_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  const Tensor& a = *f.args[0].tensor;
  const Tensor& b = *f.args[1].tensor;
  TSR_CHECK(a.defined() && b.defined(), ValueError, "outer: undefined tensor argument");
  check_vector(op, a, "self");
  check_vector(op, b, "vec2");
  f.outputs[0] = a.unsqueeze(1).mul(b.unsqueeze(0));
}

constexpr char kFamily[] = "linalg";

constinit OpHandle op_addmm{structured(kFamily,
    "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", 0, &addmm_meta<false>)};
constinit OpHandle op_addmm_{inplace_variant(kFamily, op_addmm,
    "addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)",
    &addmm_meta<true>)};
constinit OpHandle op_dot{composite(kFamily, "dot(Tensor self, Tensor tensor) -> Tensor", 0, &dot_kernel)};
constinit OpHandle op_outer{composite(kFamily, "outer(Tensor self, Tensor vec2) -> Tensor", 0, &outer_kernel)};

constinit OpHandle op_mm{structured(kFamily, "mm(Tensor self, Tensor mat2) -> Tensor", 0, &mm_meta)};
constinit OpHandle op_bmm{structured(kFamily, "bmm(Tensor self, Tensor mat2) -> Tensor", 0, &bmm_meta)};
constinit OpHandle op_matmul{composite(kFamily, "matmul(Tensor self, Tensor other) -> Tensor", 0, &matmul_kernel)};

}  // namespace

void declare_linalg_ops() {
  declare_now({&op_mm, &op_bmm, &op_matmul, &op_addmm, &op_addmm_, &op_dot, &op_outer});
}

}  // namespace tessera::ops

namespace tessera {

using V = IValue;

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  return ops::call(ops::op_addmm(), {V::of(self), V::of(mat1), V::of(mat2), V::of(beta), V::of(alpha)});
}
Tensor dot(const Tensor& self, const Tensor& tensor) { return ops::call(ops::op_dot(), {V::of(self), V::of(tensor)}); }
Tensor outer(const Tensor& self, const Tensor& vec2) { return ops::call(ops::op_outer(), {V::of(self), V::of(vec2)}); }

Tensor mm(const Tensor& self, const Tensor& mat2) { return ops::call(ops::op_mm(), {V::of(self), V::of(mat2)}); }
Tensor bmm(const Tensor& self, const Tensor& mat2) { return ops::call(ops::op_bmm(), {V::of(self), V::of(mat2)}); }
Tensor matmul(const Tensor& self, const Tensor& other) {
  return ops::call(ops::op_matmul(), {V::of(self), V::of(other)});
}
Tensor Tensor::mm(const Tensor& mat2) const { return tessera::mm(*this, mat2); }
Tensor Tensor::bmm(const Tensor& mat2) const { return tessera::bmm(*this, mat2); }
Tensor Tensor::matmul(const Tensor& other) const { return tessera::matmul(*this, other); }
Tensor& mm_out(Tensor& out, const Tensor& self, const Tensor& mat2) { return ops::out_form("mm", out, [&] { return mm(self, mat2); }); }
Tensor& bmm_out(Tensor& out, const Tensor& self, const Tensor& mat2) {
  return ops::out_form("bmm", out, [&] { return bmm(self, mat2); });
}
Tensor& matmul_out(Tensor& out, const Tensor& self, const Tensor& other) {
  return ops::out_form("matmul", out, [&] { return matmul(self, other); });
}
Tensor& addmm_out(Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha) {
  return ops::out_form("addmm", out, [&] { return addmm(self, mat1, mat2, beta, alpha); });
}
Tensor& dot_out(Tensor& out, const Tensor& self, const Tensor& tensor) {
  return ops::out_form("dot", out, [&] { return dot(self, tensor); });
}
Tensor& outer_out(Tensor& out, const Tensor& self, const Tensor& vec2) {
  return ops::out_form("outer", out, [&] { return outer(self, vec2); });
}

Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) const {
  return tessera::addmm(*this, mat1, mat2, beta, alpha);
}
Tensor& Tensor::addmm_(const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  Tensor r = ops::call(ops::op_addmm_(), {V::of(*this), V::of(mat1), V::of(mat2), V::of(beta), V::of(alpha)});
  (void)r;
  return *this;
}
Tensor Tensor::dot(const Tensor& tensor) const { return tessera::dot(*this, tensor); }
Tensor Tensor::outer(const Tensor& vec2) const { return tessera::outer(*this, vec2); }

}  // namespace tessera
