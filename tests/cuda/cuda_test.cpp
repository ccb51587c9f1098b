// The CUDA plugin on a real GPU (issue 17 point 6), through the public C++ API:
// device listing, streams and events, record_stream across streams,
// asynchronous copies with pinned memory, out of memory on the real device,
// expandable segments, the pinned cache, DLPack with kDLCUDA, Philox numbers
// equal to cpu's, and training an MLP and a small CNN to cpu's results.
// The op library itself is proven by the conformance kit
// (`tessera-plugin-test libtessera-cuda.so`); here a few ops stand for it.
//
// Without a usable GPU (no plugin, no driver, no device) every test skips
// and says why. ctest runs each test in its own process, so the allocator
// settings a test makes (expandable segments) apply from its first allocation.
#include <gtest/gtest.h>
#include <tessera/dlpack.h>
#include <tessera/memory.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/plugin.h>
#include <tessera/tessera.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_kernels.h"

using namespace tessera;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
const Device kCpu("cpu");

// The reason no CUDA device can be used, or "" when one can.
std::string unavailable() {
  for (const DeviceTypeSummary& t : device_types())
    if (t.name == "cuda")
      return t.device_count > 0 ? std::string()
                                : "no CUDA device: " + (t.unavailable_reason.empty() ? "none found" : t.unavailable_reason);
  return "the CUDA plugin is not loaded (built only where the CUDA toolkit is found)";
}

#define REQUIRE_GPU()                                 \
  do {                                                \
    const std::string why = unavailable();            \
    if (!why.empty()) GTEST_SKIP() << why;            \
  } while (0)

Device gpu(int index = 0) { return Device("cuda:" + std::to_string(index)); }

