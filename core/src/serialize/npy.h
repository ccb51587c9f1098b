// The NumPy .npy header: writing version 1.0 (2.0 when the header is too long)
// and reading 1.0, 2.0 and 3.0. Little-endian, C-order arrays only.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <tessera/tensor.h>

#include <cstddef>
#include <functional>
#include <string>

namespace tessera::npy {

struct Header {
  ScalarType dtype = kFloat;
  DimVector shape;
};

/// The dtype written for `t` ('<f4' for bfloat16: see tessera/serialize.h).
ScalarType stored_dtype(ScalarType t);

/// Magic, version, length and the padded dict of an array of `dtype` and
/// `shape`; the data follows it, 64-byte aligned. TypeError for a dtype with no
/// descr (bfloat16: convert first).
std::string encode_header(ScalarType dtype, IntArrayRef shape);

/// Reads a header with `read(buf, n)` (returns the bytes read, < n at the end of
/// the data). Throws ValueError starting with `where` for a bad magic, an
/// unknown version, a truncated or malformed dict, an unsupported descr or
/// Fortran order.
Header decode_header(const std::function<size_t(void*, size_t)>& read, const std::string& where);

}  // namespace tessera::npy
