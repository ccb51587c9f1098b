// The public memory API (tessera/memory.h) over the devices' allocators.
#include <tessera/error.h>
#include <tessera/memory.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "../small_block_cache.h"
#include "../tensor_cache.h"
#include "alloc_config.h"
#include "device_allocators.h"
#include "snapshot.h"

namespace tessera {

namespace {
using memory::DeviceAllocator;
namespace allocators = memory::device_allocators;

// The entry of `d`, which must exist and use the core's allocator.
const DeviceTypeEntry& checked_entry(Device d, const char* what) {
  const DeviceTypeEntry& e = device_entry(d);
  TSR_CHECK(!device_registry::retired(d.type()), ValueError, what, ": device ", d.str(), ": its plugin '",
            e.plugin_name, "' was unloaded");
  TSR_CHECK(memory::uses_caching_allocator(e), ValueError, what, ": device ", d.str(), " (plugin '", e.plugin_name,
            "') does not use the core's caching allocator: ",
            e.no_storage() ? "it holds no memory" : "its plugin does not set TSR_DEVICE_CAP_CACHING_ALLOCATOR");
  TSR_CHECK(d.index() >= 0 && d.index() < e.device_count, ValueError, what, ": device ", d.str(),
            " does not exist: device type '", e.name, "' (plugin '", e.plugin_name, "') has ", e.device_count,
            " device(s)", e.unavailable_reason.empty() ? "" : " — ", e.unavailable_reason);
  return e;
}

// The allocator of `d` if one was built (null: nothing was allocated there yet).
DeviceAllocator* existing(Device d, const char* what) {
  checked_entry(d, what);
  return allocators::find(d);
}

DeviceAllocator& created(Device d, const char* what) { return allocators::get(checked_entry(d, what), d); }

int64_t stat(Device d, const char* what, const char* key) {
  DeviceAllocator* a = existing(d, what);
  if (a == nullptr) return 0;
  return a->allocator.stats_map().at(key);
}

// Snapshots of several device types in one file: each device's "device" field
// (and its segments') becomes its position in the file's "devices" list, which
// names it, so that cpu:0 and sim:0 do not share PyTorch's device_traces[0].
std::vector<memory::Snapshot> numbered(std::vector<memory::Snapshot> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].device = static_cast<int>(i);
    for (memory::SnapshotSegment& seg : out[i].segments) seg.device = static_cast<int>(i);
  }
  return out;
}

std::vector<memory::Snapshot> snapshots(const std::vector<Device>& devices) {
  std::vector<memory::Snapshot> out;
  if (devices.empty()) {
    for (DeviceAllocator* a : allocators::all())
      if (!device_registry::retired(a->device.type())) out.push_back(a->allocator.snapshot());
    return numbered(std::move(out));
  }
  std::vector<Device> seen;
  for (Device d : devices) {
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;  // named twice: once in the file
    seen.push_back(d);
    if (DeviceAllocator* a = existing(d, "memory_snapshot")) {
      out.push_back(a->allocator.snapshot());
    } else {  // nothing allocated there yet: an empty snapshot of the device
      memory::Snapshot s;
      s.device = d.index();
      s.device_name = d.str();
      s.config = memory::current_alloc_conf();
      out.push_back(std::move(s));
    }
  }
  return numbered(std::move(out));
}

void release_thread_caches() noexcept {
  TensorCache::release_thread();  // kept tensors' blocks join the small-block cache
  small_blocks::release_thread();
}
}  // namespace

void set_alloc_conf(std::string_view conf) { memory::set_alloc_conf(conf); }
std::string alloc_conf() { return memory::current_alloc_conf().to_string(); }

void set_per_process_memory_fraction(double fraction, Device device) {
  created(device, "set_per_process_memory_fraction").allocator.set_memory_fraction(fraction);
}

int64_t memory_allocated(Device d) { return stat(d, "memory_allocated", "allocated_bytes.all.current"); }
int64_t max_memory_allocated(Device d) { return stat(d, "max_memory_allocated", "allocated_bytes.all.peak"); }
int64_t memory_reserved(Device d) { return stat(d, "memory_reserved", "reserved_bytes.all.current"); }
int64_t max_memory_reserved(Device d) { return stat(d, "max_memory_reserved", "reserved_bytes.all.peak"); }

std::map<std::string, int64_t> memory_stats(Device d) {
  DeviceAllocator* a = existing(d, "memory_stats");
  return a != nullptr ? a->allocator.stats_map() : memory::DeviceStats{}.to_map();
}

void reset_peak_memory_stats(Device d) {
  if (DeviceAllocator* a = existing(d, "reset_peak_memory_stats")) a->allocator.reset_peak_stats();
}

void reset_accumulated_memory_stats(Device d) {
  if (DeviceAllocator* a = existing(d, "reset_accumulated_memory_stats")) a->allocator.reset_accumulated_stats();
}

std::string memory_summary(Device d) { return created(d, "memory_summary").allocator.summary(); }

void empty_cache(Device d) {
  DeviceAllocator* a = existing(d, "empty_cache");
  release_thread_caches();
  if (a != nullptr) a->allocator.empty_cache();
}

void empty_cache() {
  release_thread_caches();
  for (DeviceAllocator* a : allocators::all())
    if (!device_registry::retired(a->device.type())) a->allocator.empty_cache();
}

void record_memory_history(bool enabled, Device d, size_t max_entries) {
  created(d, "record_memory_history").allocator.record_history(enabled, max_entries);
}

std::string memory_snapshot_json(const std::vector<Device>& devices) {
  std::ostringstream os;
  memory::write_snapshot_json(snapshots(devices), os);
  return os.str();
}

std::string memory_snapshot_pickle(const std::vector<Device>& devices) {
  std::ostringstream os;
  memory::write_snapshot_pickle(snapshots(devices), os);
  return os.str();
}

void dump_memory_snapshot(const std::string& path, const std::vector<Device>& devices) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const std::string bytes = json ? memory_snapshot_json(devices) : memory_snapshot_pickle(devices);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  TSR_CHECK(out.good(), ValueError, "dump_memory_snapshot: cannot open '", path, "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  TSR_CHECK(out.good(), ValueError, "dump_memory_snapshot: writing ", bytes.size(), " bytes to '", path, "' failed");
}

}  // namespace tessera