int gpu_count() {
  for (const DeviceTypeSummary& t : device_types())
    if (t.name == "cuda") return t.device_count;
  return 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

::testing::AssertionResult close_to(const Tensor& want, const Tensor& got, double rtol = 1e-5, double atol = 1e-6) {
  const Tensor g = got.cpu();
  if (g.sizes().vec() != want.sizes().vec() || g.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << "shape or dtype differ";
  if (!allclose(want.to(kDouble), g.to(kDouble), rtol, atol))
    return ::testing::AssertionFailure() << "max abs difference " << (want.to(kDouble) - g.to(kDouble)).abs().max().item().to_double();
  return ::testing::AssertionSuccess();
}

bool same_bits(const Tensor& want, const Tensor& got) {
  const Tensor a = want.contiguous(), b = got.cpu().contiguous();
  return a.scalar_type() == b.scalar_type() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

int64_t stat(Device d, const std::string& key) { return memory_stats(d).at(key); }

}  // namespace

TEST(CudaDevice, ListedWithNameMemoryAndComputeCapability) {
  REQUIRE_GPU();
  for (const DeviceTypeSummary& t : device_types()) {
    if (t.name != "cuda") continue;
    EXPECT_EQ(t.dlpack_device_type, kDLCUDA);
    ASSERT_EQ(static_cast<int>(t.device_descriptions.size()), t.device_count);
    EXPECT_TRUE(contains(t.device_descriptions[0], "compute capability")) << t.device_descriptions[0];
    EXPECT_TRUE(contains(t.device_descriptions[0], "SMs")) << t.device_descriptions[0];
  }
  EXPECT_TRUE(contains(info_text(), "cuda")) << info_text();
}

TEST(CudaDevice, EveryDtypeRoundTripsThroughTheDevice) {
  REQUIRE_GPU();
  for (ScalarType t : {kBool, kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble}) {
    const Tensor x = (arange(1000, TensorOptions(kDouble)) * 0.75 - 300).to(t);
    EXPECT_TRUE(same_bits(x, x.to(gpu()))) << dtype_name(t);
    // A strided view goes and comes back by its values.
    const Tensor v = x.view({10, 100}).transpose(0, 1).narrow(0, 3, 50);
    EXPECT_TRUE(same_bits(v.contiguous(), v.to(gpu()))) << dtype_name(t);
  }
}

TEST(CudaDevice, OpsOnTheDeviceAgreeWithCpu) {
  REQUIRE_GPU();
  manual_seed(3);
  const Tensor a = randn({64, 33}), b = randn({33, 17}), c = randn({64, 1});
  const Device g = gpu();
  EXPECT_TRUE(close_to(a.exp() * 2 + c, a.to(g).exp() * 2 + c.to(g)));
  EXPECT_TRUE(close_to(a.sum(), a.to(g).sum(), 1e-5, 1e-4));
  EXPECT_TRUE(close_to(a.softmax(1), a.to(g).softmax(1)));
  EXPECT_TRUE(close_to(a.matmul(b), a.to(g).matmul(b.to(g)), 1e-4, 1e-4));
  EXPECT_TRUE(close_to(a.transpose(0, 1).contiguous(), a.to(g).transpose(0, 1).contiguous()));
  const Tensor idx = tensor({int64_t{0}, int64_t{5}, int64_t{63}});
  EXPECT_TRUE(close_to(a.index_select(0, idx), a.to(g).index_select(0, idx.to(g))));
}

TEST(CudaDevice, AnOpMixingDevicesNamesBoth) {
  REQUIRE_GPU();
  try {
    (void)(ones({3}).to(gpu()) + ones({3}));
    FAIL() << "expected a device mismatch";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cpu")) << e.what();
  }
}

TEST(CudaDevice, AnOutOfRangeIndexIsReportedWithTheIndex) {
  REQUIRE_GPU();
  const Tensor x = arange(10, TensorOptions(kFloat)).to(gpu());
  try {
    (void)x.index_select(0, tensor({int64_t{2}, int64_t{12}}).to(gpu())).cpu();
    FAIL() << "expected an index error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "12")) << e.what();
  }
  EXPECT_EQ(x.sum().item().to_double(), 45.0) << "the device stays usable";
}

// ---- streams and events ----------------------------------------------------

TEST(CudaStreams, KernelsAreOrderedOnTheCurrentStream) {
  REQUIRE_GPU();
  const Device g = gpu();
  Stream s = Stream::create(g);
  StreamGuard guard(s);
  EXPECT_EQ(current_stream(g), s);
  Tensor src = full({1 << 16}, 7.0f, TensorOptions().device(g));
  Tensor dst = empty({1 << 16}, TensorOptions(kFloat).device(g));
  // mul's kernel loaded first: the first launch of a lazily loaded kernel can
  // wait for the device, which would end the spin before the query below.
  (void)(dst * 2);
  // 50 ms of spinning before the copy: what follows on s must see its result.
  ASSERT_EQ(tsrtest::spin_then_copy(s.handle(), src.data_ptr<float>(), dst.data_ptr<float>(), dst.numel(), 50'000'000), "");
  const Tensor y = dst * 2;  // queued on s behind the copy
  EXPECT_FALSE(s.query()) << "the spin should still be running";
  EXPECT_EQ(y.cpu().to_vector<float>(), std::vector<float>(1 << 16, 14.0f));
  EXPECT_TRUE(s.query());
}

TEST(CudaStreams, RecordStreamHoldsMemoryUntilTheOtherStreamIsDone) {
  REQUIRE_GPU();
  const Device g = gpu();
  Stream side = Stream::create(g);
  Tensor x = full({1 << 18}, 1.0f, TensorOptions().device(g));
  void* px = x.data_ptr();
  Tensor out = empty({1 << 18}, TensorOptions(kFloat).device(g));
  side.wait_stream(current_stream(g));
  ASSERT_EQ(tsrtest::spin_then_copy(side.handle(), x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), 100'000'000), "");
  x.record_stream(side);
  out.record_stream(side);
  x = Tensor();
  // The block stays held until side's event: a same-size request gets other memory,
  // and overwriting it cannot reach what side still reads.
  Tensor z = full({1 << 18}, 3.0f, TensorOptions().device(g));
  EXPECT_NE(z.data_ptr(), px);
  side.synchronize();
  EXPECT_EQ(out.cpu().to_vector<float>(), std::vector<float>(1 << 18, 1.0f));
  Tensor w = empty({1 << 18}, TensorOptions(kFloat).device(g));
  EXPECT_EQ(w.data_ptr(), px) << "once side is done, the block is reused";
}

TEST(CudaStreams, WithoutRecordStreamTheBlockIsReusedAtOnce) {
  REQUIRE_GPU();
  // The PyTorch rule record_stream exists for: freed memory is free on its own
  // stream immediately, whatever other streams still do with it.
  const Device g = gpu();
  Stream side = Stream::create(g);
  Tensor x = full({1 << 18}, 1.0f, TensorOptions().device(g));
  void* px = x.data_ptr();
  Tensor out = empty({1 << 18}, TensorOptions(kFloat).device(g));
  side.wait_stream(current_stream(g));
  ASSERT_EQ(tsrtest::spin_then_copy(side.handle(), x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), 1'000'000), "");
  out.record_stream(side);
  x = Tensor();
  Tensor z = empty({1 << 18}, TensorOptions(kFloat).device(g));
  EXPECT_EQ(z.data_ptr(), px);
  side.synchronize();
}

