// A host-memory device "clampless" with only maximum, minimum and copy_
// (float32): what a third-party plugin written before catalogue 2 has. clamp
// must still run there, as the two passes, since no _clamp kernel exists, and
// cat as one copy_ per input without _cat (catalogue 5)
// (tests/core/ops_clamp_fusion_test.cpp, ops_cat_fusion_test.cpp).
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

#include <cmath>

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

void init(const tessera::sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("clampless", 1003));
  host.register_kernel("maximum", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &max_min_kernel<true>);
  host.register_kernel("minimum", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &max_min_kernel<false>);
  host.register_kernel("copy_", "clampless", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &copy_kernel);
}

void shutdown(void*) noexcept {}

}  // namespace

TSR_SDK_PLUGIN("clampless", "0.1", "maximum, minimum and copy_ only: clamp and cat run as composites there", init, shutdown)
