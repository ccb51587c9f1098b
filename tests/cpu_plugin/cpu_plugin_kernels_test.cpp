// Tests of the CPU plugin (libtessera-cpu) through its C ABI only: the library
// is dlopen()ed, initialized against a fake host that records what it
// registers, and every kernel is called directly with hand-built DLTensors,
// TsrValues and TsrKernelCalls. Expected values come from reference loops in
// this file (double / int64 arithmetic) or are worked out by hand; nothing of
// the plugin's own code is reused. The SDK's Half/BFloat16 types are used only
// to encode and decode test values.
#include <tessera/abi.h>
#include <tessera/sdk/dtype.hpp>

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#ifndef TESSERA_CPU_PLUGIN_PATH
#error "TESSERA_CPU_PLUGIN_PATH must name libtessera-cpu.so"
#endif

namespace {

using tessera::sdk::BFloat16;
using tessera::sdk::Half;

constexpr TsrDType kAllDtypes[] = {TSR_DTYPE_BOOL,    TSR_DTYPE_UINT8,    TSR_DTYPE_INT8,    TSR_DTYPE_INT16,
                                   TSR_DTYPE_INT32,   TSR_DTYPE_INT64,    TSR_DTYPE_FLOAT16, TSR_DTYPE_BFLOAT16,
                                   TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64};

const char* name(TsrDType d) { return tessera::sdk::dtype_name(d); }
bool is_floating(TsrDType d) { return d >= TSR_DTYPE_FLOAT16 && d <= TSR_DTYPE_FLOAT64; }
bool is_integer(TsrDType d) { return d >= TSR_DTYPE_UINT8 && d <= TSR_DTYPE_INT64; }
uint64_t bit(TsrDType d) { return uint64_t{1} << d; }

size_t elem_size(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_BOOL:
    case TSR_DTYPE_UINT8:
    case TSR_DTYPE_INT8: return 1;
    case TSR_DTYPE_INT16:
    case TSR_DTYPE_FLOAT16:
    case TSR_DTYPE_BFLOAT16: return 2;
    case TSR_DTYPE_INT32:
    case TSR_DTYPE_FLOAT32: return 4;
    default: return 8;
  }
}

DLDataType dl_type(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_BOOL: return {kDLBool, 8, 1};
    case TSR_DTYPE_UINT8: return {kDLUInt, 8, 1};
    case TSR_DTYPE_INT8: return {kDLInt, 8, 1};
    case TSR_DTYPE_INT16: return {kDLInt, 16, 1};
    case TSR_DTYPE_INT32: return {kDLInt, 32, 1};
    case TSR_DTYPE_INT64: return {kDLInt, 64, 1};
    case TSR_DTYPE_FLOAT16: return {kDLFloat, 16, 1};
    case TSR_DTYPE_BFLOAT16: return {kDLBfloat, 16, 1};
    case TSR_DTYPE_FLOAT32: return {kDLFloat, 32, 1};
    default: return {kDLFloat, 64, 1};
  }
}

// ---------------------------------------------------------------------------
// Fake host and plugin loading
// ---------------------------------------------------------------------------

struct Registered {
  std::string op, device;
  uint64_t mask;
  TsrKernelFn fn;
  void* context;
};

struct FakeHost {
  TsrHostApi api{};
  std::vector<TsrDeviceTypeDesc> devices;
  std::vector<std::string> device_names;
  std::vector<Registered> kernels;
  std::vector<std::string> logs;
};

TsrError* host_register_device_type(TsrHostContext ctx, const TsrDeviceTypeDesc* desc) {
  auto* host = reinterpret_cast<FakeHost*>(ctx);
  TsrDeviceTypeDesc copy{};
  std::memcpy(&copy, desc, std::min(desc->struct_size, sizeof copy));
  host->devices.push_back(copy);
  host->device_names.emplace_back(desc->name != nullptr ? desc->name : "");
  return nullptr;
}

TsrError* host_register_kernel(TsrHostContext ctx, const TsrKernelDesc* desc) {
  auto* host = reinterpret_cast<FakeHost*>(ctx);
  host->kernels.push_back({desc->op_name, desc->device_type, desc->dtype_mask, desc->fn, desc->context});
  return nullptr;
}

void host_log(TsrHostContext ctx, int32_t, const char* message) {
  reinterpret_cast<FakeHost*>(ctx)->logs.emplace_back(message);
}

struct Plugin {
  void* handle = nullptr;
  const TsrPluginInfo* info = nullptr;
  FakeHost host;
  void* state = nullptr;
  std::string error;  // why loading failed, empty if it did not

  const Registered* find(const std::string& op) const {
    for (const Registered& k : host.kernels) {
      if (k.op == op) return &k;
    }
    return nullptr;
  }
  const TsrDeviceTypeDesc& device() const { return host.devices.at(0); }
};

// Loaded once per test process and never unloaded (OpenMP and OpenBLAS keep
// threads around).
Plugin& plugin() {
  static Plugin* const p = [] {
    auto* pl = new Plugin;
    pl->handle = dlopen(TESSERA_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (pl->handle == nullptr) {
      pl->error = std::string("dlopen: ") + dlerror();
      return pl;
    }
    auto entry = reinterpret_cast<TsrPluginEntryFn>(dlsym(pl->handle, TSR_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) {
      pl->error = "no tessera_plugin_entry";
      return pl;
    }
    const TsrHostOffer offer{sizeof(TsrHostOffer), {1, 0}, {1, 0}};
    pl->info = entry(&offer);
    if (pl->info == nullptr) {
      pl->error = "the entry point returned NULL";
      return pl;
    }
    pl->host.api.struct_size = sizeof(TsrHostApi);
    pl->host.api.host_version = {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR};
    pl->host.api.context = reinterpret_cast<TsrHostContext>(&pl->host);
    pl->host.api.register_device_type = &host_register_device_type;
    pl->host.api.register_kernel = &host_register_kernel;
    pl->host.api.log = &host_log;
    if (TsrError* err = pl->info->initialize(&pl->host.api, &pl->state)) {
      pl->error = std::string("initialize: ") + err->message;
      err->destroy(err);
    }
    return pl;
  }();
  return *p;
}

class CpuPlugin : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(plugin().error, "") << "the plugin did not load"; }
};

// The plugin's OpenMP thread count, through the libgomp it loaded; -1 if
// that libgomp cannot be reached.
int omp_threads() {
  void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (gomp == nullptr) return -1;
  auto fn = reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_max_threads"));
  const int n = fn != nullptr ? fn() : -1;
  dlclose(gomp);
  return n;
}

bool set_omp_threads(int n) {
  void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (gomp == nullptr) return false;
  auto fn = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
  if (fn != nullptr) fn(n);
  dlclose(gomp);
  return fn != nullptr;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;  // huge mallocs abort instead of failing
#else
constexpr bool kAddressSanitizer = false;
#endif

// ---------------------------------------------------------------------------
// Tensors, values and kernel calls
// ---------------------------------------------------------------------------

struct Tensor {
  TsrDType dtype = TSR_DTYPE_FLOAT32;
  std::vector<int64_t> shape, strides;  // strides in elements
  std::shared_ptr<std::vector<uint64_t>> storage;
  int64_t offset = 0;  // elements

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  char* data() const { return reinterpret_cast<char*>(storage->data()) + offset * elem_size(dtype); }
  char* at(const std::vector<int64_t>& idx) const {
    int64_t e = 0;
    for (size_t d = 0; d < idx.size(); ++d) e += idx[d] * strides[d];
    return data() + e * static_cast<int64_t>(elem_size(dtype));
  }
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

// A contiguous tensor whose bytes are all `fill` (a pattern that shows
// elements a kernel forgot to write).
Tensor empty(TsrDType dtype, std::vector<int64_t> shape, unsigned char fill = 0xA5) {
  Tensor t;
  t.dtype = dtype;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  const size_t bytes = std::max<int64_t>(1, t.numel()) * elem_size(dtype);
  t.storage = std::make_shared<std::vector<uint64_t>>((bytes + 7) / 8);
  std::memset(t.storage->data(), fill, t.storage->size() * 8);
  return t;
}

Tensor transposed(Tensor t, size_t a, size_t b) {
  std::swap(t.shape[a], t.shape[b]);
  std::swap(t.strides[a], t.strides[b]);
  return t;
}

// View with stride 0 wherever t has size 1 and `shape` does not.
Tensor expanded(Tensor t, const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (t.shape[d] != shape[d]) {
      t.shape[d] = shape[d];
      t.strides[d] = 0;
    }
  }
  return t;
}

Tensor flipped(Tensor t, size_t d) {
  t.offset += (t.shape[d] - 1) * t.strides[d];
  t.strides[d] = -t.strides[d];
  return t;
}

enum class Layout { kContiguous, kTransposed, kStrided, kFlipped };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kTransposed: return "transposed";
    case Layout::kStrided: return "strided";
    default: return "flipped";
  }
}

// A tensor of `shape` laid out in memory as `layout` (ndim >= 2 for kTransposed).
Tensor make(TsrDType dtype, const std::vector<int64_t>& shape, Layout layout = Layout::kContiguous) {
  switch (layout) {
    case Layout::kContiguous: return empty(dtype, shape);
    case Layout::kTransposed: {
      std::vector<int64_t> s = shape;
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      return transposed(empty(dtype, s), s.size() - 1, s.size() - 2);
    }
    case Layout::kStrided: {  // every other element of the last dim
      std::vector<int64_t> s = shape;
      s.back() *= 2;
      Tensor t = empty(dtype, s);
      t.shape.back() = shape.back();
      t.strides.back() = 2;
      return t;
    }
    default: return flipped(empty(dtype, shape), 0);
  }
}

template <typename F>
void for_each_index(const std::vector<int64_t>& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

double get(const Tensor& t, const std::vector<int64_t>& idx) {
  const char* p = t.at(idx);
  switch (t.dtype) {
    case TSR_DTYPE_BOOL: return *reinterpret_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    case TSR_DTYPE_UINT8: return *reinterpret_cast<const uint8_t*>(p);
    case TSR_DTYPE_INT8: return *reinterpret_cast<const int8_t*>(p);
    case TSR_DTYPE_INT16: return *reinterpret_cast<const int16_t*>(p);
    case TSR_DTYPE_INT32: return *reinterpret_cast<const int32_t*>(p);
    case TSR_DTYPE_INT64: return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case TSR_DTYPE_FLOAT16: return Half::to_float(*reinterpret_cast<const uint16_t*>(p));
    case TSR_DTYPE_BFLOAT16: return BFloat16::to_float(*reinterpret_cast<const uint16_t*>(p));
    case TSR_DTYPE_FLOAT32: return *reinterpret_cast<const float*>(p);
    default: return *reinterpret_cast<const double*>(p);
  }
}

int64_t get_int(const Tensor& t, const std::vector<int64_t>& idx) {
  if (t.dtype == TSR_DTYPE_INT64) return *reinterpret_cast<const int64_t*>(t.at(idx));
  return static_cast<int64_t>(get(t, idx));
}

uint16_t get_bits16(const Tensor& t, const std::vector<int64_t>& idx) {
  return *reinterpret_cast<const uint16_t*>(t.at(idx));
}

// Writes an integer, wrapped modulo 2^bits (bool: v != 0).
void set_int(const Tensor& t, const std::vector<int64_t>& idx, int64_t v) {
  char* p = t.at(idx);
  switch (t.dtype) {
    case TSR_DTYPE_BOOL: *reinterpret_cast<uint8_t*>(p) = v != 0; break;
    case TSR_DTYPE_UINT8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case TSR_DTYPE_INT8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case TSR_DTYPE_INT16: *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(v); break;
    case TSR_DTYPE_INT32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case TSR_DTYPE_INT64: *reinterpret_cast<int64_t*>(p) = v; break;
    default: break;
  }
}

// Writes a value exactly representable in the dtype (integers: integral values).
void set(const Tensor& t, const std::vector<int64_t>& idx, double v) {
  char* p = t.at(idx);
  switch (t.dtype) {
    case TSR_DTYPE_FLOAT16: *reinterpret_cast<uint16_t*>(p) = Half(static_cast<float>(v)).bits; break;
    case TSR_DTYPE_BFLOAT16: *reinterpret_cast<uint16_t*>(p) = BFloat16(static_cast<float>(v)).bits; break;
    case TSR_DTYPE_FLOAT32: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    case TSR_DTYPE_FLOAT64: *reinterpret_cast<double*>(p) = v; break;
    default: set_int(t, idx, static_cast<int64_t>(v)); break;
  }
}

// `v` rounded to the dtype (integers wrap; bool is v != 0).
double round_to(TsrDType d, double v) {
  switch (d) {
    case TSR_DTYPE_BOOL: return v != 0 ? 1 : 0;
    case TSR_DTYPE_UINT8: return static_cast<uint8_t>(static_cast<int64_t>(v));
    case TSR_DTYPE_INT8: return static_cast<int8_t>(static_cast<int64_t>(v));
    case TSR_DTYPE_INT16: return static_cast<int16_t>(static_cast<int64_t>(v));
    case TSR_DTYPE_INT32: return static_cast<int32_t>(static_cast<int64_t>(v));
    case TSR_DTYPE_INT64: return static_cast<double>(static_cast<int64_t>(v));
    case TSR_DTYPE_FLOAT16: return Half::to_float(Half(static_cast<float>(v)).bits);
    case TSR_DTYPE_BFLOAT16: return BFloat16::to_float(BFloat16(static_cast<float>(v)).bits);
    case TSR_DTYPE_FLOAT32: return static_cast<float>(v);
    default: return v;
  }
}

bool same_value(double got, double want) { return (std::isnan(got) && std::isnan(want)) || got == want; }

DLTensor to_dl(const Tensor& t) {
  DLTensor d{};
  d.data = t.data();
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t.shape.size());
  d.dtype = dl_type(t.dtype);
  d.shape = const_cast<int64_t*>(t.shape.data());
  d.strides = const_cast<int64_t*>(t.strides.data());
  d.byte_offset = 0;
  return d;
}

