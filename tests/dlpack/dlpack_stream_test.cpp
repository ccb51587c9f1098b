// The DLPack stream hand-off on an asynchronous device (docs/dlpack.md,
// "Stream hand-off on asynchronous devices"), on the sim device: the array
// API's __dlpack__(stream=...) rule for exports, the consumer's stream value
// for imports, deferred reuse of exported memory (record_stream), and the
// refusals. Correct ordering is judged by sim's shadow-memory checker, which
// flags an unsynchronized cross-stream access when it is queued, whatever the
// timing; slow streams make the races real as well.
//
// This program sets TESSERA_SIM=devices=2,dlpack_type=12 before anything loads
// the plugins: sim registers kDLExtDev, so its tensors cross DLPack. (The
// tessera_dlpack_tests program loads another kDLExtDev plugin, hence a program
// of its own.) It reads core/src's internal stream encoding (dlpack_streams.h).
#include <gtest/gtest.h>
#include <tessera/dlpack.h>
#include <tessera/memory.h>
#include <tessera/tessera.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "dlpack_streams.h"

using namespace tessera;

namespace {

const bool kConfigured = [] { return setenv("TESSERA_SIM", "devices=2,dlpack_type=12", 1) == 0; }();

Device sim(int index = 0) {
  (void)kConfigured;
  return Device("sim:" + std::to_string(index));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A stream of `d` whose work waits `latency_us` before each launch.
Stream slow_stream(Device d, int latency_us = 200000) {
  setenv("TESSERA_SIM_STREAM_LATENCY_US", std::to_string(latency_us).c_str(), 1);
  Stream s = Stream::create(d);
  unsetenv("TESSERA_SIM_STREAM_LATENCY_US");
  return s;
}

// The array API value a consumer on `s` passes (dlpack_consumer_stream under a guard).
DLPackStream value_of(const Stream& s) {
  StreamGuard g(s);
  return dlpack_consumer_stream(s.device());
}

// 256 floats of `value`, written by work queued on `producer` (slow).
Tensor produced_on(const Stream& producer, float value) {
  StreamGuard g(producer);
  Tensor x = full({256}, 1.0f, TensorOptions().device(producer.device()));
  x.mul_(value);
  return x;
}

std::vector<float> floats(float v) { return std::vector<float>(256, v); }

class DLPackStreams : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int i = 0; i < 2; ++i) synchronize(sim(i));
  }
};

TEST_F(DLPackStreams, SimRegistersItsDLPackTypeWhenAsked) {
  Tensor x = ones({3}, TensorOptions().device(sim()));
  DLManagedTensorVersioned* m = to_dlpack_versioned(x);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLExtDev);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  Tensor y = from_dlpack(m);  // a round trip on the default stream: no hand-off needed
  EXPECT_EQ(y.device(), sim());
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  EXPECT_EQ(y.cpu().to_vector<float>(), std::vector<float>(3, 1.0f));
}

TEST_F(DLPackStreams, ConsumerStreamValueIsTheCurrentStream) {
  EXPECT_EQ(dlpack_consumer_stream(Device("cpu")), std::nullopt) << "synchronous: no stream to name";
  EXPECT_EQ(dlpack_consumer_stream(sim()), std::nullopt) << "sim's default stream is None (no encoding of its own)";
  EXPECT_TRUE(dlpack_has_async_devices()) << "sim is asynchronous and has a DLPack type here";
  Stream s = Stream::create(sim(1));
  {
    StreamGuard g(s);
    const DLPackStream v = dlpack_consumer_stream(sim(1));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(static_cast<uintptr_t>(*v), reinterpret_cast<uintptr_t>(s.handle())) << "the handle's bits";
    EXPECT_EQ(dlpack_consumer_stream(DLDevice{kDLExtDev, 1}), v);
    EXPECT_EQ(dlpack_consumer_stream(sim(0)), std::nullopt) << "another device keeps its own current stream";
  }
  EXPECT_EQ(dlpack_consumer_stream(DLDevice{kDLCPU, 0}), std::nullopt);
  EXPECT_EQ(dlpack_consumer_stream(DLDevice{kDLExtDev, 7}), std::nullopt) << "no such device: the import refuses it";
  EXPECT_EQ(dlpack_consumer_stream(DLDevice{kDLVulkan, 0}), std::nullopt);
  EXPECT_THROW(dlpack_consumer_stream(Device("sim:5")), ValueError);
}

