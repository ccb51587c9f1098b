// Bad input gets a clear tessera::Error naming the op, shapes, dtypes, devices
// and plugin — and the core keeps working afterwards.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cmath>
#include <limits>

using namespace tessera;

namespace {

void expect_core_still_works() {
  const Tensor t = ones({2, 3}) + ones({3});
  ASSERT_EQ(t.sum().item<float>(), 12.0f);
}

// Runs f, expects ErrorType with every fragment in its message, then checks the
// core still works.
template <typename ErrorType, typename F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an error";
  } catch (const ErrorType& e) {
    const std::string msg = e.what();
    for (const char* frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "missing '" << frag << "' in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
  expect_core_still_works();
}

Device faulty() {
  static bool loaded = [] {
    load_plugin(TSRTEST_FAULTY);
    return true;
  }();
  (void)loaded;
  return Device("faulty");
}

}  // namespace

TEST(Errors, ShapeMismatch) {
  expect_error<ValueError>([] { ones({2, 3}).mm(ones({4, 5})); }, {"mm", "[2, 3]", "[4, 5]", "3 != 4"});
  expect_error<ValueError>([] { ones({6}).view({4, 2}); }, {"view", "[4, 2]", "[6]"});
  expect_error<ValueError>([] { zeros({2}).copy_(ones({3})); }, {"copy_", "[3]", "[2]"});
  expect_error<ValueError>([] { Tensor a = ones({3}); a.add_(ones({2, 3})); }, {"add_", "[3]", "[2, 3]"});
}

TEST(Errors, NonBroadcastableShapes) {
  expect_error<ValueError>([] { (void)(ones({2, 3}) + ones({4})); }, {"add", "[2, 3]", "[4]", "not broadcastable"});
}

TEST(Errors, ImpossibleDtypeCombinations) {
  expect_error<TypeError>([] { ones({2, 2}).mm(ones({2, 2}, kDouble)); }, {"mm", "float32", "float64"});
  expect_error<TypeError>([] { Tensor i = ones({2}, kInt); i.add_(ones({2})); }, {"add_", "float32", "int32"});
  expect_error<TypeError>([] { (void)(tensor({true}) - tensor({false})); }, {"sub", "bool"});
  expect_error<TypeError>([] { neg(tensor({true})); }, {"neg", "bool"});
  expect_error<TypeError>([] { add(ones({1}, kInt), ones({1}, kInt), 0.5); }, {"add", "alpha"});
}

TEST(Errors, DeviceMismatch) {
  expect_error<ValueError>([] { (void)(ones({2}) + ones({2}, TensorOptions().device("meta"))); },
                           {"add", "cpu:0", "meta:0", "one device"});
  expect_error<ValueError>([] { Device("tpu"); }, {"unknown device type 'tpu'", "cpu", "meta"});
  expect_error<ValueError>([] { Device("cpu:x"); }, {"invalid device string"});
  expect_error<ValueError>([] { ones({1}, TensorOptions().device("cpu:3")); }, {"cpu:3", "does not exist", "plugin 'cpu'"});
}

TEST(Errors, DimOutOfRange) {
  expect_error<IndexError>([] { ones({2, 3}).sum({2}); }, {"sum", "dimension 2", "out of range", "[-2, 1]"});
  expect_error<IndexError>([] { ones({2, 3}).transpose(0, -3); }, {"transpose", "-3"});
  expect_error<IndexError>([] { ones({2, 3}).select(1, 3); }, {"select", "index 3", "size 3"});
  expect_error<ValueError>([] { ones({2, 3}).sum({1, -1}); }, {"sum", "more than once"});
}

TEST(Errors, NegativeSize) {
  expect_error<ValueError>([] { empty({2, -1}); }, {"negative size -1", "[2, -1]"});
  expect_error<ValueError>([] { zeros({-3}); }, {"negative size"});
}

TEST(Errors, InvalidViews) {
  expect_error<ValueError>([] { ones({3, 4}).t().view({12}); }, {"view", "reshape"});
  expect_error<ValueError>([] { ones({4}).as_strided({3}, {2}); }, {"as_strided", "beyond the storage"});
  expect_error<ValueError>([] { ones({3}).expand({2, 4}); }, {"expand", "3"});
  expect_error<ValueError>([] { ones({6}).view({-1, -1}); }, {"only one dimension can be -1"});
  expect_error<ValueError>([] { Tensor e = ones({3}).expand({2, 3}); e.fill_(1); }, {"fill_", "memory location"});
}

TEST(Errors, UnknownOp) {
  expect_error<NotImplementedError>([] { Dispatcher::instance().get("frobnicate"); }, {"unknown op 'frobnicate'"});
}

TEST(Errors, NoKernelForOpDeviceDtype) {
  const Device f = faulty();
  expect_error<NotImplementedError>([&] { exp(ones({2}, TensorOptions().device(f))); },
                                    {"exp", "no kernel", "'faulty'", "float32", "plugin 'faulty'"});
  expect_error<NotImplementedError>([&] { ones({2}, TensorOptions(kDouble).device(f)); },
                                    {"fill_", "float64", "kernels exist for: float32"});
}

