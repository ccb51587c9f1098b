// tessera.Stream, tessera.Event and the current-stream functions
// (tessera/stream.h); the `with tessera.stream(s):` context manager is Python
// (tessera/streams.py) over _set_current_stream.
#include <tessera/stream.h>

#include "common.h"

namespace tessera::python {

void register_streams(nb::module_& m) {
  nb::class_<Stream>(m, "Stream", "A queue of work on a device (tessera/stream.h, docs/streams.md).")
      .def("__init__", [](Stream* self, const DeviceArg& device) {
        new (self) Stream(Stream::create(device.value_or(Device())));
      }, nb::arg("device") = nb::none(), "A new stream on an asynchronous device (ValueError on a synchronous one).")
      .def_static("default", [](const DeviceArg& device) { return Stream::default_stream(device.value_or(Device())); },
                  nb::arg("device") = nb::none(), "The default stream of a device.")
      .def_prop_ro("device", &Stream::device)
      .def_prop_ro("id", &Stream::id, "0 for a default stream, a unique number for a created one.")
      .def_prop_ro("is_default", &Stream::is_default)
      .def("query", &Stream::query, nb::call_guard<nb::gil_scoped_release>(),
           "Whether all work queued so far has completed (never blocks).")
      .def("synchronize", &Stream::synchronize, nb::call_guard<nb::gil_scoped_release>(),
           "Blocks until all work queued so far has completed.")
      .def("wait_event", &Stream::wait_event, nb::arg("event"),
           "Work queued from now on waits for the event (the host does not block).")
      .def("wait_stream", &Stream::wait_stream, nb::arg("stream"),
           "Work queued from now on waits for the work queued on `stream` so far.")
      .def("record_event", [](const Stream& s, std::optional<Event> event) {
        if (!event) return s.record_event();
        event->record(s);
        return *event;
      }, nb::arg("event") = nb::none(), "Records `event` (a new one if None) at the end of this stream; returns it.")
      .def("__eq__", [](const Stream& a, const Stream& b) { return a == b; })
      .def("__eq__", [](const Stream&, nb::handle) { return false; })
      .def("__hash__", [](const Stream& s) { return std::hash<uint64_t>()(s.id()) ^ (s.device().type() * 65536 + s.device().index()); })
      .def("__repr__", &Stream::str);

  nb::class_<Event>(m, "Event", "A marker in a stream's work (tessera/stream.h).")
      .def(nb::init<bool>(), nb::arg("enable_timing") = false)
      .def("record", [](Event& e, std::optional<Stream> stream) {
        if (!stream) {
          if (!e.recorded()) throw nb::value_error("Event.record(): pass the stream to record on (the event has no device yet)");
          stream = current_stream(e.device());
        }
        e.record(*stream);
      }, nb::arg("stream") = nb::none(),
         "Records the event on `stream` (None: the current stream of the event's device, once it has one).")
      .def("query", &Event::query, nb::call_guard<nb::gil_scoped_release>())
      .def("synchronize", &Event::synchronize, nb::call_guard<nb::gil_scoped_release>())
      .def("wait", [](const Event& e, std::optional<Stream> stream) {
        e.wait(stream ? *stream : current_stream(e.recorded() ? e.device() : Device()));
      }, nb::arg("stream") = nb::none())
      .def("elapsed_time", &Event::elapsed_time, nb::arg("end_event"),
           "Milliseconds from this event to end_event (both with enable_timing=True, recorded and completed).")
      .def_prop_ro("recorded", &Event::recorded)
      .def_prop_ro("enable_timing", &Event::timing)
      .def_prop_ro("device", &Event::device);

  m.def("current_stream", [](const DeviceArg& device) { return current_stream(device.value_or(Device())); },
        nb::arg("device") = nb::none(), "This thread's current stream of a device.");
  m.def("default_stream", [](const DeviceArg& device) { return Stream::default_stream(device.value_or(Device())); },
        nb::arg("device") = nb::none(), "The default stream of a device.");
  m.def("_set_current_stream", &set_current_stream, nb::arg("stream"),
        "Makes `stream` current for its device on this thread; returns the previous one.");
  m.def("synchronize", [](const DeviceArg& device) { synchronize(device.value_or(Device())); },
        nb::arg("device") = nb::none(), nb::call_guard<nb::gil_scoped_release>(),
        "Blocks until all work on a device has completed.");
}

}  // namespace tessera::python
