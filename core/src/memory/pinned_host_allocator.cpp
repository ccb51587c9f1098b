// The cache of pinned host memory (pinned_host_allocator.h).
#include "pinned_host_allocator.h"

#include <tessera/error.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>

#include "../abi_bridge.h"
#include "caching_allocator.h"

namespace tessera::memory {

namespace {
void report(const DeviceTypeEntry& e, const char* what, TsrError* err) noexcept {
  if (err == nullptr) return;
  std::string message;
  try {
    message = take_error_message(err);
  } catch (...) {
  }
  std::fprintf(stderr, "[tessera] pinned memory of '%s' (plugin '%s'): %s failed: %s\n", e.name.c_str(),
               e.plugin_name.c_str(), what, message.c_str());
}

void raise(int64_t& cur, int64_t& peak, int64_t by) {
  cur += by;
  peak = std::max(peak, cur);
}
}  // namespace

size_t PinnedHostAllocator::round_size(size_t nbytes) noexcept {
  return nbytes <= 512 ? 512 : std::bit_ceil(nbytes);
}

bool PinnedHostAllocator::uses_done(Block& b) {
  const auto& d = entry_.desc;
  while (!b.uses.empty()) {
    const Use u = b.uses.back();
    int32_t done = 0;
    if (TsrError* err = call_plugin([&] { return d.event_query(d.context, u.device_index, u.event, &done); }))
      throw_abi_error(err, detail::str("pinned memory of '", entry_.name, "': querying a copy's event (plugin '",
                                       entry_.plugin_name, "')"));
    if (done == 0) return false;
    report(entry_, "event_destroy", call_plugin([&] { return d.event_destroy(d.context, u.device_index, u.event); }));
    b.uses.pop_back();
  }
  return true;
}

void PinnedHostAllocator::wait_uses(Block& b) noexcept {
  const auto& d = entry_.desc;
  for (const Use& u : b.uses) {
    report(entry_, "event_synchronize",
           call_plugin([&] { return d.event_synchronize(d.context, u.device_index, u.event); }));
    report(entry_, "event_destroy", call_plugin([&] { return d.event_destroy(d.context, u.device_index, u.event); }));
  }
  b.uses.clear();
}

void PinnedHostAllocator::release_block(Block* b) noexcept {
  wait_uses(*b);
  try {
    entry_.desc.host_deallocate(entry_.desc.context, b->ptr, b->size);
  } catch (...) {
    std::fprintf(stderr, "[tessera] plugin %s: host_deallocate threw a C++ exception across the C ABI\n",
                 entry_.plugin_name.c_str());
  }
  blocks_.erase(b->ptr);
  reserved_ -= static_cast<int64_t>(b->size);
  ++num_host_free_;
  delete b;
}

void PinnedHostAllocator::poll_pending() {
  for (size_t i = 0; i < pending_.size();) {
    Block* b = pending_[i];
    if (!uses_done(*b)) {
      ++i;
      continue;
    }
    pending_[i] = pending_.back();
    pending_.pop_back();
    free_.emplace(b->size, b);
  }
}

size_t PinnedHostAllocator::release_free_blocks() noexcept {
  for (Block* b : pending_) {
    wait_uses(*b);
    free_.emplace(b->size, b);
  }
  pending_.clear();
  size_t bytes = 0;
  for (auto& [size, b] : free_) {
    bytes += size;
    release_block(b);
  }
  free_.clear();
  return bytes;
}

void* PinnedHostAllocator::host_allocate(size_t size, std::string* oom_message) {
  void* ptr = nullptr;
  const auto& d = entry_.desc;
  TsrError* err = call_plugin([&] { return d.host_allocate(d.context, size, &ptr); });
  if (err == nullptr) return ptr;
  if (err->code != TSR_ERROR_OUT_OF_MEMORY)
    throw_abi_error(err, detail::str("allocating ", size, " bytes of pinned host memory of '", entry_.name,
                                     "' (plugin '", entry_.plugin_name, "')"));
  *oom_message = take_error_message(err);
  return nullptr;
}

void* PinnedHostAllocator::allocate(size_t nbytes) {
  if (nbytes == 0 || nbytes > (size_t{1} << 62))
    throw OutOfMemoryError(detail::str("pinned host memory of '", entry_.name, "': cannot allocate ", nbytes,
                                       " bytes"));
  const size_t size = round_size(nbytes);
  std::lock_guard lock(mu_);
  TSR_CHECK(!retired_, UnavailableError, "pinned host memory of '", entry_.name, "': its plugin '",
            entry_.plugin_name, "' was unloaded");
  poll_pending();
  Block* b = nullptr;
  if (auto it = free_.find(size); it != free_.end()) {
    b = it->second;
    free_.erase(it);
  } else {
    std::string oom;
    void* ptr = host_allocate(size, &oom);
    size_t released = 0;
    if (ptr == nullptr) {
      released = release_free_blocks();
      ptr = host_allocate(size, &oom);
    }
    if (ptr == nullptr)
      throw OutOfMemoryError(detail::str(
          "Tessera out of pinned host memory of '", entry_.name, "' (plugin '", entry_.plugin_name,
          "'): tried to allocate ", format_bytes(size), " (", nbytes, " bytes asked); pinned memory in use: ",
          format_bytes(static_cast<uint64_t>(allocated_)), "; the cache returned ", format_bytes(released),
          " of free blocks and retried. The plugin says: \"", oom, "\"."));
    b = new Block{ptr, size, false, {}};
    blocks_.emplace(ptr, b);
    raise(reserved_, reserved_peak_, static_cast<int64_t>(size));
    ++num_host_alloc_;
  }
  b->allocated = true;
  raise(allocated_, allocated_peak_, static_cast<int64_t>(size));
  raise(allocations_, allocations_peak_, 1);
  return b->ptr;
}

void PinnedHostAllocator::free(void* ptr) noexcept {
  std::lock_guard lock(mu_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end() || !it->second->allocated) {
    std::fprintf(stderr, "[tessera] pinned memory of '%s': free of %p, which is not a live block\n",
                 entry_.name.c_str(), ptr);
    return;
  }
  Block* b = it->second;
  b->allocated = false;
  allocated_ -= static_cast<int64_t>(b->size);
  --allocations_;
  if (retired_) {  // the plugin is going: give it back now (after its copies)
    release_block(b);
    return;
  }
  bool done = false;
  try {
    done = uses_done(*b);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[tessera] %s\n", e.what());
  }
  if (done) {
    free_.emplace(b->size, b);
  } else {
    pending_.push_back(b);
  }
}

void PinnedHostAllocator::record_use(void* ptr, int32_t device_index, TsrStream stream) {
  std::lock_guard lock(mu_);
  auto it = blocks_.find(ptr);
  TSR_CHECK(it != blocks_.end() && it->second->allocated, ValueError, "pinned memory of '", entry_.name, "': ", ptr,
            " is not a live pinned block");
  const auto& d = entry_.desc;
  TsrEvent ev = nullptr;
  if (TsrError* err = call_plugin([&] { return d.event_create(d.context, device_index, &ev); }))
    throw_abi_error(err, detail::str("pinned memory of '", entry_.name, "': creating an event (plugin '",
                                     entry_.plugin_name, "')"));
  if (TsrError* err = call_plugin([&] { return d.event_record(d.context, device_index, ev, stream); })) {
    report(entry_, "event_destroy", call_plugin([&] { return d.event_destroy(d.context, device_index, ev); }));
    throw_abi_error(err, detail::str("pinned memory of '", entry_.name, "': recording a copy's event (plugin '",
                                     entry_.plugin_name, "')"));
  }
  it->second->uses.push_back(Use{device_index, ev});
}

void PinnedHostAllocator::empty_cache() noexcept {
  std::lock_guard lock(mu_);
  release_free_blocks();
}

void PinnedHostAllocator::retire() noexcept {
  std::lock_guard lock(mu_);
  retired_ = true;
  release_free_blocks();
}

std::map<std::string, int64_t> PinnedHostAllocator::stats() const {
  std::lock_guard lock(mu_);
  return {{"allocations.current", allocations_},      {"allocations.peak", allocations_peak_},
          {"allocated_bytes.current", allocated_},     {"allocated_bytes.peak", allocated_peak_},
          {"reserved_bytes.current", reserved_},       {"reserved_bytes.peak", reserved_peak_},
          {"num_host_alloc", num_host_alloc_},         {"num_host_free", num_host_free_}};
}

namespace pinned_allocators {
namespace {
std::atomic<PinnedHostAllocator*> g_allocators[kMaxDeviceTypes] = {};
std::mutex g_create_mu;
}  // namespace

PinnedHostAllocator& get(const DeviceTypeEntry& e) {
  if (PinnedHostAllocator* a = g_allocators[e.id].load(std::memory_order_acquire)) return *a;
  std::lock_guard lock(g_create_mu);
  PinnedHostAllocator* a = g_allocators[e.id].load(std::memory_order_acquire);
  if (a == nullptr) {
    a = new PinnedHostAllocator(e);  // never deleted (see the header)
    g_allocators[e.id].store(a, std::memory_order_release);
  }
  return *a;
}

PinnedHostAllocator* find(DeviceTypeId type) noexcept {
  return type < kMaxDeviceTypes ? g_allocators[type].load(std::memory_order_acquire) : nullptr;
}

void retire(DeviceTypeId type) noexcept {
  if (PinnedHostAllocator* a = find(type)) a->retire();
}
}  // namespace pinned_allocators

}  // namespace tessera::memory