TEST(CudaStreams, EventsOrderStreamsAndTime) {
  REQUIRE_GPU();
  const Device g = gpu();
  Stream a = Stream::create(g), b = Stream::create(g);
  Event start(true), end(true);
  start.record(a);
  ASSERT_EQ(tsrtest::spin(a.handle(), 20'000'000), "");
  end.record(a);
  EXPECT_FALSE(end.query());
  end.wait(b);  // b's later work waits for a's spin
  Tensor t;
  {
    StreamGuard guard(b);
    t = full({16}, 2.0f, TensorOptions().device(g));
  }
  b.synchronize();
  EXPECT_TRUE(end.query()) << "b waited for a's event";
  EXPECT_GE(start.elapsed_time(end), 10.0) << "20 ms of spinning, timed in ms (>= 10 allows a clock at 2x the bound)";
  EXPECT_EQ(t.cpu().to_vector<float>()[15], 2.0f);
}

// ---- copies ----------------------------------------------------------------

TEST(CudaCopies, NonBlockingCopiesWithPinnedMemory) {
  REQUIRE_GPU();
  const Device g = gpu();
  Stream s = Stream::create(g);
  StreamGuard guard(s);
  Tensor host = arange(1 << 20, TensorOptions(kFloat)).pin_memory("cuda");
  ASSERT_TRUE(host.is_pinned("cuda"));
  ASSERT_EQ(tsrtest::spin(s.handle(), 20'000'000), "");
  Tensor dev = host.to(g, /*non_blocking=*/true);  // queued behind the spin
  EXPECT_FALSE(s.query());
  Tensor back = (dev + 1).to(kCpu, /*non_blocking=*/true);
  EXPECT_TRUE(back.is_pinned("cuda")) << "a non-blocking copy to the host lands in pinned memory";
  s.synchronize();
  EXPECT_EQ(back.to_vector<float>()[12345], 12346.0f);
  // Pageable memory: the host waits, the values are there on return.
  Tensor pageable = full({1 << 20}, -1.0f);
  pageable.copy_(dev, /*non_blocking=*/true);
  EXPECT_EQ(pageable.to_vector<float>()[777], 777.0f);
}

TEST(CudaCopies, BetweenTwoDevices) {
  REQUIRE_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "one CUDA device: peer copies need two";
  const Tensor x = arange(4096, TensorOptions(kDouble)).to(gpu(0));
  const Tensor y = x.to(gpu(1));
  EXPECT_EQ(y.device(), gpu(1));
  EXPECT_TRUE(same_bits(arange(4096, TensorOptions(kDouble)), (y * 1).to(gpu(0))));
}