// An error object made by the test (as a host would), freed through destroy.
TsrError* make_test_error(TsrErrorCode code, const char* message) {
  auto* err = new TsrError{sizeof(TsrError), code, message, nullptr};
  err->destroy = [](TsrError* self) { delete self; };
  return err;
}

// One boxed kernel call, built argument by argument in schema order.
class Call {
 public:
  Call(const char* op, TsrDType dtype) : op_(op), dtype_(dtype) {}

  Call& in(const Tensor& t) {
    dls_.push_back(to_dl(t));
    TsrValue v{};
    v.tag = TSR_VALUE_TENSOR;
    v.as.tensor = &dls_.back();
    return value(v);
  }
  Call& list(const std::vector<Tensor>& ts) {
    std::vector<const DLTensor*>& ptrs = tensor_lists_.emplace_back();
    for (const Tensor& t : ts) {
      dls_.push_back(to_dl(t));
      ptrs.push_back(&dls_.back());
    }
    TsrValue v{};
    v.tag = TSR_VALUE_TENSOR_LIST;
    v.as.tensor_list.data = ptrs.data();
    v.as.tensor_list.size = ptrs.size();
    return value(v);
  }
  Call& i(int64_t x) {
    TsrValue v{};
    v.tag = TSR_VALUE_INT;
    v.as.i = x;
    return value(v);
  }
  Call& f(double x) {
    TsrValue v{};
    v.tag = TSR_VALUE_FLOAT;
    v.as.f = x;
    return value(v);
  }
  Call& b(bool x) {
    TsrValue v{};
    v.tag = TSR_VALUE_BOOL;
    v.as.b = x ? 1 : 0;
    return value(v);
  }
  Call& s(const char* x) {
    TsrValue v{};
    v.tag = TSR_VALUE_STRING;
    v.as.string = x;
    return value(v);
  }
  Call& none() {
    TsrValue v{};
    v.tag = TSR_VALUE_NONE;
    return value(v);
  }
  Call& ints(std::vector<int64_t> xs) {
    lists_.push_back(std::move(xs));
    TsrValue v{};
    v.tag = TSR_VALUE_INT_LIST;
    v.as.int_list.data = lists_.back().data();
    v.as.int_list.size = lists_.back().size();
    return value(v);
  }
  Call& dtype(TsrDType d) {
    TsrValue v{};
    v.tag = TSR_VALUE_DTYPE;
    v.as.dtype = d;
    return value(v);
  }
  Call& value(const TsrValue& v) {
    args_.push_back(v);
    return *this;
  }
  Call& out(const Tensor& t) {
    outs_.push_back(to_dl(t));
    return *this;
  }
  // An output whose shape depends on the data: the kernel must allocate it.
  Call& out_unallocated() {
    DLTensor d{};
    d.device = {kDLCPU, 0};
    outs_.push_back(d);
    return *this;
  }
  // Makes allocate_output fail with `code`.
  Call& fail_allocation(TsrErrorCode code) {
    fail_allocation_ = code;
    return *this;
  }
  // The tensor allocate_output created for output `index`.
  const Tensor& allocated(size_t index) const { return allocated_.at(index); }
  int allocations() const { return allocations_; }

  TsrError* run() {
    const Registered* k = plugin().find(op_);
    if (k == nullptr) {
      ADD_FAILURE() << "no kernel registered for " << op_;
      return nullptr;
    }
    TsrKernelCall call{};
    call.struct_size = sizeof(TsrKernelCall);
    call.op_name = op_;
    call.kernel_context = k->context;
    call.device_index = 0;
    call.dtype = dtype_;
    call.stream = nullptr;
    call.args = args_.data();
    call.num_args = args_.size();
    call.outputs = outs_.data();
    call.num_outputs = outs_.size();
    call.handle = reinterpret_cast<TsrCallHandle>(this);
    call.allocate_output = &Call::allocate_output;
    return k->fn(&call);
  }

 private:
  // The host side of TsrKernelCall.allocate_output, as abi.h specifies it.
  static TsrError* allocate_output(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim,
                                   const int64_t* shape, DLTensor** out) {
    auto* self = reinterpret_cast<Call*>(handle);
    ++self->allocations_;
    if (self->fail_allocation_ != 0) return make_test_error(self->fail_allocation_, "test: allocation refused");
    EXPECT_LT(index, self->outs_.size());
    EXPECT_EQ(self->outs_[index].data, nullptr) << "allocate_output called twice for output " << index;
    EXPECT_NE(out, nullptr);
    std::vector<int64_t> dims(shape, shape + ndim);
    for (int64_t d : dims) EXPECT_GE(d, 0);
    self->allocated_[index] = empty(dtype, dims);
    self->outs_[index] = to_dl(self->allocated_[index]);
    *out = &self->outs_[index];
    return nullptr;
  }

  TsrErrorCode fail_allocation_ = 0;
  int allocations_ = 0;
  std::map<size_t, Tensor> allocated_;
  const char* op_;
  TsrDType dtype_;
  std::deque<DLTensor> dls_;
  std::deque<std::vector<int64_t>> lists_;
  std::deque<std::vector<const DLTensor*>> tensor_lists_;
  std::vector<TsrValue> args_;
  std::vector<DLTensor> outs_;
};

::testing::AssertionResult Ok(TsrError* err) {
  if (err == nullptr) return ::testing::AssertionSuccess();
  const std::string message = err->message != nullptr ? err->message : "(no message)";
  err->destroy(err);
  return ::testing::AssertionFailure() << "kernel failed: " << message;
}

struct Failure {
  bool failed = false;
  TsrErrorCode code = 0;
  std::string message;
};

Failure take(TsrError* err) {
  Failure f;
  if (err == nullptr) return f;
  f.failed = true;
  f.code = err->code;
  f.message = err->message != nullptr ? err->message : "";
  err->destroy(err);
  return f;
}

// Fills t (logical row-major order) from a cyclic list of values.
void fill_values(const Tensor& t, const std::vector<double>& values, int64_t salt = 0) {
  int64_t i = 0;
  for_each_index(t.shape, [&](const std::vector<int64_t>& idx) {
    set(t, idx, values[static_cast<size_t>((i * 7 + salt) % static_cast<int64_t>(values.size()))]);
    ++i;
  });
}

// ---------------------------------------------------------------------------
// Registration and the device type
// ---------------------------------------------------------------------------

constexpr uint64_t kBool = uint64_t{1} << TSR_DTYPE_BOOL;
constexpr uint64_t kInts = (uint64_t{1} << TSR_DTYPE_UINT8) | (uint64_t{1} << TSR_DTYPE_INT8) |
                           (uint64_t{1} << TSR_DTYPE_INT16) | (uint64_t{1} << TSR_DTYPE_INT32) |
                           (uint64_t{1} << TSR_DTYPE_INT64);
constexpr uint64_t kFloats = (uint64_t{1} << TSR_DTYPE_FLOAT16) | (uint64_t{1} << TSR_DTYPE_BFLOAT16) |
                             (uint64_t{1} << TSR_DTYPE_FLOAT32) | (uint64_t{1} << TSR_DTYPE_FLOAT64);
constexpr uint64_t kAll = kBool | kInts | kFloats;

const std::map<std::string, uint64_t>& expected_kernels() {
  static const std::map<std::string, uint64_t> k = {
      {"add", kAll},          {"sub", kInts | kFloats},  {"mul", kAll},           {"div", kInts | kFloats},
      {"neg", kInts | kFloats}, {"exp", kFloats},        {"relu", kInts | kFloats}, {"sum", kAll},
      {"mm", kInts | kFloats},  {"bmm", kInts | kFloats}, {"copy_", kAll},        {"_cat", kAll},         {"fill_", kAll},
      {"arange", kInts | kFloats}, {"nonzero", kAll},
      // unary family
      {"abs", kInts | kFloats}, {"sign", kAll}, {"square", kInts | kFloats}, {"floor", kInts | kFloats},
      {"ceil", kInts | kFloats}, {"round", kInts | kFloats}, {"trunc", kInts | kFloats}, {"logical_not", kAll},
      {"bitwise_not", kBool | kInts}, {"isnan", kAll}, {"isinf", kAll}, {"isfinite", kAll},
      {"exp2", kFloats}, {"expm1", kFloats}, {"log", kFloats}, {"log2", kFloats}, {"log10", kFloats},
      {"log1p", kFloats}, {"sqrt", kFloats}, {"rsqrt", kFloats}, {"reciprocal", kFloats}, {"sin", kFloats},
      {"cos", kFloats}, {"tan", kFloats}, {"asin", kFloats}, {"acos", kFloats}, {"atan", kFloats},
      {"sinh", kFloats}, {"cosh", kFloats}, {"tanh", kFloats}, {"sigmoid", kFloats}, {"gelu", kFloats},
      {"silu", kFloats}, {"softplus", kFloats}, {"erf", kFloats},
      // linear algebra and shape families
      {"addmm", kInts | kFloats}, {"tril", kAll}, {"triu", kAll},
      // nn family
      {"softmax", kFloats}, {"log_softmax", kFloats}, {"layer_norm", kFloats}, {"_layer_norm_backward", kFloats},
      {"nll_loss", kFloats},
      {"_nll_loss_smoothed", kFloats}, {"conv2d", kFloats}, {"_conv2d_backward_weight", kFloats},
      {"max_pool2d", kInts | kFloats},
      {"_max_pool2d_backward", kFloats},
      {"avg_pool2d", kFloats},
      // indexing and random families
      {"gather", kAll}, {"index_select", kAll}, {"scatter_", kAll}, {"scatter_.value", kAll},
      {"scatter_add_", kAll}, {"index_add_", kAll}, {"_scatter", kAll}, {"take", kAll}, {"masked_fill", kAll},
      {"masked_select", kAll}, {"uniform_", kFloats}, {"normal_", kFloats}, {"random_", kAll},
      {"bernoulli_.float", kAll}, {"bernoulli_.Tensor", kAll}, {"randperm", kInts | kFloats},
      {"dropout", kFloats},
      // binary and ternary families
      {"remainder", kInts | kFloats}, {"fmod", kInts | kFloats}, {"pow", kInts | kFloats}, {"atan2", kFloats},
      {"maximum", kAll}, {"minimum", kAll}, {"eq", kAll}, {"ne", kAll}, {"lt", kAll}, {"le", kAll}, {"gt", kAll},
      {"ge", kAll}, {"logical_and", kAll}, {"logical_or", kAll}, {"logical_xor", kAll},
      {"bitwise_and", kBool | kInts}, {"bitwise_or", kBool | kInts}, {"bitwise_xor", kBool | kInts},
      {"bitwise_left_shift", kInts}, {"bitwise_right_shift", kInts},
      {"where", kAll}, {"lerp", kFloats}, {"addcmul", kInts | kFloats}, {"addcdiv", kFloats}, {"_clamp", kAll},
      // reduction family
      {"prod", kAll}, {"amax", kAll}, {"amin", kAll}, {"max.dim", kAll}, {"min.dim", kAll}, {"any", kAll},
      {"all", kAll}, {"var", kFloats}, {"std", kFloats}, {"norm", kFloats}, {"logsumexp", kFloats},
      {"cumsum", kAll}, {"cumprod", kAll},
  };
  return k;
}

uint64_t registered_mask(const std::string& op) {
  const Registered* k = plugin().find(op);
  return k != nullptr ? k->mask : 0;
}

TEST_F(CpuPlugin, DescribesItself) {
  const TsrPluginInfo& info = *plugin().info;
  EXPECT_GE(info.struct_size, sizeof(TsrPluginInfo));
  EXPECT_EQ(info.abi_version.major, 1u);
  EXPECT_EQ(info.abi_version.minor, uint32_t(TSR_ABI_VERSION_MINOR));  // the SDK headers it was built with
  EXPECT_STREQ(info.name, "cpu");
  EXPECT_NE(info.version, nullptr);
}

TEST_F(CpuPlugin, RegistersExactlyTheExpectedKernels) {
  std::map<std::string, uint64_t> got;
  for (const Registered& k : plugin().host.kernels) {
    EXPECT_EQ(k.device, "cpu") << k.op;
    EXPECT_NE(k.fn, nullptr) << k.op;
    EXPECT_EQ(got.count(k.op), 0u) << "registered twice: " << k.op;
    got[k.op] = k.mask;
  }
  EXPECT_EQ(got, expected_kernels());
}

