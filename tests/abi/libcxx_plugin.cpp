// libcxx_plugin.cpp — a plugin compiled by clang++ against libc++/libc++abi
// (never by the main build's gcc), loaded into the gcc/libstdc++ core: ABI
// rule 4 says only C types cross, so two C++ runtimes in one process must not
// matter. See libcxx_plugin.cmake.
//
// It leans on the C++ library on purpose, so that a libc++ type reaching the
// host would break something: a std::unordered_map under a std::mutex tracks
// device memory (allocated and freed from the kit's threads), kernels are
// std::function objects looked up by std::string, describe_device formats with
// std::ostringstream, and errors are C++ exceptions turned into TsrErrors by
// the SDK's guard.
//
// Two device types:
//  - "libcxx": host memory; add, sub, mul, neg, relu for float32 and float64.
//    The conformance kit tests this one.
//  - "libcxx_throw": same memory; every kernel throws a different C++
//    exception (one thrown from inside libc++.so itself), which must come back
//    to the core as the matching tessera::Error — libcxx_plugin_test.cpp.
#include <tessera/sdk/dtype.hpp>
#include <tessera/sdk/iterate.hpp>
#include <tessera/sdk/kernel_args.hpp>
#include <tessera/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#ifndef _LIBCPP_VERSION
#error "libcxx_plugin.cpp must be compiled with -stdlib=libc++ (it tests a libc++ plugin)"
#endif

namespace sdk = tessera::sdk;

namespace {

// ---- device memory, tracked in libc++ containers ----
constexpr std::size_t kAlign = 64;

struct AlignedFree {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{kAlign}); }
};

class Arena {
 public:
  void* allocate(std::size_t nbytes) {
    std::unique_ptr<std::byte[], AlignedFree> block(
        new (std::align_val_t{kAlign}) std::byte[nbytes == 0 ? 1 : nbytes]);
    void* p = block.get();
    const std::lock_guard<std::mutex> lock(mu_);
    blocks_.emplace(p, std::move(block));
    return p;
  }
  void deallocate(void* p) {
    const std::lock_guard<std::mutex> lock(mu_);
    blocks_.erase(p);  // an unknown pointer is ignored: deallocate cannot report
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, std::unique_ptr<std::byte[], AlignedFree>> blocks_;
};

Arena& arena() {
  static Arena a;  // lives until the library is closed, after shutdown
  return a;
}

TsrError* dev_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

TsrError* dev_describe(void* ctx, int32_t index, char* buf, size_t size) {
  return sdk::guard([&] {
    std::ostringstream os;
    os << static_cast<const char*>(ctx) << ":" << index << " (host memory, libc++ " << _LIBCPP_VERSION << ")";
    const std::string text = os.str();
    if (size > 0) {
      const std::size_t n = std::min(size - 1, text.size());
      std::memcpy(buf, text.data(), n);
      buf[n] = '\0';
    }
  });
}

TsrError* dev_allocate(void*, int32_t, size_t nbytes, TsrStream, void** ptr) {
  return sdk::guard([&] { *ptr = arena().allocate(nbytes); });
}

void dev_deallocate(void*, int32_t, void* ptr, size_t, TsrStream) {
  (void)sdk::guard([&] { arena().deallocate(ptr); });
}

TsrError* dev_copy(void*, const TsrCopyRequest* r) {
  std::memcpy(r->dst, r->src, r->nbytes);  // both sides are host memory
  return nullptr;
}

// ---- "libcxx" kernels: elementwise maps held in std::function tables ----
template <typename T>
struct OpTable {
  std::unordered_map<std::string, std::function<T(T, T, T)>> binary;  // (self, other, alpha)
  std::unordered_map<std::string, std::function<T(T)>> unary;
};

template <typename T>
const OpTable<T>& op_table() {
  static const OpTable<T> table = [] {
    OpTable<T> t;
    t.binary.emplace("add", [](T a, T b, T alpha) { return a + alpha * b; });
    t.binary.emplace("sub", [](T a, T b, T alpha) { return a - alpha * b; });
    t.binary.emplace("mul", [](T a, T b, T) { return a * b; });
    t.unary.emplace("neg", [](T a) { return -a; });
    t.unary.emplace("relu", [](T a) { return std::isnan(a) || a > T(0) ? a : T(0); });  // keeps NaN
    return t;
  }();
  return table;
}

inline constexpr char kLibcxx[] = "libcxx";

template <typename F>
void for_float(TsrDType dtype, F&& f) {
  sdk::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      f(tag);
    } else {
      throw sdk::Error(TSR_ERROR_UNIMPLEMENTED, "float32 and float64 only");
    }
  });
}

