// tessera/ops/reduction.h — reductions and scans (mean, prod, max, min, argmax, var, std, norm, logsumexp, any, all, cumsum, ...): free functions.
// Included by tessera/tensor.h; the method forms are in reduction_methods.inc.
//
// Conventions (as torch): `dim` lists may hold negative dims and an empty list
// means every dim; a dim out of range is an IndexError, a repeated dim a
// ValueError. `keepdim` keeps reduced dims with size 1. Reductions without an
// identity (max, min, amax, amin, argmax, argmin, inf-norms) over a zero-size
// dim are an IndexError. NaN propagates through max/min/amax/amin/argmax/argmin.
// The *_out forms compute the result, then copy it into `out` (which must have
// the result's shape and device, and a dtype the result casts to).
#pragma once

#include <tessera/tensor.h>

#include <tuple>

namespace tessera {

/// Arithmetic mean. Floating inputs only, unless `dtype` (floating) is given:
/// TypeError otherwise. float16/bfloat16 are summed in float32. Empty: NaN.
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor& mean_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false,
                 std::optional<ScalarType> dtype = std::nullopt);
/// Sum over all elements, or over `dim` (a list; empty reduces nothing). bool and
/// integers give int64 unless `dtype` (self is then cast to it first); floating
/// sums are pairwise, float16/bfloat16 accumulate in float32. Empty: 0.
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor& sum_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false,
                std::optional<ScalarType> dtype = std::nullopt);
/// Product. bool/integers give int64 (wrapping), unless `dtype`; empty: 1.
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor& prod_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false,
                 std::optional<ScalarType> dtype = std::nullopt);
/// Largest / smallest element (0-d). IndexError for an empty tensor.
Tensor max(const Tensor& self);
Tensor min(const Tensor& self);
/// (values, indices) along `dim`; indices (int64) of the first extreme element
/// (of the first NaN, if any).
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor&, Tensor&> max_out(Tensor& values, Tensor& indices, const Tensor& self, int64_t dim,
                                     bool keepdim = false);
std::tuple<Tensor&, Tensor&> min_out(Tensor& values, Tensor& indices, const Tensor& self, int64_t dim,
                                     bool keepdim = false);
/// Index (int64) of the first max/min along `dim`; with no dim, into the flattened tensor.
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor& argmax_out(Tensor& out, const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor& argmin_out(Tensor& out, const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// Max / min over a set of dims (every dim when empty), self's dtype.
Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor& amax_out(Tensor& out, const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor& amin_out(Tensor& out, const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
/// Whether any / all elements are non-zero: bool (uint8 for a uint8 input).
/// Empty: any is false, all is true.
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor all(const Tensor& self);
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor& any_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor& all_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false);
/// Variance / standard deviation: sum((x - mean)^2) / max(0, N - correction).
/// Floating inputs only (TypeError otherwise).
Tensor var(const Tensor& self);
Tensor var(const Tensor& self, IntArrayRef dim, const Scalar& correction = 1, bool keepdim = false);
Tensor std(const Tensor& self);
Tensor std(const Tensor& self, IntArrayRef dim, const Scalar& correction = 1, bool keepdim = false);
Tensor& var_out(Tensor& out, const Tensor& self, IntArrayRef dim, const Scalar& correction = 1, bool keepdim = false);
Tensor& std_out(Tensor& out, const Tensor& self, IntArrayRef dim, const Scalar& correction = 1, bool keepdim = false);
/// Vector p-norm over dims: (sum |x|^p)^(1/p); p = inf/-inf: max/min |x|; p = 0:
/// count of non-zeros. Floating inputs only. ('fro' is p = 2.)
Tensor norm(const Tensor& self, const Scalar& p = 2);
Tensor norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim = false);
Tensor& norm_out(Tensor& out, const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim = false);
/// log(sum(exp(x))) computed stably (max subtracted first). Integers and bool
/// give float32. Empty: -inf.
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor& logsumexp_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false);
/// Inclusive cumulative sum / product along `dim`. bool/integers give int64
/// unless `dtype`; the input is cast to `dtype` first.
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor& cumsum_out(Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor& cumprod_out(Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

}  // namespace tessera