TEST_F(CpuPlugin, RegistersTheCpuDeviceType) {
  const FakeHost& host = plugin().host;
  ASSERT_EQ(host.devices.size(), 1u);
  EXPECT_EQ(host.device_names[0], "cpu");
  const TsrDeviceTypeDesc& d = plugin().device();
  EXPECT_EQ(d.struct_size, sizeof(TsrDeviceTypeDesc));
  EXPECT_EQ(d.dlpack_device_type, kDLCPU);
  EXPECT_EQ(d.capabilities, TSR_DEVICE_CAP_HOST_ACCESSIBLE | TSR_DEVICE_CAP_CACHING_ALLOCATOR);
  EXPECT_EQ(d.memory_alignment, 64u);

  int32_t count = -1;
  ASSERT_TRUE(Ok(d.device_count(d.context, &count)));
  EXPECT_EQ(count, 1);

  char buf[256];
  ASSERT_TRUE(Ok(d.describe_device(d.context, 0, buf, sizeof buf)));
  EXPECT_GT(std::strlen(buf), 0u);
  EXPECT_NE(std::string(buf).find("thread"), std::string::npos) << buf;
  char tiny[4];
  ASSERT_TRUE(Ok(d.describe_device(d.context, 0, tiny, sizeof tiny)));
  EXPECT_EQ(std::strlen(tiny), 3u);  // truncated, still terminated
  EXPECT_EQ(take(d.describe_device(d.context, 1, buf, sizeof buf)).code, TSR_ERROR_OUT_OF_RANGE);
}

TEST_F(CpuPlugin, AllocatesAlignedMemory) {
  const TsrDeviceTypeDesc& d = plugin().device();
  for (size_t n : {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{1} << 22}) {
    void* p = nullptr;
    ASSERT_TRUE(Ok(d.allocate(d.context, 0, n, nullptr, &p)));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    std::memset(p, 0x5c, n);  // the whole block is usable
    d.deallocate(d.context, 0, p, n, nullptr);
  }
  void* p = nullptr;
  EXPECT_EQ(take(d.allocate(d.context, 2, 16, nullptr, &p)).code, TSR_ERROR_OUT_OF_RANGE);
  if (!kAddressSanitizer) {
    EXPECT_EQ(take(d.allocate(d.context, 0, std::numeric_limits<size_t>::max() / 2, nullptr, &p)).code,
              TSR_ERROR_OUT_OF_MEMORY);
  }
  // Sizes whose rounding up to whole pages would wrap around (to a tiny block).
  for (size_t n : {std::numeric_limits<size_t>::max(), std::numeric_limits<size_t>::max() - 100}) {
    p = nullptr;
    const Failure f = take(d.allocate(d.context, 0, n, nullptr, &p));
    EXPECT_EQ(f.code, TSR_ERROR_OUT_OF_MEMORY) << n;
    EXPECT_NE(f.message.find(std::to_string(n) + " bytes"), std::string::npos) << f.message;
  }
}

// The plugin keeps no freed blocks (the core's caching allocator caches for
// it, docs/memory.md): under an address-space limit of 256 MiB more, a freed
// 160 MiB block is really gone, so a 161 MiB one fits; an impossible request
// is OUT_OF_MEMORY naming the bytes.
TEST_F(CpuPlugin, AllocateGivesFreedMemoryBackAndNamesTheBytesWhenOutOfMemory) {
  if (kAddressSanitizer) GTEST_SKIP() << "the sanitizer reserves address space of its own";
  const TsrDeviceTypeDesc& d = plugin().device();
  constexpr size_t kMiB = size_t{1} << 20;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the child: no gtest assertions, an exit code per failure
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages <= 0) _exit(2);
    const rlim_t vsz = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    const rlimit limit{vsz + 256 * kMiB, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    void* a = nullptr;
    if (d.allocate(d.context, 0, 160 * kMiB, nullptr, &a) != nullptr) _exit(4);
    d.deallocate(d.context, 0, a, 160 * kMiB, nullptr);
    void* b = nullptr;
    TsrError* err = d.allocate(d.context, 0, 161 * kMiB, nullptr, &b);
    if (err != nullptr) _exit(5);
    d.deallocate(d.context, 0, b, 161 * kMiB, nullptr);
    err = d.allocate(d.context, 0, 512 * kMiB, nullptr, &b);
    if (err == nullptr || err->code != TSR_ERROR_OUT_OF_MEMORY) _exit(6);
    const std::string m = err->message != nullptr ? err->message : "";
    if (m.find(std::to_string(512 * kMiB) + " bytes") == std::string::npos) _exit(7);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2-3: setup failed; 4: the first block; 5: the second block (the freed "
                                       "block was kept); 6-7: the impossible request's error";
}

// memory_info reports the machine's physical memory (the core's limit and
// out-of-memory messages use it), as sysconf and /proc/meminfo tell it.
TEST_F(CpuPlugin, MemoryInfoIsThePhysicalMemory) {
  const TsrDeviceTypeDesc& d = plugin().device();
  ASSERT_NE(d.memory_info, nullptr);
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(d.memory_info(d.context, 0, &free_bytes, &total), nullptr);
  size_t meminfo_kib = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char key[64];
    size_t value = 0;
    while (std::fscanf(f, "%63s %zu kB", key, &value) == 2)
      if (std::string(key) == "MemTotal:") meminfo_kib = value;
    std::fclose(f);
  }
  ASSERT_GT(meminfo_kib, 0u);
  EXPECT_EQ(total, meminfo_kib * 1024);
  EXPECT_LE(free_bytes, total);
  TsrError* err = d.memory_info(d.context, 1, &free_bytes, &total);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, TSR_ERROR_OUT_OF_RANGE);
  err->destroy(err);
}

TEST_F(CpuPlugin, CopiesBytesInEveryDirection) {
  const TsrDeviceTypeDesc& d = plugin().device();
  for (TsrCopyKind kind : {TSR_COPY_HOST_TO_DEVICE, TSR_COPY_DEVICE_TO_HOST, TSR_COPY_DEVICE_TO_DEVICE}) {
    for (size_t n : {size_t{1}, size_t{100}, size_t{9} << 20}) {  // 9 MiB takes the threaded path
      std::vector<unsigned char> src(n), dst(n, 0);
      for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
      TsrCopyRequest req{};
      req.struct_size = sizeof req;
      req.kind = kind;
      req.dst = dst.data();
      req.src = src.data();
      req.nbytes = n;
      ASSERT_TRUE(Ok(d.copy(d.context, &req)));
      EXPECT_EQ(src, dst) << "kind " << kind << ", " << n << " bytes";
    }
  }
  unsigned char a = 1, b = 2;
  TsrCopyRequest bad{};
  bad.struct_size = sizeof bad;
  bad.kind = 42;
  bad.dst = &a;
  bad.src = &b;
  bad.nbytes = 1;
  EXPECT_EQ(take(d.copy(d.context, &bad)).code, TSR_ERROR_INVALID_ARGUMENT);
}

TEST_F(CpuPlugin, StreamsAndEventsAreTrivial) {
  const TsrDeviceTypeDesc& d = plugin().device();
  EXPECT_EQ(d.stream_create, nullptr);  // only the default stream exists
  ASSERT_NE(d.stream_synchronize, nullptr);
  EXPECT_TRUE(Ok(d.stream_synchronize(d.context, 0, nullptr)));
  EXPECT_TRUE(Ok(d.device_synchronize(d.context, 0)));
  TsrEvent ev = nullptr;
  ASSERT_TRUE(Ok(d.event_create(d.context, 0, &ev)));
  EXPECT_NE(ev, nullptr);
  EXPECT_TRUE(Ok(d.event_record(d.context, 0, ev, nullptr)));
  int32_t done = 0;
  EXPECT_TRUE(Ok(d.event_query(d.context, 0, ev, &done)));
  EXPECT_EQ(done, 1);
  EXPECT_TRUE(Ok(d.event_synchronize(d.context, 0, ev)));
  EXPECT_TRUE(Ok(d.stream_wait_event(d.context, 0, nullptr, ev)));
  EXPECT_TRUE(Ok(d.event_destroy(d.context, 0, ev)));
}

// ---------------------------------------------------------------------------
// Elementwise binary ops
// ---------------------------------------------------------------------------

std::vector<double> sample_values(TsrDType d, bool nonzero) {
  if (d == TSR_DTYPE_BOOL) return nonzero ? std::vector<double>{1} : std::vector<double>{0, 1, 1, 0, 1};
  if (d == TSR_DTYPE_UINT8) {
    return nonzero ? std::vector<double>{1, 3, 7, 200, 16} : std::vector<double>{0, 3, 250, 17, 128, 99, 1};
  }
  if (is_integer(d)) {
    return nonzero ? std::vector<double>{-7, 3, 2, -1, 5, 100, -3}
                   : std::vector<double>{0, -7, 12, 127, -128, 33, -1, 100};
  }
  return nonzero ? std::vector<double>{2, -0.5, 1.25, 4, -3, 0.25, 10}
                 : std::vector<double>{0, -2.5, 1.25, 3, -0.75, 10.5, 7, -6, 100.25};
}

// Reference result of a binary op on values already stored in the dtype,
// computed in int64 (then wrapped), float32 (for float32 and the half types,
// as the kernels do) or float64.
using BinaryRef = std::function<double(TsrDType, double, double)>;

struct BinaryCase {
  const char* label;
  Tensor self, other, out;
};

std::vector<BinaryCase> binary_cases(TsrDType d) {
  const std::vector<int64_t> s = {3, 5};
  std::vector<BinaryCase> cases;
  cases.push_back({"contiguous", make(d, s), make(d, s), make(d, s)});
  cases.push_back({"transposed self", make(d, s, Layout::kTransposed), make(d, s), make(d, s)});
  cases.push_back({"strided other", make(d, s), make(d, s, Layout::kStrided), make(d, s)});
  cases.push_back({"flipped self", make(d, s, Layout::kFlipped), make(d, s, Layout::kTransposed), make(d, s)});
  cases.push_back({"row broadcast", make(d, s), expanded(make(d, {1, 5}), s), make(d, s)});
  cases.push_back({"column broadcast", expanded(make(d, {3, 1}), s), make(d, s, Layout::kFlipped), make(d, s)});
  cases.push_back({"scalar broadcast", make(d, s), expanded(make(d, {1, 1}), s), make(d, s)});
  const std::vector<int64_t> big = {257, 300};  // above the OpenMP grain
  cases.push_back({"large", make(d, big), make(d, big), make(d, big)});
  cases.push_back({"large transposed", make(d, big, Layout::kTransposed), expanded(make(d, {1, 300}), big),
                   make(d, big)});
  return cases;
}

void check_binary(const char* op, TsrDType d, const BinaryRef& ref, const std::function<void(Call&)>& extra,
                  bool nonzero_other = false) {
  SCOPED_TRACE(std::string(op) + " " + name(d));
  for (BinaryCase& c : binary_cases(d)) {
    SCOPED_TRACE(c.label);
    fill_values(c.self, sample_values(d, false), 1);
    fill_values(c.other, sample_values(d, nonzero_other), 4);
    Call call(op, d);
    call.in(c.self).in(c.other);
    extra(call);
    call.out(c.out);
    ASSERT_TRUE(Ok(call.run()));
    int64_t bad = 0;
    for_each_index(c.out.shape, [&](const std::vector<int64_t>& idx) {
      const double want = round_to(d, ref(d, get(c.self, idx), get(c.other, idx)));
      const double got = get(c.out, idx);
      if (!same_value(got, want) && bad++ < 5) {
        ADD_FAILURE() << "at (" << idx[0] << ", " << idx[1] << "): " << get(c.self, idx) << " " << op << " "
                      << get(c.other, idx) << " gave " << got << ", want " << want;
      }
    });
  }
  // In place: out is self (a transposed view).
  Tensor self = make(d, {4, 6}, Layout::kTransposed);
  Tensor other = make(d, {4, 6});
  fill_values(self, sample_values(d, false), 2);
  fill_values(other, sample_values(d, nonzero_other), 3);
  std::vector<double> before;
  for_each_index(self.shape, [&](const std::vector<int64_t>& idx) { before.push_back(get(self, idx)); });
  Call call(op, d);
  call.in(self).in(other);
  extra(call);
  call.out(self);
  ASSERT_TRUE(Ok(call.run()));
  size_t i = 0;
  for_each_index(self.shape, [&](const std::vector<int64_t>& idx) {
    EXPECT_TRUE(same_value(get(self, idx), round_to(d, ref(d, before[i++], get(other, idx))))) << "in place";
  });
}

double ref_arith(TsrDType d, double a, double b, const std::function<double(double, double)>& op64,
                 const std::function<float(float, float)>& op32, const std::function<int64_t(int64_t, int64_t)>& opi) {
  if (d == TSR_DTYPE_FLOAT64) return op64(a, b);
  if (is_floating(d)) return op32(static_cast<float>(a), static_cast<float>(b));
  return static_cast<double>(opi(static_cast<int64_t>(a), static_cast<int64_t>(b)));
}