void binary_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  const DLTensor& other = sdk::tensor_arg(call, 1, "other", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_binary_shapes(self, other, out);
  const std::string op(call.op_name);
  for_float(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::function<T(T, T, T)>& fn = op_table<T>().binary.at(op);  // std::out_of_range if unknown
    const T alpha = op == "mul" ? T(1) : sdk::scalar_arg<T>(call, 2, "alpha");
    const sdk::StridedIter<3> iter(out.ndim, out.shape,
                                   {sdk::IterOperand::of(out), sdk::IterOperand::of(self),
                                    sdk::IterOperand::of(other)});
    iter.for_each(sdk::basic_loop<T, T, T>([&fn, alpha](T a, T b) { return fn(a, b, alpha); }));
  });
}

void unary_kernel(const TsrKernelCall& call) {
  const DLTensor& self = sdk::tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(self, "self", out, "out");
  const std::string op(call.op_name);
  for_float(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::function<T(T)>& fn = op_table<T>().unary.at(op);
    const sdk::StridedIter<2> iter(out.ndim, out.shape, {sdk::IterOperand::of(out), sdk::IterOperand::of(self)});
    iter.for_each(sdk::basic_loop<T, T>([&fn](T a) { return fn(a); }));
  });
}

// ---- "libcxx_throw" kernels: each throws a different C++ exception ----
inline constexpr char kThrow[] = "libcxx_throw";

[[noreturn]] void throw_for(const std::string& op) {
  if (op == "add") {  // sdk::Error, message assembled from a std::vector<std::string>
    const std::vector<std::string> words = {"libcxx_throw", "says", "unavailable"};
    std::string msg;
    for (const std::string& w : words) msg += (msg.empty() ? "" : " ") + w;
    throw sdk::Error(TSR_ERROR_UNAVAILABLE, msg);
  }
  if (op == "sub") {  // std::out_of_range from libc++'s vector::at
    std::vector<int> v(3);
    (void)v.at(7 + v.size());
  }
  if (op == "mul") {  // std::invalid_argument thrown inside libc++.so (std::stoi)
    (void)std::stoi(std::string("libcxx-not-a-number"));
  }
  if (op == "neg") {  // std::bad_function_call: a std::exception the guard knows only as such
    std::function<void()> empty;
    empty();
  }
  if (op == "div") throw std::bad_alloc();
  throw 42;  // relu: not a std::exception at all
}

void throwing_kernel(const TsrKernelCall& call) { throw_for(call.op_name); }

// ---- registration ----
TsrDeviceTypeDesc memory_device(const char* name) {
  TsrDeviceTypeDesc d{};
  d.name = name;
  d.context = const_cast<char*>(name);
  d.dlpack_device_type = 0;
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d.memory_alignment = kAlign;
  d.device_count = &dev_count;
  d.describe_device = &dev_describe;
  d.allocate = &dev_allocate;
  d.deallocate = &dev_deallocate;
  d.copy = &dev_copy;
  return d;
}

void init(const sdk::Host& host, void**) {
  const uint64_t floats = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32) | TSR_DTYPE_BIT(TSR_DTYPE_FLOAT64);
  host.register_device_type(memory_device("libcxx"));
  host.register_device_type(memory_device("libcxx_throw"));
  for (const char* op : {"add", "sub", "mul"}) {
    host.register_kernel(op, "libcxx", floats, &sdk::kernel_entry<kLibcxx, binary_kernel>);
  }
  for (const char* op : {"neg", "relu"}) {
    host.register_kernel(op, "libcxx", floats, &sdk::kernel_entry<kLibcxx, unary_kernel>);
  }
  for (const char* op : {"add", "sub", "mul", "div", "neg", "relu"}) {
    host.register_kernel(op, "libcxx_throw", floats, &sdk::kernel_entry<kThrow, throwing_kernel>);
  }
}

}  // namespace

TSR_SDK_PLUGIN("libcxx", "0.1.0", "Built with clang++ and libc++; throws on device libcxx_throw", init, nullptr)
