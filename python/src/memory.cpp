// The caching allocator from Python (tessera/memory.h): statistics, settings,
// empty_cache, snapshots, and the Tensor methods record_stream, pin_memory and
// is_pinned. tessera/memory.py re-exports these with torch.cuda.memory's names.
#include <tessera/memory.h>
#include <tessera/stream.h>

#include <nanobind/stl/map.h>

#include "common.h"

namespace tessera::python {

namespace {
std::vector<Device> devices_of(const std::optional<std::vector<DeviceArg>>& devices) {
  std::vector<Device> out;
  if (devices)
    for (const DeviceArg& d : *devices) out.push_back(d.value_or(Device()));
  return out;
}
}  // namespace

void register_memory(nb::module_& m, nb::class_<Tensor>& cls) {
  const auto dev = [](const DeviceArg& d) { return d.value_or(Device()); };
  m.def("_set_alloc_conf", [](const std::string& conf) { set_alloc_conf(conf); }, nb::arg("conf"));
  m.def("_alloc_conf", &alloc_conf);
  m.def("_set_per_process_memory_fraction",
        [dev](double f, const DeviceArg& d) { set_per_process_memory_fraction(f, dev(d)); }, nb::arg("fraction"),
        nb::arg("device") = nb::none());
  m.def("_memory_allocated", [dev](const DeviceArg& d) { return memory_allocated(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_max_memory_allocated", [dev](const DeviceArg& d) { return max_memory_allocated(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_memory_reserved", [dev](const DeviceArg& d) { return memory_reserved(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_max_memory_reserved", [dev](const DeviceArg& d) { return max_memory_reserved(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_memory_stats", [dev](const DeviceArg& d) { return memory_stats(dev(d)); }, nb::arg("device") = nb::none());
  m.def("_reset_peak_memory_stats", [dev](const DeviceArg& d) { reset_peak_memory_stats(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_reset_accumulated_memory_stats", [dev](const DeviceArg& d) { reset_accumulated_memory_stats(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_memory_summary", [dev](const DeviceArg& d) { return memory_summary(dev(d)); },
        nb::arg("device") = nb::none());
  m.def("_empty_cache", [](const DeviceArg& d) {
    if (d) {
      empty_cache(*d);
    } else {
      empty_cache();
    }
  }, nb::arg("device") = nb::none(), nb::call_guard<nb::gil_scoped_release>());
  m.def("_record_memory_history", [dev](bool enabled, const DeviceArg& d, size_t max_entries) {
    record_memory_history(enabled, dev(d), max_entries);
  }, nb::arg("enabled"), nb::arg("device") = nb::none(), nb::arg("max_entries") = 100000);
  m.def("_memory_snapshot_pickle", [](const std::optional<std::vector<DeviceArg>>& devices) {
    const std::string bytes = memory_snapshot_pickle(devices_of(devices));
    return nb::bytes(bytes.data(), bytes.size());
  }, nb::arg("devices") = nb::none());
  m.def("_memory_snapshot_json", [](const std::optional<std::vector<DeviceArg>>& devices) {
    return memory_snapshot_json(devices_of(devices));
  }, nb::arg("devices") = nb::none());
  m.def("_dump_memory_snapshot", [](const std::string& path, const std::optional<std::vector<DeviceArg>>& devices) {
    dump_memory_snapshot(path, devices_of(devices));
  }, nb::arg("path"), nb::arg("devices") = nb::none());

  cls.def("record_stream", &Tensor::record_stream, nb::arg("stream"),
          "Marks the memory as used by work queued on `stream`: once freed, it is reused only after that work "
          "completes (docs/streams.md).")
      .def("pin_memory", [](const Tensor& t, const std::string& device_type) { return t.pin_memory(device_type); },
           nb::arg("device_type") = "",
           "A copy in pinned host memory of `device_type` ('' = the accelerator); non_blocking copies between it "
           "and that device do not wait.")
      .def("is_pinned", [](const Tensor& t, const std::string& device_type) { return t.is_pinned(device_type); },
           nb::arg("device_type") = "");
}

}  // namespace tessera::python
