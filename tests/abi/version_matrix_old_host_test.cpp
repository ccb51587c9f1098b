// A newer plugin in an older core (docs/abi.md §6, H4, P3, P5, P7). No 1.0 core
// can be built any more, so this program is one: it links no libtessera,
// dlopens each plugin itself and
//   - offers ABI 1.0 only: the plugin answers a version within the offer or,
//     having one version, that version (P3); a 1.0 host accepts any 1.x (H4);
//   - initializes it with a 1.0 TsrHostApi (host_version 1.0) that answers
//     register_kernel as a 1.0 core: NOT_FOUND for ops 1.0 lacks and for
//     unknown device types, which the plugin must skip (P5, P12);
//   - calls its float32 `add` kernel with a TsrKernelCall of 1.0's size (no
//     `workspace`), through the device's own 1.0 slots (allocate, copy).
// Every struct the host hands over ends exactly at an unreadable page, so a
// plugin that reads a field past struct_size dies (GuardPage* proves the trap).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <tessera/abi.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr size_t k1_0KernelCall = offsetof(TsrKernelCall, allocate_output) + sizeof(void*);  // 88
constexpr size_t k1_0HostApi = offsetof(TsrHostApi, log) + sizeof(void*);                   // 48
constexpr size_t k1_0Offer = sizeof(TsrHostOffer);                                          // 24, never grew
static_assert(k1_0KernelCall == 88 && k1_0HostApi == 48 && k1_0Offer == 24);

// `size` bytes whose end touches a PROT_NONE page.
class Guarded {
 public:
  explicit Guarded(const void* bytes, size_t size) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    base_ = static_cast<char*>(mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) std::abort();
    mprotect(base_ + page_, page_, PROT_NONE);
    at_ = base_ + page_ - size;
    std::memcpy(at_, bytes, size);
  }
  ~Guarded() { munmap(base_, 2 * page_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(at_); }

 private:
  size_t page_ = 0;
  char* base_ = nullptr;
  char* at_ = nullptr;
};

// ---- the emulated 1.0 core -----------------------------------------------------

const std::set<std::string> kOps1_0 = {"add", "sub", "mul",  "div",  "neg",     "exp",    "relu",
                                       "sum", "mm",  "bmm", "copy_", "fill_", "nonzero", "arange"};

struct Recorded {
  std::vector<TsrDeviceTypeDesc> devices;
  std::vector<std::string> device_names;
  std::vector<TsrKernelDesc> kernels;
  std::vector<std::string> kernel_ops, kernel_devices;
  std::vector<std::string> not_found;
  int host_context = 0;
};
Recorded* g_rec = nullptr;

void destroy_host_error(TsrError* e) { std::free(e); }
TsrError* host_error(TsrErrorCode code) {
  auto* e = static_cast<TsrError*>(std::calloc(1, sizeof(TsrError)));
  e->struct_size = sizeof(TsrError);
  e->code = code;
  e->message = "refused by the emulated ABI 1.0 core";
  e->destroy = destroy_host_error;
  return e;
}

TsrError* rec_register_device_type(TsrHostContext ctx, const TsrDeviceTypeDesc* d) {
  if (ctx != reinterpret_cast<TsrHostContext>(&g_rec->host_context) || d == nullptr ||
      d->struct_size < offsetof(TsrDeviceTypeDesc, describe_device) || d->name == nullptr)
    return host_error(TSR_ERROR_INVALID_ARGUMENT);
  // A 1.0 core knows 1.0's fields only: it copies up to the end of device_synchronize.
  const size_t known = offsetof(TsrDeviceTypeDesc, device_synchronize) + sizeof(void*);
  TsrDeviceTypeDesc copy{};
  std::memcpy(&copy, d, std::min(d->struct_size, known));
  g_rec->devices.push_back(copy);
  g_rec->device_names.push_back(d->name);
  return nullptr;
}

TsrError* rec_register_kernel(TsrHostContext ctx, const TsrKernelDesc* k) {
  if (ctx != reinterpret_cast<TsrHostContext>(&g_rec->host_context) || k == nullptr ||
      k->struct_size < offsetof(TsrKernelDesc, context) + sizeof(void*) || k->op_name == nullptr ||
      k->device_type == nullptr || k->fn == nullptr)
    return host_error(TSR_ERROR_INVALID_ARGUMENT);
  bool known_device = std::string(k->device_type) == "cpu";  // loaded before any other plugin
  for (const std::string& n : g_rec->device_names) known_device = known_device || n == k->device_type;
  const uint64_t known_dtypes = (uint64_t{1} << TSR_DTYPE_COUNT_1_0) - 1;
  if (!kOps1_0.count(k->op_name) || !known_device || (k->dtype_mask & known_dtypes) == 0) {
    g_rec->not_found.push_back(std::string(k->op_name) + "@" + k->device_type);
    return host_error(TSR_ERROR_NOT_FOUND);  // what 1.0 answers to all three
  }
  TsrKernelDesc copy{};
  std::memcpy(&copy, k, sizeof copy);
  g_rec->kernels.push_back(copy);
  g_rec->kernel_ops.push_back(k->op_name);
  g_rec->kernel_devices.push_back(k->device_type);
  return nullptr;
}

