// Comparing results of the device under test with the cpu plugin's.
#pragma once

#include <tessera/tensor.h>

#include <optional>
#include <string>

#include "samples.h"

namespace tessera::kit {

/// Both tensors on the host (any device, any layout). nullopt when a and b
/// have one shape and dtype and every element agrees: integers and bool
/// exactly; floating values within `tol` (|a - b| <= atol + rtol * |b|), NaN
/// where the other is NaN, an infinity where the other is the same infinity.
/// Otherwise a message naming the first differing element by its index, both
/// values, and how many elements differ.
std::optional<std::string> compare_values(const Tensor& device, const Tensor& cpu, Tolerance tol);

/// nullopt when both have the same shape, dtype and bytes (NaN payloads included).
std::optional<std::string> compare_bitwise(const Tensor& a, const Tensor& b);

/// nullopt when every element of a floating tensor (any device, any layout)
/// is finite, or it is not floating. Otherwise a message naming the first
/// NaN or infinity by its index, its value, and how many there are.
std::optional<std::string> check_finite(const Tensor& t);

/// "[1, 2]" for the flat index `flat` of `shape`.
std::string index_text(const std::vector<int64_t>& shape, int64_t flat);

/// The tensor's values as the host sees them, contiguous, for messages and checks.
Tensor host_copy(const Tensor& t);

}  // namespace tessera::kit
