// A plugin with one seeded bug per kernel, for proving that tessera-plugin-test
// catches each (tests/conformance/seeded_bugs_test.cpp). Two device types:
//   "buggy"    — synchronous, host memory: float32 kernels, each wrong one way;
//   "deferred" — asynchronous, host memory: work queued per device and run at
//                the next synchronization, like a GPU's stream; its `neg`
//                ignores the stream and runs at once, its `abs` is right.
// Every kernel computes in plain strided loops over DLTensors (docs/ops.md's
// contract: the host gives every operand the output's shape).
#include <tessera/sdk/plugin.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../plugins/host_memory_device.hpp"

namespace {

namespace sdk = tessera::sdk;

int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

bool contiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// Element i (row-major over the shape) of t, as a pointer.
template <typename T>
T* at(const DLTensor& t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.shape[d]) * t.strides[d];
    i /= t.shape[d];
  }
  return static_cast<T*>(t.data) + off;
}

const DLTensor& self_of(const TsrKernelCall* c) { return *c->args[0].as.tensor; }

// ---- "buggy": one defect each ----------------------------------------------------

// neg: an off-by-one in the strided loop (contiguous inputs are right).
TsrError* neg_off_by_one(const TsrKernelCall* c) {
  const DLTensor& in = self_of(c);
  const DLTensor& out = c->outputs[0];
  const int64_t n = numel(out);
  const int64_t last = contiguous(in) ? n : n - 1;  // the bug
  for (int64_t i = 0; i < last; ++i) *at<float>(out, i) = -*at<float>(in, i);
  return nullptr;
}

// abs: right values, and one element written past the end of the output.
TsrError* abs_out_of_bounds(const TsrKernelCall* c) {
  const DLTensor& in = self_of(c);
  const DLTensor& out = c->outputs[0];
  const int64_t n = numel(out);
  for (int64_t i = 0; i < n; ++i) *at<float>(out, i) = std::fabs(*at<float>(in, i));
  if (n > 0 && contiguous(out)) static_cast<float*>(out.data)[n] = 0.0f;  // the bug
  return nullptr;
}

// add for int64: computed in int32 (a wrong promotion).
TsrError* add_narrow(const TsrKernelCall* c) {
  const DLTensor& a = *c->args[0].as.tensor;
  const DLTensor& b = *c->args[1].as.tensor;
  const int64_t alpha = c->args[2].tag == TSR_VALUE_INT ? c->args[2].as.i : 1;
  const DLTensor& out = c->outputs[0];
  for (int64_t i = 0, n = numel(out); i < n; ++i) {
    const auto x = static_cast<int32_t>(*at<int64_t>(a, i));  // the bug
    const auto y = static_cast<int32_t>(*at<int64_t>(b, i));
    *at<int64_t>(out, i) = static_cast<int64_t>(x + static_cast<int32_t>(alpha) * y);
  }
  return nullptr;
}

// exp: right values, and the input's first element overwritten.
TsrError* exp_writes_input(const TsrKernelCall* c) {
  const DLTensor& in = self_of(c);
  const DLTensor& out = c->outputs[0];
  const int64_t n = numel(out);
  for (int64_t i = 0; i < n; ++i) *at<float>(out, i) = std::exp(*at<float>(in, i));
  if (n > 0) *at<float>(in, 0) = 0.0f;  // the bug
  return nullptr;
}

// sqrt: results pass through a scratch buffer shared by every call (a data race).
TsrError* sqrt_shared_scratch(const TsrKernelCall* c) {
  static std::vector<float> scratch(1 << 16);  // the bug: shared, unsynchronized
  const DLTensor& in = self_of(c);
  const DLTensor& out = c->outputs[0];
  const int64_t n = numel(out);
  if (n > static_cast<int64_t>(scratch.size())) return sdk::make_error(TSR_ERROR_INVALID_ARGUMENT, "too large");
  for (int64_t i = 0; i < n; ++i) scratch[static_cast<size_t>(i)] = std::sqrt(*at<float>(in, i));
  std::this_thread::yield();  // widens the window another call writes in
  for (int64_t i = 0; i < n; ++i) *at<float>(out, i) = scratch[static_cast<size_t>(i)];
  return nullptr;
}

