// tessera/ops/indexing.h — indexing ops (nonzero, index_select, gather, scatter, masked_fill, masked_select, take, embedding, one_hot): free functions.
// Included by tessera/tensor.h; the method forms are in indexing_methods.inc.
//
// Semantics and errors follow PyTorch. Index tensors are int64 (index_select,
// index_add and embedding also take int32). An index outside [0, size) — for
// take, outside [-numel, numel) — raises IndexError naming the op, the index
// value and the size; the target of an in-place op is then left unchanged.
// Wrong index dtypes and dtype mismatches raise TypeError, shape mismatches
// ValueError, dims out of range IndexError.
#pragma once

#include <tessera/tensor.h>

#include <optional>

namespace tessera {

/// The indices of the non-zero elements of self, in row-major order: int64 of
/// shape [n, self.dim()] (n depends on the data, so meta tensors refuse it).
Tensor nonzero(const Tensor& self);
/// The slices of `self` along `dim` picked by the 0-d or 1-D `index`: result
/// size(dim) == index.numel(), other sizes as self.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
/// result[i][j][k] = self[index[i][j][k]][j][k] (dim 0; likewise for other dims).
/// index has self's number of dims and index.size(d) <= self.size(d) for d != dim;
/// the result has index's shape.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
/// A copy of self with self[index[i][j]][j] = src[i][j] (dim 0). src has self's
/// dtype and index.size(d) <= src.size(d); duplicated indices: one of the
/// values wins (unspecified which, as in PyTorch).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// As scatter with every src element equal to `value` (converted to self's dtype).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
/// As scatter, adding instead of storing: duplicated indices accumulate (in
/// index order, whatever the thread count).
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// A copy of self with self.select(dim, index[i]) += alpha * source.select(dim, i).
/// source has self's dtype and shape except source.size(dim) == index.numel().
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
/// self where mask is false, value where true; mask is bool and broadcasts with
/// self (the result has the broadcast shape and self's dtype).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
/// As above with a 0-d tensor value (ValueError for a value with dims).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
/// The out= form: writes masked_fill's result into `out` (same device and shape;
/// the result's dtype must cast to out's) and returns it.
Tensor& masked_fill_out(Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_out(Tensor& out, const Tensor& self, const Tensor& mask, const Tensor& value);
/// The elements of self where the (broadcast) bool mask is true, 1-D in
/// row-major order. The size depends on the data: not available on meta.
Tensor masked_select(const Tensor& self, const Tensor& mask);
/// self viewed as 1-D, read at `index` (int64, any shape; negative values count
/// from the end); the result has index's shape.
Tensor take(const Tensor& self, const Tensor& index);
/// Rows of the 2-D `weight` picked by `indices` (int64 or int32): shape
/// indices.shape + [weight.size(1)]. padding_idx (within [-rows, rows)) is
/// accepted for PyTorch compatibility; it only matters for gradients.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);
/// int64 one-hot encoding: shape self.shape + [num_classes]. self is int64 with
/// values in [0, num_classes); num_classes = -1 means max(self) + 1, which needs
/// the data (not available on meta; ValueError for an empty tensor).
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

}  // namespace tessera