// ---- memory ----------------------------------------------------------------

TEST(CudaMemory, CachedBlocksAreReusedAndCounted) {
  REQUIRE_GPU();
  const Device g = gpu();
  void* first = nullptr;
  {
    Tensor t = empty({1000}, TensorOptions(kFloat).device(g));
    first = t.data_ptr();
    EXPECT_GE(memory_allocated(g), 4096);
    EXPECT_GE(memory_reserved(g), 2 * kMiB) << "a small-pool segment";
  }
  Tensor again = empty({1000}, TensorOptions(kFloat).device(g));
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_GE(stat(g, "num_device_alloc"), 1);
  EXPECT_TRUE(contains(memory_summary(g), "cuda:0")) << memory_summary(g);
}

TEST(CudaMemory, OutOfMemoryOnTheRealDeviceIsAClearErrorAndTheDeviceRecovers) {
  REQUIRE_GPU();
  const Device g = gpu();
  try {
    // 4 TiB: larger than any GPU's memory.
    (void)empty({int64_t{1} << 40}, TensorOptions(kFloat).device(g));
    FAIL() << "expected out of memory";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "cuda:0")) << msg;
    EXPECT_TRUE(contains(msg, "4.00 TiB") || contains(msg, "4096.00 GiB") || contains(msg, "4398046511104")) << msg;
  }
  Tensor ok = full({1024}, 1.0f, TensorOptions().device(g));
  EXPECT_EQ(ok.sum().item().to_double(), 1024.0);
}

TEST(CudaMemory, ExpandableSegmentsGrowInPlace) {
  REQUIRE_GPU();
  const Device g = gpu();
  if (memory_reserved(g) != 0) GTEST_SKIP() << "needs a process whose cuda allocator is not built yet (ctest runs each test alone)";
  set_alloc_conf("expandable_segments:True");
  {
    std::vector<Tensor> live;
    for (int i = 1; i <= 8; ++i) live.push_back(full({i * 3 * kMiB}, float(i), TensorOptions().device(g)));  // 12..96 MiB
    for (int i = 1; i <= 8; ++i) EXPECT_EQ(live[i - 1].select(0, i * 3 * kMiB - 1).item().to_double(), double(i));
    EXPECT_EQ(stat(g, "segment.all.current"), 0) << "expandable segments are not counted as segments";
    EXPECT_LE(double(memory_reserved(g)), 1.1 * double(memory_allocated(g)) + 40.0 * kMiB);
  }
  empty_cache(g);
  EXPECT_EQ(memory_allocated(g), 0);
  set_alloc_conf("");
}

TEST(CudaMemory, PinnedHostBlocksAreCachedAndReusedAfterTheirCopy) {
  REQUIRE_GPU();
  const Device g = gpu();
  Tensor host = arange(4096, TensorOptions(kFloat)).pin_memory("cuda");
  void* block = host.data_ptr();
  Tensor dev = host.to(g, /*non_blocking=*/true);
  Event copied = current_stream(g).record_event();
  host = Tensor();
  copied.synchronize();
  Tensor again = empty({4096}).pin_memory("cuda");
  EXPECT_EQ(again.data_ptr(), block);
  EXPECT_EQ(dev.cpu().to_vector<float>()[4095], 4095.0f);
}

// ---- DLPack ----------------------------------------------------------------

TEST(CudaDLPack, ExportAndImportShareDeviceMemory) {
  REQUIRE_GPU();
  const Tensor x = arange(24, TensorOptions(kFloat)).to(gpu()).view({4, 6});
  DLManagedTensorVersioned* m = to_dlpack_versioned(x);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  EXPECT_EQ(m->dl_tensor.data, x.data_ptr());
  const Tensor y = from_dlpack(m);  // takes ownership; the deleter runs with y
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  EXPECT_EQ(y.device(), gpu());
  EXPECT_TRUE(same_bits(arange(24, TensorOptions(kFloat)).view({4, 6}), y));
}

