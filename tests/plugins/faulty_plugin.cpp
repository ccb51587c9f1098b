// A device plugin whose kernels fail in every way a kernel can, for the error
// tests: device type "faulty" (host memory via malloc) with
//   fill_   float32  works (so tensors can be made),
//   add     float32  returns an error object,
//   mul     float32  throws a C++ exception inside the SDK guard,
//   neg     float32  throws a C++ exception straight across the C ABI (a rule-4
//                    violation the host must survive),
//   nonzero float32  returns without allocating its data-dependent output,
//   nonzero float64  asks allocate_output for a wrong dtype and returns the
//                    host's error (so the host's checks there are seen),
//   sub     float32  asks allocate_output for its output, which is not
//                    data-dependent, and returns the host's error.
// Its shutdown sets TSRTEST_FAULTY_SHUTDOWN=1 so tests can see it ran.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/plugin.hpp>

#include "host_memory_device.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace {
using tessera::sdk::guard;

// Writes value into every element of a strided float32 tensor.
void fill_strided(const DLTensor& t, float value) {
  const int64_t n = tessera::sdk::numel(t);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t rem = linear, offset = 0;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      offset += (rem % t.shape[d]) * t.strides[d];
      rem /= t.shape[d];
    }
    static_cast<float*>(t.data)[offset] = value;
  }
}

TsrError* fill_kernel(const TsrKernelCall* c) {
  return guard([&] { fill_strided(c->outputs[0], tessera::sdk::scalar_as<float>(c->args[1])); });
}
TsrError* add_kernel(const TsrKernelCall*) {
  return tessera::sdk::make_error(TSR_ERROR_INVALID_ARGUMENT, "faulty add refuses on purpose");
}
TsrError* mul_kernel(const TsrKernelCall*) {
  return guard([] { throw std::runtime_error("faulty mul threw inside the guard"); });
}
TsrError* neg_kernel(const TsrKernelCall*) { throw std::logic_error("faulty neg threw across the C ABI"); }
TsrError* nonzero_kernel(const TsrKernelCall*) { return nullptr; }
TsrError* nonzero_wrong_dtype_kernel(const TsrKernelCall* c) {
  const int64_t shape[2] = {0, 1};
  DLTensor* out = nullptr;
  return c->allocate_output(c->handle, 0, TSR_DTYPE_FLOAT32, 2, shape, &out);  // nonzero's output is int64
}
TsrError* sub_kernel(const TsrKernelCall* c) {
  const int64_t shape[1] = {2};
  DLTensor* out = nullptr;
  return c->allocate_output(c->handle, 0, TSR_DTYPE_FLOAT32, 1, shape, &out);  // sub's output is allocated already
}

void init(const tessera::sdk::Host& host, void**) {
  const TsrDeviceTypeDesc d = tsrtest::host_memory_device("faulty", 1001);
  host.register_device_type(d);
  const uint64_t f32 = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  host.register_kernel("fill_", "faulty", f32, &fill_kernel);
  host.register_kernel("add", "faulty", f32, &add_kernel);
  host.register_kernel("mul", "faulty", f32, &mul_kernel);
  host.register_kernel("sub", "faulty", f32, &sub_kernel);
  host.register_kernel("neg", "faulty", f32, &neg_kernel);
  host.register_kernel("nonzero", "faulty", f32, &nonzero_kernel);
  host.register_kernel("nonzero", "faulty", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64), &nonzero_wrong_dtype_kernel);
}

void shutdown(void*) noexcept { setenv("TSRTEST_FAULTY_SHUTDOWN", "1", 1); }
}  // namespace

TSR_SDK_PLUGIN("faulty", "0.1", "kernels that fail on purpose", init, shutdown)
