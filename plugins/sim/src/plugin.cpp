// libtessera-sim: a simulated asynchronous accelerator, the reference
// asynchronous plugin (docs/sim.md). This file is the ABI surface: the entry
// point, initialize/shutdown, and the C slots of the "sim" device type, each a
// thin sdk::guard around a method of Sim (runtime.hpp) so that no C++
// exception crosses the C ABI.
#include "config.hpp"
#include "kernels.hpp"
#include "runtime.hpp"

#include <tessera/abi.h>
#include <tessera/sdk/plugin.hpp>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>

namespace tessera::sim {
namespace {

/// What initialize hands the host as the plugin's state, back in shutdown.
struct Plugin {
  std::deque<SimKernel> kernels;  // the registered kernels' contexts
  std::unique_ptr<Sim> sim;       // declared last, destroyed first: drains the queues before the kernels go
};

Sim& sim_of(void* context) { return *static_cast<Sim*>(context); }

[[noreturn]] void null_argument(const char* what) {
  throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, std::string("sim: ") + what + " is NULL");
}

// ---- the slots of the "sim" device type; `context` is the Sim ----

TsrError* device_count(void* context, int32_t* count) {
  return sdk::guard([&] {
    if (count == nullptr) null_argument("device_count's count");
    *count = sim_of(context).config().devices;
  });
}

TsrError* describe_device(void* context, int32_t index, char* buf, size_t buf_size) {
  return sdk::guard([&] {
    if (buf == nullptr || buf_size == 0) null_argument("describe_device's buffer");
    std::snprintf(buf, buf_size, "%s", sim_of(context).describe(index).c_str());
  });
}

TsrError* allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  return sdk::guard([&] {
    if (ptr == nullptr) null_argument("allocate's ptr");
    *ptr = sim_of(context).allocate(index, nbytes, stream);
  });
}

void deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  sim_of(context).deallocate(index, ptr, nbytes, stream);  // noexcept: reports through the log
}

TsrError* copy(void* context, const TsrCopyRequest* request) {
  return sdk::guard([&] {
    if (request == nullptr) null_argument("the copy request");
    sim_of(context).copy(*request);
  });
}

TsrError* stream_create(void* context, int32_t index, TsrStream* stream) {
  return sdk::guard([&] {
    if (stream == nullptr) null_argument("stream_create's stream");
    *stream = sim_of(context).stream_create(index);
  });
}

TsrError* stream_destroy(void* context, int32_t index, TsrStream stream) {
  return sdk::guard([&] { sim_of(context).stream_destroy(index, stream); });
}

TsrError* stream_synchronize(void* context, int32_t index, TsrStream stream) {
  return sdk::guard([&] { sim_of(context).stream_synchronize(index, stream); });
}

TsrError* stream_wait_event(void* context, int32_t index, TsrStream stream, TsrEvent event) {
  return sdk::guard([&] { sim_of(context).stream_wait_event(index, stream, event); });
}

TsrError* event_create(void* context, int32_t index, TsrEvent* event) {
  return sdk::guard([&] {
    if (event == nullptr) null_argument("event_create's event");
    *event = sim_of(context).event_create(index, 0);
  });
}

TsrError* event_create_flags(void* context, int32_t index, uint32_t flags, TsrEvent* event) {
  return sdk::guard([&] {
    if (event == nullptr) null_argument("event_create_flags's event");
    *event = sim_of(context).event_create(index, flags);
  });
}

TsrError* event_destroy(void* context, int32_t index, TsrEvent event) {
  return sdk::guard([&] { sim_of(context).event_destroy(index, event); });
}

TsrError* event_record(void* context, int32_t index, TsrEvent event, TsrStream stream) {
  return sdk::guard([&] { sim_of(context).event_record(index, event, stream); });
}

TsrError* event_query(void* context, int32_t index, TsrEvent event, int32_t* completed) {
  return sdk::guard([&] {
    if (completed == nullptr) null_argument("event_query's completed");
    *completed = sim_of(context).event_query(index, event) ? 1 : 0;
  });
}

TsrError* event_synchronize(void* context, int32_t index, TsrEvent event) {
  return sdk::guard([&] { sim_of(context).event_synchronize(index, event); });
}

TsrError* event_elapsed_time(void* context, int32_t index, TsrEvent start, TsrEvent end, float* milliseconds) {
  return sdk::guard([&] {
    if (milliseconds == nullptr) null_argument("event_elapsed_time's milliseconds");
    *milliseconds = sim_of(context).event_elapsed_time(index, start, end);
  });
}

TsrError* device_synchronize(void* context, int32_t index) {
  return sdk::guard([&] { sim_of(context).device_synchronize(index); });
}