TEST_F(CpuPlugin, Add) {
  for (TsrDType d : kAllDtypes) {
    if (d == TSR_DTYPE_BOOL) {
      check_binary("add", d, [](TsrDType, double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
                   [](Call& c) { c.b(true); });
      continue;
    }
    const auto alpha = [d](Call& c) {
      if (is_floating(d)) {
        c.f(2.0);
      } else {
        c.i(2);
      }
    };
    check_binary(
        "add", d,
        [](TsrDType dt, double a, double b) {
          return ref_arith(
              dt, a, b, [](double x, double y) { return x + 2.0 * y; }, [](float x, float y) { return x + 2.0f * y; },
              [](int64_t x, int64_t y) { return x + 2 * y; });
        },
        alpha);
  }
}

TEST_F(CpuPlugin, AddBoolWithFalseAlphaKeepsSelf) {
  Tensor a = make(TSR_DTYPE_BOOL, {4}), b = make(TSR_DTYPE_BOOL, {4}), out = make(TSR_DTYPE_BOOL, {4});
  const double av[] = {0, 1, 0, 1}, bv[] = {0, 0, 1, 1};
  for (int64_t i = 0; i < 4; ++i) {
    set(a, {i}, av[i]);
    set(b, {i}, bv[i]);
  }
  ASSERT_TRUE(Ok(Call("add", TSR_DTYPE_BOOL).in(a).in(b).b(false).out(out).run()));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(get(out, {i}), av[i]);
}

TEST_F(CpuPlugin, AddWrapsIntegerOverflow) {
  Tensor a = make(TSR_DTYPE_INT32, {2}), b = make(TSR_DTYPE_INT32, {2}), out = make(TSR_DTYPE_INT32, {2});
  set_int(a, {0}, std::numeric_limits<int32_t>::max());
  set_int(b, {0}, 1);
  set_int(a, {1}, std::numeric_limits<int32_t>::min());
  set_int(b, {1}, -1);
  ASSERT_TRUE(Ok(Call("add", TSR_DTYPE_INT32).in(a).in(b).i(1).out(out).run()));
  EXPECT_EQ(get_int(out, {0}), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(get_int(out, {1}), std::numeric_limits<int32_t>::max());
}

TEST_F(CpuPlugin, AddOneElement) {
  for (TsrDType d : {TSR_DTYPE_FLOAT32, TSR_DTYPE_INT64}) {
    Tensor a = make(d, {}), b = make(d, {}), out = make(d, {});
    set(a, {}, 3);
    set(b, {}, 4);
    Call call("add", d);
    call.in(a).in(b);
    if (d == TSR_DTYPE_FLOAT32) {
      call.f(1.0);
    } else {
      call.i(1);
    }
    ASSERT_TRUE(Ok(call.out(out).run()));
    EXPECT_EQ(get(out, {}), 7);
  }
}

TEST_F(CpuPlugin, Sub) {
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("sub") & bit(d))) continue;
    check_binary(
        "sub", d,
        [](TsrDType dt, double a, double b) {
          return ref_arith(
              dt, a, b, [](double x, double y) { return x - 3.0 * y; }, [](float x, float y) { return x - 3.0f * y; },
              [](int64_t x, int64_t y) { return x - 3 * y; });
        },
        [d](Call& c) {
          if (is_floating(d)) {
            c.f(3.0);
          } else {
            c.i(3);
          }
        });
  }
}

// add, sub and mul enter through a float32 fast path for the usual call (dense
// operands of one shape, alpha 1, small) and hand every other call to the
// guarded general kernel. Both ways must give what float32 arithmetic gives,
// whichever form alpha takes, and a call that only looks usual is still refused.
TEST_F(CpuPlugin, Float32FastEntryAgreesWithPlainArithmetic) {
  const TsrDType d = TSR_DTYPE_FLOAT32;
  struct Alpha {
    const char* label;
    std::function<void(Call&)> put;
    float value;
  };
  const std::vector<Alpha> alphas = {{"None", [](Call& c) { c.none(); }, 1.0f},
                                     {"float 1", [](Call& c) { c.f(1.0); }, 1.0f},
                                     {"int 1", [](Call& c) { c.i(1); }, 1.0f},
                                     {"bool true", [](Call& c) { c.b(true); }, 1.0f},
                                     {"float 2", [](Call& c) { c.f(2.0); }, 2.0f},
                                     {"int -1", [](Call& c) { c.i(-1); }, -1.0f}};
  for (const char* op : {"add", "sub", "mul"}) {
    const bool is_mul = std::strcmp(op, "mul") == 0;
    for (const Alpha& alpha : alphas) {
      if (is_mul && &alpha != &alphas.front()) break;  // mul takes no alpha
      SCOPED_TRACE(std::string(op) + ", alpha " + alpha.label);
      // Every layout of binary_cases, then in place on a dense self, then the
      // ranks the entry's one-dimensional instance takes or hands on: one
      // element (its stride irrelevant), a short vector, a strided vector, 0-d.
      std::vector<BinaryCase> cases = binary_cases(d);
      Tensor self = make(d, {3, 5});
      cases.push_back({"in place", self, make(d, {3, 5}), self});
      Tensor odd_stride = make(d, {1});
      odd_stride.strides[0] = 7;
      cases.push_back({"one element", make(d, {1}), odd_stride, make(d, {1})});
      cases.push_back({"vector", make(d, {7}), make(d, {7}), make(d, {7})});
      cases.push_back({"strided vector", make(d, {7}, Layout::kStrided), make(d, {7}), make(d, {7})});
      cases.push_back({"flipped vector", make(d, {7}), make(d, {7}, Layout::kFlipped), make(d, {7})});
      cases.push_back({"0-d", make(d, {}), make(d, {}), make(d, {})});
      for (BinaryCase& c : cases) {
        SCOPED_TRACE(c.label);
        fill_values(c.self, sample_values(d, false), 1);
        fill_values(c.other, sample_values(d, false), 4);
        std::vector<float> x, y;
        for_each_index(c.out.shape, [&](const std::vector<int64_t>& idx) {
          x.push_back(static_cast<float>(get(c.self, idx)));
          y.push_back(static_cast<float>(get(c.other, idx)));
        });
        Call call(op, d);
        call.in(c.self).in(c.other);
        if (!is_mul) alpha.put(call);
        ASSERT_TRUE(Ok(call.out(c.out).run()));
        size_t i = 0;
        int64_t bad = 0;
        for_each_index(c.out.shape, [&](const std::vector<int64_t>& idx) {
          // alpha is 1, 2 or -1: alpha * y is exact, so one rounding as the kernel.
          const float want = is_mul ? x[i] * y[i] : op[0] == 'a' ? x[i] + alpha.value * y[i] : x[i] - alpha.value * y[i];
          const double got = get(c.out, idx);
          if (!same_value(got, static_cast<double>(want)) && bad++ < 5)
            ADD_FAILURE() << "element " << i << ": " << x[i] << " " << op << " " << y[i] << " gave " << got
                          << ", want " << want;
          ++i;
        });
      }
    }
  }
  // Shaped like the usual call, but wrong: each is refused with what is wrong.
  Tensor a = make(d, {4}), b = make(d, {4});
  fill_values(a, {1});
  fill_values(b, {2});
  Failure f = take(Call("add", d).in(a).in(b).none().out(make(TSR_DTYPE_FLOAT64, {4})).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(f.message.find("'out' has dtype float64, expected float32"), std::string::npos) << f.message;
  f = take(Call("mul", d).in(a).in(b).out(make(d, {5})).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(f.message.find("shape [4]"), std::string::npos) << f.message;
  f = take(Call("sub", d).in(a).in(b).out(make(d, {4})).run());  // alpha missing
  EXPECT_NE(f.message.find("missing argument 'alpha'"), std::string::npos) << f.message;
}

TEST_F(CpuPlugin, Mul) {
  for (TsrDType d : kAllDtypes) {
    check_binary(
        "mul", d,
        [](TsrDType dt, double a, double b) {
          if (dt == TSR_DTYPE_BOOL) return (a != 0 && b != 0) ? 1.0 : 0.0;
          return ref_arith(
              dt, a, b, [](double x, double y) { return x * y; }, [](float x, float y) { return x * y; },
              [](int64_t x, int64_t y) { return x * y; });
        },
        [](Call&) {});
  }
}

TEST_F(CpuPlugin, TrueDivision) {
  for (TsrDType d : {TSR_DTYPE_FLOAT16, TSR_DTYPE_BFLOAT16, TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64}) {
    check_binary(
        "div", d,
        [](TsrDType dt, double a, double b) {
          return dt == TSR_DTYPE_FLOAT64 ? a / b : static_cast<double>(static_cast<float>(a) / static_cast<float>(b));
        },
        [](Call& c) { c.none(); }, true);
  }
}

TEST_F(CpuPlugin, RoundingDivision) {
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("div") & bit(d))) continue;
    // Small values: double gives the exact quotient's floor/trunc.
    check_binary(
        "div", d,
        [](TsrDType dt, double a, double b) {
          if (is_integer(dt)) {
            const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
            return static_cast<double>(x / y);  // C++ truncates
          }
          const double q = dt == TSR_DTYPE_FLOAT64 ? a / b : static_cast<float>(a) / static_cast<float>(b);
          return std::trunc(q);
        },
        [](Call& c) { c.s("trunc"); }, true);
    check_binary(
        "div", d,
        [](TsrDType, double a, double b) { return std::floor(a / b); }, [](Call& c) { c.s("floor"); }, true);
  }
}

TEST_F(CpuPlugin, FloorAndTruncDivisionOfNegativeIntegers) {
  // (a, b, floor, trunc), worked out by hand with Python's // semantics.
  const int64_t rows[][4] = {{7, 2, 3, 3},    {-7, 2, -4, -3}, {7, -2, -4, -3}, {-7, -2, 3, 3},
                             {-6, 3, -2, -2}, {0, -5, 0, 0},   {-1, 5, -1, 0},  {-128, -1, -128, -128}};
  for (TsrDType d : {TSR_DTYPE_INT8, TSR_DTYPE_INT16, TSR_DTYPE_INT32, TSR_DTYPE_INT64}) {
    SCOPED_TRACE(name(d));
    const int64_t n = 8;
    Tensor a = make(d, {n}), b = make(d, {n}), floor_out = make(d, {n}), trunc_out = make(d, {n});
    for (int64_t i = 0; i < n; ++i) {
      set_int(a, {i}, rows[i][0]);
      set_int(b, {i}, rows[i][1]);
    }
    ASSERT_TRUE(Ok(Call("div", d).in(a).in(b).s("floor").out(floor_out).run()));
    ASSERT_TRUE(Ok(Call("div", d).in(a).in(b).s("trunc").out(trunc_out).run()));
    for (int64_t i = 0; i < n; ++i) {
      // -128 / -1 overflows int8 and wraps back to -128; wider types give 128.
      const int64_t wrap = (i == 7 && d != TSR_DTYPE_INT8) ? 256 : 0;
      EXPECT_EQ(get_int(floor_out, {i}), rows[i][2] + wrap) << rows[i][0] << " // " << rows[i][1];
      EXPECT_EQ(get_int(trunc_out, {i}), rows[i][3] + wrap) << rows[i][0] << " trunc/ " << rows[i][1];
    }
  }
  // INT64_MIN / -1 must not trap: it wraps.
  Tensor a = make(TSR_DTYPE_INT64, {1}), b = make(TSR_DTYPE_INT64, {1}), out = make(TSR_DTYPE_INT64, {1});
  set_int(a, {0}, std::numeric_limits<int64_t>::min());
  set_int(b, {0}, -1);
  ASSERT_TRUE(Ok(Call("div", TSR_DTYPE_INT64).in(a).in(b).s("floor").out(out).run()));
  EXPECT_EQ(get_int(out, {0}), std::numeric_limits<int64_t>::min());
}

TEST_F(CpuPlugin, FloatFloorDivisionFollowsPython) {
  // (a, b, a // b) as Python computes them.
  const double rows[][3] = {{1.0, 0.1, 9.0},      {-7.5, 2.0, -4.0},     {7.5, -2.0, -4.0},
                            {-1.0, INFINITY, -1.0}, {1.0, INFINITY, 0.0}, {5.0, 0.5, 10.0}};
  const int64_t n = 6;
  Tensor a = make(TSR_DTYPE_FLOAT64, {n}), b = make(TSR_DTYPE_FLOAT64, {n}), out = make(TSR_DTYPE_FLOAT64, {n});
  for (int64_t i = 0; i < n; ++i) {
    set(a, {i}, rows[i][0]);
    set(b, {i}, rows[i][1]);
  }
  ASSERT_TRUE(Ok(Call("div", TSR_DTYPE_FLOAT64).in(a).in(b).s("floor").out(out).run()));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(get(out, {i}), rows[i][2]) << rows[i][0] << " // " << rows[i][1];
}

