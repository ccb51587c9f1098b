// tessera/sdk/kernel_args.hpp: every accessor's value and its error message
// (the argument's name, index, what was got and expected), and kernel_entry's
// prefix, on hand-built TsrKernelCalls.
#include <gtest/gtest.h>

#include <tessera/sdk/kernel_args.hpp>

#include <string>
#include <vector>

namespace {

namespace sdk = tessera::sdk;

// A call with the given arguments and one float32 [2, 3] output.
struct Call {
  float out_data[6] = {};
  float in_data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  DLTensor out{}, in{};
  std::vector<TsrValue> args;
  TsrKernelCall call{};
  explicit Call(std::vector<TsrValue> a) : args(std::move(a)) {
    for (DLTensor* t : {&out, &in}) {
      t->ndim = 2;
      t->shape = shape;
      t->strides = strides;
      t->dtype = {kDLFloat, 32, 1};
    }
    out.data = out_data;
    in.data = in_data;
    call.struct_size = sizeof(TsrKernelCall);
    call.op_name = "probe";
    call.dtype = TSR_DTYPE_FLOAT32;
    call.args = args.data();
    call.num_args = args.size();
    call.outputs = &out;
    call.num_outputs = 1;
  }
};

TsrValue tensor(const DLTensor* t) {
  TsrValue v{};
  v.tag = TSR_VALUE_TENSOR;
  v.as.tensor = t;
  return v;
}
TsrValue integer(int64_t i) {
  TsrValue v{};
  v.tag = TSR_VALUE_INT;
  v.as.i = i;
  return v;
}
TsrValue real(double d) {
  TsrValue v{};
  v.tag = TSR_VALUE_FLOAT;
  v.as.f = d;
  return v;
}
TsrValue none() { return TsrValue{}; }

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), TSR_ERROR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

TEST(SdkKernelArgs, TypedAccessorsReturnTheValues) {
  static const int64_t dims[] = {0, -1};
  TsrValue list{};
  list.tag = TSR_VALUE_INT_LIST;
  list.as.int_list = {dims, 2};
  TsrValue str{};
  str.tag = TSR_VALUE_STRING;
  str.as.string = "floor";
  TsrValue dt{};
  dt.tag = TSR_VALUE_DTYPE;
  dt.as.dtype = TSR_DTYPE_INT64;
  TsrValue flag{};
  flag.tag = TSR_VALUE_BOOL;
  flag.as.b = 1;
  Call c({integer(0), integer(7), real(2.5), flag, list, str, dt, none(), integer(3)});
  c.args[0] = tensor(&c.in);
  const TsrKernelCall& call = c.call;
  EXPECT_EQ(sdk::tensor_arg(call, 0, "self", TSR_DTYPE_FLOAT32).data, c.in_data);
  EXPECT_EQ(sdk::int_arg(call, 1, "dim"), 7);
  EXPECT_EQ(sdk::float_arg(call, 2, "eps"), 2.5);
  EXPECT_EQ(sdk::float_arg(call, 1, "dim"), 7.0) << "an int is a float too";
  EXPECT_TRUE(sdk::bool_arg(call, 3, "keepdim"));
  const sdk::IntList l = sdk::int_list_arg(call, 4, "dims");
  ASSERT_EQ(l.size, 2u);
  EXPECT_EQ(l[1], -1);
  EXPECT_EQ(sdk::string_arg(call, 5, "mode"), "floor");
  EXPECT_EQ(sdk::dtype_arg(call, 6, "dtype"), TSR_DTYPE_INT64);
  EXPECT_TRUE(sdk::is_none(call, 7, "weight"));
  EXPECT_EQ(sdk::optional_tensor_arg(call, 7, "weight"), nullptr);
  EXPECT_EQ(sdk::optional_tensor_arg(call, 0, "self"), &c.in);
  EXPECT_EQ(sdk::scalar_arg<float>(call, 8, "alpha"), 3.0f);
  EXPECT_EQ(sdk::output(call, 0, TSR_DTYPE_FLOAT32).data, c.out_data);
}

TEST(SdkKernelArgs, ErrorsNameTheArgumentItsIndexAndWhatWasGot) {
  Call c({integer(1), real(2.0), none()});
  const TsrKernelCall& call = c.call;
  EXPECT_EQ(error_of([&] { sdk::tensor_arg(call, 0, "self"); }), "argument 'self' must be a tensor, got int (value tag 2)");
  EXPECT_EQ(error_of([&] { sdk::int_arg(call, 1, "dim"); }), "argument 'dim' must be an int, got float (value tag 3)");
  EXPECT_EQ(error_of([&] { sdk::int_arg(call, 5, "dim"); }), "missing argument 'dim' (index 5, got 3 arguments)");
  EXPECT_EQ(error_of([&] { sdk::int_list_arg(call, 0, "dims"); }),
            "argument 'dims' (index 0) must be an int list, got int (value tag 2)");
  EXPECT_EQ(error_of([&] { sdk::string_arg(call, 2, "mode"); }),
            "argument 'mode' (index 2) must be a string, got none (value tag 0)");
  EXPECT_EQ(error_of([&] { sdk::dtype_arg(call, 1, "dtype"); }),
            "argument 'dtype' (index 1) must be a dtype, got float (value tag 3)");
  EXPECT_EQ(error_of([&] { sdk::output(call, 1); }), "missing output 1 (got 1 outputs)");
  c.out.dtype = {kDLInt, 64, 1};
  EXPECT_EQ(error_of([&] { sdk::output(call, 0, TSR_DTYPE_FLOAT32); }),
            "tensor 'out' has dtype int64, expected float32");
  c.in.data = nullptr;
  c.args[0] = tensor(&c.in);
  EXPECT_EQ(error_of([&] { sdk::tensor_arg(call, 0, "self"); }),
            "tensor 'self' is malformed (NULL data, shape or strides, or negative ndim)");
}

inline constexpr char kProbe[] = "probe-device";
void body_that_fails(const TsrKernelCall& call) { (void)sdk::int_arg(call, 0, "dim"); }
void body_that_writes(const TsrKernelCall& call) {
  DLTensor& out = sdk::output(call, 0, TSR_DTYPE_FLOAT32);
  static_cast<float*>(out.data)[0] = 42.0f;
}

TEST(SdkKernelArgs, KernelEntryNamesTheDeviceOpAndDtypeAndLetsNoExceptionOut) {
  Call c({real(1.0)});
  TsrError* err = sdk::kernel_entry<kProbe, body_that_fails>(&c.call);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(err->message),
            "probe-device kernel probe(float32): argument 'dim' must be an int, got float (value tag 3)");
  err->destroy(err);
  EXPECT_EQ((sdk::kernel_entry<kProbe, body_that_writes>(&c.call)), nullptr);
  EXPECT_EQ(c.out_data[0], 42.0f);
  err = sdk::kernel_entry<kProbe, body_that_writes>(nullptr);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(std::string(err->message), "probe-device kernel called with a NULL TsrKernelCall");
  err->destroy(err);
  c.call.struct_size = 8;
  err = sdk::kernel_entry<kProbe, body_that_writes>(&c.call);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err->message).find("TsrKernelCall.struct_size 8 is too small"), std::string::npos);
  err->destroy(err);
}

}  // namespace