// ---- random numbers ----------------------------------------------------------

TEST(CudaRandom, TheSameSeedGivesCpusNumbersBitForBit) {
  REQUIRE_GPU();
  for (ScalarType t : {kHalf, kBFloat16, kFloat, kDouble}) {
    const Tensor want_u = rand({3001}, Generator(5), TensorOptions(t));
    const Tensor got_u = rand({3001}, Generator(5), TensorOptions(t).device(gpu()));
    EXPECT_TRUE(same_bits(want_u, got_u)) << "rand " << dtype_name(t);
    const Tensor want_n = randn({3001}, Generator(6), TensorOptions(t));
    const Tensor got_n = randn({3001}, Generator(6), TensorOptions(t).device(gpu()));
    EXPECT_TRUE(same_bits(want_n, got_n)) << "randn " << dtype_name(t);
  }
  EXPECT_TRUE(same_bits(randint(-50, 50, {4097}, Generator(7), TensorOptions(kLong)),
                        randint(-50, 50, {4097}, Generator(7), TensorOptions(kLong).device(gpu()))));
  const Tensor x = ones({2000});
  EXPECT_TRUE(same_bits(dropout(x, 0.3, true, Generator(8)), dropout(x.to(gpu()), 0.3, true, Generator(8))));
}

// ---- training (issue 17 point 5) ----------------------------------------------

namespace {

std::vector<Tensor> train_mlp(Device d) {
  manual_seed(11);
  nn::Sequential mlp{std::make_shared<nn::Linear>(20, 64), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(64, 5)};
  mlp.to(d);
  optim::Adam opt(mlp.parameters(), {.lr = 1e-2});
  const Tensor x = randn({128, 20}).to(d);
  const Tensor target = randint(0, 5, {128}, std::nullopt, TensorOptions(kLong)).to(d);
  std::vector<Tensor> out;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    const Tensor loss = cross_entropy(mlp.forward(x), target);
    loss.backward();
    opt.step();
    out.push_back(loss.detach());
  }
  for (const Tensor& p : mlp.parameters()) out.push_back(p.detach());
  return out;
}

std::vector<Tensor> train_cnn(Device d) {
  manual_seed(12);
  nn::Sequential cnn{std::make_shared<nn::Conv2d>(1, 8, std::vector<int64_t>{3, 3}, std::vector<int64_t>{1}, 1),
                     std::make_shared<nn::ReLU>(), std::make_shared<nn::Conv2d>(8, 4, std::vector<int64_t>{3, 3},
                                                                                 std::vector<int64_t>{2})};
  cnn.to(d);
  optim::SGDOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  optim::SGD opt(cnn.parameters(), o);
  const Tensor x = randn({16, 1, 12, 12}).to(d);
  const Tensor target = randint(0, 4, {16}, std::nullopt, TensorOptions(kLong)).to(d);
  std::vector<Tensor> out;
  for (int step = 0; step < 15; ++step) {
    opt.zero_grad();
    Tensor h = cnn.forward(x);                                           // [16, 4, 5, 5]
    h = max_pool2d(h, {2, 2}).flatten(1).mean(std::vector<int64_t>{1}, false);  // [16]
    const Tensor logits = stack({h, -h, h * 0.5, h * h}, 1);              // [16, 4]
    const Tensor loss = cross_entropy(logits, target);
    loss.backward();
    opt.step();
    out.push_back(loss.detach());
  }
  for (const Tensor& p : cnn.parameters()) out.push_back(p.detach());
  return out;
}

}  // namespace

TEST(CudaTraining, AnMlpTrainsToCpusResults) {
  REQUIRE_GPU();
  const std::vector<Tensor> want = train_mlp(kCpu), got = train_mlp(gpu());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(close_to(want[i], got[i], 1e-3, 1e-4)) << "tensor " << i;
  EXPECT_LT(want[29].item().to_double(), want[0].item().to_double()) << "the loss falls";
}

