// float32 conv2d through oneDNN (Debian's libdnnl-dev), when the plugin was
// built with it. Compiled once, for baseline x86-64 (tessera_cpu_kernels_common):
// oneDNN chooses its own kernels for the CPU at run time, so this lives outside
// the instruction-set namespaces (isa.hpp) and every level's nn_conv.cpp calls it.
#pragma once

#include <cstdint>

namespace tessera::cpu::onednn {

/// One convolution: dense NCHW input [N, C, H, W], dense OIHW weight
/// [O, C/groups, kH, kW], output [N, O, Ho, Wo]. Padding before (top, left);
/// the padding after is implied by Ho, Wo. Stride and dilation as in PyTorch
/// (dilation 1 = none).
struct Conv2dShape {
  int64_t N, C, H, W, O, kH, kW, Ho, Wo;
  int64_t sh, sw, ph, pw, dh, dw, groups;
};

/// Whether the oneDNN path can run at all: built with oneDNN and not disabled
/// by TESSERA_CPU_ONEDNN=0 (read once).
bool conv2d_available();

/// The caller's transposing copy, for the channels-last (NHWC) layout that
/// oneDNN's fastest float32 kernels (brgconv) take: dst[i][c][r] = src[i][r][c]
/// for n dense blocks of rows x cols floats (NCHW -> NHWC: rows = C, cols =
/// H * W). oneDNN's own reorder for this (jit:uni) was a third of a 32-channel
/// stride-2 convolution. Returns false, writing nothing, for a shape it does
/// not take; oneDNN's reorder then runs. Called from the calling thread; may
/// use the OpenMP team.
using Transpose = bool (*)(const float* src, float* dst, int64_t n, int64_t rows, int64_t cols);

/// Computes out = conv2d(x, w) + bias (bias: O floats, or nullptr) on dense
/// float32 buffers. Returns false, having written nothing that matters, when
/// oneDNN is unavailable or refuses the problem (the caller then computes it
/// another way); refusals are remembered per problem. `transpose` (may be
/// null) moves x and the result to and from channels-last where the kernel
/// wants it. Thread-safe.
bool conv2d_f32(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* out,
                Transpose transpose = nullptr);

/// Computes grad_w = conv2d's weight gradient (dense OIHW, [O, C/groups, kH,
/// kW]) from dense NCHW x [N, C, H, W] and grad_out [N, O, Ho, Wo], with
/// oneDNN's backward-weights convolution. Returns false, having written
/// nothing that matters, as conv2d_f32 does; `transpose` as there (for x and
/// grad_out). Thread-safe.
bool conv2d_backward_weight_f32(const Conv2dShape& s, const float* grad_out, const float* x, float* grad_w,
                                Transpose transpose = nullptr);

}  // namespace tessera::cpu::onednn
