// Tensor::record_stream on a device without the core's caching allocator
// (recorded_streams.h).
#include "recorded_streams.h"

#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "abi_bridge.h"

namespace tessera::recorded_streams {

std::atomic<uint32_t> g_storages{0};

namespace {
std::mutex g_mu;
std::unordered_map<const StorageImpl*, std::vector<Stream>>& table() {
  static auto* t = new std::unordered_map<const StorageImpl*, std::vector<Stream>>();  // outlives every storage
  return *t;
}

// One plugin call's error, reported; true when there was one.
bool failed(TsrError* err, const DeviceTypeEntry& e, const char* what) noexcept {
  if (err == nullptr) return false;
  std::string message;
  try {
    message = take_error_message(err);
  } catch (...) {
  }
  std::fprintf(stderr, "[tessera] freeing memory used on several streams (plugin '%s'): %s failed: %s\n",
               e.plugin_name.c_str(), what, message.c_str());
  return true;
}
}  // namespace

void add(StorageImpl& storage, const Stream& stream) {
  std::lock_guard lock(g_mu);
  auto [it, fresh] = table().try_emplace(&storage);
  for (const Stream& s : it->second)
    if (s == stream) return;
  it->second.push_back(stream);
  if (fresh) g_storages.fetch_add(1, std::memory_order_relaxed);
}

void order_free(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream free_stream) noexcept {
  std::vector<Stream> streams;
  {
    std::lock_guard lock(g_mu);
    auto it = table().find(&storage);
    if (it == table().end()) return;
    streams = std::move(it->second);
    table().erase(it);
    g_storages.fetch_sub(1, std::memory_order_relaxed);
  }
  const auto& d = e.desc;
  const int32_t index = storage.device().index();
  for (const Stream& s : streams) {
    TsrEvent ev = nullptr;
    bool ok = !failed(call_plugin([&] { return d.event_create(d.context, index, &ev); }), e, "event_create");
    ok = ok && !failed(call_plugin([&] { return d.event_record(d.context, index, ev, s.handle()); }), e,
                       "event_record");
    ok = ok && !failed(call_plugin([&] { return d.stream_wait_event(d.context, index, free_stream, ev); }), e,
                       "stream_wait_event");
    if (ev != nullptr) failed(call_plugin([&] { return d.event_destroy(d.context, index, ev); }), e, "event_destroy");
    if (!ok) failed(call_plugin([&] { return d.stream_synchronize(d.context, index, s.handle()); }), e,
                    "stream_synchronize");
  }
}

}  // namespace tessera::recorded_streams