// (a) The consumer's stream waits for the producer's work: a kernel queued
// there after the import reads the produced values, and the checker agrees.
TEST_F(DLPackStreams, ConsumerStreamWaitsForTheProducersWork) {
  Stream producer = slow_stream(sim());
  Stream consumer = Stream::create(sim());
  Tensor x = produced_on(producer, 3.0f);  // still queued behind 200 ms
  DLManagedTensorVersioned* m;
  {
    StreamGuard g(producer);
    m = to_dlpack_versioned(x, false, value_of(consumer));
  }
  StreamGuard g(consumer);
  Tensor y = from_dlpack(m);
  Tensor z = y + 1;  // on the consumer's stream: ordered after the producer's mul_
  EXPECT_EQ(z.cpu().to_vector<float>(), floats(4.0f));
  EXPECT_EQ(x.cpu().to_vector<float>(), floats(3.0f));
}

TEST_F(DLPackStreams, LegacyExportHandsOffTheSameWay) {
  Stream producer = slow_stream(sim());
  Stream consumer = Stream::create(sim());
  Tensor x = produced_on(producer, 5.0f);
  DLManagedTensor* m;
  {
    StreamGuard g(producer);
    m = to_dlpack(x, value_of(consumer));
  }
  StreamGuard g(consumer);
  Tensor y = from_dlpack(m, LegacyAccess::Writable);
  EXPECT_EQ((y * 2).cpu().to_vector<float>(), floats(10.0f));
}

// None names the default stream: a consumer on another stream is not ordered.
TEST_F(DLPackStreams, NoneOrdersTheDefaultStream) {
  Stream producer = slow_stream(sim());
  Tensor x = produced_on(producer, 2.0f);
  DLManagedTensorVersioned* m;
  {
    StreamGuard g(producer);
    m = to_dlpack_versioned(x, false, std::nullopt);
  }
  Tensor y = from_dlpack(m);  // on the default stream, which now waits for the producer
  EXPECT_EQ((y - 1).cpu().to_vector<float>(), floats(1.0f));
}

// (b) -1: nothing is synchronized; the consumer's read races the producer's
// write, which the checker reports when the read is queued.
TEST_F(DLPackStreams, NoSyncLeavesTheConsumerUnordered) {
  Stream producer = slow_stream(sim());
  Stream consumer = Stream::create(sim());
  Tensor x = produced_on(producer, 3.0f);
  DLManagedTensorVersioned* m;
  {
    StreamGuard g(producer);
    m = to_dlpack_versioned(x, false, kDLPackNoSync);
  }
  StreamGuard g(consumer);
  Tensor y = from_dlpack(m);
  try {
    Tensor z = y + 1;
    ADD_FAILURE() << "the checker did not flag a read of memory the producer's queued work writes";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "unsynchronized cross-stream access")) << e.what();
  }
  producer.synchronize();
  // Once the host waited for the producer, the consumer may read.
  EXPECT_EQ((y + 1).cpu().to_vector<float>(), floats(4.0f));
}

// The consumer's stream is Tessera's current one: nothing to order, nothing recorded.
TEST_F(DLPackStreams, SameStreamNeedsNoHandOff) {
  Stream s = slow_stream(sim(), 1000);
  Tensor x = produced_on(s, 7.0f);
  void* px = x.data_ptr();
  StreamGuard g(s);
  DLManagedTensorVersioned* m = to_dlpack_versioned(x, false, value_of(s));
  m->deleter(m);
  x = Tensor();  // no other stream recorded: the block is free on its stream at once
  Tensor w = empty({256}, TensorOptions(kFloat).device(sim()));
  EXPECT_EQ(w.data_ptr(), px);
}

// (c) A foreign consumer (it wraps the pointer itself, like CuPy) queues work
// on its stream, then calls the deleter; the producer frees its tensor. The
// hand-off recorded the consumer's stream, so the block is not reused before
// that work completes.
TEST_F(DLPackStreams, FreeingAnExportedTensorWaitsForTheConsumersStream) {
  Stream consumer = slow_stream(sim());
  Tensor x = full({256}, 1.0f, TensorOptions().device(sim()));
  void* px = x.data_ptr();
  DLManagedTensorVersioned* m = to_dlpack_versioned(x, false, value_of(consumer));
  Tensor z;
  {
    StreamGuard g(consumer);
    Tensor view = from_blob(m->dl_tensor.data, {256}, nullptr, TensorOptions(kFloat).device(sim()));
    z = view * 2;  // queued behind 200 ms
  }
  m->deleter(m);
  x = Tensor();
  Tensor w = empty({256}, TensorOptions(kFloat).device(sim()));
  EXPECT_NE(w.data_ptr(), px) << "reused while the consumer's stream still reads it";
  w.fill_(9.0f);
  consumer.synchronize();
  EXPECT_EQ(z.cpu().to_vector<float>(), floats(2.0f));
  Tensor again = empty({256}, TensorOptions(kFloat).device(sim()));
  EXPECT_EQ(again.data_ptr(), px) << "free again once the consumer's work completed";
}

