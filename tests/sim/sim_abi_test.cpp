// Tests of the sim plugin (libtessera-sim) through its C ABI only: the library
// is dlopen()ed and initialized against a fake host of this file, once per
// test with the test's TESSERA_SIM, and its device slots and kernels are
// called directly. What is checked: memory, capacity and out-of-memory; copies
// in every direction with CUDA's pageable/pinned rules; streams, latency,
// events, timing and cross-stream waits; expandable-segment slots; the
// shadow-memory checker; kernel errors reported by the next synchronization;
// several host threads at once; configuration errors.
//
// Timing: slow streams (TESSERA_SIM_STREAM_LATENCY_US) make "the host returned
// before the work ran" observable. Only lower bounds are asserted (a sleep of
// L microseconds lasts at least L); the checker's verdicts depend on what the
// host knows, never on timing.
#include <tessera/abi.h>
#include <tessera/sdk/dtype.hpp>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifndef TSRTEST_SIM_PLUGIN
#error "TSRTEST_SIM_PLUGIN must name libtessera-sim.so"
#endif

namespace {

constexpr int kSlowUs = 200'000;      // a slow stream's per-launch latency: 200 ms
constexpr int kCheckerSlowUs = 50'000;  // the checker's verdicts do not depend on timing: shorter

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

struct Result {
  bool ok = true;
  TsrErrorCode code = 0;
  std::string message;
};

/// Takes ownership of a plugin error (NULL: success).
Result take(TsrError* e) {
  Result r;
  if (e == nullptr) return r;
  r.ok = false;
  r.code = e->code;
  r.message = e->message != nullptr ? e->message : "";
  e->destroy(e);
  return r;
}

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    const Result r_ = take(expr);                         \
    ASSERT_TRUE(r_.ok) << #expr << ": " << r_.message;    \
  } while (0)
#define EXPECT_OK(expr)                                   \
  do {                                                    \
    const Result r_ = take(expr);                         \
    EXPECT_TRUE(r_.ok) << #expr << ": " << r_.message;    \
  } while (0)

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------
// The library, and one initialized instance of it per test
// ---------------------------------------------------------------------------

const TsrPluginInfo* entry() {
  static const TsrPluginInfo* const info = [] {
    void* h = dlopen(TSRTEST_SIM_PLUGIN, RTLD_NOW | RTLD_LOCAL);  // never closed: OpenMP threads stay around
    if (h == nullptr) return static_cast<const TsrPluginInfo*>(nullptr);
    auto fn = reinterpret_cast<TsrPluginEntryFn>(dlsym(h, TSR_PLUGIN_ENTRY_SYMBOL));
    if (fn == nullptr) return static_cast<const TsrPluginInfo*>(nullptr);
    TsrHostOffer offer{sizeof(TsrHostOffer), {1, 0}, {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR}};
    return fn(&offer);
  }();
  return info;
}

struct Kernel {
  uint64_t mask;
  TsrKernelFn fn;
  void* context;
};

/// A fake host: records the device type and kernels, and the log.
struct FakeHost {
  TsrHostApi api{};
  TsrDeviceTypeDesc desc{};
  int device_types = 0;
  std::map<std::string, Kernel> kernels;
  std::mutex log_mutex;
  std::vector<std::string> logs;

  FakeHost() {
    api.struct_size = sizeof api;
    api.host_version = {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR};
    api.context = reinterpret_cast<TsrHostContext>(this);
    api.register_device_type = [](TsrHostContext c, const TsrDeviceTypeDesc* d) -> TsrError* {
      auto* h = reinterpret_cast<FakeHost*>(c);
      std::memcpy(&h->desc, d, std::min(d->struct_size, sizeof h->desc));
      ++h->device_types;
      return nullptr;
    };
    api.register_kernel = [](TsrHostContext c, const TsrKernelDesc* d) -> TsrError* {
      auto* h = reinterpret_cast<FakeHost*>(c);
      EXPECT_STREQ(d->device_type, "sim");
      h->kernels[d->op_name] = {d->dtype_mask, d->fn, d->context};
      return nullptr;
    };
    api.log = [](TsrHostContext c, int32_t, const char* m) {
      auto* h = reinterpret_cast<FakeHost*>(c);
      std::lock_guard<std::mutex> lock(h->log_mutex);
      h->logs.emplace_back(m);
    };
  }

  std::string log_text() {
    std::lock_guard<std::mutex> lock(log_mutex);
    std::string all;
    for (const std::string& l : logs) all += l + "\n";
    return all;
  }
};

/// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = std::make_unique<std::string>(old);
    if (value != nullptr) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::unique_ptr<std::string> old_;
};

/// One sim plugin instance (initialize ... shutdown) configured by `config`.
class Instance {
 public:
  explicit Instance(const char* config) {
    const TsrPluginInfo* info = entry();
    if (info == nullptr) {
      init = {false, TSR_ERROR_INTERNAL, "cannot load " TSRTEST_SIM_PLUGIN};
      return;
    }
    ScopedEnv env("TESSERA_SIM", config);
    init = take(info->initialize(&host.api, &state_));
  }
  ~Instance() {
    if (init.ok) entry()->shutdown(state_);
  }
  Instance(const Instance&) = delete;

  Result init;
  FakeHost host;
  const TsrDeviceTypeDesc& d() const { return host.desc; }
  void* ctx() const { return host.desc.context; }

  // ---- memory ----
  void* alloc(size_t n, int32_t index = 0) {
    void* p = nullptr;
    const Result r = take(d().allocate(ctx(), index, n, nullptr, &p));
    EXPECT_TRUE(r.ok) << r.message;
    return p;
  }
  void release(void* p, size_t n, TsrStream s = nullptr, int32_t index = 0) { d().deallocate(ctx(), index, p, n, s); }