TEST(Errors, KernelReturningAnError) {
  const Device f = faulty();
  expect_error<ValueError>([&] { (void)(ones({2}, TensorOptions().device(f)) + ones({2}, TensorOptions().device(f))); },
                           {"add", "plugin 'faulty'", "faulty add refuses on purpose", "float32[2] faulty:0"});
}

TEST(Errors, CppExceptionInsideAPluginKernel) {
  const Device f = faulty();
  // Inside the SDK guard: arrives as an error object.
  expect_error<InternalError>([&] { (void)(ones({2}, TensorOptions().device(f)) * ones({2}, TensorOptions().device(f))); },
                              {"mul", "plugin 'faulty'", "faulty mul threw inside the guard"});
  // Straight across the C ABI (a plugin bug): the host still turns it into an error.
  expect_error<InternalError>([&] { neg(ones({2}, TensorOptions().device(f))); },
                              {"neg", "plugin 'faulty'", "crossed the C ABI", "faulty neg threw"});
}

TEST(Errors, KernelThatForgetsItsDataDependentOutput) {
  const Device f = faulty();
  expect_error<InternalError>([&] { ones({2}, TensorOptions().device(f)).nonzero(); },
                              {"nonzero", "plugin 'faulty'", "did not allocate output 0"});
  expect_error<ValueError>([&] { empty({2}, TensorOptions(kDouble).device(f)).nonzero(); },
                           {"nonzero", "allocate_output", "must have dtype int64", "plugin 'faulty'"});
  expect_error<NotImplementedError>([] { ones({2}, TensorOptions().device("meta")).nonzero(); },
                                    {"nonzero", "depends on the data", "meta"});
}

TEST(Errors, AllocateOutputForAnOutputThatIsNotDataDependent) {
  // Once through the pointwise lane (same dtype and shape), once through the
  // meta rule (broadcasting): the same refusal either way.
  const Device f = faulty();
  const Tensor x = ones({2}, TensorOptions().device(f)), y = ones({1}, TensorOptions().device(f));
  for (const Tensor* other : {&x, &y}) {
    expect_error<ValueError>([&] { sub(x, *other); },
                             {"sub", "plugin 'faulty'", "allocate_output", "not a data-dependent output"});
  }
  EXPECT_EQ(ones({2}).sub(ones({2})).to_vector<float>(), (std::vector<float>{0, 0}));  // the core goes on
}

TEST(Errors, ReadOnlyAndUndefinedTensors) {
  expect_error<ValueError>([] { Tensor().sum(); }, {"undefined tensor"});
  expect_error<ValueError>([] { ones({2, 2}).item<float>(); }, {"item", "4 elements"});
  expect_error<ValueError>([] { ones({2}, TensorOptions().device("meta")).cpu(); }, {"meta", "holds no data"});
}

TEST(Errors, DeviceIndicesBeyondSixteenBitsAreRefusedNotWrapped) {
  // Device(type, 40000) once wrapped to index -25536.
  const DeviceTypeId cpu = Device("cpu").type();
  expect_error<ValueError>([&] { (void)Device(cpu, 40000); }, {"device index 40000 is out of range (0 to 32767)"});
  expect_error<ValueError>([&] { (void)Device(cpu, -1); }, {"device index -1"});
  expect_error<ValueError>([] { (void)Device("cpu:32768"); }, {"invalid device string 'cpu:32768'"});
  EXPECT_EQ(Device(cpu, 32767).index(), 32767);
  EXPECT_EQ(Device("cpu:32767").index(), 32767);
}

TEST(Errors, FillValuesTheDtypeCannotHold) {
  // They used to wrap: full({2}, 300, uint8) gave 44s.
  expect_error<ValueError>([] { (void)full({2}, 300, TensorOptions().dtype(kByte)); },
                           {"fill_", "value 300 cannot be converted to uint8 without overflow"});
  expect_error<ValueError>([] { (void)zeros({2}, kInt).fill_(1e10); }, {"cannot be converted to int32"});
  expect_error<ValueError>([] { (void)zeros({2}, kHalf).fill_(1e5); }, {"cannot be converted to float16"});
  expect_error<ValueError>([] { (void)zeros({2}).masked_fill(ones({2}, kBool), 1e39); },
                           {"masked_fill", "cannot be converted to float32"});
  EXPECT_EQ(full({1}, -128, TensorOptions().dtype(kChar)).item<int64_t>(), -128);
  EXPECT_EQ(full({1}, 2.9, TensorOptions().dtype(kChar)).item<int64_t>(), 2);
}

TEST(Conversion, ScalarToLongOfAFloatIsDefinedEverywhere) {
  // A float beyond int64 converted with a plain cast (undefined behaviour).
  EXPECT_EQ(Scalar(1e300).to_long(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Scalar(-1e300).to_long(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Scalar(std::nan("")).to_long(), 0);
  EXPECT_EQ(Scalar(-2.9).to_long(), -2);
}

TEST(Conversion, MovingToTheHostWithACastCastsOnTheHost) {
  // The faulty device has no copy_ kernel: the cast must happen on the cpu side.
  const Device f = faulty();
  const Tensor t = full({3}, 2.5, TensorOptions().device(f));
  EXPECT_EQ(t.to(Device("cpu"), kDouble).to_vector<double>(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_THROW(t.to(kDouble), NotImplementedError);  // staying on the device needs its kernel
}
