// Streams and events (tessera/stream.h, docs/streams.md) on synchronous
// devices, and the host side of TsrKernelCall.workspace and of the ABI 1.2
// slot-group checks (through tests/plugins/workspace_plugin.cpp). The same
// rules on an asynchronous device are tested with the sim plugin.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <string>
#include <thread>

using namespace tessera;

namespace {

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

std::string wsdev_description() {
  for (const DeviceTypeSummary& t : device_types())
    if (t.name == "wsdev" && !t.device_descriptions.empty()) return t.device_descriptions[0];
  return "(wsdev not loaded)";
}

void load_workspace_plugin() {
  static const bool loaded = [] {
    load_plugin(TSRTEST_WORKSPACE);
    return true;
  }();
  (void)loaded;
}

}  // namespace

TEST(Streams, ASynchronousDeviceHasOnlyItsDefaultStream) {
  const Stream s = Stream::default_stream(Device("cpu"));
  EXPECT_TRUE(s.is_default());
  EXPECT_EQ(s.id(), 0u);
  EXPECT_EQ(s.handle(), nullptr);
  EXPECT_EQ(s, current_stream(Device("cpu")));
  EXPECT_EQ(s.str(), "Stream(cpu:0, default)");
  EXPECT_TRUE(s.query());
  s.synchronize();
  s.wait_stream(s);
  synchronize(Device("cpu"));
  const std::string msg = error_of<ValueError>([] { Stream::create(Device("cpu")); });
  EXPECT_NE(msg.find("Stream.create: device cpu:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is synchronous: it has only its default stream"), std::string::npos) << msg;
  EXPECT_NE(error_of<ValueError>([] { Stream::default_stream(Device("cpu:3")); }).find("does not exist"),
            std::string::npos);
  const std::string cross = error_of<ValueError>([&] { s.wait_stream(Stream::default_stream(Device("meta"))); });
  EXPECT_NE(cross.find("wait_stream: Stream(cpu:0, default) cannot wait for Stream(meta:0, default)"), std::string::npos)
      << cross;
}

TEST(Streams, CurrentStreamIsPerDeviceAndRestoredByTheGuard) {
  const Stream cpu = current_stream(Device("cpu"));
  {
    StreamGuard g(Stream::default_stream(Device("meta")));
    EXPECT_EQ(current_stream(Device("meta")).device(), Device("meta"));
    EXPECT_EQ(current_stream(Device("cpu")), cpu);
  }
  const Stream previous = set_current_stream(Stream::default_stream(Device("cpu")));
  EXPECT_TRUE(previous.is_default());
}

TEST(Streams, EventsOnASynchronousDeviceCompleteWhenRecordedAndTimeWithTheHostClock) {
  Event never;
  EXPECT_FALSE(never.recorded());
  EXPECT_TRUE(never.query());  // an event never recorded counts as complete
  never.synchronize();
  EXPECT_NE(error_of<ValueError>([&] { never.device(); }).find("never recorded"), std::string::npos);

  Event start(true), end(true);
  const Stream s = current_stream(Device("cpu"));
  start.record(s);
  const Tensor x = ones({256, 256});
  const float total = matmul(x, x).sum().item().to_double();
  end.record(s);
  EXPECT_EQ(total, 256.0f * 256 * 256);
  EXPECT_TRUE(end.query());
  end.synchronize();
  const double ms = start.elapsed_time(end);
  EXPECT_GE(ms, 0.0);
  EXPECT_EQ(start.device(), Device("cpu"));
  // Recorded on cpu: it cannot be recorded on another device later.
  const std::string msg = error_of<ValueError>([&] { start.record(Stream::default_stream(Device("meta"))); });
  EXPECT_NE(msg.find("the event belongs to cpu:0"), std::string::npos) << msg;
  Event untimed;
  untimed.record(s);
  EXPECT_NE(error_of<ValueError>([&] { untimed.elapsed_time(end); }).find("enable_timing"), std::string::npos);
  Event unrecorded(true);
  EXPECT_NE(error_of<ValueError>([&] { start.elapsed_time(unrecorded); }).find("recorded first"), std::string::npos);
  const Event e = s.record_event();
  EXPECT_TRUE(e.recorded());
  s.wait_event(e);
}

TEST(Streams, CurrentStreamsAreThreadLocal) {
  const Stream meta = Stream::default_stream(Device("meta"));
  StreamGuard g(meta);
  Stream seen;
  std::thread other([&] { seen = current_stream(Device("meta")); });
  other.join();
  EXPECT_TRUE(seen.is_default());
  EXPECT_EQ(seen.device(), Device("meta"));
}

TEST(KernelWorkspace, AKernelGetsScratchMemoryThatIsFreedWhenItReturns) {
  load_workspace_plugin();
  const Tensor a = arange(0, 1000, 1, kFloat).to(Device("wsdev"));
  const Tensor b = full({1000}, 0.5, kFloat).to(Device("wsdev"));
  EXPECT_EQ(wsdev_description().rfind("live 2", 0), 0u) << wsdev_description();
  Tensor c = add(a, b);  // the plugin's kernel checks the host's refusals itself
  EXPECT_EQ(wsdev_description().rfind("live 3", 0), 0u) << wsdev_description();  // a, b, c: no workspace left
  const std::vector<float> got = c.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], float(i) + 0.5f) << i;
}

TEST(KernelWorkspace, TheHostRefusesPartialSlotGroupsAndAsyncDevicesWithoutEvents) {
  load_workspace_plugin();
  const std::string d = wsdev_description();
  const std::string invalid = std::to_string(TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(d.find("async_without_events=" + invalid), std::string::npos) << d;
  EXPECT_NE(d.find("(is ASYNC but lacks a stream, event or device_syn"), std::string::npos) << d;
  EXPECT_NE(d.find("partial_va=" + invalid), std::string::npos) << d;
  EXPECT_NE(d.find("(provides 1 of the 5 expandable-segment slots (va"), std::string::npos) << d;
  EXPECT_NE(d.find("partial_host=" + invalid), std::string::npos) << d;
  EXPECT_NE(d.find("(provides one of host_allocate and host_deallocat"), std::string::npos) << d;
}