TEST(CudaTraining, ASmallCnnTrainsToCpusResults) {
  REQUIRE_GPU();
  const std::vector<Tensor> want = train_cnn(kCpu), got = train_cnn(gpu());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(close_to(want[i], got[i], 1e-3, 1e-4)) << "tensor " << i;
}

// ---- without a GPU -------------------------------------------------------------

namespace {

// (op, dtype) pairs a plugin registers for `device_type`.
std::set<std::pair<std::string, std::string>> kernels_of(const std::string& device_type) {
  std::set<std::pair<std::string, std::string>> out;
  for (const PluginInfo& p : plugins())
    for (const KernelInfo& k : p.kernels)
      if (k.device_type == device_type)
        for (const std::string& d : k.dtypes) out.insert({k.op, d});
  return out;
}

}  // namespace

TEST(CudaPlugin, RegistersAKernelForEveryOpAndDtypeTheCpuPluginHas) {
  // Checked from the registrations, so it holds (and runs in CI) without a GPU.
  const auto cpu = kernels_of("cpu"), cuda = kernels_of("cuda");
  if (cuda.empty() && !unavailable().empty() && contains(unavailable(), "not loaded"))
    GTEST_SKIP() << unavailable();
  ASSERT_GT(cpu.size(), 500u);
  for (const auto& [op, dtype] : cpu) EXPECT_TRUE(cuda.count({op, dtype})) << "no cuda kernel for " << op << "(" << dtype << ")";
  for (const auto& [op, dtype] : cuda) EXPECT_TRUE(cpu.count({op, dtype})) << "cuda-only kernel " << op << "(" << dtype << ")";
  for (const PluginInfo& p : plugins())
    if (p.name == "cuda") {
      EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
    }
}

// ---- the plugin's copy of cpu's reduction order (no GPU needed) -------------

// The CUDA plugin sums (and multiplies) at most 2048 floating elements per
// output in cpu's order (cpu_reduction_order.cuh), so that cancellations give
// cpu's bits. Its copy, built for the host, must give the cpu plugin's bits
// for every length around the lane, leaf and cascade boundaries, dense and
// strided, on data where the order shows.

// Counts results whose bits differ from cpu's and reports the first five.
struct BitMismatches {
  int count = 0;
  template <typename A>
  void check(A mine, A cpu, const std::string& where) {
    if (std::memcmp(&mine, &cpu, sizeof(A)) != 0 && ++count <= 5)
      ADD_FAILURE() << where << ": the plugin's order gives " << mine << ", the cpu plugin " << cpu;
  }
};

// 1-D inputs of each length, dense and with stride 3: fill(data) makes the
// values, mine(p, n, stride) runs the plugin's copy, cpu(t) the cpu plugin.
template <typename A, typename Fill, typename Mine, typename Cpu>
void expect_1d_order(ScalarType dtype, std::initializer_list<int64_t> lengths, Fill fill, Mine mine, Cpu cpu) {
  BitMismatches m;
  for (int64_t n : lengths) {
    for (int64_t stride : {1, 3}) {
      std::vector<A> data(static_cast<size_t>(n * stride));
      fill(data, n, stride);
      const Tensor t = from_blob(data.data(), {n}, {stride}, nullptr, TensorOptions(dtype));
      m.check(mine(data.data(), n, stride), static_cast<A>(cpu(t).item().to_double()),
              std::string(dtype_name(dtype)) + " n=" + std::to_string(n) + " stride=" + std::to_string(stride));
    }
  }
  EXPECT_EQ(m.count, 0);
}

