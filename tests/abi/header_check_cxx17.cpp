// header_check_cxx17.cpp — compiled (not run) by the ctests `abi.header_cxx17*`
// with -std=c++17 -Wall -Wextra -Werror -pedantic (and -Wundef): <tessera/abi.h>
// must be self-contained and warning-free C++17 (the SDK's language level), with
// C linkage for everything it declares. It is the only include, on purpose.
#include <tessera/abi.h>

namespace {

TsrError* demo_kernel(const TsrKernelCall* call) {
  const TsrValue* first = call->num_args > 0 ? &call->args[0] : nullptr;
  if (first != nullptr && first->tag == TSR_VALUE_TENSOR && first->as.tensor->ndim < 0) return nullptr;
  return nullptr;
}

}  // namespace

extern "C" TSR_PLUGIN_EXPORT const TsrPluginInfo* tsr_header_check_entry(const TsrHostOffer* offer);
extern "C" TSR_PLUGIN_EXPORT const TsrPluginInfo* tsr_header_check_entry(const TsrHostOffer* offer) {
  static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR},
                                     "demo", "0", nullptr, nullptr, nullptr};
  return offer->max_version.major == TSR_ABI_VERSION_MAJOR ? &info : nullptr;
}

int tsr_header_check_cxx17();
int tsr_header_check_cxx17() {
  const TsrKernelDesc k = {sizeof(TsrKernelDesc), "add", "cpu", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &demo_kernel, nullptr};
  TsrDeviceTypeDesc d{};
  d.struct_size = sizeof d;
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE | TSR_DEVICE_CAP_NO_STORAGE;
  const TsrPluginEntryFn entry = &tsr_header_check_entry;
  const TsrHostOffer offer = {sizeof(TsrHostOffer), {1, 0}, {1, 0}};
  TsrValue v{};
  v.tag = TSR_VALUE_INT;
  v.as.i = 42;
  return static_cast<int>(k.dtype_mask != 0) + static_cast<int>(d.capabilities != 0) +
         static_cast<int>(entry(&offer) != nullptr) + static_cast<int>(v.as.i);
}