// mul: returns success without writing anything.
TsrError* mul_no_write(const TsrKernelCall*) { return nullptr; }

// ---- "deferred": an asynchronous device -------------------------------------------

// One queue for the device: every stream's work runs in order at the next
// synchronization (a valid, if simple, asynchronous device: all streams are
// ordered together). Events complete when the queue has run past them.
struct Deferred {
  std::mutex mu;      // the queue
  std::mutex run_mu;  // one flush at a time: work runs in queue order across threads
  std::deque<std::function<void()>> queue;
  void push(std::function<void()> f) {
    std::lock_guard lock(mu);
    queue.push_back(std::move(f));
  }
  void flush() {
    std::lock_guard running(run_mu);
    for (;;) {
      std::function<void()> f;
      {
        std::lock_guard lock(mu);
        if (queue.empty()) return;
        f = std::move(queue.front());
        queue.pop_front();
      }
      f();
    }
  }
};
Deferred g_deferred;
int g_stream_tag;  // streams are distinct non-NULL handles into this
int g_event_tag;

TsrError* d_allocate(void*, int32_t, size_t n, TsrStream, void** p) {
  *p = std::malloc(n ? n : 1);
  return *p ? nullptr : sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "deferred: malloc failed");
}
void d_deallocate(void*, int32_t, void* p, size_t, TsrStream) {
  g_deferred.push([p] { std::free(p); });  // stream-ordered: after queued work that may use it
}
TsrError* d_copy(void*, const TsrCopyRequest* r) {
  // Host-to-device from pinned or pageable memory: the source is read when the
  // copy runs; the host keeps it alive or synchronizes (docs/streams.md).
  void* dst = r->dst;
  const void* src = r->src;
  const size_t n = r->nbytes;
  g_deferred.push([dst, src, n] { std::memcpy(dst, src, n); });
  if (r->kind == TSR_COPY_DEVICE_TO_HOST) g_deferred.flush();
  return nullptr;
}
TsrError* d_stream_create(void*, int32_t, TsrStream* s) {
  *s = reinterpret_cast<TsrStream>(new int(g_stream_tag));
  return nullptr;
}
TsrError* d_stream_destroy(void*, int32_t, TsrStream s) {
  g_deferred.flush();
  delete reinterpret_cast<int*>(s);
  return nullptr;
}
TsrError* d_sync(void*, int32_t, TsrStream) {
  g_deferred.flush();
  return nullptr;
}
TsrError* d_wait_event(void*, int32_t, TsrStream, TsrEvent) { return nullptr; }  // one queue: already ordered
struct Event {
  bool done = true;
};
TsrError* d_event_create(void*, int32_t, TsrEvent* e) {
  *e = reinterpret_cast<TsrEvent>(new Event);
  return nullptr;
}
TsrError* d_event_destroy(void*, int32_t, TsrEvent e) {
  g_deferred.flush();
  delete reinterpret_cast<Event*>(e);
  return nullptr;
}
TsrError* d_event_record(void*, int32_t, TsrEvent e, TsrStream) {
  auto* ev = reinterpret_cast<Event*>(e);
  ev->done = false;
  g_deferred.push([ev] { ev->done = true; });
  return nullptr;
}
TsrError* d_event_query(void*, int32_t, TsrEvent e, int32_t* completed) {
  *completed = reinterpret_cast<Event*>(e)->done ? 1 : 0;
  return nullptr;
}
TsrError* d_event_sync(void*, int32_t, TsrEvent) {
  g_deferred.flush();
  return nullptr;
}
TsrError* d_host_allocate(void*, size_t n, void** p) {
  *p = std::malloc(n ? n : 1);
  return *p ? nullptr : sdk::make_error(TSR_ERROR_OUT_OF_MEMORY, "deferred: malloc failed");
}
void d_host_deallocate(void*, void* p, size_t) { std::free(p); }
TsrError* d_device_sync(void*, int32_t) {
  g_deferred.flush();
  return nullptr;
}

