// The testing hooks (tessera/testing.h): guard bytes around op outputs, the kernel recorder.
#include <tessera/testing.h>

#include <tessera/error.h>

#include <vector>

#include "allocation.h"
#include "checked_math.h"
#include "device_registry.h"
#include "dispatch_trace.h"
#include "testing_hooks.h"

namespace tessera {

size_t g_output_guard_bytes = 0;
testing::KernelRecorder g_kernel_recorder = nullptr;
void* g_kernel_recorder_context = nullptr;

namespace {
std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = testing::guard_byte(i);
  return p;
}

Tensor host_bytes(std::vector<uint8_t>& bytes) {
  return from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, [](void*) {}, TensorOptions(kByte));
}
}  // namespace

Tensor guarded_empty(IntArrayRef sizes, ScalarType dtype, Device device, bool during_kernel) {
  const size_t guard = g_output_guard_bytes;
  if (device_entry(device).no_storage()) return empty_on(sizes, dtype, device);
  const int64_t numel = checked::check_shape("empty", sizes, dtype);
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  // The buffer is made by a transfer of the pattern (the device's copy slot):
  // no kernel of the device under test runs. Before a kernel, on an
  // asynchronous device that offers pinned memory, the transfer is queued on
  // the current stream like the call's own work, so that making the output
  // does not wait for the device (which would hide a kernel that ignores its
  // stream). During a kernel (a data-dependent output) it is synchronous: the
  // kernel writes the data only after this returns.
  std::vector<uint8_t> fill = pattern(nbytes + 2 * guard);
  const DeviceTypeEntry& e = device_entry(device);
  Tensor buffer;
  if (!during_kernel && e.has(TSR_DEVICE_CAP_ASYNC) && e.desc.host_allocate != nullptr) {
    buffer = host_bytes(fill).pin_memory(device.type_name()).to(device, /*non_blocking=*/true);
  } else {
    buffer = host_bytes(fill).to(device);
    if (buffer.data_ptr() == fill.data()) buffer = buffer.clone();  // cpu: own the bytes
  }
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d] > 0 ? sizes[d] : 1;
  }
  const auto offset = static_cast<int64_t>(guard / element_size(dtype));
  return Tensor(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(buffer.storage(), dtype, sizes, IntArrayRef(strides), offset)));
}

namespace testing {

void set_output_guard(size_t bytes) {
  TSR_CHECK(bytes % 64 == 0 && bytes <= (size_t{1} << 20), ValueError, "set_output_guard: ", bytes,
            " bytes is not accepted: a multiple of 64 of at most 1 MiB");
  g_output_guard_bytes = bytes;
}

size_t output_guard() { return g_output_guard_bytes; }

void set_kernel_recorder(KernelRecorder recorder, void* context) {
  g_kernel_recorder_context = context;
  g_kernel_recorder = recorder;
}

GuardCheck check_output_guard(const Tensor& t) {
  GuardCheck r;
  if (!t.defined() || t.storage() == nullptr) return r;
  const size_t elem = element_size(t.scalar_type());
  const size_t total = t.storage()->nbytes();
  const size_t data = static_cast<size_t>(t.numel()) * elem;
  const size_t before = static_cast<size_t>(t.storage_offset()) * elem;
  if (before == 0 || before % 64 != 0 || total != data + 2 * before || !t.is_contiguous()) return r;
  r.guarded = true;
  Tensor whole(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(t.storage(), kByte, {static_cast<int64_t>(total)}, {1}, 0)));
  const Tensor host = whole.to(Device("cpu")).contiguous();
  const auto* p = static_cast<const uint8_t*>(host.data_ptr());
  for (size_t i = 0; i < total; ++i) {
    if (i == before) i += data;
    if (i >= total) break;
    if (p[i] != guard_byte(i)) {
      if (r.intact) r.first_bad = static_cast<int64_t>(i) - static_cast<int64_t>(before);
      r.intact = false;
      ++r.bad_bytes;
    }
  }
  return r;
}

}  // namespace testing
}  // namespace tessera