TsrError* memory_info(void* context, int32_t index, size_t* free_bytes, size_t* total_bytes) {
  return sdk::guard([&] {
    if (free_bytes == nullptr || total_bytes == nullptr) null_argument("memory_info's output");
    sim_of(context).memory_info(index, free_bytes, total_bytes);
  });
}

TsrError* va_granularity(void* context, int32_t index, size_t* granularity) {
  return sdk::guard([&] {
    if (granularity == nullptr) null_argument("va_granularity's granularity");
    sim_of(context).device(index);
    *granularity = Sim::kGranularity;
  });
}

TsrError* va_reserve(void* context, int32_t index, size_t nbytes, void** base) {
  return sdk::guard([&] {
    if (base == nullptr) null_argument("va_reserve's base");
    *base = sim_of(context).va_reserve(index, nbytes);
  });
}

void va_release(void* context, int32_t index, void* base, size_t nbytes) {
  sim_of(context).va_release(index, base, nbytes);  // noexcept
}

TsrError* va_map(void* context, int32_t index, void* addr, size_t nbytes) {
  return sdk::guard([&] { sim_of(context).va_map(index, addr, nbytes); });
}

void va_unmap(void* context, int32_t index, void* addr, size_t nbytes) {
  sim_of(context).va_unmap(index, addr, nbytes);  // noexcept
}

TsrError* host_allocate(void* context, size_t nbytes, void** ptr) {
  return sdk::guard([&] {
    if (ptr == nullptr) null_argument("host_allocate's ptr");
    *ptr = sim_of(context).host_allocate(nbytes);
  });
}

void host_deallocate(void* context, void* ptr, size_t nbytes) {
  sim_of(context).host_deallocate(ptr, nbytes);  // noexcept
}

TsrDeviceTypeDesc device_desc(Sim& sim) {
  TsrDeviceTypeDesc d{};  // zero-initialized: any slot not set below is NULL
  d.name = "sim";
  // 0 unless TESSERA_SIM's dlpack_type asks (tests of the DLPack stream
  // hand-off); with 0, kernels see kDLExtDev.
  d.dlpack_device_type = sim.config().dlpack_type;
  // Not HOST_ACCESSIBLE, although the bytes are host memory: the core must go
  // through copies, exactly as for a discrete accelerator.
  d.capabilities = TSR_DEVICE_CAP_ASYNC | TSR_DEVICE_CAP_CACHING_ALLOCATOR;
  d.memory_alignment = Arena::kAlignment;
  d.context = &sim;
  d.device_count = &device_count;
  d.describe_device = &describe_device;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.copy = &copy;
  d.stream_create = &stream_create;
  d.stream_destroy = &stream_destroy;
  d.stream_synchronize = &stream_synchronize;
  d.stream_wait_event = &stream_wait_event;
  d.event_create = &event_create;
  d.event_destroy = &event_destroy;
  d.event_record = &event_record;
  d.event_query = &event_query;
  d.event_synchronize = &event_synchronize;
  d.device_synchronize = &device_synchronize;
  d.memory_info = &memory_info;
  d.event_create_flags = &event_create_flags;
  d.event_elapsed_time = &event_elapsed_time;
  d.va_granularity = &va_granularity;
  d.va_reserve = &va_reserve;
  d.va_release = &va_release;
  d.va_map = &va_map;
  d.va_unmap = &va_unmap;
  d.host_allocate = &host_allocate;
  d.host_deallocate = &host_deallocate;
  return d;
}

void initialize(const sdk::Host& host, void** state) {
  // A malformed TESSERA_SIM fails the load with a message naming the setting.
  const Config config = parse_config(std::getenv("TESSERA_SIM"));
  auto plugin = std::make_unique<Plugin>();
  plugin->sim = std::make_unique<Sim>(config, host.api());  // starts no thread: streams start at first use
  host.register_device_type(device_desc(*plugin->sim));
  register_kernels(host, *plugin->sim, plugin->kernels);
  host.log(TSR_LOG_DEBUG, ("sim plugin: " + std::to_string(config.devices) + " device(s) of " +
                           std::to_string(config.memory_mb) + " MiB, launch latency " +
                           std::to_string(config.latency_us) + " us, checker " + check_mode_name(config.check))
                              .c_str());
  *state = plugin.release();
}

void shutdown(void* state) { delete static_cast<Plugin*>(state); }

}  // namespace
}  // namespace tessera::sim

TSR_SDK_PLUGIN("sim", "0.1.0",
               "Simulated asynchronous device: worker-thread streams, events, latency, capacity, "
               "a shadow-memory checker; runs the CPU kernels",
               tessera::sim::initialize, tessera::sim::shutdown)
