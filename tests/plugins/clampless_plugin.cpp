// A host-memory device "clampless" with only maximum, minimum, copy_ and
// scatter_add_ (float32): what a third-party plugin written before catalogue 2
// has. clamp must still run there, as the two passes, since no _clamp kernel
// exists, cat as one copy_ per input without _cat (catalogue 5), and the
// functional scatter_add as clone + scatter_add_ without _scatter (catalogue 6)
// (tests/core/ops_clamp_fusion_test.cpp, ops_cat_fusion_test.cpp,
// ops_indexing_test.cpp).
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

#include <cmath>
#include <string>

namespace {

// out[i] = f(a[i], b[i]) over out's shape; inputs may be broadcast (stride 0).
template <bool kMax>
TsrError* max_min_kernel(const TsrKernelCall* c) {
  return tessera::sdk::guard([&] {
    const DLTensor& a = *c->args[0].as.tensor;
    const DLTensor& b = *c->args[1].as.tensor;
    const DLTensor& out = c->outputs[0];
    const int64_t n = tessera::sdk::numel(out);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, oa = 0, ob = 0, oo = 0;
      for (int32_t d = out.ndim - 1; d >= 0; --d) {
        const int64_t k = rem % out.shape[d];
        rem /= out.shape[d];
        oa += k * a.strides[d];
        ob += k * b.strides[d];
        oo += k * out.strides[d];
      }
      const float x = static_cast<const float*>(a.data)[oa], y = static_cast<const float*>(b.data)[ob];
      float r = kMax ? (x > y ? x : y) : (x < y ? x : y);
      if (std::isnan(x) || std::isnan(y)) r = std::isnan(x) ? x : y;
      static_cast<float*>(out.data)[oo] = r;
    }
  });
}

// copy_(self, src, non_blocking): self[i] = src[i], float32 to float32, any strides.
TsrError* copy_kernel(const TsrKernelCall* c) {
  return tessera::sdk::guard([&] {
    const DLTensor& src = *c->args[1].as.tensor;
    const DLTensor& out = c->outputs[0];
    if (tessera::sdk::dtype_of(out, "self") != TSR_DTYPE_FLOAT32)
      throw tessera::sdk::Error(TSR_ERROR_INVALID_ARGUMENT, "clampless copies float32 to float32 only");
    const int64_t n = tessera::sdk::numel(out);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, os = 0, oo = 0;
      for (int32_t d = out.ndim - 1; d >= 0; --d) {
        const int64_t k = rem % out.shape[d];
        rem /= out.shape[d];
        os += k * src.strides[d];
        oo += k * out.strides[d];
      }
      static_cast<float*>(out.data)[oo] = static_cast<const float*>(src.data)[os];
    }
  });
}

// The row-major element offset (in elements) of coordinate-list position i of
// `shape` under `strides`, with dim `dim`'s coordinate replaced by `at` when
// at >= 0.
int64_t offset_of(int64_t i, const DLTensor& shape, const int64_t* strides, int32_t dim = -1, int64_t at = -1) {
  int64_t off = 0;
  for (int32_t d = shape.ndim - 1; d >= 0; --d) {
    const int64_t k = i % shape.shape[d];
    i /= shape.shape[d];
    off += (d == dim ? at : k) * strides[d];
  }
  return off;
}

// scatter_add_(self, dim, index, src): self[..index[p]..] += src[p] in
// row-major order of index (float32, int64 index, any strides); outputs[0] is
// self. Every index is checked before the first write.
TsrError* scatter_add_kernel(const TsrKernelCall* c) {
  return tessera::sdk::guard([&] {
    const DLTensor& self = *c->args[0].as.tensor;
    const int32_t dim = static_cast<int32_t>(c->args[1].as.i);
    const DLTensor& index = *c->args[2].as.tensor;
    const DLTensor& src = *c->args[3].as.tensor;
    if (self.ndim == 0 || index.ndim != self.ndim || tessera::sdk::dtype_of(index, "index") != TSR_DTYPE_INT64)
      throw tessera::sdk::Error(TSR_ERROR_INVALID_ARGUMENT, "clampless scatter_add_ takes an int64 index of self's dims");
    const int64_t n = tessera::sdk::numel(index);
    const auto* idx = static_cast<const int64_t*>(index.data);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[offset_of(i, index, index.strides)];
      if (v < 0 || v >= self.shape[dim])
        throw tessera::sdk::Error(TSR_ERROR_OUT_OF_RANGE, "index " + std::to_string(v) + " is out of bounds");
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[offset_of(i, index, index.strides)];
      static_cast<float*>(self.data)[offset_of(i, index, self.strides, dim, v)] +=
          static_cast<const float*>(src.data)[offset_of(i, index, src.strides)];
    }
  });
}

void init(const tessera::sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("clampless", 1003));
  host.register_kernel("maximum", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &max_min_kernel<true>);
  host.register_kernel("minimum", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &max_min_kernel<false>);
  host.register_kernel("copy_", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &copy_kernel);
  host.register_kernel("scatter_add_", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &scatter_add_kernel);
}

void shutdown(void*) noexcept {}

}  // namespace

TSR_SDK_PLUGIN("clampless", "0.1",
               "maximum, minimum, copy_ and scatter_add_ only: clamp, cat and scatter_add run as composites there",
               init, shutdown)
