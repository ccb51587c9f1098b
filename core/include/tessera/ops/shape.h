// tessera/ops/shape.h — shape ops (empty, arange, cat, stack, split, chunk, flip, roll, repeat, tile, pad, tril, triu): free functions.
// The views (view, reshape, transpose, ...) and copy_/fill_ are Tensor methods only (shape_methods.inc).
// Included by tessera/tensor.h; the method forms are in shape_methods.inc.
#pragma once

#include <tessera/tensor.h>

#include <optional>
#include <string_view>
#include <vector>

namespace tessera {

/// An uninitialized tensor (dtype: the default float unless given; device: cpu
/// unless given). OutOfMemoryError when the device cannot provide the bytes.
Tensor empty(IntArrayRef size, const TensorOptions& options = {});
/// An uninitialized tensor with the given strides (>= 0), over one storage
/// spanning them.
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options = {});
/// [0, end) (or [start, end) by step), as Python's range() counts it for
/// integers. dtype: int64 if all bounds are integers, else the default float,
/// unless given.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, const TensorOptions& options = {});

/// Concatenates `tensors` along `dim` (all on one device, same number of dims,
/// equal sizes except in `dim`). The result dtype promotes over all inputs.
/// 1-D tensors of size 0 are skipped (PyTorch's legacy rule). ValueError for an
/// empty list, 0-d tensors or mismatched shapes; IndexError for a bad dim.
Tensor cat(ArrayRef<Tensor> tensors, int64_t dim = 0);
/// cat into `out` (its shape must be the result's; the result dtype must cast to out's).
Tensor& cat_out(Tensor& out, ArrayRef<Tensor> tensors, int64_t dim = 0);
/// Joins equally shaped tensors along a new dim (dim in [-ndim-1, ndim]).
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor& stack_out(Tensor& out, ArrayRef<Tensor> tensors, int64_t dim = 0);
/// Views of consecutive pieces of `split_size` along `dim` (the last may be
/// smaller). split_size 0 is only allowed for a size-0 dim.
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
/// Views of pieces of the given sizes along `dim`; the sizes must sum to the dim's size.
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
/// At most `chunks` (> 0) views of ceil(size / chunks) along `dim`.
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
/// A copy with the order of elements reversed along each dim of `dims` (no repeats).
Tensor flip(const Tensor& self, IntArrayRef dims);
/// A copy with elements shifted by shifts[i] along dims[i] (wrapping around).
/// Without dims, the flattened tensor is rolled by the single shift.
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
/// Tiles self repeats[i] times along dim i; repeats may have more entries than
/// self has dims (leading dims are added), not fewer.
Tensor repeat(const Tensor& self, IntArrayRef repeats);
/// As repeat, but `dims` shorter than self's dims is padded with leading 1s.
Tensor tile(const Tensor& self, IntArrayRef dims);
/// Constant padding (torch.nn.functional.pad): pad = (last_left, last_right,
/// second_last_left, ...); negative entries crop. Only mode "constant";
/// NotImplementedError for reflect/replicate/circular. value defaults to 0.
Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);
/// The lower triangle of the last two dims (elements with col - row <= diagonal), others 0.
Tensor tril(const Tensor& self, int64_t diagonal = 0);
/// The upper triangle of the last two dims (elements with col - row >= diagonal), others 0.
Tensor triu(const Tensor& self, int64_t diagonal = 0);
Tensor& tril_out(Tensor& out, const Tensor& self, int64_t diagonal = 0);
Tensor& triu_out(Tensor& out, const Tensor& self, int64_t diagonal = 0);

}  // namespace tessera