  // ---- copies ----
  TsrError* copy(TsrCopyKind kind, void* dst, const void* src, size_t n, TsrStream s = nullptr, int32_t dst_index = 0,
                 int32_t src_index = 0) {
    TsrCopyRequest r{};
    r.struct_size = sizeof r;
    r.kind = kind;
    r.dst_device_index = dst_index;
    r.src_device_index = src_index;
    r.dst = dst;
    r.src = src;
    r.nbytes = n;
    r.stream = s;
    return d().copy(ctx(), &r);
  }
  TsrError* upload(void* dst, const std::vector<float>& v, TsrStream s = nullptr) {
    return copy(TSR_COPY_HOST_TO_DEVICE, dst, v.data(), v.size() * sizeof(float), s);
  }
  std::vector<float> download(const void* src, size_t n, TsrStream s = nullptr) {
    std::vector<float> v(n, -1.0f);
    EXPECT_OK(copy(TSR_COPY_DEVICE_TO_HOST, v.data(), src, n * sizeof(float), s));
    return v;
  }

  // ---- streams and events ----
  TsrStream make_stream(int latency_us = -1) {
    const std::string text = std::to_string(latency_us);
    ScopedEnv env("TESSERA_SIM_STREAM_LATENCY_US", latency_us < 0 ? nullptr : text.c_str());
    TsrStream s = nullptr;
    EXPECT_OK(d().stream_create(ctx(), 0, &s));
    return s;
  }
  TsrEvent make_event(uint32_t flags = 0) {
    TsrEvent e = nullptr;
    EXPECT_OK(d().event_create_flags(ctx(), 0, flags, &e));
    return e;
  }
  bool query(TsrEvent e) {
    int32_t done = -1;
    EXPECT_OK(d().event_query(ctx(), 0, e, &done));
    return done == 1;
  }
  TsrEvent record(TsrStream s) {
    TsrEvent e = make_event();
    EXPECT_OK(d().event_record(ctx(), 0, e, s));
    return e;
  }

  // ---- kernels ----
  TsrError* launch(const char* op, TsrDType dtype, TsrStream stream, const std::vector<TsrValue>& args,
                   std::vector<DLTensor> outputs) {
    const auto it = host.kernels.find(op);
    if (it == host.kernels.end()) {
      ADD_FAILURE() << "sim registered no kernel for " << op;
      return nullptr;
    }
    TsrKernelCall call{};
    call.struct_size = sizeof call;
    call.op_name = op;
    call.kernel_context = it->second.context;
    call.device_index = 0;
    call.dtype = dtype;
    call.stream = stream;
    call.args = args.data();
    call.num_args = args.size();
    call.outputs = outputs.data();
    call.num_outputs = outputs.size();
    return it->second.fn(&call);
  }

 private:
  void* state_ = nullptr;
};

/// A 1-d float32 tensor of n elements at `data` (a DLTensor with its own shape and stride).
struct Vec {
  Vec(void* data, int64_t n, DLDataType type = {kDLFloat, 32, 1}) : shape(n) {
    t.data = data;
    t.device = {kDLExtDev, 0};
    t.ndim = 1;
    t.dtype = type;
    t.shape = &shape;
    t.strides = &stride;
  }
  Vec(const Vec&) = delete;
  DLTensor t{};
  int64_t shape;
  int64_t stride = 1;
};

TsrValue tensor(const DLTensor& t) {
  TsrValue v{};
  v.tag = TSR_VALUE_TENSOR;
  v.as.tensor = &t;
  return v;
}
TsrValue number(double x) {
  TsrValue v{};
  v.tag = TSR_VALUE_FLOAT;
  v.as.f = x;
  return v;
}
TsrValue integer(int64_t x) {
  TsrValue v{};
  v.tag = TSR_VALUE_INT;
  v.as.i = x;
  return v;
}
TsrValue text(const char* s) {
  TsrValue v{};
  v.tag = TSR_VALUE_STRING;
  v.as.string = s;
  return v;
}

/// fill_(x, value) on stream s.
TsrError* fill(Instance& sim, void* x, int64_t n, double value, TsrStream s) {
  Vec v(x, n);
  return sim.launch("fill_", TSR_DTYPE_FLOAT32, s, {tensor(v.t), number(value)}, {v.t});
}
/// out = a + b on stream s.
TsrError* add(Instance& sim, void* out, const void* a, const void* b, int64_t n, TsrStream s) {
  Vec va(const_cast<void*>(a), n), vb(const_cast<void*>(b), n), vo(out, n);
  return sim.launch("add", TSR_DTYPE_FLOAT32, s, {tensor(va.t), tensor(vb.t), integer(1)}, {vo.t});
}

using Ms = std::chrono::duration<double, std::milli>;
double ms_since(std::chrono::steady_clock::time_point t0) { return Ms(std::chrono::steady_clock::now() - t0).count(); }

}  // namespace

// ---------------------------------------------------------------------------
// The device type
// ---------------------------------------------------------------------------