// The same with -1: the block is reused at once, and the checker catches the write.
TEST_F(DLPackStreams, WithoutTheHandOffTheBlockIsReusedTooEarly) {
  Stream consumer = slow_stream(sim());
  Tensor x = full({256}, 1.0f, TensorOptions().device(sim()));
  void* px = x.data_ptr();
  DLManagedTensorVersioned* m = to_dlpack_versioned(x, false, kDLPackNoSync);
  consumer.wait_stream(current_stream(sim()));  // the consumer orders itself (its responsibility)...
  Tensor z;
  {
    StreamGuard g(consumer);
    Tensor view = from_blob(m->dl_tensor.data, {256}, nullptr, TensorOptions(kFloat).device(sim()));
    z = view * 2;
  }
  m->deleter(m);
  x = Tensor();  // ...but nothing recorded its stream on the memory
  Tensor w = empty({256}, TensorOptions(kFloat).device(sim()));
  EXPECT_EQ(w.data_ptr(), px);
  EXPECT_THROW(w.fill_(9.0f), ValueError);
  consumer.synchronize();
}

// Imports: the producer's deleter runs only after the host waited for the
// stream the import belongs to (and those record_stream named). Events
// recorded after the queued work tell, inside the deleter, whether it ran.
TEST_F(DLPackStreams, ImportedMemoryGoesBackToItsProducerAfterTesserasStreams) {
  Stream consumer = slow_stream(sim(), 100000);
  Stream other = slow_stream(sim(), 150000);
  for (const bool recorded : {false, true}) {
    Tensor x = full({256}, 1.0f, TensorOptions().device(sim()));
    struct Seen {
      DLManagedTensorVersioned* inner = nullptr;
      Event consumer_done, other_done;  // never recorded: complete
      std::atomic<int> calls{0};
      bool passed = false;
    };
    Seen seen;
    seen.inner = to_dlpack_versioned(x, false, value_of(consumer));  // produced on the default stream
    DLManagedTensorVersioned wrapper = *seen.inner;
    wrapper.manager_ctx = &seen;
    wrapper.deleter = [](DLManagedTensorVersioned* self) {
      auto* s = static_cast<Seen*>(self->manager_ctx);
      s->passed = s->consumer_done.query() && s->other_done.query();
      s->calls.fetch_add(1);
      s->inner->deleter(s->inner);
    };
    Tensor z, u;
    {
      StreamGuard g(consumer);
      Tensor y = from_dlpack(&wrapper);
      z = y * 2;  // queued behind 100 ms
      seen.consumer_done.record(consumer);
      if (recorded) {
        other.wait_stream(consumer);
        StreamGuard g2(other);
        u = y + 1;  // behind z, then 150 ms
        y.record_stream(other);
        seen.other_done.record(other);
      }
      EXPECT_FALSE(seen.consumer_done.query()) << "the work should still be queued here";
    }  // y, the last tensor of the import, goes here
    EXPECT_EQ(seen.calls.load(), 1);
    EXPECT_TRUE(seen.passed) << (recorded ? "with" : "without") << " record_stream";
    StreamGuard g(consumer);
    EXPECT_EQ(z.cpu().to_vector<float>(), floats(2.0f));
  }
}

// Re-exporting an import to a consumer's stream records that bare handle on
// the import, so the import's producer gets its memory back only after the
// consumer's work queued by then (here a foreign consumer that wraps the
// pointer itself and calls the deleter at once).
TEST_F(DLPackStreams, ReExportingAnImportWaitsForTheNewConsumersStream) {
  Stream consumer = slow_stream(sim(), 150000);
  Tensor x = full({256}, 1.0f, TensorOptions().device(sim()));
  struct Seen {
    DLManagedTensorVersioned* inner = nullptr;
    Event consumer_done;
    bool passed = false;
  };
  Seen seen;
  seen.inner = to_dlpack_versioned(x);
  DLManagedTensorVersioned wrapper = *seen.inner;
  wrapper.manager_ctx = &seen;
  wrapper.deleter = [](DLManagedTensorVersioned* self) {
    auto* s = static_cast<Seen*>(self->manager_ctx);
    s->passed = s->consumer_done.query();
    s->inner->deleter(s->inner);
  };
  Tensor y = from_dlpack(&wrapper);  // on the default stream
  DLManagedTensorVersioned* again = to_dlpack_versioned(y, false, value_of(consumer));
  Tensor z;
  {
    StreamGuard g(consumer);
    Tensor view = from_blob(again->dl_tensor.data, {256}, nullptr, TensorOptions(kFloat).device(sim()));
    z = view * 2;  // queued behind 150 ms
    seen.consumer_done.record(consumer);
  }
  again->deleter(again);
  EXPECT_FALSE(seen.consumer_done.query());
  y = Tensor();  // the import's last tensor: its producer's deleter runs now
  EXPECT_TRUE(seen.passed) << "the producer got its memory back while the consumer's stream still read it";
  StreamGuard g(consumer);
  EXPECT_EQ(z.cpu().to_vector<float>(), floats(2.0f));
}