// A tensor's description, kept past the call (the DLTensor is borrowed).
struct Saved {
  void* data;
  std::vector<int64_t> shape, strides;
  explicit Saved(const DLTensor& t)
      : data(t.data), shape(t.shape, t.shape + t.ndim), strides(t.strides, t.strides + t.ndim) {}
  DLTensor view() {
    DLTensor t{};
    t.data = data;
    t.ndim = static_cast<int32_t>(shape.size());
    t.shape = shape.data();
    t.strides = strides.data();
    return t;
  }
};

void unary(const DLTensor& in, const DLTensor& out, float (*f)(float)) {
  for (int64_t i = 0, n = numel(out); i < n; ++i) *at<float>(out, i) = f(*at<float>(in, i));
}

// abs, queued on the device: right.
TsrError* deferred_abs(const TsrKernelCall* c) {
  auto in = std::make_shared<Saved>(self_of(c));
  auto out = std::make_shared<Saved>(c->outputs[0]);
  g_deferred.push([in, out] { unary(in->view(), out->view(), [](float x) { return std::fabs(x); }); });
  return nullptr;
}

// neg, run at once: ignores the stream its inputs are still arriving on.
TsrError* deferred_neg_ignores_stream(const TsrKernelCall* c) {
  unary(self_of(c), c->outputs[0], [](float x) { return -x; });  // the bug
  return nullptr;
}

void init(const sdk::Host& host, void**) {
  host.register_device_type(tsrtest::host_memory_device("buggy", 0));
  const uint64_t f32 = TSR_DTYPE_BIT(TSR_DTYPE_FLOAT32);
  host.register_kernel("neg", "buggy", f32, &neg_off_by_one);
  host.register_kernel("abs", "buggy", f32, &abs_out_of_bounds);
  host.register_kernel("add", "buggy", TSR_DTYPE_BIT(TSR_DTYPE_INT64), &add_narrow);
  host.register_kernel("exp", "buggy", f32, &exp_writes_input);
  host.register_kernel("sqrt", "buggy", f32, &sqrt_shared_scratch);
  host.register_kernel("mul", "buggy", f32, &mul_no_write);

  TsrDeviceTypeDesc d = tsrtest::host_memory_device("deferred", 0);
  d.capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE | TSR_DEVICE_CAP_ASYNC;
  d.allocate = &d_allocate;
  d.deallocate = &d_deallocate;
  d.copy = &d_copy;
  d.stream_create = &d_stream_create;
  d.stream_destroy = &d_stream_destroy;
  d.stream_synchronize = &d_sync;
  d.stream_wait_event = &d_wait_event;
  d.event_create = &d_event_create;
  d.event_destroy = &d_event_destroy;
  d.event_record = &d_event_record;
  d.event_query = &d_event_query;
  d.event_synchronize = &d_event_sync;
  d.device_synchronize = &d_device_sync;
  d.host_allocate = &d_host_allocate;  // pinned memory: non-blocking uploads the queue reads later
  d.host_deallocate = &d_host_deallocate;
  host.register_device_type(d);
  host.register_kernel("abs", "deferred", f32, &deferred_abs);
  host.register_kernel("neg", "deferred", f32, &deferred_neg_ignores_stream);
}

void shutdown(void*) noexcept { g_deferred.flush(); }

}  // namespace

TSR_SDK_PLUGIN("seeded_bugs", "0.1", "one seeded bug per kernel, for the conformance kit's own tests", init, shutdown)