TEST(SimAbi, RegistersAnAsynchronousDeviceThatIsNotHostAccessible) {
  Instance sim("devices=2,memory_mb=64");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  EXPECT_STREQ(entry()->name, "sim");
  EXPECT_EQ(entry()->abi_version.major, 1u);
  EXPECT_EQ(sim.host.device_types, 1);
  const TsrDeviceTypeDesc& d = sim.d();
  EXPECT_STREQ(d.name, "sim");
  EXPECT_EQ(d.dlpack_device_type, 0);
  EXPECT_EQ(d.capabilities, TSR_DEVICE_CAP_ASYNC | TSR_DEVICE_CAP_CACHING_ALLOCATOR);
  EXPECT_EQ(d.capabilities & TSR_DEVICE_CAP_HOST_ACCESSIBLE, 0u);
  EXPECT_EQ(d.memory_alignment, 256u);
  // Every slot of ABI 1.2 is there.
  for (const void* slot : {(const void*)d.describe_device, (const void*)d.allocate, (const void*)d.deallocate,
                           (const void*)d.copy, (const void*)d.stream_create, (const void*)d.stream_destroy,
                           (const void*)d.stream_synchronize, (const void*)d.stream_wait_event,
                           (const void*)d.event_create, (const void*)d.event_destroy, (const void*)d.event_record,
                           (const void*)d.event_query, (const void*)d.event_synchronize,
                           (const void*)d.device_synchronize, (const void*)d.memory_info,
                           (const void*)d.event_create_flags, (const void*)d.event_elapsed_time,
                           (const void*)d.va_granularity, (const void*)d.va_reserve, (const void*)d.va_release,
                           (const void*)d.va_map, (const void*)d.va_unmap, (const void*)d.host_allocate,
                           (const void*)d.host_deallocate})
    EXPECT_NE(slot, nullptr);
  int32_t count = 0;
  ASSERT_OK(d.device_count(d.context, &count));
  EXPECT_EQ(count, 2);
  char buf[256];
  ASSERT_OK(d.describe_device(d.context, 1, buf, sizeof buf));
  EXPECT_TRUE(contains(buf, "simulated")) << buf;
  EXPECT_TRUE(contains(buf, "64 MiB")) << buf;
  const Result bad = take(d.describe_device(d.context, 2, buf, sizeof buf));
  EXPECT_EQ(bad.code, TSR_ERROR_OUT_OF_RANGE);
  // The CPU plugin's kernels, for every op family.
  for (const char* op : {"add", "exp", "where", "sum", "mm", "copy_", "fill_", "nonzero", "gather", "uniform_",
                         "softmax", "conv2d"})
    EXPECT_EQ(sim.host.kernels.count(op), 1u) << op;
  EXPECT_GT(sim.host.kernels.size(), 100u);
}

TEST(SimAbi, MalformedConfigurationFailsInitializeNamingTheSetting) {
  const std::pair<const char*, const char*> cases[] = {
      {"devices=abc", "devices=abc"},      {"devices=65", "devices=65"},       {"memory_mb=0", "memory_mb=0"},
      {"bogus=1", "unknown key 'bogus'"},  {"check=maybe", "check=maybe"},     {"devices=2,devices=3", "set twice"},
      {"latency_us", "has no '='"},        {"devices=1,,check=off", "empty"},  {"latency_us=-5", "latency_us=-5"},
      {"memory_mb= 4", "memory_mb= 4"},    {"latency_us=99999999999", "latency_us"},
      {"dlpack_type=1024", "dlpack_type=1024"}, {"dlpack_type=-1", "dlpack_type=-1"}};
  for (const auto& [config, fragment] : cases) {
    Instance sim(config);
    EXPECT_FALSE(sim.init.ok) << config;
    EXPECT_EQ(sim.init.code, TSR_ERROR_INVALID_ARGUMENT) << config;
    EXPECT_TRUE(contains(sim.init.message, "TESSERA_SIM")) << sim.init.message;
    EXPECT_TRUE(contains(sim.init.message, fragment)) << config << ": " << sim.init.message;
    EXPECT_EQ(sim.host.device_types, 0) << "nothing may be registered before the configuration is read";
  }
  Instance ok("devices=3,memory_mb=8,latency_us=0,alloc_latency_us=0,check=warn");
  EXPECT_TRUE(ok.init.ok) << ok.init.message;
  EXPECT_EQ(ok.d().dlpack_device_type, 0) << "sim is exchangeable through DLPack only when asked";
  Instance empty("");
  EXPECT_TRUE(empty.init.ok) << empty.init.message;
  // The opt-in DLPack device type (tests of the DLPack stream hand-off).
  Instance exchangeable("dlpack_type=12");
  ASSERT_TRUE(exchangeable.init.ok) << exchangeable.init.message;
  EXPECT_EQ(exchangeable.d().dlpack_device_type, 12);
  // A malformed per-stream latency fails stream_create, naming the variable.
  ScopedEnv env("TESSERA_SIM_STREAM_LATENCY_US", "fast");
  TsrStream s = nullptr;
  const Result r = take(ok.d().stream_create(ok.ctx(), 0, &s));
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(r.message, "TESSERA_SIM_STREAM_LATENCY_US")) << r.message;
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

TEST(SimAbi, CapacityMakesOutOfMemoryReachableWithAClearMessage) {
  Instance sim("memory_mb=4");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  size_t free_bytes = 0, total = 0;
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(total, size_t{4} << 20);
  EXPECT_EQ(free_bytes, total);
  void* a = sim.alloc(3 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, size_t{1} << 20);

  void* b = nullptr;
  const Result oom = take(sim.d().allocate(sim.ctx(), 0, 2 << 20, nullptr, &b));
  EXPECT_EQ(oom.code, TSR_ERROR_OUT_OF_MEMORY);
  for (const char* part : {"sim:0", "out of memory", "2.00 MiB", "3.00 MiB", "4.00 MiB", "memory_mb"})
    EXPECT_TRUE(contains(oom.message, part)) << part << " missing in: " << oom.message;

  // deallocate gives the capacity back at once (the bytes follow in stream order).
  sim.release(a, 3 << 20);
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, total);
  void* c = sim.alloc(4 << 20);
  EXPECT_NE(c, nullptr);
  sim.release(c, 4 << 20);
  // A double free, or a pointer inside a block, is logged and ignored (deallocate cannot fail).
  void* d = sim.alloc(1024);
  sim.release(static_cast<char*>(d) + 256, 768);
  sim.release(d, 1024);
  sim.release(d, 1024);
  EXPECT_TRUE(contains(sim.host.log_text(), "not a live allocation")) << sim.host.log_text();
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, total);
  // A device index out of range, and a zero-byte request.
  EXPECT_EQ(take(sim.d().allocate(sim.ctx(), 1, 64, nullptr, &b)).code, TSR_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(take(sim.d().allocate(sim.ctx(), 0, 0, nullptr, &b)).code, TSR_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
}

TEST(SimAbi, DeallocateIsStreamOrdered) {
  Instance sim("memory_mb=16");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const size_t n = 1024, bytes = n * sizeof(float);
  void* x = sim.alloc(bytes);
  void* y = sim.alloc(bytes);
  ASSERT_OK(sim.upload(x, std::vector<float>(n, 7.0f), slow));
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_DEVICE, y, x, bytes, slow));  // reads x later
  sim.release(x, bytes, slow);                                           // queued behind the copy
  void* z = sim.alloc(bytes);  // x's block is still in use: z is elsewhere
  EXPECT_NE(z, x);
  EXPECT_EQ(sim.download(y, n, slow), std::vector<float>(n, 7.0f));
  sim.release(y, bytes, slow);
  sim.release(z, bytes);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