void rec_log(TsrHostContext, int32_t, const char*) {}

TsrError* no_allocate_output(TsrCallHandle, size_t, TsrDType, int32_t, const int64_t*, DLTensor**) {
  return host_error(TSR_ERROR_INVALID_ARGUMENT);
}

std::string take_message(TsrError* e) {
  std::string m = e->message != nullptr ? e->message : "";
  e->destroy(e);
  return m;
}

#define EXPECT_OK(expr)                                          \
  do {                                                           \
    TsrError* err_ = (expr);                                     \
    EXPECT_EQ(err_, nullptr) << #expr << ": " << (err_ ? take_message(err_) : ""); \
  } while (0)

struct Plugin {
  const char* label;
  std::string path;
};

std::vector<Plugin> plugins() {
  std::vector<Plugin> out = {{"frozen_v1_0", VM_FROZEN_V1_0}, {"frozen_v1_1", VM_FROZEN_V1_1}, {"frozen_v1_2", VM_FROZEN_V1_2},
                             {"frozen_v1_3", VM_FROZEN_V1_3}};
  for (const char* name : {"cpu", "meta", "sim"})
    out.push_back({name, std::string(VM_PLUGIN_DIR) + "/libtessera-" + name + ".so"});
  return out;
}

// Runs `add` float32 of (device, kernel) on a 2x3 problem through the device's 1.0 slots.
void run_add(const TsrDeviceTypeDesc& d, const TsrKernelDesc& k, const std::string& device) {
  SCOPED_TRACE("add on " + device);
  const size_t n = 6, bytes = n * sizeof(float);
  const float a_host[n] = {1, 2, 3, 4, 5, 6}, b_host[n] = {10, 20, 30, 40, 50, 60};
  void *a = nullptr, *b = nullptr, *out = nullptr;
  ASSERT_NE(d.allocate, nullptr);
  EXPECT_OK(d.allocate(d.context, 0, bytes, nullptr, &a));
  EXPECT_OK(d.allocate(d.context, 0, bytes, nullptr, &b));
  EXPECT_OK(d.allocate(d.context, 0, bytes, nullptr, &out));
  auto copy = [&](TsrCopyKind kind, void* dst, const void* src) {
    TsrCopyRequest r{};
    r.struct_size = sizeof r;
    r.kind = kind;
    r.dst = dst;
    r.src = src;
    r.nbytes = bytes;
    EXPECT_OK(d.copy(d.context, &r));
    if (d.stream_synchronize != nullptr) EXPECT_OK(d.stream_synchronize(d.context, 0, nullptr));
  };
  copy(TSR_COPY_HOST_TO_DEVICE, a, a_host);
  copy(TSR_COPY_HOST_TO_DEVICE, b, b_host);

  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  const DLDevice dev{d.dlpack_device_type != 0 ? static_cast<DLDeviceType>(d.dlpack_device_type) : kDLExtDev, 0};
  const DLDataType f32{kDLFloat, 32, 1};
  DLTensor ta{a, dev, 2, f32, shape, strides, 0}, tb{b, dev, 2, f32, shape, strides, 0};
  DLTensor to{out, dev, 2, f32, shape, strides, 0};
  TsrValue args[3] = {};
  args[0].tag = TSR_VALUE_TENSOR;
  args[0].as.tensor = &ta;
  args[1].tag = TSR_VALUE_TENSOR;
  args[1].as.tensor = &tb;
  args[2].tag = TSR_VALUE_FLOAT;
  args[2].as.f = 2.0;
  TsrKernelCall call{};
  call.struct_size = k1_0KernelCall;
  call.op_name = "add";
  call.kernel_context = k.context;
  call.dtype = TSR_DTYPE_FLOAT32;
  call.args = args;
  call.num_args = 3;
  call.outputs = &to;
  call.num_outputs = 1;
  call.allocate_output = no_allocate_output;
  const Guarded guarded(&call, k1_0KernelCall);
  EXPECT_OK(k.fn(guarded.as<TsrKernelCall>()));
  if (d.device_synchronize != nullptr) EXPECT_OK(d.device_synchronize(d.context, 0));

  float result[n] = {};
  copy(TSR_COPY_DEVICE_TO_HOST, result, out);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(result[i], a_host[i] + 2 * b_host[i]) << "element " << i;
  for (void* p : {a, b, out}) d.deallocate(d.context, 0, p, bytes, nullptr);
}

