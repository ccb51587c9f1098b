// A transposing copy of dense float32 blocks, for kernels that hand data to a
// library in another layout (nn_conv.cpp: NCHW <-> NHWC for oneDNN). Defined
// in shape_copy.cpp with copy_'s transposing copy.
#pragma once

#include "isa.hpp"

#include <cstdint>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

/// dst[i][c][r] = src[i][r][c] for i < n, r < rows, c < cols: n dense blocks of
/// rows x cols floats, each written transposed (cols x rows), the bits moved
/// as they are. Through copy_'s transposing copy (16 x 16 squares in register
/// blocks, bands split across the OpenMP team). Returns false, writing
/// nothing, where that copy does not take the shape (rows or cols below 16).
bool transpose_blocks_f32(const float* src, float* dst, int64_t n, int64_t rows, int64_t cols);

}}  // namespace tessera::cpu::TSR_CPU_ISA