// ---------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------

TEST(SimAbi, PageableHostToDeviceIsStagedAtTheCall) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const size_t n = 4096;
  void* x = sim.alloc(n * sizeof(float));
  std::vector<float> host(n, 1.5f);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(sim.upload(x, host, slow));
  TsrEvent done = sim.record(slow);
  EXPECT_FALSE(sim.query(done)) << "the copy must still be queued (the host returned before it ran)";
  std::fill(host.begin(), host.end(), -9.0f);  // the buffer may be reused at once
  EXPECT_EQ(sim.download(x, n, slow), std::vector<float>(n, 1.5f));
  EXPECT_GE(ms_since(t0), kSlowUs / 1000.0);
  EXPECT_TRUE(sim.query(done));
  ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, done));
  sim.release(x, n * sizeof(float));
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

TEST(SimAbi, PinnedCopiesAreAsynchronousInBothDirections) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const size_t n = 1024, bytes = n * sizeof(float);
  float* pinned = nullptr;
  ASSERT_OK(sim.d().host_allocate(sim.ctx(), bytes, reinterpret_cast<void**>(&pinned)));
  std::fill(pinned, pinned + n, 1.0f);
  void* x = sim.alloc(bytes);
  void* w = sim.alloc(bytes);
  ASSERT_OK(sim.upload(w, std::vector<float>(n, 2.0f), slow));
  // Pinned memory is read when the queue reaches the copy, not at the call: a
  // device-to-pinned copy queued first rewrites the buffer (2s) before the
  // pinned-to-device copy reads it. (A pageable source would have been staged
  // with its 1s at the call.) No host thread touches the buffer meanwhile.
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, pinned, w, bytes, slow));
  ASSERT_OK(sim.copy(TSR_COPY_HOST_TO_DEVICE, x, pinned, bytes, slow));
  TsrEvent uploaded = sim.record(slow);
  EXPECT_FALSE(sim.query(uploaded)) << "pinned copies must still be queued when the calls return";
  ASSERT_OK(sim.d().event_synchronize(sim.ctx(), 0, uploaded));
  std::fill(pinned, pinned + n, 0.0f);
  // Device to pinned host memory: queued; right only after the event.
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, pinned, x, bytes, slow));
  TsrEvent downloaded = sim.record(slow);
  EXPECT_FALSE(sim.query(downloaded)) << "a pinned device-to-host copy must not have run when the call returns";
  ASSERT_OK(sim.d().event_synchronize(sim.ctx(), 0, downloaded));
  EXPECT_TRUE(std::all_of(pinned, pinned + n, [](float v) { return v == 2.0f; }));
  // Device to pageable host memory: the call returns with the data in place.
  std::vector<float> pageable(n, 0.0f);
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, pageable.data(), x, bytes, slow));
  EXPECT_EQ(pageable, std::vector<float>(n, 2.0f));
  for (TsrEvent e : {uploaded, downloaded}) ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, e));
  sim.d().host_deallocate(sim.ctx(), pinned, bytes);
  sim.release(x, bytes);
  sim.release(w, bytes);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

TEST(SimAbi, HostDeallocateWaitsForTheCopiesThatStillUseThePinnedBlock) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const size_t bytes = 4096;
  void* pinned = nullptr;
  ASSERT_OK(sim.d().host_allocate(sim.ctx(), bytes, &pinned));
  std::memset(pinned, 0x5a, bytes);
  void* x = sim.alloc(bytes);
  ASSERT_OK(sim.copy(TSR_COPY_HOST_TO_DEVICE, x, pinned, bytes, slow));
  sim.d().host_deallocate(sim.ctx(), pinned, bytes);  // a contract violation: sim waits and says so
  EXPECT_TRUE(contains(sim.host.log_text(), "still use it")) << sim.host.log_text();
  std::vector<unsigned char> back(bytes);
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, back.data(), x, bytes, slow));
  EXPECT_EQ(back, std::vector<unsigned char>(bytes, 0x5a));
  sim.release(x, bytes);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

TEST(SimAbi, DeviceToDeviceCopiesAreQueuedAndCrossDevices) {
  Instance sim("devices=2");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  const size_t n = 256, bytes = n * sizeof(float);
  void* a = sim.alloc(bytes, 0);
  void* b = sim.alloc(bytes, 1);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i);
  ASSERT_OK(sim.upload(a, v));
  // The copy runs on sim:1's default stream, which does not follow sim:0's by
  // itself: reading `a` before the upload on sim:0 is known to be done is refused.
  const Result unordered = take(sim.copy(TSR_COPY_DEVICE_TO_DEVICE, b, a, bytes, nullptr, 1, 0));
  EXPECT_EQ(unordered.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(unordered.message, "of sim:0")) << unordered.message;
  ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_DEVICE, b, a, bytes, nullptr, 1, 0));
  std::vector<float> back(n);
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, back.data(), b, bytes, nullptr, 0, 1));
  EXPECT_EQ(back, v);
  // Memory that is not the device's is refused.
  const Result r = take(sim.copy(TSR_COPY_HOST_TO_DEVICE, v.data(), v.data(), bytes));
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(r.message, "not memory allocated on sim:0")) << r.message;
  sim.release(a, bytes, nullptr, 0);
  sim.release(b, bytes, nullptr, 1);
}

// ---------------------------------------------------------------------------
// Streams, events, timing
// ---------------------------------------------------------------------------