void PrintTo(const Plugin& p, std::ostream* os) { *os << p.label; }

class AbiVersionMatrixOldHost : public ::testing::TestWithParam<Plugin> {};

}  // namespace

TEST(AbiVersionMatrixOldHostGuard, GuardPageCatchesAReadPastStructSize) {
  TsrKernelCall call{};
  call.struct_size = k1_0KernelCall;
  const Guarded guarded(&call, k1_0KernelCall);
  const TsrKernelCall* c = guarded.as<TsrKernelCall>();
  EXPECT_EQ(c->struct_size, k1_0KernelCall);  // the present fields read fine
  EXPECT_DEATH({ std::printf("%p\n", reinterpret_cast<void*>(c->workspace)); }, "");
}

TEST_P(AbiVersionMatrixOldHost, LoadsIntoA1_0CoreAndRunsWith1_0Structs) {
  const Plugin& p = GetParam();
  if (access(p.path.c_str(), R_OK) != 0) GTEST_SKIP() << p.path << " is not built";
  void* lib = dlopen(p.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<TsrPluginEntryFn>(dlsym(lib, TSR_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);

  // What it answers today's offer is its own (highest) version.
  const TsrHostOffer today{sizeof(TsrHostOffer), {1, 0}, {1, TSR_ABI_VERSION_MINOR}};
  const TsrPluginInfo* own = entry(&today);
  ASSERT_NE(own, nullptr);
  const TsrVersion own_version = own->abi_version;

  const TsrHostOffer old_offer{k1_0Offer, {1, 0}, {1, 0}};
  const Guarded offer(&old_offer, k1_0Offer);
  const TsrPluginInfo* info = entry(offer.as<TsrHostOffer>());
  ASSERT_NE(info, nullptr) << "declined a 1.0 host";
  ASSERT_GE(info->struct_size, offsetof(TsrPluginInfo, abi_version) + sizeof(TsrVersion));
  EXPECT_EQ(info->abi_version.major, 1u);
  // P3: a version within the offer, or the plugin's only one; H4: a 1.0 host takes either.
  EXPECT_TRUE(info->abi_version.minor == 0 ||
              (info->abi_version.minor == own_version.minor && info->abi_version.major == own_version.major))
      << "answered " << info->abi_version.major << "." << info->abi_version.minor << " to a 1.0-only offer";
  ASSERT_GE(info->struct_size, offsetof(TsrPluginInfo, initialize) + sizeof(void*));
  ASSERT_NE(info->initialize, nullptr);

  Recorded rec;
  g_rec = &rec;
  const TsrHostApi api_value{k1_0HostApi, {1, 0}, reinterpret_cast<TsrHostContext>(&rec.host_context),
                             rec_register_device_type, rec_register_kernel, rec_log,
                             /*register_op: beyond struct_size, on the guard page*/ nullptr};
  const Guarded api(&api_value, k1_0HostApi);
  void* state = nullptr;
  TsrError* err = info->initialize(api.as<TsrHostApi>(), &state);
  ASSERT_EQ(err, nullptr) << "initialize failed against a 1.0 host: " << take_message(err);
  EXPECT_FALSE(rec.devices.empty());

  // Every kernel a 1.0 core accepted still runs with a 1.0 call (no workspace slot).
  int ran = 0;
  for (size_t i = 0; i < rec.kernels.size(); ++i) {
    if (rec.kernel_ops[i] != "add" || !(rec.kernels[i].dtype_mask & TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32))) continue;
    for (size_t j = 0; j < rec.devices.size(); ++j)
      if (rec.device_names[j] == rec.kernel_devices[i]) {
        run_add(rec.devices[j], rec.kernels[i], rec.device_names[j]);
        ++ran;
      }
  }
  if (std::string(p.label) != "meta") {
    EXPECT_GE(ran, 1) << "no float32 add kernel on a device of its own";
  }

  if (info->struct_size >= offsetof(TsrPluginInfo, shutdown) + sizeof(void*) && info->shutdown != nullptr)
    info->shutdown(state);
  g_rec = nullptr;
  dlclose(lib);
}

INSTANTIATE_TEST_SUITE_P(, AbiVersionMatrixOldHost, ::testing::ValuesIn(plugins()),
                         [](const ::testing::TestParamInfo<Plugin>& i) { return std::string(i.param.label); });
