// The dispatcher: key sets, per-key kernels and fallbacks, redispatch, the
// thread-local include/exclude sets, schemas and the dispatch trace.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <atomic>
#include <cstdio>
#include <thread>

using namespace tessera;

TEST(DispatchKeySet, PriorityAndBelow) {
  DispatchKeySet ks = DispatchKeySet::backend(3) | DispatchKeySet(DispatchKey::Autograd);
  EXPECT_EQ(ks.highest(), static_cast<int>(DispatchKey::Autograd));
  EXPECT_EQ(ks.below(ks.highest()).highest(), 3);
  EXPECT_EQ(ks.backends(), DispatchKeySet::backend(3));
  EXPECT_EQ(DispatchKeySet().highest(), -1);
  EXPECT_GT(static_cast<int>(DispatchKey::Autograd), static_cast<int>(DispatchKey::Autocast));
  EXPECT_GT(static_cast<int>(DispatchKey::Autocast), kFirstFunctionalityKey - 1);
}

TEST(DispatchKeySet, BackendBitsComeFromRegisteredDeviceTypes) {
  const Tensor c = zeros({1});
  const Tensor m = zeros({1}, TensorOptions().device("meta"));
  EXPECT_EQ(c.unsafeGetTensorImpl()->key_set(), DispatchKeySet::backend(c.device().type()));
  EXPECT_NE(c.device().type(), m.device().type());
  EXPECT_EQ(dispatch_key_name(c.device().type()), "cpu");
  EXPECT_EQ(dispatch_key_name(m.device().type()), "meta");
}

namespace {
std::atomic<int> g_fallback_calls{0};
// A fallback for User0 that counts, then passes the call on below its key.
void counting_fallback(const Operator& op, DispatchKeySet ks, Frame& frame, void*) {
  ++g_fallback_calls;
  Dispatcher::instance().redispatch(op, ks.below(static_cast<int>(DispatchKey::User0)), frame);
}
std::atomic<int> g_kernel_calls{0};
void add_override(const Operator& op, DispatchKeySet ks, Frame& frame, void*) {
  ++g_kernel_calls;
  Dispatcher::instance().redispatch(op, ks.below(static_cast<int>(DispatchKey::User1)), frame);
}
}  // namespace

TEST(Dispatcher, FallbackRedispatchAndThreadLocalKeys) {
  auto& d = Dispatcher::instance();
  d.register_fallback(DispatchKey::User0, {&counting_fallback, nullptr, "test:counting"});
  const Tensor a = ones({2}), b = ones({2});
  g_fallback_calls = 0;
  EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{2, 2}));  // User0 not in the key set
  EXPECT_EQ(g_fallback_calls, 0);
  {
    IncludeDispatchKeyGuard include(DispatchKey::User0);
    const Tensor c = a + b;
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{2, 2}));
    EXPECT_GE(g_fallback_calls.load(), 1);
    const int before = g_fallback_calls;
    {
      ExcludeDispatchKeyGuard exclude(DispatchKey::User0);  // exclusion wins over inclusion
      (void)(a + b);
      EXPECT_EQ(g_fallback_calls.load(), before);
    }
    // Another thread does not see this thread's included keys.
    std::thread([&] {
      const int seen = g_fallback_calls;
      (void)(a + b);
      EXPECT_EQ(g_fallback_calls.load(), seen);
    }).join();
  }
  const int after = g_fallback_calls;
  (void)(a + b);
  EXPECT_EQ(g_fallback_calls.load(), after);  // guard restored the set
  d.deregister_fallback(DispatchKey::User0);
}

TEST(Dispatcher, PerKeyKernelTakesPriorityOverFallback) {
  auto& d = Dispatcher::instance();
  Operator& add = d.get("add");
  d.register_kernel(add, DispatchKey::User1, {&add_override, nullptr, "test:add-override"});
  g_kernel_calls = 0;
  const Tensor one = ones({1});
  Tensor sum;
  {
    IncludeDispatchKeyGuard include(DispatchKey::User1);  // applies to every op on this thread
    sum = one + one;
    EXPECT_EQ(g_kernel_calls, 1);
    EXPECT_THROW((void)(one * one), NotImplementedError);  // mul has no User1 kernel and no fallback
  }
  EXPECT_EQ(sum.item<float>(), 2);
  d.deregister_kernel(add, static_cast<int>(DispatchKey::User1));
}

TEST(Dispatcher, MissingKernelForAFunctionalityKeyIsAClearError) {
  const Tensor one = ones({1});
  IncludeDispatchKeyGuard include(DispatchKey::Autocast);
  try {
    (void)(one + one);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("Autocast"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
  }
}

TEST(Dispatcher, OperatorsAndSchemas) {
  auto& d = Dispatcher::instance();
  const Operator& add = d.get("add");
  EXPECT_EQ(add.schema().arguments.size(), 3u);
  EXPECT_EQ(add.schema().arguments[2].name, "alpha");
  EXPECT_TRUE(add.schema().arguments[2].kwarg_only);
  EXPECT_EQ(add.schema().arguments[2].default_value, "1");
  EXPECT_TRUE(add.flags() & kPointwise);
  EXPECT_TRUE(d.get("add_").flags() & kInPlace);
  EXPECT_EQ(&d.get("add_").kernel_source(), &add);
  EXPECT_TRUE(d.get("copy_").schema().arguments[0].mutable_alias);
  EXPECT_EQ(d.find("no_such_op"), nullptr);
  EXPECT_THROW(d.get("no_such_op"), NotImplementedError);
  const Schema s = Schema::parse("f(Tensor a, int[2] b=[1, 2], *, str? c=None) -> (Tensor, Tensor)");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_EQ(s.arguments[1].type, "int[2]");
  EXPECT_EQ(s.arguments[1].default_value, "[1, 2]");
  EXPECT_EQ(s.returns.size(), 2u);
  EXPECT_THROW(Schema::parse("no parentheses"), ValueError);
  EXPECT_GE(d.operators().size(), 30u);
}

TEST(Dispatcher, TracePrintsEachDispatch) {
  const Tensor a = ones({2}), b = ones({2});
  Dispatcher::set_trace(true);
  testing::internal::CaptureStderr();
  (void)(a + b);
  const std::string out = testing::internal::GetCapturedStderr();
  Dispatcher::set_trace(false);
  EXPECT_NE(out.find("[tessera dispatch] add keys=[cpu]"), std::string::npos) << out;
  EXPECT_NE(out.find("kernel add [cpu, float32] from plugin 'cpu'"), std::string::npos) << out;
}

TEST(Dispatcher, ConcurrentDispatchFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const Tensor x = full({3}, double(t)), y = full({3}, double(i));
        if ((x + y).sum().item<double>() != 3.0 * (t + i)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
}