TEST_F(CpuPlugin, FloatDivisionByZeroFollowsIeee) {
  Tensor a = make(TSR_DTYPE_FLOAT32, {3}), b = make(TSR_DTYPE_FLOAT32, {3}), out = make(TSR_DTYPE_FLOAT32, {3});
  set(a, {0}, 1);
  set(a, {1}, -1);
  set(a, {2}, 0);
  for (int64_t i = 0; i < 3; ++i) set(b, {i}, 0);
  for (const char* mode : {"none", "floor", "trunc"}) {
    Call call("div", TSR_DTYPE_FLOAT32);
    call.in(a).in(b);
    if (std::strcmp(mode, "none") == 0) {
      call.none();
    } else {
      call.s(mode);
    }
    ASSERT_TRUE(Ok(call.out(out).run())) << mode;
    EXPECT_EQ(get(out, {0}), INFINITY) << mode;
    EXPECT_EQ(get(out, {1}), -INFINITY) << mode;
    EXPECT_TRUE(std::isnan(get(out, {2}))) << mode;
  }
}

TEST_F(CpuPlugin, IntegerDivisionByZeroIsAnError) {
  for (TsrDType d : {TSR_DTYPE_UINT8, TSR_DTYPE_INT8, TSR_DTYPE_INT32, TSR_DTYPE_INT64}) {
    for (const char* mode : {"floor", "trunc"}) {
      SCOPED_TRACE(std::string(name(d)) + " " + mode);
      Tensor a = make(d, {2, 3}), b = make(d, {2, 3});
      fill_values(a, {5, 6, 7});
      fill_values(b, {1, 2, 3});
      set(b, {1, 2}, 0);
      std::vector<double> before;
      for_each_index(a.shape, [&](const std::vector<int64_t>& idx) { before.push_back(get(a, idx)); });
      const Failure f = take(Call("div", d).in(a).in(b).s(mode).out(a).run());  // in place
      ASSERT_TRUE(f.failed);
      EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(f.message.find("division by zero"), std::string::npos) << f.message;
      EXPECT_NE(f.message.find(std::string("div(") + name(d) + ")"), std::string::npos) << f.message;
      size_t i = 0;  // checked before writing: self is untouched
      for_each_index(a.shape, [&](const std::vector<int64_t>& idx) { EXPECT_EQ(get(a, idx), before[i++]); });
    }
  }
  // A zero reached only through a broadcast dimension is found too.
  Tensor a = make(TSR_DTYPE_INT32, {4, 3}), out = make(TSR_DTYPE_INT32, {4, 3});
  Tensor row = make(TSR_DTYPE_INT32, {1, 3});
  fill_values(a, {1});
  set(row, {0, 0}, 2);
  set(row, {0, 1}, 0);
  set(row, {0, 2}, 3);
  EXPECT_EQ(take(Call("div", TSR_DTYPE_INT32).in(a).in(expanded(row, {4, 3})).s("trunc").out(out).run()).code,
            TSR_ERROR_INVALID_ARGUMENT);
}

TEST_F(CpuPlugin, BadDivisionArguments) {
  Tensor a = make(TSR_DTYPE_INT32, {2}), b = make(TSR_DTYPE_INT32, {2}), out = make(TSR_DTYPE_INT32, {2});
  fill_values(a, {1});
  fill_values(b, {1});
  Failure f = take(Call("div", TSR_DTYPE_INT32).in(a).in(b).s("round").out(out).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(f.message.find("round"), std::string::npos) << f.message;
  f = take(Call("div", TSR_DTYPE_INT32).in(a).in(b).none().out(out).run());  // true division on ints
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  f = take(Call("div", TSR_DTYPE_INT32).in(a).in(b).i(3).out(out).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
}

// ---------------------------------------------------------------------------
// Unary ops
// ---------------------------------------------------------------------------

using UnaryRef = std::function<double(TsrDType, double)>;

void check_unary(const char* op, TsrDType d, const std::vector<double>& values, const UnaryRef& ref) {
  SCOPED_TRACE(std::string(op) + " " + name(d));
  struct Case {
    const char* label;
    Tensor in, out;
  };
  std::vector<Case> cases;
  cases.push_back({"contiguous", make(d, {3, 5}), make(d, {3, 5})});
  cases.push_back({"transposed", make(d, {3, 5}, Layout::kTransposed), make(d, {3, 5})});
  cases.push_back({"strided", make(d, {3, 5}, Layout::kStrided), make(d, {3, 5})});
  cases.push_back({"flipped", make(d, {3, 5}, Layout::kFlipped), make(d, {3, 5})});
  cases.push_back({"broadcast", expanded(make(d, {1, 5}), {3, 5}), make(d, {3, 5})});
  cases.push_back({"large", make(d, {100, 701}), make(d, {100, 701})});
  for (Case& c : cases) {
    SCOPED_TRACE(c.label);
    fill_values(c.in, values, 3);
    ASSERT_TRUE(Ok(Call(op, d).in(c.in).out(c.out).run()));
    int64_t bad = 0;
    for_each_index(c.out.shape, [&](const std::vector<int64_t>& idx) {
      const double want = round_to(d, ref(d, get(c.in, idx)));
      const double got = get(c.out, idx);
      const double tol = d == TSR_DTYPE_FLOAT32 ? 2e-7 * std::fabs(want) : (d == TSR_DTYPE_FLOAT64 ? 1e-15 * std::fabs(want) : 0);
      if (!(same_value(got, want) || std::fabs(got - want) <= tol) && bad++ < 5) {
        ADD_FAILURE() << op << "(" << get(c.in, idx) << ") gave " << got << ", want " << want;
      }
    });
  }
  // In place on a transposed tensor.
  Tensor t = make(d, {4, 6}, Layout::kTransposed);
  fill_values(t, values);
  std::vector<double> before;
  for_each_index(t.shape, [&](const std::vector<int64_t>& idx) { before.push_back(get(t, idx)); });
  ASSERT_TRUE(Ok(Call(op, d).in(t).out(t).run()));
  size_t i = 0;
  for_each_index(t.shape, [&](const std::vector<int64_t>& idx) {
    const double want = round_to(d, ref(d, before[i++]));
    EXPECT_TRUE(same_value(get(t, idx), want) || std::fabs(get(t, idx) - want) <= 1e-6 * std::fabs(want));
  });
}

TEST_F(CpuPlugin, Neg) {
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("neg") & bit(d))) continue;
    std::vector<double> values = sample_values(d, false);
    if (is_floating(d)) values.push_back(NAN);
    check_unary("neg", d, values, [](TsrDType dt, double x) {
      return is_integer(dt) ? static_cast<double>(-static_cast<int64_t>(x)) : -x;  // round_to wraps
    });
  }
  // The sign of zero flips too.
  Tensor z = make(TSR_DTYPE_FLOAT16, {1}), out = make(TSR_DTYPE_FLOAT16, {1});
  set(z, {0}, 0.0);
  ASSERT_TRUE(Ok(Call("neg", TSR_DTYPE_FLOAT16).in(z).out(out).run()));
  EXPECT_EQ(get_bits16(out, {0}), 0x8000u);
}

TEST_F(CpuPlugin, Exp) {
  for (TsrDType d : {TSR_DTYPE_FLOAT16, TSR_DTYPE_BFLOAT16, TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64}) {
    check_unary("exp", d, {0, 1, -1, 2.5, -10, 0.125, NAN, INFINITY, -INFINITY}, [](TsrDType dt, double x) {
      return dt == TSR_DTYPE_FLOAT64 ? std::exp(x) : static_cast<double>(std::exp(static_cast<float>(x)));
    });
  }
}

TEST_F(CpuPlugin, Relu) {
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("relu") & bit(d))) continue;
    std::vector<double> values = sample_values(d, false);
    if (is_floating(d)) {
      values.push_back(NAN);
      values.push_back(-INFINITY);
      values.push_back(INFINITY);
    }
    check_unary("relu", d, values, [](TsrDType, double x) { return std::isnan(x) ? x : std::max(x, 0.0); });
  }
}

// ---------------------------------------------------------------------------
// sum
// ---------------------------------------------------------------------------

TsrDType sum_out_dtype(TsrDType d) { return is_floating(d) ? d : TSR_DTYPE_INT64; }

// Runs sum and compares with a double / int64 reference. Floating results may
// differ from the reference by tol * (sum of |x|) (summation order).
void check_sum(const Tensor& self, const std::vector<int64_t>& dims, bool keepdim, TsrDType out_dtype,
               bool pass_dtype = false) {
  const TsrDType d = self.dtype;
  std::string dims_text;
  for (int64_t x : dims) dims_text += std::to_string(x) + ",";
  SCOPED_TRACE(std::string("sum ") + name(d) + " -> " + name(out_dtype) + " dims {" + dims_text + "} keepdim " +
               (keepdim ? "true" : "false"));
  std::vector<int64_t> out_shape;
  for (size_t i = 0; i < self.shape.size(); ++i) {
    const bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!reduced) {
      out_shape.push_back(self.shape[i]);
    } else if (keepdim) {
      out_shape.push_back(1);
    }
  }
  Tensor out = make(out_dtype, out_shape);
  Call call("sum", d);
  call.in(self).ints(dims).b(keepdim);
  if (pass_dtype) {
    call.dtype(out_dtype);
  } else {
    call.none();
  }
  ASSERT_TRUE(Ok(call.out(out).run()));

  std::vector<double> ref(static_cast<size_t>(out.numel()), 0.0), mag(ref.size(), 0.0);
  std::vector<int64_t> iref(ref.size(), 0);
  const std::vector<int64_t> ostr = contiguous_strides(out_shape);
  for_each_index(self.shape, [&](const std::vector<int64_t>& idx) {
    int64_t o = 0;
    size_t od = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      const bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
      if (reduced && !keepdim) continue;
      o += (reduced ? 0 : idx[i]) * ostr[od++];
    }
    const double x = get(self, idx);
    ref[static_cast<size_t>(o)] += x;
    mag[static_cast<size_t>(o)] += std::fabs(x);
    if (!is_floating(d)) iref[static_cast<size_t>(o)] += get_int(self, idx);
  });
  const double tol = out_dtype == TSR_DTYPE_FLOAT64   ? 1e-14
                     : out_dtype == TSR_DTYPE_FLOAT32 ? 1e-6
                     : out_dtype == TSR_DTYPE_FLOAT16 ? 2e-3
                                                      : 1e-2;
  int64_t i = 0, bad = 0;
  for_each_index(out_shape, [&](const std::vector<int64_t>& idx) {
    const double got = get(out, idx);
    if (is_floating(out_dtype)) {
      const double want = ref[static_cast<size_t>(i)];
      if (!(std::fabs(got - want) <= tol * mag[static_cast<size_t>(i)] + 1e-30) && bad++ < 5) {
        ADD_FAILURE() << "output " << i << ": got " << got << ", want " << want;
      }
    } else {
      const int64_t want = static_cast<int64_t>(round_to(out_dtype, static_cast<double>(iref[static_cast<size_t>(i)])));
      if (get_int(out, idx) != want && bad++ < 5) {
        ADD_FAILURE() << "output " << i << ": got " << get_int(out, idx) << ", want " << want;
      }
    }
    ++i;
  });
}

const std::vector<std::vector<int64_t>> kDimSets3 = {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};

TEST_F(CpuPlugin, SumOverDimSets) {
  for (TsrDType d : kAllDtypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kTransposed, Layout::kFlipped, Layout::kStrided}) {
      SCOPED_TRACE(layout_name(layout));
      Tensor self = make(d, {4, 5, 6}, layout);
      fill_values(self, sample_values(d, false), 5);
      for (const auto& dims : kDimSets3) {
        for (bool keepdim : {false, true}) check_sum(self, dims, keepdim, sum_out_dtype(d));
      }
    }
  }
}

TEST_F(CpuPlugin, SumWithRequestedDtypeKeepsIt) {
  // sum(dtype=int32) of an int32 tensor stays int32 (wrapping); bool -> bool is "any".
  Tensor self = make(TSR_DTYPE_INT32, {3, 4});
  fill_values(self, {2000000000, 5, -7});
  check_sum(self, {1}, false, TSR_DTYPE_INT32, true);
  Tensor flags = make(TSR_DTYPE_BOOL, {3, 4});
  fill_values(flags, {0, 0, 0, 1, 0});
  check_sum(flags, {0}, false, TSR_DTYPE_BOOL, true);
}

TEST_F(CpuPlugin, SumOfBroadcastAndZeroDimInputs) {
  Tensor row = make(TSR_DTYPE_FLOAT32, {1, 7});
  fill_values(row, {1.5, -2, 3});
  const Tensor wide = expanded(row, {50, 7});
  for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1}, {0, 1}}) check_sum(wide, dims, false, TSR_DTYPE_FLOAT32);
  Tensor scalar = make(TSR_DTYPE_INT16, {});
  set(scalar, {}, -12);
  check_sum(scalar, {}, false, TSR_DTYPE_INT64);
  check_sum(scalar, {}, true, TSR_DTYPE_INT64);
}