// (d) Refusals, with the value, the device and the plugin named.
TEST_F(DLPackStreams, BadStreamValuesAreRefused) {
  Tensor x = ones({4}, TensorOptions().device(sim()));
  try {
    (void)to_dlpack_versioned(x, false, -2);
    ADD_FAILURE() << "stream=-2 was accepted";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "stream=-2")) << e.what();
    EXPECT_TRUE(contains(e.what(), "sim:0")) << e.what();
    EXPECT_TRUE(contains(e.what(), "plugin 'sim'")) << e.what();
  }
  EXPECT_THROW((void)to_dlpack(x, -7), ValueError);
  try {
    check_dlpack_stream(sim(), -3, "__dlpack__");
    ADD_FAILURE() << "stream=-3 passed the check";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("__dlpack__: stream=-3", 0), 0u) << e.what();
  }
  check_dlpack_stream(sim(), kDLPackNoSync);
  check_dlpack_stream(sim(), std::nullopt);

  // Synchronous devices: None and -1 only; the export leaves nothing behind.
  Tensor c = ones({4});
  try {
    (void)to_dlpack_versioned(c, false, 5);
    ADD_FAILURE() << "stream=5 was accepted for cpu";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "stream=5")) << e.what();
    EXPECT_TRUE(contains(e.what(), "synchronous")) << e.what();
    EXPECT_TRUE(contains(e.what(), "plugin 'cpu'")) << e.what();
  }
  EXPECT_THROW((void)to_dlpack(c, 0), ValueError);
  for (const DLPackStream ok : {DLPackStream{}, DLPackStream{kDLPackNoSync}}) {
    DLManagedTensorVersioned* m = to_dlpack_versioned(c, false, ok);
    m->deleter(m);
    DLManagedTensor* l = to_dlpack(c, ok);
    l->deleter(l);
  }
}

// The array API's per-device encoding (the default mapping of docs/dlpack.md).
TEST(DLPackStreamEncoding, CudaRocmAndHandleBits) {
  namespace ds = tessera::dlpack_streams;
  auto refused = [](int32_t type, int64_t v, const char* part) {
    try {
      (void)ds::handle_of(type, v, "test", "device x");
      ADD_FAILURE() << "type " << type << " accepted stream " << v;
    } catch (const ValueError& e) {
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
      EXPECT_TRUE(contains(e.what(), "test: stream=" + std::to_string(v) + " is refused for device x")) << e.what();
    }
  };
  EXPECT_EQ(ds::handle_of(kDLCUDA, std::nullopt, "t", "d"), nullptr);
  refused(kDLCUDA, 0, "ambiguous");
  EXPECT_EQ(ds::handle_of(kDLCUDA, 1, "t", "d"), nullptr) << "legacy default stream = the NULL stream";
  EXPECT_EQ(ds::handle_of(kDLCUDA, 2, "t", "d"), reinterpret_cast<TsrStream>(2)) << "cudaStreamPerThread";
  EXPECT_EQ(ds::handle_of(kDLCUDA, 0x7f001000, "t", "d"), reinterpret_cast<TsrStream>(0x7f001000));
  EXPECT_EQ(ds::handle_of(kDLROCM, 0, "t", "d"), nullptr);
  refused(kDLROCM, 1, "ROCm");
  refused(kDLROCM, 2, "ROCm");
  EXPECT_EQ(ds::handle_of(kDLROCM, 3, "t", "d"), reinterpret_cast<TsrStream>(3));
  EXPECT_EQ(ds::handle_of(kDLExtDev, 0, "t", "d"), nullptr);
  EXPECT_EQ(ds::handle_of(kDLExtDev, 1, "t", "d"), reinterpret_cast<TsrStream>(1));
  for (int32_t type : {int32_t(kDLCUDA), int32_t(kDLROCM), int32_t(kDLExtDev)}) refused(type, -2, "None, -1");
  EXPECT_EQ(ds::value_of(kDLCUDA, nullptr), 1);
  EXPECT_EQ(ds::value_of(kDLROCM, nullptr), 0);
  EXPECT_EQ(ds::value_of(kDLExtDev, nullptr), std::nullopt);
  EXPECT_EQ(ds::value_of(kDLCUDA, reinterpret_cast<TsrStream>(0x5000)), 0x5000);
  EXPECT_EQ(ds::value_of(kDLExtDev, reinterpret_cast<TsrStream>(0x5000)), 0x5000);
}

}  // namespace
