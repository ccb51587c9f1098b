// tessera/ops/linalg.h — linear algebra (mm, bmm, matmul, addmm, dot, outer): free functions.
// Included by tessera/tensor.h; the method forms are in linalg_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

/// self [M, K] @ mat2 [K, N] -> [M, N]; both of one dtype (not bool), else TypeError;
/// inner sizes that differ are a ValueError naming both shapes.
Tensor mm(const Tensor& self, const Tensor& mat2);
/// Batched mm: self [B, M, K] @ mat2 [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& self, const Tensor& mat2);
/// torch.matmul: dot for 1-D x 1-D, mm for 2-D, a vector operand promoted to a
/// matrix and its dim removed afterwards, batched operands broadcast (bmm).
Tensor matmul(const Tensor& self, const Tensor& other);
/// beta * self + alpha * (mat1 @ mat2). mat1 [M, K], mat2 [K, N]; self broadcasts
/// to [M, N]; all three share one dtype (not bool). With beta == 0 self is
/// ignored (NaN in self does not propagate). Integer dtypes take integer beta/alpha
/// (TypeError otherwise).
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
/// The inner product of two 1-D tensors of equal size and dtype: a 0-d tensor.
Tensor dot(const Tensor& self, const Tensor& tensor);
/// The outer product of two 1-D tensors: [n] x [m] -> [n, m], dtype promoted.
Tensor outer(const Tensor& self, const Tensor& vec2);

// out= forms: compute the result, then copy it into `out` (which must have the
// result's shape and device, and a dtype the result casts to); return `out`.
Tensor& mm_out(Tensor& out, const Tensor& self, const Tensor& mat2);
Tensor& bmm_out(Tensor& out, const Tensor& self, const Tensor& mat2);
Tensor& matmul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& addmm_out(Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
                  const Scalar& alpha = 1);
Tensor& dot_out(Tensor& out, const Tensor& self, const Tensor& tensor);
Tensor& outer_out(Tensor& out, const Tensor& self, const Tensor& vec2);

}  // namespace tessera