TEST_F(CpuPlugin, SumLargeLayouts) {
  // Row sums (inner layout), column sums (outer layout, several tiles), few
  // outputs over many rows (outer layout, threads over row blocks), and a
  // permuted input whose reduced dims do not merge.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto random = [&](TsrDType d, std::vector<int64_t> shape, Layout layout = Layout::kContiguous) {
    Tensor t = make(d, std::move(shape), layout);
    for_each_index(t.shape, [&](const std::vector<int64_t>& idx) { set(t, idx, round_to(d, dist(rng))); });
    return t;
  };
  for (TsrDType d : {TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64, TSR_DTYPE_BFLOAT16}) {
    SCOPED_TRACE(name(d));
    const Tensor m = random(d, {300, 333});
    check_sum(m, {1}, false, d);
    check_sum(m, {0}, true, d);
    check_sum(random(d, {100000, 3}), {0}, false, d);
    check_sum(random(d, {70000, 8}), {0}, false, d);
    check_sum(random(d, {3, 40000}), {1}, false, d);
    // Outer layout with another kept dim and reduced dims that cannot merge.
    check_sum(random(d, {30, 3, 20, 70}), {0, 2}, false, d);
    check_sum(random(d, {600, 40}, Layout::kStrided), {0}, true, d);  // lanes 2 elements apart
    const Tensor t3 = random(d, {40, 30, 50}, Layout::kTransposed);
    check_sum(t3, {0, 2}, false, d);
    check_sum(t3, {0, 1}, true, d);
    check_sum(t3, {1}, false, d);
  }
  Tensor ints = make(TSR_DTYPE_INT8, {1000, 100});
  fill_values(ints, {100, 127, -128, 3});
  check_sum(ints, {0}, false, TSR_DTYPE_INT64);  // no int8 overflow: accumulates in int64
  check_sum(ints, {0, 1}, false, TSR_DTYPE_INT64);
}

TEST_F(CpuPlugin, SumOfHalvesAccumulatesInFloat32) {
  // 4096 ones: a float16 accumulator would stall at 2048 (2048 + 1 rounds back).
  for (TsrDType d : {TSR_DTYPE_FLOAT16, TSR_DTYPE_BFLOAT16}) {
    Tensor ones = make(d, {4096});
    fill_values(ones, {1});
    Tensor out = make(d, {});
    ASSERT_TRUE(Ok(Call("sum", d).in(ones).ints({0}).b(false).none().out(out).run()));
    EXPECT_EQ(get(out, {}), 4096.0) << name(d);
  }
}

TEST_F(CpuPlugin, SumOfBoolCountsIntoInt64) {
  Tensor flags = make(TSR_DTYPE_BOOL, {100000});
  fill_values(flags, {1, 0, 1});  // i*7 % 3 -> pattern of period 3 with two ones
  Tensor out = make(TSR_DTYPE_INT64, {});
  ASSERT_TRUE(Ok(Call("sum", TSR_DTYPE_BOOL).in(flags).ints({0}).b(false).none().out(out).run()));
  int64_t want = 0;
  for (int64_t i = 0; i < 100000; ++i) want += get(flags, {i}) != 0;
  EXPECT_EQ(get_int(out, {}), want);
}

TEST_F(CpuPlugin, PairwiseSumOfTenMillionFloats) {
  const int64_t n = 10'000'000;
  Tensor x = make(TSR_DTYPE_FLOAT32, {n});
  auto* p = reinterpret_cast<float*>(x.data());
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  double exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    p[i] = dist(rng);
    exact += p[i];
  }
  Tensor out = make(TSR_DTYPE_FLOAT32, {});
  ASSERT_TRUE(Ok(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({0}).b(false).none().out(out).run()));
  const double got = get(out, {});
  EXPECT_LE(std::fabs(got - exact) / exact, 1e-6) << "got " << got << ", double sum " << exact;

  // The block structure does not depend on the thread count: same bits.
  const int threads = omp_threads();
  if (threads > 0 && set_omp_threads(1)) {
    Tensor one = make(TSR_DTYPE_FLOAT32, {});
    ASSERT_TRUE(Ok(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({0}).b(false).none().out(one).run()));
    set_omp_threads(3);
    Tensor three = make(TSR_DTYPE_FLOAT32, {});
    ASSERT_TRUE(Ok(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({0}).b(false).none().out(three).run()));
    set_omp_threads(threads);
    EXPECT_EQ(get(one, {}), got);
    EXPECT_EQ(get(three, {}), got);
  }
}

TEST_F(CpuPlugin, ReductionsGiveTheSameBitsForEveryThreadCount) {
  // Each output's summation / fold order is fixed by blocks of the input, not
  // by the threads: 1, 2 and 3 threads give the same bits. Sizes cross the
  // thread grain and end in partial leaves and blocks.
  const int threads = omp_threads();
  if (threads <= 0) GTEST_SKIP() << "libgomp not reachable";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const auto random = [&](std::vector<int64_t> shape, float lo_scale = 1.0f) {
    Tensor t = make(TSR_DTYPE_FLOAT32, std::move(shape));
    auto* p = reinterpret_cast<float*>(t.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = 1.0f + lo_scale * dist(rng);
    return t;
  };
  const Tensor vec = random({1'000'037});
  const Tensor near_one = random({300'007}, 1e-4f);  // a product that stays finite
  const Tensor mat = random({1031, 1029});
  struct Case {
    const char* op;
    const Tensor* x;
    std::vector<int64_t> dims;
    std::vector<int64_t> out_shape;
  };
  const std::vector<Case> cases = {
      {"sum", &vec, {0}, {}},         {"sum", &mat, {1}, {1031}},       {"sum", &mat, {0}, {1029}},
      {"prod", &near_one, {0}, {}},   {"amax", &vec, {0}, {}},          {"amin", &mat, {1}, {1031}},
      {"logsumexp", &mat, {1}, {1031}}, {"logsumexp", &mat, {0}, {1029}}, {"logsumexp", &vec, {0}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " over dim " + std::to_string(c.dims[0]) + " of " +
                 std::to_string(c.x->numel()) + " elements");
    std::vector<Tensor> results;
    for (int n : {1, 2, 3}) {
      ASSERT_TRUE(set_omp_threads(n));
      Tensor out = make(TSR_DTYPE_FLOAT32, c.out_shape);
      Call call(c.op, TSR_DTYPE_FLOAT32);
      call.in(*c.x).ints(c.dims).b(false);
      if (std::string(c.op) == "sum" || std::string(c.op) == "prod") call.none();
      ASSERT_TRUE(Ok(call.out(out).run()));
      results.push_back(out);
    }
    set_omp_threads(threads);
    const int64_t n_out = results[0].numel();
    EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), sizeof(float) * n_out), 0) << "1 vs 2 threads";
    EXPECT_EQ(std::memcmp(results[0].data(), results[2].data(), sizeof(float) * n_out), 0) << "1 vs 3 threads";
  }
}

TEST_F(CpuPlugin, SumRejectsBadDims) {
  Tensor x = make(TSR_DTYPE_FLOAT32, {2, 3}), out = make(TSR_DTYPE_FLOAT32, {2});
  fill_values(x, {1});
  EXPECT_EQ(take(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({2}).b(false).none().out(out).run()).code,
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({1, 1}).b(false).none().out(out).run()).code,
            TSR_ERROR_INVALID_ARGUMENT);
  Tensor wrong = make(TSR_DTYPE_FLOAT32, {3});
  EXPECT_EQ(take(Call("sum", TSR_DTYPE_FLOAT32).in(x).ints({1}).b(false).none().out(wrong).run()).code,
            TSR_ERROR_INVALID_ARGUMENT);
}

// ---------------------------------------------------------------------------
// mm and bmm
// ---------------------------------------------------------------------------

// A [batch?, rows, cols] operand in one of several layouts.
enum class MatLayout { kRowMajor, kTransposed, kStrided, kRowBroadcast };
const char* mat_layout_name(MatLayout l) {
  switch (l) {
    case MatLayout::kRowMajor: return "row-major";
    case MatLayout::kTransposed: return "transposed";
    case MatLayout::kStrided: return "strided";
    default: return "row-broadcast";
  }
}

Tensor make_matrix(TsrDType d, std::vector<int64_t> shape, MatLayout layout, std::mt19937& rng) {
  Tensor t;
  switch (layout) {
    case MatLayout::kRowMajor: t = make(d, shape); break;
    case MatLayout::kTransposed: t = make(d, shape, Layout::kTransposed); break;
    case MatLayout::kStrided: t = make(d, shape, Layout::kStrided); break;
    default: {  // every row the same: row stride 0 (no BLAS layout fits)
      std::vector<int64_t> one = shape;
      one[one.size() - 2] = 1;
      t = expanded(make(d, one), shape);
    }
  }
  std::uniform_int_distribution<int> dist(is_floating(d) ? -8 : (d == TSR_DTYPE_UINT8 ? 0 : -5), is_floating(d) ? 8 : 9);
  for_each_index(t.shape, [&](const std::vector<int64_t>& idx) {
    const double v = is_floating(d) ? dist(rng) * 0.25 : dist(rng);
    set(t, idx, v);
  });
  return t;
}

// out = a @ b (2-D or batched 3-D) against a naive triple loop.
void check_matmul(const char* op, const Tensor& a, const Tensor& b) {
  const TsrDType d = a.dtype;
  const bool batched = a.shape.size() == 3;
  const int64_t B = batched ? a.shape[0] : 1;
  const size_t r = batched ? 1 : 0;
  const int64_t M = a.shape[r], K = a.shape[r + 1], N = b.shape[r + 1];
  Tensor out = batched ? make(d, {B, M, N}) : make(d, {M, N});
  ASSERT_TRUE(Ok(Call(op, d).in(a).in(b).out(out).run()));
  int64_t bad = 0;
  for (int64_t bi = 0; bi < B; ++bi) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0, mag = 0;
        int64_t iacc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const std::vector<int64_t> ai = batched ? std::vector<int64_t>{bi, i, k} : std::vector<int64_t>{i, k};
          const std::vector<int64_t> bk = batched ? std::vector<int64_t>{bi, k, j} : std::vector<int64_t>{k, j};
          acc += get(a, ai) * get(b, bk);
          mag += std::fabs(get(a, ai) * get(b, bk));
          iacc += get_int(a, ai) * get_int(b, bk);
        }
        const std::vector<int64_t> oi = batched ? std::vector<int64_t>{bi, i, j} : std::vector<int64_t>{i, j};
        if (is_floating(d)) {
          const double tol = d == TSR_DTYPE_FLOAT64 ? 1e-13 : d == TSR_DTYPE_FLOAT32 ? 1e-6
                             : d == TSR_DTYPE_FLOAT16                               ? 1e-3
                                                                                    : 8e-3;
          if (!(std::fabs(get(out, oi) - acc) <= tol * mag + 1e-12) && bad++ < 5) {
            ADD_FAILURE() << op << " (" << bi << ", " << i << ", " << j << "): got " << get(out, oi) << ", want " << acc;
          }
        } else if (get_int(out, oi) != static_cast<int64_t>(round_to(d, static_cast<double>(iacc))) && bad++ < 5) {
          ADD_FAILURE() << op << " (" << bi << ", " << i << ", " << j << "): got " << get_int(out, oi) << ", want "
                        << round_to(d, static_cast<double>(iacc));
        }
      }
    }
  }
}

TEST_F(CpuPlugin, MatrixMultiplyAllLayouts) {
  std::mt19937 rng(3);
  const MatLayout layouts[] = {MatLayout::kRowMajor, MatLayout::kTransposed, MatLayout::kStrided,
                               MatLayout::kRowBroadcast};
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("mm") & bit(d))) continue;
    for (MatLayout la : layouts) {
      for (MatLayout lb : layouts) {
        SCOPED_TRACE(std::string(name(d)) + " a " + mat_layout_name(la) + ", b " + mat_layout_name(lb));
        check_matmul("mm", make_matrix(d, {7, 5}, la, rng), make_matrix(d, {5, 9}, lb, rng));
      }
    }
  }
}

TEST_F(CpuPlugin, MatrixMultiplyShapes) {
  std::mt19937 rng(5);
  for (TsrDType d : {TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64, TSR_DTYPE_FLOAT16, TSR_DTYPE_INT32}) {
    SCOPED_TRACE(name(d));
    check_matmul("mm", make_matrix(d, {64, 48}, MatLayout::kRowMajor, rng),
                 make_matrix(d, {48, 80}, MatLayout::kTransposed, rng));
    check_matmul("mm", make_matrix(d, {1, 33}, MatLayout::kTransposed, rng),
                 make_matrix(d, {33, 1}, MatLayout::kStrided, rng));
    check_matmul("mm", make_matrix(d, {9, 1}, MatLayout::kStrided, rng),
                 make_matrix(d, {1, 300}, MatLayout::kRowMajor, rng));
  }
}

TEST_F(CpuPlugin, MatrixMultiplyWrapsIntegers) {
  // int8 products overflow and wrap modulo 256, like the reference's cast.
  Tensor a = make(TSR_DTYPE_INT8, {4, 6}), b = make(TSR_DTYPE_INT8, {6, 3});
  fill_values(a, {100, -90, 77, 127});
  fill_values(b, {120, -128, 55});
  check_matmul("mm", a, b);
}

