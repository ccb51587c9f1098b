// tessera/ops/ternary.h — ternary pointwise ops (where, clamp, lerp, addcmul, addcdiv): free functions.
// Included by tessera/tensor.h; the method forms are in ternary_methods.inc.
//
// The operands broadcast together; devices must match (ValueError otherwise).
// The `_out` forms write the result into `out` (the result's shape; the result
// dtype must cast to out's) and return it.
#pragma once

#include <tessera/tensor.h>

#include <optional>

namespace tessera {

/// condition ? self : other, elementwise. condition must be bool (TypeError);
/// self and other promote as PyTorch's result_type (numbers rank lowest).
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);
Tensor& where_out(Tensor& out, const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor& where_out(Tensor& out, const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor& where_out(Tensor& out, const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor& where_out(Tensor& out, const Tensor& condition, const Scalar& self, const Scalar& other);

/// minimum(maximum(self, min), max): bounds are optional (at least one is
/// required: ValueError), numbers or tensors; the result dtype is promoted
/// over self and the bounds; NaN in self or in a bound gives NaN.
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Tensor>& min,
                  const std::optional<Tensor>& max = std::nullopt);
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max = std::nullopt);
/// clamp with only a lower / upper bound.
Tensor clamp_min(const Tensor& self, const Tensor& min);
Tensor clamp_min(const Tensor& self, const Scalar& min);
Tensor clamp_max(const Tensor& self, const Tensor& max);
Tensor clamp_max(const Tensor& self, const Scalar& max);
Tensor& clamp_min_out(Tensor& out, const Tensor& self, const Tensor& min);
Tensor& clamp_min_out(Tensor& out, const Tensor& self, const Scalar& min);
Tensor& clamp_max_out(Tensor& out, const Tensor& self, const Tensor& max);
Tensor& clamp_max_out(Tensor& out, const Tensor& self, const Scalar& max);

/// self + weight * (end - self) (computed from end's side for weight >= 0.5, so
/// weight 1 gives end exactly). self must be floating; end and a tensor weight
/// must have self's dtype (TypeError), as in PyTorch.
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, const Tensor& weight);
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, const Scalar& weight);

/// self + value * tensor1 * tensor2, promoted over the three tensors (not for
/// bool; a floating value with integer tensors is a TypeError).
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                    const Scalar& value = 1);
/// self + value * tensor1 / tensor2; tensor1 and tensor2 both integer is a
/// TypeError (PyTorch refuses integer division here).
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                    const Scalar& value = 1);

}  // namespace tessera