TEST(SimAbi, KernelsAreQueuedAndTheirArgumentsCopied) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const int64_t n = 64;
  void* x = sim.alloc(n * 4);
  void* y = sim.alloc(n * 4);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(fill(sim, x, n, 3.0, slow));  // its DLTensors and values die when fill returns
  ASSERT_OK(add(sim, y, x, x, n, slow));
  EXPECT_LT(ms_since(t0), kSlowUs / 1000.0) << "launching must not wait for the latency";
  TsrEvent e = sim.record(slow);
  EXPECT_FALSE(sim.query(e));
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, slow));
  EXPECT_TRUE(sim.query(e));
  EXPECT_GE(ms_since(t0), 2 * kSlowUs / 1000.0) << "two launches, each after the stream's latency";
  EXPECT_EQ(sim.download(y, n, slow), std::vector<float>(n, 6.0f));
  ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, e));
  sim.release(x, n * 4);
  sim.release(y, n * 4);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

TEST(SimAbi, StreamWaitEventOrdersAFastStreamAfterASlowOne) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs), fast = sim.make_stream(0);
  const int64_t n = 128;
  void* x = sim.alloc(n * 4);
  void* y = sim.alloc(n * 4);
  ASSERT_OK(fill(sim, x, n, 0.0, fast));
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, fast));
  ASSERT_OK(fill(sim, x, n, 5.0, slow));
  TsrEvent e = sim.record(slow);
  ASSERT_OK(sim.d().stream_wait_event(sim.ctx(), 0, fast, e));  // the host does not block
  EXPECT_FALSE(sim.query(e));
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_DEVICE, y, x, n * 4, fast));  // runs after the slow fill
  EXPECT_EQ(sim.download(y, n, fast), std::vector<float>(n, 5.0f));
  // An event never recorded is complete; waiting for it orders nothing.
  TsrEvent fresh = sim.make_event();
  EXPECT_TRUE(sim.query(fresh));
  ASSERT_OK(sim.d().stream_wait_event(sim.ctx(), 0, fast, fresh));
  ASSERT_OK(sim.d().event_synchronize(sim.ctx(), 0, fresh));
  for (TsrEvent ev : {e, fresh}) ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, ev));
  sim.release(x, n * 4);
  sim.release(y, n * 4);
  for (TsrStream s : {slow, fast}) ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
}

TEST(SimAbi, TimingEventsMeasureTheQueue) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  const int latency_us = 30'000;
  TsrStream s = sim.make_stream(latency_us);
  TsrEvent start = sim.make_event(TSR_EVENT_TIMING), end = sim.make_event(TSR_EVENT_TIMING);
  void* x = sim.alloc(256);
  ASSERT_OK(sim.d().event_record(sim.ctx(), 0, start, s));
  ASSERT_OK(fill(sim, x, 64, 1.0, s));
  ASSERT_OK(fill(sim, x, 64, 2.0, s));
  ASSERT_OK(sim.d().event_record(sim.ctx(), 0, end, s));
  float ms = -1;
  const Result early = take(sim.d().event_elapsed_time(sim.ctx(), 0, start, end, &ms));
  EXPECT_EQ(early.code, TSR_ERROR_INVALID_ARGUMENT) << "the end event has not completed yet";
  ASSERT_OK(sim.d().event_synchronize(sim.ctx(), 0, end));
  ASSERT_OK(sim.d().event_elapsed_time(sim.ctx(), 0, start, end, &ms));
  EXPECT_GE(ms, 2 * latency_us / 1000.0f * 0.99f);  // two launches between the events
  // Events without TSR_EVENT_TIMING cannot time; unknown flags are refused.
  TsrEvent plain = sim.record(s);
  ASSERT_OK(sim.d().event_synchronize(sim.ctx(), 0, plain));
  EXPECT_EQ(take(sim.d().event_elapsed_time(sim.ctx(), 0, start, plain, &ms)).code, TSR_ERROR_INVALID_ARGUMENT);
  TsrEvent bad = nullptr;
  EXPECT_EQ(take(sim.d().event_create_flags(sim.ctx(), 0, 2, &bad)).code, TSR_ERROR_INVALID_ARGUMENT);
  for (TsrEvent e : {start, end, plain}) ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, e));
  sim.release(x, 256);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
}

TEST(SimAbi, StreamDestroyWaitsForPendingWork) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const size_t n = 256, bytes = n * sizeof(float);
  float* pinned = nullptr;
  ASSERT_OK(sim.d().host_allocate(sim.ctx(), bytes, reinterpret_cast<void**>(&pinned)));
  std::fill(pinned, pinned + n, 0.0f);
  void* x = sim.alloc(bytes);
  ASSERT_OK(fill(sim, x, n, 4.0, slow));
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, pinned, x, bytes, slow));
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
  EXPECT_TRUE(std::all_of(pinned, pinned + n, [](float v) { return v == 4.0f; }));
  // The handle is gone.
  EXPECT_EQ(take(sim.d().stream_synchronize(sim.ctx(), 0, slow)).code, TSR_ERROR_INVALID_ARGUMENT);
  sim.d().host_deallocate(sim.ctx(), pinned, bytes);
  sim.release(x, bytes);
}

TEST(SimAbi, AKernelErrorSurfacesAtTheNextSynchronization) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream s = sim.make_stream(0);
  const int64_t n = 4;
  void* a = sim.alloc(n * 4);
  void* b = sim.alloc(n * 4);
  const std::vector<int32_t> ones(n, 1), zeros(n, 0);
  ASSERT_OK(sim.copy(TSR_COPY_HOST_TO_DEVICE, a, ones.data(), n * 4, s));
  ASSERT_OK(sim.copy(TSR_COPY_HOST_TO_DEVICE, b, zeros.data(), n * 4, s));
  {
    Vec va(a, n, {kDLInt, 32, 1}), vb(b, n, {kDLInt, 32, 1});
    // a // 0 in place: queued, so the launch itself succeeds.
    ASSERT_OK(sim.launch("div", TSR_DTYPE_INT32, s, {tensor(va.t), tensor(vb.t), text("floor")}, {va.t}));
  }
  const Result r = take(sim.d().stream_synchronize(sim.ctx(), 0, s));
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(r.message, "div")) << r.message;
  EXPECT_TRUE(contains(r.message, "division by zero")) << r.message;
  EXPECT_TRUE(contains(r.message, "stream")) << r.message;
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, s));  // reported once
  sim.release(a, n * 4);
  sim.release(b, n * 4);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
}

