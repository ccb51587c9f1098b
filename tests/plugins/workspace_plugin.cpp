// Test plugin for ABI 1.2 host behaviour: a host-memory device "wsdev" whose
// float32 add kernel computes through TsrKernelCall.workspace (and checks that
// the host refuses wrong calls to it), and, at initialize, device types the
// host must refuse (an ASYNC type lacking event slots, partial va_* and host_*
// groups). describe_device reports what it saw: the live allocation count and
// the refusal codes, for tests/core/stream_test.cpp.
#include "host_memory_device.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

namespace {

std::atomic<int> g_live{0};
std::string g_refusals;  // written during initialize only

TsrError* counting_allocate(void* ctx, int32_t index, size_t n, TsrStream s, void** p) {
  TsrError* err = tsrtest::host_allocate(ctx, index, n, s, p);
  if (err == nullptr) ++g_live;
  return err;
}
void counting_deallocate(void* ctx, int32_t index, void* p, size_t n, TsrStream s) {
  --g_live;
  tsrtest::host_deallocate(ctx, index, p, n, s);
}
TsrError* describe(void*, int32_t, char* buf, size_t size) {
  const std::string text = "live " + std::to_string(g_live.load()) + g_refusals;
  std::snprintf(buf, size, "%s", text.c_str());
  return nullptr;
}

// "" when err has the expected code (err destroyed), else a description.
std::string expect_code(TsrError* err, TsrErrorCode code, const char* what) {
  if (err == nullptr) return std::string(what) + " was accepted; ";
  const bool ok = err->code == code;
  err->destroy(err);
  return ok ? "" : std::string(what) + " gave the wrong code; ";
}

TsrError* add_through_workspace(const TsrKernelCall* call) {
  if (call->struct_size < offsetof(TsrKernelCall, workspace) + sizeof(void*) || call->workspace == nullptr)
    return tessera::sdk::make_error(TSR_ERROR_UNIMPLEMENTED, "wsdev: the host offers no workspace");
  std::string problems;
  void* p = nullptr;
  TsrKernelCall copy = *call;
  problems += expect_code(call->workspace(&copy, 16, &p), TSR_ERROR_INVALID_ARGUMENT, "a copy of the call");
  problems += expect_code(call->workspace(nullptr, 16, &p), TSR_ERROR_INVALID_ARGUMENT, "a NULL call");
  problems += expect_code(call->workspace(call, 0, &p), TSR_ERROR_INVALID_ARGUMENT, "0 bytes");
  problems += expect_code(call->workspace(call, 16, nullptr), TSR_ERROR_INVALID_ARGUMENT, "a NULL ptr");
  std::thread other([&] {
    problems += expect_code(call->workspace(call, 16, &p), TSR_ERROR_INVALID_ARGUMENT, "another thread");
  });
  other.join();
  const DLTensor& a = *call->args[0].as.tensor;
  const DLTensor& b = *call->args[1].as.tensor;
  const DLTensor& out = call->outputs[0];
  int64_t n = 1;
  for (int i = 0; i < out.ndim; ++i) n *= out.shape[i];
  // Contiguous same-shape inputs only (the test's): the point is the workspace.
  float* scratch = nullptr;
  void* small[2] = {nullptr, nullptr};
  if (TsrError* err = call->workspace(call, size_t(n) * sizeof(float) + 1, reinterpret_cast<void**>(&scratch)))
    return err;
  for (void*& s : small)
    if (TsrError* err = call->workspace(call, 3, &s)) return err;
  if (reinterpret_cast<uintptr_t>(scratch) % 16 != 0) problems += "workspace not aligned; ";
  if (small[0] == small[1] || small[0] == scratch) problems += "workspace blocks overlap; ";
  std::memset(small[0], 0xAB, 3);
  std::memset(small[1], 0xCD, 3);
  std::memcpy(scratch, a.data, size_t(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) scratch[i] += static_cast<const float*>(b.data)[i];
  std::memcpy(out.data, scratch, size_t(n) * sizeof(float));
  if (!problems.empty()) return tessera::sdk::make_error(TSR_ERROR_INTERNAL, ("wsdev: " + problems).c_str());
  return nullptr;
}

TsrError* noop(void*, int32_t, TsrStream) { return nullptr; }
TsrError* granularity(void*, int32_t, size_t* g) {
  *g = 4096;
  return nullptr;
}
TsrError* pinned(void*, size_t, void**) { return nullptr; }

void init(const tessera::sdk::Host& host, void**) {
  const TsrHostApi* api = host.api();
  const auto refused = [&](TsrDeviceTypeDesc d, const char* label) {
    d.struct_size = sizeof(TsrDeviceTypeDesc);
    TsrError* err = api->register_device_type(api->context, &d);
    g_refusals += std::string("; ") + label + "=" + (err ? std::to_string(err->code) : "accepted");
    if (err) {  // the reason, after "device type '<name>'" (describe_device has 256 bytes)
      const std::string message = err->message ? err->message : "";
      const size_t at = message.find("' ", message.find("device type '"));
      g_refusals += " (" + message.substr(at == std::string::npos ? 0 : at + 2, 48) + ")";
      err->destroy(err);
    }
  };
  TsrDeviceTypeDesc async = tsrtest::host_memory_device("ws_async", 0);
  async.capabilities |= TSR_DEVICE_CAP_ASYNC;
  async.stream_synchronize = &noop;  // and nothing else of the stream/event slots
  refused(async, "async_without_events");
  TsrDeviceTypeDesc va = tsrtest::host_memory_device("ws_va", 0);
  va.va_granularity = &granularity;  // one of five
  refused(va, "partial_va");
  TsrDeviceTypeDesc pin = tsrtest::host_memory_device("ws_pin", 0);
  pin.host_allocate = &pinned;  // without host_deallocate
  refused(pin, "partial_host");

  TsrDeviceTypeDesc d = tsrtest::host_memory_device("wsdev", 0);
  d.allocate = &counting_allocate;
  d.deallocate = &counting_deallocate;
  d.describe_device = &describe;
  host.register_device_type(d);
  host.register_kernel("add", "wsdev", TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32), &add_through_workspace);
}

}  // namespace

TSR_SDK_PLUGIN("workspace", "0.1", "ABI 1.2 workspace and slot-group checks", init, nullptr)
