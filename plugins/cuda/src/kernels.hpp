// The CUDA plugin's kernel registrations: one function per family file, each
// registering that family's kernels for "cuda" (docs/cuda.md lists them). All
// are called once from the plugin's init, on the loading thread.
#pragma once

#include <tessera/sdk/plugin.hpp>

namespace tessera::cuda {

void register_unary(const sdk::Host& host);      // unary.cu
void register_binary(const sdk::Host& host);     // binary.cu
void register_ternary(const sdk::Host& host);    // ternary.cu
void register_reduction(const sdk::Host& host);  // reduction.cu (reductions and scans)
void register_shape(const sdk::Host& host);      // shape.cu (copy_, fill_, arange, tril, triu)
void register_indexing(const sdk::Host& host);   // indexing.cu (gather ... nonzero, masked_select)
void register_linalg(const sdk::Host& host);     // linalg.cu (mm, bmm, addmm through cuBLAS)
void register_nn(const sdk::Host& host);         // nn.cu (softmax, log_softmax, layer_norm, losses, pooling)
void register_conv(const sdk::Host& host);       // conv.cu (conv2d: cuDNN where built with it, else im2col + cuBLAS;
                                                 // _conv2d_backward_weight: im2col + cuBLAS)
void register_random(const sdk::Host& host);     // random.cu (Philox4x32-10, the cpu plugin's counter rule)

}  // namespace tessera::cuda