namespace {

// The host side of allocate_output for nonzero: allocates on sim.
struct OutputAllocator {
  Instance* sim;
  DLTensor* outputs;
  int64_t shape[2] = {0, 0};
  int64_t strides[2] = {0, 1};
  size_t bytes = 0;
  static TsrError* allocate(TsrCallHandle handle, size_t index, TsrDType dtype, int32_t ndim, const int64_t* shape,
                            DLTensor** out) {
    auto* self = reinterpret_cast<OutputAllocator*>(handle);
    EXPECT_EQ(index, 0u);
    EXPECT_EQ(dtype, TSR_DTYPE_INT64);
    EXPECT_EQ(ndim, 2);
    DLTensor& t = self->outputs[index];
    self->shape[0] = shape[0];
    self->shape[1] = shape[1];
    self->strides[0] = shape[1];
    self->bytes = std::max<size_t>(8, size_t(shape[0] * shape[1]) * 8);
    t.data = self->sim->alloc(self->bytes);
    t.ndim = 2;
    t.dtype = {kDLInt, 64, 1};
    t.shape = self->shape;
    t.strides = self->strides;
    *out = &t;
    return nullptr;
  }
};

}  // namespace

TEST(SimAbi, DataDependentOpsRunOnTheCallingThreadAfterTheStream) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream slow = sim.make_stream(kSlowUs);
  const int64_t n = 6;
  void* x = sim.alloc(n * 4);
  ASSERT_OK(sim.upload(x, {0, 1, 0, 2, 0, 3}, slow));  // still queued when nonzero is called
  Vec vx(x, n);
  DLTensor out{};
  out.device = {kDLExtDev, 0};
  OutputAllocator alloc{&sim, &out};
  const auto& k = sim.host.kernels.at("nonzero");
  TsrValue arg = tensor(vx.t);
  TsrKernelCall call{};
  call.struct_size = sizeof call;
  call.op_name = "nonzero";
  call.kernel_context = k.context;
  call.dtype = TSR_DTYPE_FLOAT32;
  call.stream = slow;
  call.args = &arg;
  call.num_args = 1;
  call.outputs = &out;
  call.num_outputs = 1;
  call.handle = reinterpret_cast<TsrCallHandle>(&alloc);
  call.allocate_output = &OutputAllocator::allocate;
  ASSERT_OK(k.fn(&call));
  ASSERT_NE(out.data, nullptr);
  ASSERT_EQ(alloc.shape[0], 3);
  std::vector<int64_t> idx(3);
  ASSERT_OK(sim.copy(TSR_COPY_DEVICE_TO_HOST, idx.data(), out.data, 3 * 8, slow));
  EXPECT_EQ(idx, (std::vector<int64_t>{1, 3, 5}));
  sim.release(out.data, alloc.bytes);
  sim.release(x, n * 4);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, slow));
}

// ---------------------------------------------------------------------------
// Expandable segments
// ---------------------------------------------------------------------------

TEST(SimAbi, AddressSpaceIsReservedThenMappedAgainstTheCapacity) {
  Instance sim("memory_mb=4");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  size_t g = 0;
  ASSERT_OK(sim.d().va_granularity(sim.ctx(), 0, &g));
  ASSERT_EQ(g, size_t{2} << 20);
  void* base = nullptr;
  ASSERT_OK(sim.d().va_reserve(sim.ctx(), 0, 8 * g, &base));  // more than the capacity: address space only
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % g, 0u);
  size_t free_bytes = 0, total = 0;
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, total);
  char* p = static_cast<char*>(base);
  ASSERT_OK(sim.d().va_map(sim.ctx(), 0, p, g));
  ASSERT_OK(sim.d().va_map(sim.ctx(), 0, p + g, g));  // adjacent: one segment grown in place
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, 0u);
  const Result oom = take(sim.d().va_map(sim.ctx(), 0, p + 2 * g, g));
  EXPECT_EQ(oom.code, TSR_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(contains(oom.message, "sim:0")) << oom.message;
  EXPECT_TRUE(contains(oom.message, "4.00 MiB")) << oom.message;
  // Mapped memory holds data; a copy may span two maps.
  const size_t n = 1024;
  std::vector<float> v(n, 8.0f);
  char* across = p + g - 2048;
  ASSERT_OK(sim.upload(across, v));
  EXPECT_EQ(sim.download(across, n), v);
  // Unmapping gives the capacity back; the range can be mapped again.
  sim.d().va_unmap(sim.ctx(), 0, p, g);
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, g);
  ASSERT_OK(sim.d().va_map(sim.ctx(), 0, p + 2 * g, g));
  // Misaligned, outside a reservation, or mapped twice: refused.
  EXPECT_EQ(take(sim.d().va_map(sim.ctx(), 0, p + 4096, g)).code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(sim.d().va_map(sim.ctx(), 0, p + 8 * g, g)).code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(sim.d().va_map(sim.ctx(), 0, p + g, g)).code, TSR_ERROR_INVALID_ARGUMENT);
  sim.d().va_unmap(sim.ctx(), 0, p + g, 2 * g);  // a union of two maps
  sim.d().va_release(sim.ctx(), 0, base, 8 * g);
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, total);
  EXPECT_FALSE(contains(sim.host.log_text(), "sim: va_")) << sim.host.log_text();
}

// ---------------------------------------------------------------------------
// The shadow-memory checker
// ---------------------------------------------------------------------------

