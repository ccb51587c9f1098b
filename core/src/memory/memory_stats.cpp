// memory/memory_stats.cpp — DeviceStats resets and flat view.
#include "memory_stats.h"

namespace tessera::memory {
namespace {

template <typename F>
void for_each_array(DeviceStats& s, F f) {
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                       &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& st : *a) f(st);
  f(s.oversize_allocations);
  f(s.oversize_segments);
}

void put(std::map<std::string, int64_t>& m, const std::string& prefix, const Stat& s) {
  m[prefix + ".current"] = s.current;
  m[prefix + ".peak"] = s.peak;
  m[prefix + ".allocated"] = s.allocated;
  m[prefix + ".freed"] = s.freed;
}

}  // namespace

void DeviceStats::reset_peak() noexcept {
  for_each_array(*this, [](Stat& s) { s.reset_peak(); });
}

void DeviceStats::reset_accumulated() noexcept {
  for_each_array(*this, [](Stat& s) { s.reset_accumulated(); });
  num_alloc_retries = num_ooms = num_sync_all_streams = num_device_alloc = num_device_free = 0;
}

std::map<std::string, int64_t> DeviceStats::to_map() const {
  std::map<std::string, int64_t> m;
  static const char* const kPools[3] = {"all", "small_pool", "large_pool"};
  const std::pair<const char*, const StatArray*> arrays[] = {
      {"allocation", &allocation},         {"segment", &segment},
      {"active", &active},                 {"inactive_split", &inactive_split},
      {"allocated_bytes", &allocated_bytes}, {"reserved_bytes", &reserved_bytes},
      {"active_bytes", &active_bytes},     {"inactive_split_bytes", &inactive_split_bytes},
      {"requested_bytes", &requested_bytes}};
  for (const auto& [name, arr] : arrays)
    for (int p = 0; p < 3; ++p) put(m, std::string(name) + "." + kPools[p], (*arr)[p]);
  m["num_alloc_retries"] = num_alloc_retries;
  m["num_ooms"] = num_ooms;
  m["num_sync_all_streams"] = num_sync_all_streams;
  m["num_device_alloc"] = num_device_alloc;
  m["num_device_free"] = num_device_free;
  m["max_split_size"] = max_split_size;
  put(m, "oversize_allocations", oversize_allocations);
  put(m, "oversize_segments", oversize_segments);
  return m;
}

}  // namespace tessera::memory
