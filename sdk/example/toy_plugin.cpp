// toy_plugin.cpp — an out-of-tree Tessera device plugin, built as a stranger
// would (find_package(Tessera)): device type "toy" whose memory is ordinary host
// memory, and one kernel, add, for float32 and float64. docs/plugin-guide.md
// walks through it.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/iterate.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sdk = tessera::sdk;

namespace {

// ---- the device: every function the host calls is wrapped in sdk::guard ----
TsrError* toy_device_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

TsrError* toy_describe(void*, int32_t, char* buf, size_t size) {
  std::snprintf(buf, size, "toy device (host memory)");
  return nullptr;
}

TsrError* toy_allocate(void*, int32_t, size_t nbytes, TsrStream, void** ptr) {
  return sdk::guard([&] {
    *ptr = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (*ptr == nullptr) throw sdk::Error(TSR_ERROR_OUT_OF_MEMORY, "toy: out of memory");
  });
}

void toy_deallocate(void*, int32_t, void* ptr, size_t, TsrStream) { std::free(ptr); }

TsrError* toy_copy(void*, const TsrCopyRequest* r) {
  std::memcpy(r->dst, r->src, r->nbytes);  // every side is host memory here
  return nullptr;
}

// ---- the kernel: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor ----
// docs/ops.md: self, other and out have one shape and dtype (broadcast inputs
// have stride 0); out = self + alpha * other; out may be self (add_). The
// SDK's accessors check every argument (a wrong or missing one is an error
// naming it), and kernel_entry names the op and dtype in every error.
inline constexpr char kToy[] = "toy";

void toy_add(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(self, other, out);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T alpha = sdk::scalar_arg<T>(call, 2, "alpha");
      const sdk::StridedIter<3> iter(out.ndim, out.shape,
                                     {sdk::IterOperand::of(out), sdk::IterOperand::of(self),
                                      sdk::IterOperand::of(other)});
      iter.for_each(sdk::basic_loop<T, T, T>([alpha](T a, T b) { return a + alpha * b; }));
    } else {
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "float32 and float64 only");
    }
  });
}

// ---- registration: called once by the host, inside sdk::guard ----
void init(const sdk::Host& host, void** /*state*/) {
  TsrDeviceTypeDesc d{};  // zero-initialized: every slot we do not set is NULL
  d.name = "toy";
  d.dlpack_device_type = 0;  // not exchanged through DLPack
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = 64;
  d.device_count = &toy_device_count;
  d.describe_device = &toy_describe;
  d.allocate = &toy_allocate;
  d.deallocate = &toy_deallocate;
  d.copy = &toy_copy;
  host.register_device_type(d);

  host.register_kernel("add", "toy", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64),
                       &sdk::kernel_entry<kToy, toy_add>);
}

}  // namespace

TSR_SDK_PLUGIN("toy", "0.1.0", "A toy device: host memory and an add kernel", init, nullptr)