namespace {

// The situation every checker test starts from: x holds 1s; a kernel queued on
// slow stream A reads x (y = x + x) and has not run yet.
struct CrossStream {
  explicit CrossStream(Instance& s) : sim(s) {
    a = sim.make_stream(kCheckerSlowUs);
    b = sim.make_stream(0);
    x = sim.alloc(n * 4);
    y = sim.alloc(n * 4);
    EXPECT_OK(fill(sim, x, n, 1.0, a));
    EXPECT_OK(add(sim, y, x, x, n, a));
  }
  ~CrossStream() {
    EXPECT_OK(sim.d().device_synchronize(sim.ctx(), 0));
    sim.release(x, n * 4);
    sim.release(y, n * 4);
    for (TsrStream s : {a, b}) EXPECT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
  }
  Instance& sim;
  const int64_t n = 256;
  TsrStream a = nullptr, b = nullptr;
  void* x = nullptr;
  void* y = nullptr;
};

}  // namespace

TEST(SimAbi, CheckerRefusesAWriteToMemoryAnotherStreamStillReads) {
  Instance sim("check=error");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  CrossStream cs(sim);
  const Result r = take(fill(sim, cs.x, cs.n, 9.0, cs.b));  // B overwrites x while A's add may not have read it
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT);
  for (const char* part : {"fill_(float32)", "add(float32)", "stream 1", "would write", "reads", "record_stream",
                           "wait_stream", "Nothing was queued"})
    EXPECT_TRUE(contains(r.message, part)) << part << " missing in: " << r.message;
  // Reading x on B is refused too (A's fill_ of x may not have run); B's own memory is fine.
  void* z = sim.alloc(cs.n * 4);
  EXPECT_EQ(take(add(sim, z, cs.x, cs.x, cs.n, cs.b)).code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(fill(sim, z, cs.n, 2.0, cs.b));
  EXPECT_EQ(sim.download(cs.y, cs.n, cs.a), std::vector<float>(cs.n, 2.0f)) << "the refused fill_ was not queued";
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, cs.b));
  sim.release(z, cs.n * 4);
}

TEST(SimAbi, CheckerAcceptsTheWriteOnceTheStreamsAreOrdered) {
  Instance sim("check=error");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  {  // B waits for an event recorded on A after the reading kernel.
    CrossStream cs(sim);
    TsrEvent e = sim.record(cs.a);
    ASSERT_OK(sim.d().stream_wait_event(sim.ctx(), 0, cs.b, e));
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));
    EXPECT_EQ(sim.download(cs.y, cs.n, cs.a), std::vector<float>(cs.n, 2.0f));
    EXPECT_EQ(sim.download(cs.x, cs.n, cs.b), std::vector<float>(cs.n, 9.0f));
    ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, e));
  }
  {  // An event recorded *before* the reading kernel does not order it.
    CrossStream cs(sim);
    TsrEvent early = sim.make_event();
    ASSERT_OK(sim.d().event_record(sim.ctx(), 0, early, cs.a));
    void* w = sim.alloc(cs.n * 4);
    ASSERT_OK(add(sim, w, cs.x, cs.x, cs.n, cs.a));  // a second read of x on A, after the event
    ASSERT_OK(sim.d().stream_wait_event(sim.ctx(), 0, cs.b, early));
    EXPECT_EQ(take(fill(sim, cs.x, cs.n, 9.0, cs.b)).code, TSR_ERROR_INVALID_ARGUMENT);
    ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, early));
    ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, cs.a));
    sim.release(w, cs.n * 4);
  }
  {  // The host synchronized with A.
    CrossStream cs(sim);
    ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, cs.a));
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));
  }
  {  // The host saw an event recorded after the kernel complete (event_query answered 1).
    CrossStream cs(sim);
    TsrEvent e = sim.record(cs.a);
    while (!sim.query(e)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));
    ASSERT_OK(sim.d().event_destroy(sim.ctx(), 0, e));
  }
  {  // The host synchronized the device.
    CrossStream cs(sim);
    ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));
  }
}

TEST(SimAbi, CheckerFlagsMemoryFreedAndHandedOutAgainWhileStillQueued) {
  Instance sim("check=error");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream a = sim.make_stream(0), b = sim.make_stream(kSlowUs);
  const int64_t n = 256;
  void* x = sim.alloc(n * 4);
  void* y = sim.alloc(n * 4);
  ASSERT_OK(fill(sim, x, n, 1.0, a));
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, a));
  ASSERT_OK(add(sim, y, x, x, n, b));  // x used on slow stream B...
  sim.release(x, n * 4, a);            // ...and freed on A, without record_stream
  EXPECT_TRUE(contains(sim.host.log_text(), "use after free")) << sim.host.log_text();
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, a));  // the free has run: x's block is free again
  void* x2 = sim.alloc(n * 4);
  ASSERT_EQ(x2, x) << "best fit hands the same block out again";
  const Result r = take(fill(sim, x2, n, 5.0, a));
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT) << "the add on B may still read the reused block";
  EXPECT_TRUE(contains(r.message, "add(float32)")) << r.message;
  ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
  ASSERT_OK(fill(sim, x2, n, 5.0, a));  // once the host saw B finish, the reuse is safe
  ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
  sim.release(x2, n * 4);
  sim.release(y, n * 4);
  for (TsrStream s : {a, b}) ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
}

namespace {

// Waits until A's work has really run, without the host learning it: sim's
// va_unmap waits for the device's queued work (its guard against unmapping
// under a kernel) but is no synchronization the checker counts. So the write
// below is still flagged, yet the two workers do not really race (TSan).
void let_the_queue_run_unobserved(Instance& sim) {
  size_t g = 0;
  void* base = nullptr;
  ASSERT_OK(sim.d().va_granularity(sim.ctx(), 0, &g));
  ASSERT_OK(sim.d().va_reserve(sim.ctx(), 0, g, &base));
  ASSERT_OK(sim.d().va_map(sim.ctx(), 0, base, g));
  sim.d().va_unmap(sim.ctx(), 0, base, g);
  sim.d().va_release(sim.ctx(), 0, base, g);
}

}  // namespace