// Sums: ordinary values with +huge and -huge at random places (what survives
// depends on the order).
template <typename A>
void expect_cpu_order(ScalarType dtype, A huge) {
  std::mt19937_64 rng(20261129);
  std::normal_distribution<double> normal(0.0, 2.0);
  const auto fill = [&](std::vector<A>& data, int64_t n, int64_t stride) {
    for (A& v : data) v = static_cast<A>(normal(rng));
    for (int k = 0; k < 4 && n >= 4; ++k)
      data[static_cast<size_t>(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)) * stride)] = k % 2 ? -huge : huge;
  };
  expect_1d_order<A>(dtype, {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300, 511, 512,
                             513, 767, 768, 769, 1000, 1023, 1024, 1025, 1500, 2047, 2048},
                     fill, [](const A* p, int64_t n, int64_t s) { return tsrtest::cpu_order_sum(p, n, s); },
                     [](const Tensor& t) { return t.sum(); });
}

// The same for column sums (sum over dim 0 of [rows, cols]: cpu's outer
// layout), around the leaf and block boundaries, with fewer columns than a
// tile and with a whole float tile (64 columns, cpu's register path).
template <typename A>
void expect_cpu_column_order(ScalarType dtype, A huge) {
  std::mt19937_64 rng(20261130);
  std::normal_distribution<double> normal(0.0, 2.0);
  BitMismatches m;
  for (int64_t rows : {1, 7, 8, 9, 63, 64, 65, 255, 256, 257, 300, 511, 512, 513, 1000, 2047, 2048}) {
    for (int64_t cols : {5, 64}) {
      std::vector<A> data(static_cast<size_t>(rows * cols));
      for (A& v : data) v = static_cast<A>(normal(rng));
      for (int k = 0; k < 4 * cols && rows >= 4; ++k) {  // about four huge values per column, both signs
        data[static_cast<size_t>(rng() % data.size())] = k % 2 ? -huge : huge;
      }
      const Tensor sums = from_blob(data.data(), {rows, cols}, nullptr, TensorOptions(dtype)).sum({0});
      const std::vector<A> cpu = sums.to_vector<A>();
      for (int64_t c = 0; c < cols; ++c) {
        m.check(tsrtest::cpu_order_column_sum(data.data() + c, rows, cols), cpu[static_cast<size_t>(c)],
                std::string(dtype_name(dtype)) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                    " column " + std::to_string(c));
      }
    }
  }
  EXPECT_EQ(m.count, 0);
}

// And products (cpu's fold_run), on factors near 1 whose rounding depends on
// the order.
template <typename A>
void expect_cpu_prod_order(ScalarType dtype) {
  std::mt19937_64 rng(20261131);
  std::normal_distribution<double> normal(0.0, 0.05);
  const auto fill = [&](std::vector<A>& data, int64_t, int64_t) {
    for (A& v : data) v = static_cast<A>(1.0 + normal(rng));
  };
  expect_1d_order<A>(dtype, {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 1000, 2047, 2048}, fill,
                     [](const A* p, int64_t n, int64_t s) { return tsrtest::cpu_order_prod(p, n, s); },
                     [](const Tensor& t) { return prod(t); });
}

TEST(CudaReductionOrder, TheHostCopyAddsAsTheCpuPluginDoes) {
  expect_cpu_order<double>(kDouble, 1e17);  // ulp 16: ordinary values are partly absorbed
  expect_cpu_order<float>(kFloat, 1e9f);
}

TEST(CudaReductionOrder, TheHostCopySumsColumnsAsTheCpuPluginDoes) {
  expect_cpu_column_order<double>(kDouble, 1e17);
  expect_cpu_column_order<float>(kFloat, 1e9f);
}

TEST(CudaReductionOrder, TheHostCopyMultipliesAsTheCpuPluginDoes) {
  expect_cpu_prod_order<double>(kDouble);
  expect_cpu_prod_order<float>(kFloat);
}

TEST(CudaUnavailable, ReportsWhyAndRefusesCleanly) {
  const std::string why = unavailable();
  if (why.empty()) GTEST_SKIP() << "a GPU is present: the unavailable path is not reachable";
  EXPECT_FALSE(why.empty());
  try {
    (void)ones({2}).to(gpu());
    FAIL() << "a copy to a missing cuda device must fail";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda")) << e.what();
  }
}