TEST_F(CpuPlugin, MatrixMultiplyWithEmptyInnerDimension) {
  for (TsrDType d : {TSR_DTYPE_FLOAT32, TSR_DTYPE_BFLOAT16, TSR_DTYPE_INT64}) {
    Tensor a = make(d, {3, 0}), b = make(d, {0, 4}), out = make(d, {3, 4});
    ASSERT_TRUE(Ok(Call("mm", d).in(a).in(b).out(out).run())) << name(d);
    for_each_index(out.shape, [&](const std::vector<int64_t>& idx) { EXPECT_EQ(get(out, idx), 0.0) << name(d); });
  }
}

TEST_F(CpuPlugin, BatchedMatrixMultiply) {
  std::mt19937 rng(11);
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("bmm") & bit(d))) continue;
    SCOPED_TRACE(name(d));
    check_matmul("bmm", make_matrix(d, {3, 4, 5}, MatLayout::kRowMajor, rng),
                 make_matrix(d, {3, 5, 6}, MatLayout::kRowMajor, rng));
    check_matmul("bmm", make_matrix(d, {3, 4, 5}, MatLayout::kTransposed, rng),
                 make_matrix(d, {3, 5, 6}, MatLayout::kStrided, rng));
    // Broadcast batch (stride 0) on either side.
    Tensor a1 = make_matrix(d, {1, 4, 5}, MatLayout::kTransposed, rng);
    Tensor b1 = make_matrix(d, {1, 5, 6}, MatLayout::kRowMajor, rng);
    check_matmul("bmm", expanded(a1, {3, 4, 5}), make_matrix(d, {3, 5, 6}, MatLayout::kTransposed, rng));
    check_matmul("bmm", make_matrix(d, {3, 4, 5}, MatLayout::kRowMajor, rng), expanded(b1, {3, 5, 6}));
    check_matmul("bmm", make_matrix(d, {2, 4, 5}, MatLayout::kRowBroadcast, rng), expanded(b1, {2, 5, 6}));
  }
}

TEST_F(CpuPlugin, MatrixMultiplyRejectsBadShapes) {
  Tensor a = make(TSR_DTYPE_FLOAT32, {2, 3}), b = make(TSR_DTYPE_FLOAT32, {4, 2}), out = make(TSR_DTYPE_FLOAT32, {2, 2});
  const Failure f = take(Call("mm", TSR_DTYPE_FLOAT32).in(a).in(b).out(out).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(f.message.find("mm(float32)"), std::string::npos) << f.message;
}

// ---------------------------------------------------------------------------
// copy_, fill_, arange
// ---------------------------------------------------------------------------

// Source values per dtype, each exactly representable in it.
std::vector<double> copy_sources(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_BOOL: return {0, 1};
    case TSR_DTYPE_UINT8: return {0, 1, 7, 200, 255};
    case TSR_DTYPE_INT8: return {0, 1, -1, 100, -128};
    case TSR_DTYPE_INT16: return {0, -1, 300, -32768, 32767};
    case TSR_DTYPE_INT32: return {0, -1, 70000, -2147483648.0, 2147483647.0};
    case TSR_DTYPE_INT64: return {0, -1, 1099511627776.0, -9007199254740992.0, 123456789.0};
    case TSR_DTYPE_FLOAT16: return {0, -0.0, 1.5, -2.5, 65504, NAN, INFINITY, 0.5, -300.75};
    case TSR_DTYPE_BFLOAT16: return {0, 1.5, -2.5, 0x1p100, NAN, -INFINITY, 0.5, 384};
    case TSR_DTYPE_FLOAT32: return {0, 1.5, -2.5, 1e10, -1e10, NAN, INFINITY, 0.5, 300.75, -70000.5};
    default: return {0, 1.5, -2.5, 1e300, NAN, -INFINITY, 0.5, 1e-320, 123456.789, -2147483648.9};
  }
}

double int_min(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_UINT8: return 0;
    case TSR_DTYPE_INT8: return -128;
    case TSR_DTYPE_INT16: return -32768;
    case TSR_DTYPE_INT32: return -2147483648.0;
    default: return -9223372036854775808.0;
  }
}
double int_max(TsrDType d) {
  switch (d) {
    case TSR_DTYPE_UINT8: return 255;
    case TSR_DTYPE_INT8: return 127;
    case TSR_DTYPE_INT16: return 32767;
    case TSR_DTYPE_INT32: return 2147483647.0;
    default: return 9223372036854775807.0;
  }
}

// What copy_ must produce for source value v of dtype `from` in dtype `to`;
// false when the result is unspecified (docs/ops/shape.md, copy_: NaN/out of range to int).
bool expected_copy(TsrDType from, TsrDType to, double v, double& want) {
  if (to == TSR_DTYPE_BOOL) {
    want = v != 0 ? 1 : 0;  // NaN != 0
    return true;
  }
  if (is_integer(to)) {
    if (is_floating(from)) {
      const double t = std::trunc(v);
      if (std::isnan(v) || t < int_min(to) || t > int_max(to)) return false;
      want = t;
      return true;
    }
    want = round_to(to, v);  // integers wrap
    return true;
  }
  want = round_to(to, v);  // every test value is exactly a float, so one rounding
  return true;
}

TEST_F(CpuPlugin, CopyBetweenAllDtypePairs) {
  for (TsrDType from : kAllDtypes) {
    for (TsrDType to : kAllDtypes) {
      SCOPED_TRACE(std::string(name(from)) + " -> " + name(to));
      const std::vector<double> values = copy_sources(from);
      const int64_t n = static_cast<int64_t>(values.size());
      // 1-D contiguous, then a 2-D transposed destination with a broadcast source.
      Tensor src = make(from, {n}), dst = make(to, {n});
      for (int64_t i = 0; i < n; ++i) {
        if (from == TSR_DTYPE_INT64) {
          set_int(src, {i}, static_cast<int64_t>(values[static_cast<size_t>(i)]));
        } else {
          set(src, {i}, values[static_cast<size_t>(i)]);
        }
      }
      ASSERT_TRUE(Ok(Call("copy_", from).in(dst).in(src).b(false).out(dst).run()));
      for (int64_t i = 0; i < n; ++i) {
        double want;
        if (!expected_copy(from, to, values[static_cast<size_t>(i)], want)) continue;
        const double got = to == TSR_DTYPE_INT64 ? static_cast<double>(get_int(dst, {i})) : get(dst, {i});
        EXPECT_TRUE(same_value(got, want)) << values[static_cast<size_t>(i)] << " became " << got << ", want " << want;
      }
      Tensor row = make(from, {1, n});
      for (int64_t i = 0; i < n; ++i) set(row, {0, i}, get(src, {i}));
      Tensor dst2 = make(to, {3, n}, Layout::kTransposed);
      ASSERT_TRUE(Ok(Call("copy_", from).in(dst2).in(expanded(row, {3, n})).b(false).out(dst2).run()));
      for (int64_t r = 0; r < 3; ++r) {
        for (int64_t i = 0; i < n; ++i) {
          if (!(to == TSR_DTYPE_INT64 ? get_int(dst2, {r, i}) == get_int(dst, {i})
                                      : same_value(get(dst2, {r, i}), get(dst, {i})))) {
            ADD_FAILURE() << "broadcast copy differs at (" << r << ", " << i << ")";
          }
        }
      }
    }
  }
}

TEST_F(CpuPlugin, CopyFloatToIntegerIsDefinedOutOfRange) {
  // The plugin's documented choices for what docs/ops/shape.md (copy_) leaves unspecified:
  // NaN -> 0, saturation to int32/int64, then wrap to narrower types.
  Tensor src = make(TSR_DTYPE_FLOAT32, {6});
  const double v[] = {NAN, -1.0, 1e10, -1e30, INFINITY, 300.0};
  for (int64_t i = 0; i < 6; ++i) set(src, {i}, v[i]);
  Tensor u8 = make(TSR_DTYPE_UINT8, {6}), i32 = make(TSR_DTYPE_INT32, {6}), i64 = make(TSR_DTYPE_INT64, {6});
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(u8).in(src).b(false).out(u8).run()));
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(i32).in(src).b(false).out(i32).run()));
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(i64).in(src).b(false).out(i64).run()));
  EXPECT_EQ(get_int(u8, {0}), 0);
  EXPECT_EQ(get_int(u8, {1}), 255);
  EXPECT_EQ(get_int(u8, {5}), 44);  // 300 mod 256
  EXPECT_EQ(get_int(i32, {0}), 0);
  EXPECT_EQ(get_int(i32, {2}), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(get_int(i32, {3}), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(get_int(i64, {0}), 0);
  EXPECT_EQ(get_int(i64, {2}), 10000000000);
  EXPECT_EQ(get_int(i64, {3}), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(get_int(i64, {4}), std::numeric_limits<int64_t>::max());
}

TEST_F(CpuPlugin, CopyToBoolTestsNonZero) {
  Tensor src = make(TSR_DTYPE_FLOAT64, {5}), dst = make(TSR_DTYPE_BOOL, {5});
  const double v[] = {0.5, -0.0, NAN, 1e-320, 0.0};
  const double want[] = {1, 0, 1, 1, 0};
  for (int64_t i = 0; i < 5; ++i) set(src, {i}, v[i]);
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT64).in(dst).in(src).b(false).out(dst).run()));
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(*reinterpret_cast<const uint8_t*>(dst.at({i})), want[i]) << v[i];  // a real 0/1 byte
  }
}

TEST_F(CpuPlugin, CopyRoundsToHalfTypesOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of 1 and the next float16
  // (1 + 2^-10). Rounding through float first would land on the midpoint and
  // tie to even (1.0); the correct answer is 1 + 2^-10 = 0x3C01.
  Tensor d64 = make(TSR_DTYPE_FLOAT64, {1}), h = make(TSR_DTYPE_FLOAT16, {1});
  set(d64, {0}, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT64).in(h).in(d64).b(false).out(h).run()));
  EXPECT_EQ(get_bits16(h, {0}), 0x3C01u);
  // 2^30 + 2^22 + 1 is just above the bfloat16 midpoint of 2^30 and 2^30 + 2^23
  // (0x4E80 and 0x4E81); via float it would be the midpoint itself.
  for (TsrDType d : {TSR_DTYPE_INT32, TSR_DTYPE_INT64}) {
    Tensor i = make(d, {1}), bf = make(TSR_DTYPE_BFLOAT16, {1});
    set_int(i, {0}, (int64_t{1} << 30) + (int64_t{1} << 22) + 1);
    ASSERT_TRUE(Ok(Call("copy_", d).in(bf).in(i).b(false).out(bf).run()));
    EXPECT_EQ(get_bits16(bf, {0}), 0x4E81u) << name(d);
  }
  // Plain round-to-nearest-even from float32: 1/3 -> 0x3555 (float16), 0x3EAB (bfloat16).
  Tensor third = make(TSR_DTYPE_FLOAT32, {1}), h2 = make(TSR_DTYPE_FLOAT16, {1}), b2 = make(TSR_DTYPE_BFLOAT16, {1});
  set(third, {0}, 1.0f / 3.0f);
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(h2).in(third).b(false).out(h2).run()));
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(b2).in(third).b(false).out(b2).run()));
  EXPECT_EQ(get_bits16(h2, {0}), 0x3555u);
  EXPECT_EQ(get_bits16(b2, {0}), 0x3EABu);
}

TEST_F(CpuPlugin, CopyLargeAndStrided) {
  // Same dtype, contiguous, 12 MiB: the threaded memcpy path; bit exact.
  Tensor a = make(TSR_DTYPE_FLOAT32, {3'000'000}), b = make(TSR_DTYPE_FLOAT32, {3'000'000});
  auto* pa = reinterpret_cast<uint32_t*>(a.data());
  for (int64_t i = 0; i < 3'000'000; ++i) pa[i] = static_cast<uint32_t>(i * 2654435761u);  // NaN payloads too
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(b).in(a).b(false).out(b).run()));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), 12'000'000), 0);
  // Converting, transposed source, above the grain.
  Tensor src = make(TSR_DTYPE_FLOAT32, {300, 400}, Layout::kTransposed), dst = make(TSR_DTYPE_FLOAT16, {300, 400});
  fill_values(src, {0.5, -1.25, 3, 1000.5});
  ASSERT_TRUE(Ok(Call("copy_", TSR_DTYPE_FLOAT32).in(dst).in(src).b(false).out(dst).run()));
  for_each_index(dst.shape, [&](const std::vector<int64_t>& idx) {
    ASSERT_EQ(get(dst, idx), round_to(TSR_DTYPE_FLOAT16, get(src, idx)));
  });
}