TEST(SimAbi, CheckerWarnModeLogsAndQueuesOffModeIsSilent) {
  {
    Instance sim("check=warn");
    ASSERT_TRUE(sim.init.ok) << sim.init.message;
    CrossStream cs(sim);
    let_the_queue_run_unobserved(sim);
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));  // queued, with a warning
    const std::string log = sim.host.log_text();
    EXPECT_TRUE(contains(log, "unsynchronized cross-stream access")) << log;
    EXPECT_TRUE(contains(log, "Queued anyway")) << log;
  }
  {
    Instance sim("check=off");
    ASSERT_TRUE(sim.init.ok) << sim.init.message;
    CrossStream cs(sim);
    let_the_queue_run_unobserved(sim);
    ASSERT_OK(fill(sim, cs.x, cs.n, 9.0, cs.b));
    EXPECT_FALSE(contains(sim.host.log_text(), "sim checker")) << sim.host.log_text();
  }
}

TEST(SimAbi, CheckerSeesCopiesAndStridedTensors) {
  Instance sim("check=error");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  CrossStream cs(sim);
  // A host-to-device copy on B into x writes what A's add reads.
  const std::vector<float> v(16, 3.0f);
  const Result r = take(sim.upload(static_cast<char*>(cs.x) + 64, v, cs.b));
  EXPECT_EQ(r.code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(r.message, "copy (host to device)")) << r.message;
  // A reversed view (negative stride) reaching x's first element is seen too.
  void* base = static_cast<char*>(cs.x) + 4 * 10;
  Vec rev(base, 4);
  rev.stride = -1;  // elements 10, 9, 8, 7 of x
  EXPECT_EQ(take(sim.launch("fill_", TSR_DTYPE_FLOAT32, cs.b, {tensor(rev.t), number(0)}, {rev.t})).code,
            TSR_ERROR_INVALID_ARGUMENT);
  // Memory just past x (y's block is separate) is not x.
  void* other = sim.alloc(1024);
  ASSERT_OK(fill(sim, other, 256, 1.0, cs.b));
  ASSERT_OK(sim.d().stream_synchronize(sim.ctx(), 0, cs.b));
  sim.release(other, 1024);
}

// ---------------------------------------------------------------------------
// Several host threads at once
// ---------------------------------------------------------------------------

TEST(SimAbi, ConcurrentHostThreadsShareTheDevice) {
  Instance sim("devices=2,memory_mb=64");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  constexpr int kThreads = 4, kRounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TsrStream s = nullptr;
      if (take(sim.d().stream_create(sim.ctx(), 0, &s)).ok == false) {
        ++failures;
        return;
      }
      const int64_t n = 64 + t;
      for (int round = 0; round < kRounds; ++round) {
        void* x = nullptr;
        void* y = nullptr;
        if (!take(sim.d().allocate(sim.ctx(), 0, n * 4, s, &x)).ok ||
            !take(sim.d().allocate(sim.ctx(), 0, n * 4, s, &y)).ok) {
          ++failures;
          break;
        }
        std::vector<float> v(n, float(t + round));
        const bool ok = take(sim.upload(x, v, s)).ok && take(add(sim, y, x, x, n, s)).ok;
        TsrEvent e = nullptr;
        const bool ev = take(sim.d().event_create(sim.ctx(), 0, &e)).ok &&
                        take(sim.d().event_record(sim.ctx(), 0, e, s)).ok;
        // The default stream of the device waits for this thread's stream (shared by all threads).
        const bool waited = ev && take(sim.d().stream_wait_event(sim.ctx(), 0, nullptr, e)).ok;
        std::vector<float> back(n, -1.0f);
        const bool copied = take(sim.copy(TSR_COPY_DEVICE_TO_HOST, back.data(), y, n * 4, s)).ok;
        if (!ok || !waited || !copied || back != std::vector<float>(n, 2.0f * float(t + round))) ++failures;
        if (e != nullptr) take(sim.d().event_destroy(sim.ctx(), 0, e));
        sim.d().deallocate(sim.ctx(), 0, x, n * 4, s);
        sim.d().deallocate(sim.ctx(), 0, y, n * 4, s);
      }
      if (!take(sim.d().stream_destroy(sim.ctx(), 0, s)).ok) ++failures;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK(sim.d().device_synchronize(sim.ctx(), 0));
  size_t free_bytes = 0, total = 0;
  ASSERT_OK(sim.d().memory_info(sim.ctx(), 0, &free_bytes, &total));
  EXPECT_EQ(free_bytes, total);
  EXPECT_FALSE(contains(sim.host.log_text(), "sim checker")) << sim.host.log_text();
}

TEST(SimAbi, ConcurrentLaunchesOnOneStreamKeepQueueOrder) {
  Instance sim("");
  ASSERT_TRUE(sim.init.ok) << sim.init.message;
  TsrStream s = sim.make_stream(0);
  constexpr int kThreads = 4, kEach = 50;
  void* counters = sim.alloc(kThreads * 4);
  ASSERT_OK(fill(sim, counters, kThreads, 0.0, s));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      void* slot = static_cast<char*>(counters) + 4 * t;
      void* one = nullptr;
      EXPECT_OK(sim.d().allocate(sim.ctx(), 0, 4, s, &one));
      EXPECT_OK(fill(sim, one, 1, 1.0, s));
      for (int i = 0; i < kEach; ++i) EXPECT_OK(add(sim, slot, slot, one, 1, s));  // slot += 1, in queue order
      sim.d().deallocate(sim.ctx(), 0, one, 4, s);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(sim.download(counters, kThreads, s), std::vector<float>(kThreads, float(kEach)));
  sim.release(counters, kThreads * 4);
  ASSERT_OK(sim.d().stream_destroy(sim.ctx(), 0, s));
}
