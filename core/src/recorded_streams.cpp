// Tensor::record_stream on a device without the core's caching allocator
// (recorded_streams.h).
#include "recorded_streams.h"

#include <cstdio>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "abi_bridge.h"

namespace tessera::recorded_streams {

std::atomic<uint32_t> g_storages{0};

namespace {
// A stream a storage is used on: a Tessera stream (kept alive) or a bare handle.
struct Use {
  TsrStream handle;
  std::optional<Stream> keep;
};
using Table = std::unordered_map<const StorageImpl*, std::vector<Use>>;

std::mutex g_mu;
Table& table() {
  static auto* t = new Table();  // outlives every storage
  return *t;
}

void add_use(StorageImpl& storage, TsrStream handle, const Stream* stream) {
  std::lock_guard lock(g_mu);
  auto [it, fresh] = table().try_emplace(&storage);
  for (Use& u : it->second) {
    if (u.handle != handle) continue;
    if (stream != nullptr && !u.keep) u.keep = *stream;
    return;
  }
  it->second.push_back(Use{handle, stream != nullptr ? std::optional<Stream>(*stream) : std::nullopt});
  if (fresh) g_storages.fetch_add(1, std::memory_order_relaxed);
}

std::vector<Use> take(const StorageImpl& storage) {
  std::lock_guard lock(g_mu);
  auto it = table().find(&storage);
  if (it == table().end()) return {};
  std::vector<Use> uses = std::move(it->second);
  table().erase(it);
  g_storages.fetch_sub(1, std::memory_order_relaxed);
  return uses;
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

void add(StorageImpl& storage, const Stream& stream) { add_use(storage, stream.handle(), &stream); }

void add_handle(StorageImpl& storage, TsrStream stream) { add_use(storage, stream, nullptr); }

void order_free(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream free_stream) noexcept {
  const std::vector<Use> uses = take(storage);
  const auto& d = e.desc;
  const int32_t index = storage.device().index();
  for (const Use& u : uses) {
    TsrEvent ev = nullptr;
    bool ok = !failed(call_plugin([&] { return d.event_create(d.context, index, &ev); }), e, "event_create");
    ok = ok && !failed(call_plugin([&] { return d.event_record(d.context, index, ev, u.handle); }), e,
                       "event_record");
    ok = ok && !failed(call_plugin([&] { return d.stream_wait_event(d.context, index, free_stream, ev); }), e,
                       "stream_wait_event");
    if (ev != nullptr) failed(call_plugin([&] { return d.event_destroy(d.context, index, ev); }), e, "event_destroy");
    if (!ok) failed(call_plugin([&] { return d.stream_synchronize(d.context, index, u.handle); }), e,
                    "stream_synchronize");
  }
}

void synchronize_all(StorageImpl& storage, const DeviceTypeEntry& e, TsrStream own) noexcept {
  const std::vector<Use> uses = any() ? take(storage) : std::vector<Use>{};
  const auto& d = e.desc;
  const int32_t index = storage.device().index();
  failed(call_plugin([&] { return d.stream_synchronize(d.context, index, own); }), e, "stream_synchronize");
  for (const Use& u : uses)
    if (u.handle != own)
      failed(call_plugin([&] { return d.stream_synchronize(d.context, index, u.handle); }), e, "stream_synchronize");
}

}  // namespace tessera::recorded_streams