TEST_F(CpuPlugin, CatPlacesEveryLayoutAndChecksItsArguments) {
  for (TsrDType d : kAllDtypes) {
    SCOPED_TRACE(name(d));
    // Inputs in every layout along dim 1 of a [3, 2+3+4+1] result, dense rows
    // (one piece per input per row) and strided ones (copy_'s loop).
    const std::vector<Tensor> in = {make(d, {3, 2}), make(d, {3, 3}, Layout::kTransposed),
                                    make(d, {3, 4}, Layout::kStrided), make(d, {3, 1}, Layout::kFlipped)};
    for (size_t k = 0; k < in.size(); ++k) fill_values(in[k], sample_values(d, false), static_cast<int64_t>(k));
    for (Layout out_layout : {Layout::kContiguous, Layout::kStrided}) {
      Tensor out = make(d, {3, 10}, out_layout);
      ASSERT_TRUE(Ok(Call("_cat", d).list(in).i(1).out(out).run()));
      int64_t at = 0;
      for (const Tensor& t : in) {
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t c = 0; c < t.shape[1]; ++c) ASSERT_TRUE(same_value(get(out, {r, at + c}), get(t, {r, c})));
        at += t.shape[1];
      }
    }
    // Along dim 0, all dense: one copy per input.
    const std::vector<Tensor> rows = {make(d, {2, 5}), make(d, {0, 5}), make(d, {1, 5})};
    for (size_t k = 0; k < rows.size(); ++k) fill_values(rows[k], sample_values(d, false), static_cast<int64_t>(k));
    Tensor out0 = make(d, {3, 5});
    ASSERT_TRUE(Ok(Call("_cat", d).list(rows).i(0).out(out0).run()));
    for (int64_t c = 0; c < 5; ++c) {
      ASSERT_TRUE(same_value(get(out0, {1, c}), get(rows[0], {1, c})));
      ASSERT_TRUE(same_value(get(out0, {2, c}), get(rows[2], {0, c})));
    }
  }
  const Tensor a = make(TSR_DTYPE_FLOAT32, {2, 3}), b = make(TSR_DTYPE_FLOAT32, {2, 2});
  Tensor out = make(TSR_DTYPE_FLOAT32, {2, 5});
  const auto fails = [&](Call&& c, const char* what) {
    const Failure f = take(c.run());
    EXPECT_TRUE(f.failed) << what;
    EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT) << what;
    EXPECT_NE(f.message.find(what), std::string::npos) << f.message;
  };
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({a, make(TSR_DTYPE_FLOAT64, {2, 2})}).i(1).out(out)), "float64");
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({a, make(TSR_DTYPE_FLOAT32, {3, 2})}).i(1).out(out)),
        "does not fit");
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({a, b}).i(2).out(out)), "out of range");
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({a, a}).i(1).out(out)), "add up to 6");
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({}).i(1).out(out)), "non-empty");
  // Sizes a caller made up whose sum passes int64 (and wraps to out's): refused before any copy.
  Tensor huge = make(TSR_DTYPE_FLOAT32, {2, 1});
  huge.shape[1] = int64_t{1} << 62;
  Tensor wrapped_back = make(TSR_DTYPE_FLOAT32, {2, 5});
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).list({huge, huge, huge, huge, wrapped_back}).i(1).out(out)),
        "add up to");
  fails(std::move(Call("_cat", TSR_DTYPE_FLOAT32).in(a).i(1).out(out)), "tensor list");
}

TEST_F(CpuPlugin, Fill) {
  for (TsrDType d : kAllDtypes) {
    SCOPED_TRACE(name(d));
    // A strided view: the elements in between must stay untouched.
    Tensor base = make(d, {4, 6});
    fill_values(base, {1});
    Tensor view = base;
    view.shape = {4, 3};
    view.strides = {6, 2};
    const Tensor t = transposed(view, 0, 1);
    const auto run = [&](Call& call, double want) {
      ASSERT_TRUE(Ok(call.out(t).run()));
      for_each_index(t.shape, [&](const std::vector<int64_t>& idx) { EXPECT_EQ(get(t, idx), want); });
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 1; c < 6; c += 2) EXPECT_EQ(get(base, {r, c}), round_to(d, 1)) << "wrote outside the view";
      }
    };
    {
      Call call("fill_", d);
      call.in(t).i(3);
      run(call, d == TSR_DTYPE_BOOL ? 1 : 3);
    }
    {
      Call call("fill_", d);
      call.in(t).f(-2.5);
      // To integers: truncation (-2), wrapped for uint8 (254); to bool: non-zero.
      const double want = d == TSR_DTYPE_BOOL ? 1 : d == TSR_DTYPE_UINT8 ? 254 : is_integer(d) ? -2 : -2.5;
      run(call, want);
    }
    {
      Call call("fill_", d);
      call.in(t).b(false);
      run(call, 0);
    }
  }
  Tensor big = make(TSR_DTYPE_INT16, {1000, 100});
  ASSERT_TRUE(Ok(Call("fill_", TSR_DTYPE_INT16).in(big).i(-7).out(big).run()));
  for_each_index(big.shape, [&](const std::vector<int64_t>& idx) { ASSERT_EQ(get(big, idx), -7); });
}

TEST_F(CpuPlugin, Arange) {
  for (TsrDType d : kAllDtypes) {
    if (!(registered_mask("arange") & bit(d))) continue;
    SCOPED_TRACE(name(d));
    if (is_integer(d)) {
      Tensor out = make(d, {5});
      ASSERT_TRUE(Ok(Call("arange", d).i(2).i(17).i(3).none().none().out(out).run()));
      for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(get(out, {i}), 2 + 3 * i);
      Tensor down = make(d, {4});
      ASSERT_TRUE(Ok(Call("arange", d).i(10).i(0).i(-3).none().none().out(down).run()));
      for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(get(down, {i}), 10 - 3 * i);
    } else {
      Tensor out = make(d, {8});
      ASSERT_TRUE(Ok(Call("arange", d).f(0.5).f(2.5).f(0.25).none().none().out(out).run()));
      for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(get(out, {i}), 0.5 + 0.25 * static_cast<double>(i));
    }
  }
  // Large: threads split the range; values computed in float64.
  Tensor f = make(TSR_DTYPE_FLOAT64, {200000});
  ASSERT_TRUE(Ok(Call("arange", TSR_DTYPE_FLOAT64).f(-1.0).f(199.0).f(1e-3).none().none().out(f).run()));
  for (int64_t i = 0; i < 200000; i += 997) EXPECT_EQ(get(f, {i}), -1.0 + static_cast<double>(i) * 1e-3);
  Tensor n = make(TSR_DTYPE_INT64, {200000});
  ASSERT_TRUE(Ok(Call("arange", TSR_DTYPE_INT64).i(-5).i(199995).i(1).none().none().out(n).run()));
  for (int64_t i = 0; i < 200000; ++i) ASSERT_EQ(get_int(n, {i}), i - 5);
}

// Runs nonzero and compares with the row-major list of non-zero indices.
void check_nonzero(const Tensor& self) {
  SCOPED_TRACE(std::string("nonzero ") + name(self.dtype));
  std::vector<std::vector<int64_t>> want;
  for_each_index(self.shape, [&](const std::vector<int64_t>& idx) {
    if (get(self, idx) != 0) want.push_back(idx);  // NaN != 0, -0.0 == 0
  });
  Call call("nonzero", self.dtype);
  call.in(self).out_unallocated();
  ASSERT_TRUE(Ok(call.run()));
  ASSERT_EQ(call.allocations(), 1);
  const Tensor& out = call.allocated(0);
  EXPECT_EQ(out.dtype, TSR_DTYPE_INT64);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{static_cast<int64_t>(want.size()), static_cast<int64_t>(self.shape.size())}));
  for (size_t i = 0; i < want.size(); ++i) {
    for (size_t d = 0; d < self.shape.size(); ++d) {
      ASSERT_EQ(get_int(out, {static_cast<int64_t>(i), static_cast<int64_t>(d)}), want[i][d]) << "row " << i;
    }
  }
}

TEST_F(CpuPlugin, NonzeroOnEveryDtype) {
  for (TsrDType d : kAllDtypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kTransposed, Layout::kFlipped}) {
      SCOPED_TRACE(layout_name(layout));
      Tensor t = make(d, {3, 4}, layout);
      fill_values(t, {0, 1, 0, 0, 2});
      check_nonzero(t);
    }
  }
  Tensor special = make(TSR_DTYPE_FLOAT16, {4});
  const double v[] = {NAN, -0.0, 0.0, -INFINITY};
  for (int64_t i = 0; i < 4; ++i) set(special, {i}, v[i]);
  check_nonzero(special);  // rows 0 and 3
}

TEST_F(CpuPlugin, NonzeroShapes) {
  Tensor zeros = make(TSR_DTYPE_INT32, {2, 3});
  fill_values(zeros, {0});
  check_nonzero(zeros);  // [0, 2]
  for (double v : {5.0, 0.0}) {
    Tensor scalar = make(TSR_DTYPE_FLOAT32, {});
    set(scalar, {}, v);
    check_nonzero(scalar);  // [1, 0] or [0, 0]
  }
  // Several chunks (threads), a strided input and a 3-D one.
  Tensor big = make(TSR_DTYPE_FLOAT32, {500, 700}, Layout::kStrided);
  fill_values(big, {0, 1.5, 0, -2, 0, 0, 3});
  check_nonzero(big);
  Tensor cube = make(TSR_DTYPE_UINT8, {60, 50, 40}, Layout::kTransposed);
  fill_values(cube, {0, 0, 9, 0, 1});
  check_nonzero(cube);
}

TEST_F(CpuPlugin, NonzeroReportsAllocationErrors) {
  Tensor t = make(TSR_DTYPE_INT64, {3});
  fill_values(t, {1});
  Call call("nonzero", TSR_DTYPE_INT64);
  call.in(t).out_unallocated().fail_allocation(TSR_ERROR_OUT_OF_MEMORY);
  const Failure f = take(call.run());
  EXPECT_EQ(f.code, TSR_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(f.message.find("allocation refused"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("nonzero(int64)"), std::string::npos) << f.message;
}

// ---------------------------------------------------------------------------
// Errors never escape as C++ exceptions
// ---------------------------------------------------------------------------

TEST_F(CpuPlugin, UnknownDtypeIsAnError) {
  Tensor a = make(TSR_DTYPE_FLOAT32, {2}), out = make(TSR_DTYPE_FLOAT32, {2});
  for (const char* op : {"add", "neg", "copy_", "fill_", "sum"}) {
    SCOPED_TRACE(op);
    Call call(op, 42);  // no such dtype
    if (std::strcmp(op, "fill_") == 0) {
      call.in(out).i(1);
    } else if (std::strcmp(op, "sum") == 0) {
      call.in(a).ints({0}).b(false).none();
    } else {
      call.in(a).in(a).i(1);
    }
    const Failure f = take(call.out(out).run());
    EXPECT_TRUE(f.failed);
    EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT) << f.message;
    EXPECT_NE(f.message.find(op), std::string::npos) << f.message;
  }
  // A DLPack dtype Tessera does not know (float8).
  Tensor weird = make(TSR_DTYPE_UINT8, {2});
  DLTensor dl = to_dl(weird);
  dl.dtype = {kDLFloat, 8, 1};
  TsrValue v{};
  v.tag = TSR_VALUE_TENSOR;
  v.as.tensor = &dl;
  Tensor dst = make(TSR_DTYPE_FLOAT32, {2});
  const Failure f = take(Call("copy_", TSR_DTYPE_FLOAT32).in(dst).value(v).b(false).out(dst).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT) << f.message;
}

TEST_F(CpuPlugin, BadArgumentsAreErrors) {
  Tensor a = make(TSR_DTYPE_INT32, {2}), b = make(TSR_DTYPE_INT32, {2}), out = make(TSR_DTYPE_INT32, {2});
  fill_values(a, {1});
  fill_values(b, {2});
  // An unknown value tag for alpha.
  TsrValue alien{};
  alien.tag = 99;
  Failure f = take(Call("add", TSR_DTYPE_INT32).in(a).in(b).value(alien).out(out).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(f.message.find("alpha"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("add(int32)"), std::string::npos) << f.message;
  // A float alpha for an integer dtype would silently truncate: refused.
  f = take(Call("add", TSR_DTYPE_INT32).in(a).in(b).f(0.5).out(out).run());
  EXPECT_EQ(f.code, TSR_ERROR_INVALID_ARGUMENT);
  // Missing arguments, wrong argument kinds, mismatched dtypes and shapes.
  EXPECT_TRUE(take(Call("add", TSR_DTYPE_INT32).in(a).out(out).run()).failed);
  EXPECT_TRUE(take(Call("add", TSR_DTYPE_INT32).i(1).in(b).i(1).out(out).run()).failed);
  EXPECT_TRUE(take(Call("add", TSR_DTYPE_INT32).in(a).in(make(TSR_DTYPE_INT64, {2})).i(1).out(out).run()).failed);
  EXPECT_TRUE(take(Call("add", TSR_DTYPE_INT32).in(a).in(make(TSR_DTYPE_INT32, {3})).i(1).out(out).run()).failed);
  EXPECT_TRUE(take(Call("add", TSR_DTYPE_INT32).in(a).in(b).i(1).run()).failed);  // no output
  EXPECT_TRUE(take(Call("fill_", TSR_DTYPE_INT32).in(out).s("seven").out(out).run()).failed);
  EXPECT_TRUE(take(Call("sum", TSR_DTYPE_INT32).in(a).i(0).b(false).none().out(out).run()).failed);
}

}  // namespace
