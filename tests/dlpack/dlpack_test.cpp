// DLPack exchange: export (versioned and legacy), import from hand-built
// producers with counting deleters, dtype mapping, refusals (each calls the
// producer's deleter exactly once and leaves the runtime usable), and round trips.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace tessera;

namespace {

std::vector<int64_t> vec(IntArrayRef a) { return a.vec(); }
std::vector<int64_t> vec(const int64_t* p, int32_t n) { return std::vector<int64_t>(p, p + n); }

// A DLPack producer built by hand over memory the test owns. The deleter only
// counts (it frees nothing), so a second call shows up as 2, not as a crash.
template <typename Managed>
struct Producer {
  Managed m{};
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int deletes = 0;

  Producer(void* data, DLDataType dtype, std::vector<int64_t> shape_,
           std::optional<std::vector<int64_t>> strides_ = std::nullopt, uint64_t byte_offset = 0,
           DLDevice device = DLDevice{kDLCPU, 0})
      : shape(std::move(shape_)) {
    if (strides_) strides = *strides_;
    m.manager_ctx = this;
    m.deleter = &deleter;
    DLTensor& dl = m.dl_tensor;
    dl.data = data;
    dl.device = device;
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dtype;
    dl.shape = shape.empty() ? nullptr : shape.data();
    dl.strides = strides_ ? (strides.empty() ? nullptr : strides.data()) : nullptr;
    dl.byte_offset = byte_offset;
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      m.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
      m.flags = 0;
    }
  }
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  static void deleter(Managed* self) { ++static_cast<Producer*>(self->manager_ctx)->deletes; }
};
using VProducer = Producer<DLManagedTensorVersioned>;
using LProducer = Producer<DLManagedTensor>;

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

// Runs f, expects an exception of type E whose message holds every part.
template <typename E, typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// The runtime still works after an error.
void expect_runtime_usable() {
  EXPECT_EQ(arange(4).sum().item<int64_t>(), 6);
  EXPECT_EQ((ones({2}) + 1).to_vector<float>(), (std::vector<float>{2, 2}));
}

struct DtypeCase {
  ScalarType t;
  uint8_t code;
  uint8_t bits;
};
const DtypeCase kDtypes[] = {
    {kBool, kDLBool, 8},   {kByte, kDLUInt, 8},  {kChar, kDLInt, 8},        {kShort, kDLInt, 16},
    {kInt, kDLInt, 32},    {kLong, kDLInt, 64},  {kHalf, kDLFloat, 16},     {kBFloat16, kDLBfloat, 16},
    {kFloat, kDLFloat, 32}, {kDouble, kDLFloat, 64},
};

// Bytes of `values` stored as dtype t (bool/integers/floats; half and bfloat16
// only for the small integers used here).
std::vector<uint8_t> encode(ScalarType t, const std::vector<double>& values) {
  std::vector<uint8_t> out(values.size() * element_size(t));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = out.data() + i * element_size(t);
    const double v = values[i];
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (t) {
      case kBool: put(uint8_t(v != 0)); break;
      case kByte: put(uint8_t(v)); break;
      case kChar: put(int8_t(v)); break;
      case kShort: put(int16_t(v)); break;
      case kInt: put(int32_t(v)); break;
      case kLong: put(int64_t(v)); break;
      case kFloat: put(float(v)); break;
      case kDouble: put(double(v)); break;
      case kBFloat16: {  // the upper half of the float32 (exact for small integers)
        const float f = float(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        put(uint16_t(bits >> 16));
        break;
      }
      case kHalf: {
        static const uint16_t half_of[] = {0x0000, 0x3C00, 0x4000, 0x4200, 0x4400};  // 0..4
        put(half_of[int(v)]);
        break;
      }
      default: ADD_FAILURE() << "encode: bad dtype";
    }
  }
  return out;
}

// The test device type "dlpack_ext" (kDLExtDev, 2 devices, not host-accessible).
void load_ext_plugin() {
  static const bool loaded = [] {
    load_plugin(TSRTEST_DLPACK_EXT);
    return true;
  }();
  (void)loaded;
}

}  // namespace

// ---------------------------------------------------------------------------
// dtypes

TEST(DLPackDtype, EveryScalarTypeMapsBothWays) {
  for (const DtypeCase& c : kDtypes) {
    const DLDataType d = to_dlpack_dtype(c.t);
    EXPECT_EQ(d.code, c.code) << dtype_name(c.t);
    EXPECT_EQ(d.bits, c.bits) << dtype_name(c.t);
    EXPECT_EQ(d.lanes, 1) << dtype_name(c.t);
    EXPECT_EQ(from_dlpack_dtype(d), c.t) << dtype_name(c.t);
  }
  EXPECT_THROW(to_dlpack_dtype(ScalarType::Undefined), TypeError);
}

TEST(DLPackDtype, UnsupportedDtypesAreTypeErrorsNamingCodeBitsLanes) {
  expect_error<TypeError>([] { from_dlpack_dtype(DLDataType{kDLComplex, 64, 1}); },
                          {"code 5", "complex", "bits 64", "lanes 1"});
  expect_error<TypeError>([] { from_dlpack_dtype(DLDataType{kDLFloat, 32, 4}); }, {"code 2", "bits 32", "lanes 4"});
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLUInt, 16, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLInt, 128, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLFloat, 8, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLBool, 1, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLBfloat, 32, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLFloat8_e4m3fn, 8, 1}), TypeError);
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLOpaqueHandle, 64, 1}), TypeError);
}

// ---------------------------------------------------------------------------
// Export

TEST(DLPackExport, VersionedFieldsAndZeroCopy) {
  Tensor t = arange(6, kFloat).view({2, 3});
  EXPECT_EQ(t.use_count(), 1);
  DLManagedTensorVersioned* m = to_dlpack_versioned(t);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->version.major, uint32_t(DLPACK_MAJOR_VERSION));
  EXPECT_EQ(m->version.minor, uint32_t(DLPACK_MINOR_VERSION));
  EXPECT_EQ(m->flags, 0u);
  EXPECT_NE(m->manager_ctx, nullptr);
  ASSERT_NE(m->deleter, nullptr);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, t.data_ptr());
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(vec(dl.shape, 2), (std::vector<int64_t>{2, 3}));
  ASSERT_NE(dl.strides, nullptr);  // always given (required since DLPack 1.2)
  EXPECT_EQ(vec(dl.strides, 2), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.use_count(), 2);  // the manager context holds a reference
  // Zero copy: writes through either side are visible on the other.
  static_cast<float*>(dl.data)[4] = 40;
  EXPECT_EQ(t.select(0, 1).select(0, 1).item<float>(), 40);
  t.fill_(9);
  EXPECT_EQ(static_cast<float*>(dl.data)[0], 9);
  m->deleter(m);
  EXPECT_EQ(t.use_count(), 1);
}

TEST(DLPackExport, KeepsMemoryAliveUntilTheDeleterRuns) {
  static int freed = 0;
  freed = 0;
  auto* data = new double[4]{1, 2, 3, 4};
  Tensor t = from_blob(data, {4}, [](void* p) { ++freed; delete[] static_cast<double*>(p); }, kDouble);
  DLManagedTensorVersioned* mv = to_dlpack_versioned(t);
  DLManagedTensor* ml = to_dlpack(t);
  t = Tensor();
  EXPECT_EQ(freed, 0);
  EXPECT_EQ(static_cast<double*>(mv->dl_tensor.data)[3], 4);
  mv->deleter(mv);
  EXPECT_EQ(freed, 0);  // the legacy export still holds it
  EXPECT_EQ(static_cast<double*>(ml->dl_tensor.data)[2], 3);
  ml->deleter(ml);
  EXPECT_EQ(freed, 1);
}

TEST(DLPackExport, NonContiguousViewPointsAtFirstElementWithByteOffsetZero) {
  const Tensor base = arange(12, kFloat).view({3, 4});
  const Tensor v = base.transpose(0, 1).narrow(0, 1, 2);  // shape [2, 3], strides [1, 4], offset 1
  DLManagedTensorVersioned* m = to_dlpack_versioned(v);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, v.data_ptr());
  EXPECT_EQ(dl.data, static_cast<float*>(base.data_ptr()) + 1);
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(vec(dl.shape, 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(dl.strides, 2), (std::vector<int64_t>{1, 4}));
  const std::vector<float> expected = v.contiguous().to_vector<float>();
  const float* p = static_cast<const float*>(dl.data);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(p[i * dl.strides[0] + j * dl.strides[1]], expected[i * 3 + j]);
  m->deleter(m);
}

TEST(DLPackExport, Legacy) {
  Tensor t = arange(6, kLong).view({3, 2}).t();
  DLManagedTensor* m = to_dlpack(t);
  ASSERT_NE(m, nullptr);
  ASSERT_NE(m->deleter, nullptr);
  EXPECT_EQ(m->dl_tensor.data, t.data_ptr());
  EXPECT_EQ(m->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 64);
  EXPECT_EQ(vec(m->dl_tensor.shape, 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(m->dl_tensor.strides, 2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.use_count(), 2);
  m->deleter(m);
  EXPECT_EQ(t.use_count(), 1);
}

TEST(DLPackExport, ReadOnlyFlag) {
  Tensor t = arange(3, kFloat);
  DLManagedTensorVersioned* m = to_dlpack_versioned(t, /*read_only=*/true);
  EXPECT_EQ(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
  m->deleter(m);

  // A read-only storage exports read-only even when not asked.
  float buf[3] = {1, 2, 3};
  VProducer p(buf, kF32, {3});
  p.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  {
    Tensor ro = from_dlpack(&p.m);
    DLManagedTensorVersioned* m2 = to_dlpack_versioned(ro);
    EXPECT_EQ(m2->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
    EXPECT_EQ(m2->dl_tensor.data, buf);
    m2->deleter(m2);
    // The legacy struct cannot say read-only, so a read-only tensor is refused.
    expect_error<ValueError>([&] { to_dlpack(ro); }, {"to_dlpack", "read-only", "to_dlpack_versioned"});
  }
  EXPECT_EQ(p.deletes, 1);
  expect_runtime_usable();
}

TEST(DLPackExport, ZeroSizeAndZeroDim) {
  const Tensor e = empty({0, 3});
  DLManagedTensorVersioned* m = to_dlpack_versioned(e);
  EXPECT_EQ(m->dl_tensor.data, nullptr);
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(vec(m->dl_tensor.shape, 2), (std::vector<int64_t>{0, 3}));
  ASSERT_NE(m->dl_tensor.strides, nullptr);
  m->deleter(m);

  // A zero-size view of a non-empty storage exports NULL data too (DLPack asks so).
  const Tensor base = arange(4, kFloat);
  DLManagedTensor* ml = to_dlpack(base.narrow(0, 2, 0));
  EXPECT_EQ(ml->dl_tensor.data, nullptr);
  EXPECT_EQ(ml->dl_tensor.shape[0], 0);
  ml->deleter(ml);

  const Tensor s = scalar_tensor(2.5, kDouble);
  m = to_dlpack_versioned(s);
  EXPECT_EQ(m->dl_tensor.ndim, 0);
  EXPECT_EQ(m->dl_tensor.data, s.data_ptr());
  EXPECT_EQ(*static_cast<double*>(m->dl_tensor.data), 2.5);
  m->deleter(m);
}

TEST(DLPackExport, EveryDtypeRoundTrips) {
  for (const DtypeCase& c : kDtypes) {
    SCOPED_TRACE(std::string(dtype_name(c.t)));
    const Tensor t = arange(4, kDouble).to(c.t);
    DLManagedTensorVersioned* m = to_dlpack_versioned(t);
    EXPECT_EQ(m->dl_tensor.dtype.code, c.code);
    EXPECT_EQ(m->dl_tensor.dtype.bits, c.bits);
    EXPECT_EQ(m->dl_tensor.dtype.lanes, 1);
    EXPECT_EQ(m->dl_tensor.data, t.data_ptr());
    const Tensor back = from_dlpack(m);
    EXPECT_EQ(back.scalar_type(), c.t);
    EXPECT_EQ(back.data_ptr(), t.data_ptr());
    EXPECT_TRUE(equal(back, t));
  }
  // bool: 8 bits per element, values 0/1.
  const Tensor b = tensor({true, false, true});
  DLManagedTensor* m = to_dlpack(b);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLBool);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 8);
  const uint8_t* bytes = static_cast<const uint8_t*>(m->dl_tensor.data);
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[1], 0);
  EXPECT_EQ(bytes[2], 1);
  m->deleter(m);
}

TEST(DLPackExport, MetaTensorsAreRefused) {
  const Tensor t = empty({2, 3}, TensorOptions(Device("meta")));
  expect_error<ValueError>([&] { to_dlpack_versioned(t); }, {"to_dlpack_versioned", "meta:0", "meta", "DLPack"});
  expect_error<ValueError>([&] { to_dlpack(t); }, {"to_dlpack", "meta"});
  EXPECT_EQ((t + t).sizes().vec(), (std::vector<int64_t>{2, 3}));  // meta still works
  expect_runtime_usable();
}

TEST(DLPackExport, UndefinedTensorIsRefused) {
  EXPECT_THROW(to_dlpack_versioned(Tensor()), ValueError);
  EXPECT_THROW(to_dlpack(Tensor()), ValueError);
  expect_runtime_usable();
}

// ---------------------------------------------------------------------------
// Import

TEST(DLPackImport, ZeroCopyAndDeleterOnceWhenTheLastViewDies) {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  VProducer p(buf, kF32, {2, 3}, std::vector<int64_t>{3, 1});
  {
    Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.data_ptr(), buf);
    EXPECT_EQ(t.device().str(), "cpu:0");
    EXPECT_EQ(t.scalar_type(), kFloat);
    EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{3, 1}));
    EXPECT_FALSE(t.is_read_only());
    EXPECT_EQ(t.storage()->nbytes(), sizeof(buf));
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
    Tensor col = t.select(1, 2);
    t = Tensor();
    EXPECT_EQ(p.deletes, 0);  // the view keeps the producer's memory
    col.fill_(-1);            // writes land in the producer's buffer
    EXPECT_EQ(buf[2], -1);
    EXPECT_EQ(buf[5], -1);
    buf[0] = 100;  // and the producer's writes are visible
    EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{-1, -1}));
    EXPECT_EQ(p.deletes, 0);
  }
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackImport, LegacyZeroCopyAndDeleterOnce) {
  int64_t buf[4] = {4, 3, 2, 1};
  LProducer p(buf, kI64, {4});  // strides NULL: row-major
  {
    Tensor t = from_dlpack(&p.m, LegacyAccess::Writable);
    EXPECT_EQ(t.data_ptr(), buf);
    EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{1}));
    EXPECT_FALSE(t.is_read_only());
    EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{4, 3, 2, 1}));
    t.add_(10);
    EXPECT_EQ(buf[0], 14);
  }
  EXPECT_EQ(p.deletes, 1);
}

// A legacy producer cannot say its memory is immutable (JAX answers even a
// versioned request with a legacy capsule), so the import is read-only unless
// the caller says otherwise.
TEST(DLPackImport, LegacyImportIsReadOnlyByDefault) {
  float buf[4] = {1, 2, 3, 4};
  LProducer p(buf, kF32, {4});
  {
    Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.data_ptr(), buf);  // still zero copy
    EXPECT_TRUE(t.is_read_only());
    expect_error<ValueError>([&] { t.add_(1); }, {"read-only"});
    expect_error<ValueError>([&] { t.select(0, 0).fill_(100); }, {"read-only"});
    EXPECT_THROW(t.copy_(zeros({4})), ValueError);
    EXPECT_EQ(std::vector<float>(buf, buf + 4), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ((t * 2).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));  // reads work
    // The flag travels on: a versioned re-export says READ_ONLY, a legacy one is refused.
    DLManagedTensorVersioned* m = to_dlpack_versioned(t);
    EXPECT_NE(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0u);
    m->deleter(m);
    EXPECT_THROW(to_dlpack(t), ValueError);
  }
  EXPECT_EQ(p.deletes, 1);
}

// ---------------------------------------------------------------------------
// Validation: every field of an import is checked before the memory is wrapped
// (validate_dlpack, the same checks from_dlpack makes).

TEST(DLPackValidate, AGoodTensorPassesAndNothingIsOwned) {
  float buf[6] = {};
  VProducer p(buf, kF32, {2, 3}, std::vector<int64_t>{3, 1});
  EXPECT_NO_THROW(validate_dlpack(p.m.dl_tensor));
  EXPECT_EQ(p.deletes, 0);
  EXPECT_EQ(from_dlpack(&p.m).data_ptr(), buf);
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackValidate, MisalignedFirstElementIsRefused) {
  alignas(16) unsigned char raw[64] = {};
  struct Case {
    void* data;
    uint64_t byte_offset;
    DLDataType dtype;
    std::string dtype_name;
  };
  const Case bad[] = {
      {raw, 2, kF32, "float32"},                  // byte_offset not a multiple of 4
      {raw + 1, 0, kF32, "float32"},              // the data pointer itself
      {raw + 4, 0, kI64, "int64"},                // 4-aligned is not enough for 8-byte elements
      {raw, 6, kF64, "float64"},
      {raw + 1, 0, DLDataType{kDLFloat, 16, 1}, "float16"},
      {raw + 1, 2, DLDataType{kDLInt, 16, 1}, "int16"},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.dtype_name + " byte_offset " + std::to_string(c.byte_offset));
    VProducer p(c.data, c.dtype, {2}, std::nullopt, c.byte_offset);
    expect_error<ValueError>([&] { validate_dlpack(p.m.dl_tensor); }, {"aligned", c.dtype_name});
    expect_error<ValueError>([&] { from_dlpack(&p.m); },
                             {"from_dlpack", "not aligned", c.dtype_name, "byte_offset " + std::to_string(c.byte_offset)});
    EXPECT_EQ(p.deletes, 1);
    LProducer l(c.data, c.dtype, {2}, std::nullopt, c.byte_offset);
    EXPECT_THROW(from_dlpack(&l.m), ValueError);
    EXPECT_EQ(l.deletes, 1);
  }
  // Aligned first elements, one-byte dtypes anywhere, and empty tensors are fine.
  const Case good[] = {
      {raw, 4, kF32, "float32"},   {raw + 8, 0, kI64, "int64"},
      {raw + 1, 0, DLDataType{kDLUInt, 8, 1}, "uint8"},
      {raw, 3, DLDataType{kDLBool, 8, 1}, "bool"},
      {raw + 2, 0, DLDataType{kDLFloat, 16, 1}, "float16"},
  };
  for (const Case& c : good) {
    SCOPED_TRACE(c.dtype_name);
    VProducer p(c.data, c.dtype, {2}, std::nullopt, c.byte_offset);
    const Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.data_ptr(), static_cast<unsigned char*>(c.data) + c.byte_offset);
  }
  VProducer empty(raw + 1, kF64, {0});
  EXPECT_EQ(from_dlpack(&empty.m).numel(), 0);
  EXPECT_EQ(empty.deletes, 1);
  expect_runtime_usable();
}

TEST(DLPackValidate, NdimBeyondTheLimitIsRefusedBeforeShapeIsRead) {
  std::vector<int64_t> ones(kDLPackMaxDims + 1, 1);
  float buf[1] = {7};
  {
    VProducer p(buf, kF32, std::vector<int64_t>(ones.begin(), ones.end() - 1));
    EXPECT_EQ(from_dlpack(&p.m).dim(), kDLPackMaxDims);  // the limit itself is fine
  }
  {
    VProducer p(buf, kF32, ones);
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"ndim 65", "64"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    // A huge ndim over a one-element shape: refused without reading past it.
    VProducer p(buf, kF32, {1});
    p.m.dl_tensor.ndim = INT32_MAX;
    expect_error<ValueError>([&] { validate_dlpack(p.m.dl_tensor); }, {"ndim 2147483647"});
    EXPECT_THROW(from_dlpack(&p.m), ValueError);
    EXPECT_EQ(p.deletes, 1);
  }
  expect_runtime_usable();
}

TEST(DLPackValidate, AddressArithmeticThatWrapsIsRefused) {
  alignas(16) float buf[4] = {};
  {
    // data + byte_offset past the top of the address space (it would wrap to buf - 4).
    VProducer p(buf, kF32, {1}, std::nullopt, UINT64_MAX - 3);
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"byte_offset", "overflows"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    // Negative strides reaching below address 0.
    VProducer p(reinterpret_cast<void*>(uintptr_t{8}), kF32, {4}, std::vector<int64_t>{-1});
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"wrap around"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    // Elements reaching past the top of the address space.
    VProducer p(reinterpret_cast<void*>(UINTPTR_MAX - 7), kF64, {4}, std::vector<int64_t>{1});
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"wrap around"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    // Strides whose extent overflows int64, with a negative stride as well.
    VProducer p(buf, kF32, {int64_t(1) << 40, 3}, std::vector<int64_t>{-(int64_t(1) << 40), INT64_MAX / 2});
    expect_error<ValueError>([&] { validate_dlpack(p.m.dl_tensor); }, {"address more memory than exists"});
  }
  expect_runtime_usable();
}

// Each malformed field, through validate_dlpack and through both imports (one
// deleter call each).
TEST(DLPackValidate, EveryMalformedFieldIsAClearError) {
  alignas(16) float buf[8] = {};
  struct Case {
    const char* what;
    void (*mutate)(DLTensor&);
    bool type_error;
    std::string expect;
  };
  static int64_t negative_shape[2] = {2, -1};
  static int64_t overflow_shape[2] = {INT64_MAX, 2};
  static int64_t overflow_empty_shape[3] = {0, INT64_MAX, 2};
  const Case cases[] = {
      {"negative ndim", [](DLTensor& t) { t.ndim = -1; }, false, "negative ndim"},
      {"NULL shape", [](DLTensor& t) { t.shape = nullptr; }, false, "shape is NULL"},
      {"negative size", [](DLTensor& t) { t.ndim = 2; t.shape = negative_shape; t.strides = nullptr; }, false,
       "negative size"},
      {"numel overflow", [](DLTensor& t) { t.ndim = 2; t.shape = overflow_shape; t.strides = nullptr; }, false,
       "has more elements than int64 can count"},
      {"empty shape whose contiguous strides overflow",
       [](DLTensor& t) { t.ndim = 3; t.shape = overflow_empty_shape; t.strides = nullptr; }, false,
       "shape [0, 9223372036854775807, 2] has more elements than int64 can count (the product of its sizes, "
       "counting the 0s as 1,"},
      {"NULL data", [](DLTensor& t) { t.data = nullptr; }, false, "data is NULL"},
      {"unknown dtype code", [](DLTensor& t) { t.dtype = DLDataType{200, 32, 1}; }, true, "code 200"},
      {"lanes != 1", [](DLTensor& t) { t.dtype.lanes = 2; }, true, "lanes 2"},
      {"lanes 0", [](DLTensor& t) { t.dtype.lanes = 0; }, true, "lanes 0"},
      {"bits 0", [](DLTensor& t) { t.dtype.bits = 0; }, true, "bits 0"},
      {"unknown device type", [](DLTensor& t) { t.device.device_type = static_cast<DLDeviceType>(1000); }, false,
       "unknown (1000)"},
      {"negative device id", [](DLTensor& t) { t.device.device_id = -1; }, false, "index -1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    VProducer v(buf, kF32, {4});
    c.mutate(v.m.dl_tensor);
    LProducer l(buf, kF32, {4});
    c.mutate(l.m.dl_tensor);
    if (c.type_error) {
      expect_error<TypeError>([&] { validate_dlpack(v.m.dl_tensor); }, {c.expect});
      expect_error<TypeError>([&] { from_dlpack(&v.m); }, {c.expect});
      expect_error<TypeError>([&] { from_dlpack(&l.m); }, {c.expect});
    } else {
      expect_error<ValueError>([&] { validate_dlpack(v.m.dl_tensor); }, {c.expect});
      expect_error<ValueError>([&] { from_dlpack(&v.m); }, {c.expect});
      expect_error<ValueError>([&] { from_dlpack(&l.m); }, {c.expect});
    }
    EXPECT_EQ(v.deletes, 1);
    EXPECT_EQ(l.deletes, 1);
  }
  expect_runtime_usable();
}

TEST(DLPackImport, DeleterMayRunOnAnotherThread) {
  float buf[2] = {1, 2};
  VProducer p(buf, kF32, {2});
  Tensor t = from_dlpack(&p.m);
  std::thread th([t = std::move(t)]() mutable { t = Tensor(); });
  th.join();
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackImport, NullStridesMeanRowMajor) {
  double buf[6] = {0, 1, 2, 3, 4, 5};
  VProducer p(buf, kF64, {3, 2});  // strides NULL
  {
    const Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{2, 1}));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.select(0, 2).to_vector<double>(), (std::vector<double>{4, 5}));
  }
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackImport, ByteOffsetIsHonoured) {
  float buf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  VProducer p(buf, kF32, {2, 2}, std::vector<int64_t>{2, 1}, /*byte_offset=*/3 * sizeof(float));
  {
    const Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.data_ptr(), buf + 3);  // data + byte_offset
    EXPECT_EQ(t.storage()->data(), buf + 3);
    EXPECT_EQ(t.storage()->nbytes(), 4 * sizeof(float));
    EXPECT_EQ(t.storage_offset(), 0);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{3, 4, 5, 6}));
  }
  EXPECT_EQ(p.deletes, 1);
  LProducer lp(buf, kF32, {3}, std::nullopt, 5 * sizeof(float));
  EXPECT_EQ(from_dlpack(&lp.m).to_vector<float>(), (std::vector<float>{5, 6, 7}));
  EXPECT_EQ(lp.deletes, 1);
}

TEST(DLPackImport, NegativeStrides) {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  {
    // A reversed view: data at the last element, stride -1.
    VProducer p(buf + 5, kF32, {6}, std::vector<int64_t>{-1});
    Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.data_ptr(), buf + 5);
    EXPECT_EQ(t.storage()->data(), buf);  // the storage starts at the lowest address
    EXPECT_EQ(t.storage()->nbytes(), sizeof(buf));
    EXPECT_EQ(t.storage_offset(), 5);
    EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{-1}));
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 4, 3, 2, 1, 0}));
    EXPECT_EQ(t.sum().item<float>(), 15);
    t.narrow(0, 0, 2).fill_(50);  // the first two elements of the reversed view
    EXPECT_EQ(buf[5], 50);
    EXPECT_EQ(buf[4], 50);
    EXPECT_EQ(buf[3], 3);
    // Re-export keeps the first-element pointer and the negative stride.
    DLManagedTensorVersioned* m = to_dlpack_versioned(t);
    EXPECT_EQ(m->dl_tensor.data, buf + 5);
    EXPECT_EQ(m->dl_tensor.strides[0], -1);
    const Tensor again = from_dlpack(m);
    EXPECT_EQ(again.data_ptr(), buf + 5);
    EXPECT_EQ(again.storage()->data(), buf);
    t = Tensor();
    EXPECT_EQ(p.deletes, 0);  // `again` holds the export, which holds t's storage
  }
  buf[4] = 4;
  buf[5] = 5;
  {
    // Rows reversed, and both dims reversed through byte_offset.
    VProducer rows(buf + 3, kF32, {2, 3}, std::vector<int64_t>{-3, 1});
    EXPECT_EQ(from_dlpack(&rows.m).to_vector<float>(), (std::vector<float>{3, 4, 5, 0, 1, 2}));
    EXPECT_EQ(rows.deletes, 1);
    VProducer both(buf, kF32, {2, 3}, std::vector<int64_t>{-3, -1}, 5 * sizeof(float));
    const Tensor t = from_dlpack(&both.m);
    EXPECT_EQ(t.data_ptr(), buf + 5);
    EXPECT_EQ(t.storage()->data(), buf);
    EXPECT_EQ(t.storage_offset(), 5);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 4, 3, 2, 1, 0}));
    // Mixed signs: stride -1 on dim 1 (each row reversed).
    VProducer mixed(buf + 2, kF32, {2, 3}, std::vector<int64_t>{3, -1});
    const Tensor u = from_dlpack(&mixed.m);
    EXPECT_EQ(u.storage()->data(), buf);
    EXPECT_EQ(u.storage()->nbytes(), sizeof(buf));
    EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{2, 1, 0, 5, 4, 3}));
  }
}

TEST(DLPackImport, TransposedAndBroadcastStrides) {
  // Column-major 2x3: element (i, j) at i + 2*j.
  int32_t buf[6] = {0, 3, 1, 4, 2, 5};
  VProducer p(buf, DLDataType{kDLInt, 32, 1}, {2, 3}, std::vector<int64_t>{1, 2});
  {
    const Tensor t = from_dlpack(&p.m);
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(t.t().is_contiguous(), true);
    EXPECT_EQ(t.t().data_ptr(), buf);
  }
  EXPECT_EQ(p.deletes, 1);
  // Stride 0 (a broadcast): readable, and writing in place is refused.
  VProducer b(buf, DLDataType{kDLInt, 32, 1}, {3, 2}, std::vector<int64_t>{0, 1});
  {
    Tensor t = from_dlpack(&b.m);
    EXPECT_EQ(t.storage()->nbytes(), 2 * sizeof(int32_t));
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 0, 3, 0, 3}));
    EXPECT_THROW(t.fill_(1), ValueError);
  }
  EXPECT_EQ(b.deletes, 1);
}

TEST(DLPackImport, ZeroDimAndZeroSize) {
  double value = 7.5;
  VProducer s(&value, kF64, {});  // ndim 0, shape and strides NULL
  {
    const Tensor t = from_dlpack(&s.m);
    EXPECT_EQ(t.dim(), 0);
    EXPECT_EQ(t.numel(), 1);
    EXPECT_EQ(t.data_ptr(), &value);
    EXPECT_EQ(t.item<double>(), 7.5);
  }
  EXPECT_EQ(s.deletes, 1);

  VProducer z(nullptr, kF32, {0, 3}, std::vector<int64_t>{3, 1});  // NULL data, as DLPack asks
  {
    const Tensor t = from_dlpack(&z.m);
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(t.data_ptr(), nullptr);
    EXPECT_EQ(t.storage()->nbytes(), 0u);
    EXPECT_EQ(t.sum().item<float>(), 0);
    EXPECT_TRUE(t.to_vector<float>().empty());
  }
  EXPECT_EQ(z.deletes, 1);

  float buf[1] = {1};
  LProducer zl(buf, kF32, {4, 0});  // non-NULL data is fine too
  {
    const Tensor t = from_dlpack(&zl.m);
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(t.data_ptr(), buf);
  }
  EXPECT_EQ(zl.deletes, 1);
}

TEST(DLPackImport, Bool) {
  uint8_t buf[4] = {1, 0, 0, 1};
  VProducer p(buf, DLDataType{kDLBool, 8, 1}, {4});
  {
    const Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.scalar_type(), kBool);
    EXPECT_EQ(t.to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
    EXPECT_EQ(t.sum().item<int64_t>(), 2);
  }
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackImport, EveryDtype) {
  for (const DtypeCase& c : kDtypes) {
    SCOPED_TRACE(std::string(dtype_name(c.t)));
    const std::vector<double> values = c.t == kBool ? std::vector<double>{0, 1, 1, 0} : std::vector<double>{0, 1, 2, 3};
    std::vector<uint8_t> bytes = encode(c.t, values);
    VProducer p(bytes.data(), DLDataType{c.code, c.bits, 1}, {2, 2});
    {
      const Tensor t = from_dlpack(&p.m);
      EXPECT_EQ(t.scalar_type(), c.t);
      EXPECT_EQ(t.data_ptr(), bytes.data());
      EXPECT_EQ(t.to_vector<double>(), values);
    }
    EXPECT_EQ(p.deletes, 1);
  }
}

TEST(DLPackImport, ReadOnlyProducerGivesReadOnlyTensor) {
  float buf[4] = {1, 2, 3, 4};
  VProducer p(buf, kF32, {4});
  p.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  {
    Tensor t = from_dlpack(&p.m);
    EXPECT_TRUE(t.is_read_only());
    EXPECT_TRUE(t.storage()->read_only());
    expect_error<ValueError>([&] { t.add_(1); }, {"read-only"});
    expect_error<ValueError>([&] { t.fill_(0); }, {"read-only"});
    EXPECT_THROW(t.copy_(zeros({4})), ValueError);
    EXPECT_THROW(t.select(0, 1).mul_(2), ValueError);  // views inherit it
    EXPECT_THROW(t += ones({4}), ValueError);
    EXPECT_EQ(std::vector<float>(buf, buf + 4), (std::vector<float>{1, 2, 3, 4}));  // untouched
    // Reading, and ops making new tensors, work.
    Tensor u = t + 1;
    EXPECT_FALSE(u.is_read_only());
    EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
    u.add_(1);
    EXPECT_EQ(t.sum().item<float>(), 10);
    expect_runtime_usable();
  }
  EXPECT_EQ(p.deletes, 1);

  // Read-only is per import: a writable export of the same memory stays writable.
  Tensor w = arange(3, kFloat);
  Tensor ro = from_dlpack(to_dlpack_versioned(w, /*read_only=*/true));
  EXPECT_TRUE(ro.is_read_only());
  EXPECT_FALSE(w.is_read_only());
  EXPECT_THROW(ro.zero_(), ValueError);
  w.fill_(2);
  EXPECT_EQ(ro.to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(DLPackImport, NewerMinorVersionIsAccepted) {
  float buf[2] = {1, 2};
  VProducer p(buf, kF32, {2});
  p.m.version.minor = DLPACK_MINOR_VERSION + 7;
  EXPECT_EQ(from_dlpack(&p.m).to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackImport, MajorVersionMismatchCallsOnlyTheDeleter) {
  for (uint32_t major : {uint32_t(DLPACK_MAJOR_VERSION + 1), uint32_t(0)}) {
    // Everything past the deleter may have another layout in another major: fill
    // it with garbage so that reading it would misbehave.
    alignas(DLManagedTensorVersioned) unsigned char raw[sizeof(DLManagedTensorVersioned)];
    std::memset(raw, 0xAB, sizeof(raw));
    auto* m = reinterpret_cast<DLManagedTensorVersioned*>(raw);
    int deletes = 0;
    m->version = DLPackVersion{major, 4};
    m->manager_ctx = &deletes;
    m->deleter = [](DLManagedTensorVersioned* self) { ++*static_cast<int*>(self->manager_ctx); };
    expect_error<ValueError>([&] { from_dlpack(m); },
                             {"DLPack " + std::to_string(major) + ".4",
                              "DLPack " + std::to_string(DLPACK_MAJOR_VERSION) + "." +
                                  std::to_string(DLPACK_MINOR_VERSION)});
    EXPECT_EQ(deletes, 1);
    expect_runtime_usable();
  }
}

TEST(DLPackImport, UnknownDeviceTypeIsRefused) {
  float buf[2] = {1, 2};
  VProducer p(buf, kF32, {2}, std::nullopt, 0, DLDevice{kDLVulkan, 0});
  expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"from_dlpack", "kDLVulkan (7)", "cpu = kDLCPU (1)"});
  EXPECT_EQ(p.deletes, 1);
  LProducer l(buf, kF32, {2}, std::nullopt, 0, DLDevice{static_cast<DLDeviceType>(99), 0});
  expect_error<ValueError>([&] { from_dlpack(&l.m); }, {"unknown (99)"});
  EXPECT_EQ(l.deletes, 1);
  expect_runtime_usable();
}

TEST(DLPackImport, MissingDeviceIndexIsRefused) {
  float buf[2] = {1, 2};
  VProducer p(buf, kF32, {2}, std::nullopt, 0, DLDevice{kDLCPU, 3});
  expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"kDLCPU (1)", "index 3", "cpu"});
  EXPECT_EQ(p.deletes, 1);
  expect_runtime_usable();
}

TEST(DLPackImport, UnsupportedDtypeIsRefused) {
  float buf[8] = {};
  VProducer c(buf, DLDataType{kDLComplex, 64, 1}, {4});
  expect_error<TypeError>([&] { from_dlpack(&c.m); }, {"code 5", "bits 64", "lanes 1"});
  EXPECT_EQ(c.deletes, 1);
  LProducer v(buf, DLDataType{kDLFloat, 32, 4}, {2});
  expect_error<TypeError>([&] { from_dlpack(&v.m); }, {"lanes 4"});
  EXPECT_EQ(v.deletes, 1);
  expect_runtime_usable();
}

TEST(DLPackImport, MalformedTensorsAreRefusedAfterCallingTheDeleter) {
  float buf[4] = {};
  {
    VProducer p(nullptr, kF32, {2});
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"data is NULL"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    VProducer p(buf, kF32, {2, -1});
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"negative size"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    VProducer p(buf, kF32, {2});
    p.m.dl_tensor.ndim = -1;
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"ndim"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    LProducer p(buf, kF32, {2});
    p.m.dl_tensor.shape = nullptr;
    expect_error<ValueError>([&] { from_dlpack(&p.m); }, {"shape is NULL"});
    EXPECT_EQ(p.deletes, 1);
  }
  {
    VProducer p(buf, kF32, {int64_t(1) << 40, int64_t(1) << 40}, std::vector<int64_t>{int64_t(1) << 40, 1});
    EXPECT_THROW(from_dlpack(&p.m), ValueError);  // overflow
    EXPECT_EQ(p.deletes, 1);
  }
  EXPECT_THROW(from_dlpack(static_cast<DLManagedTensorVersioned*>(nullptr)), ValueError);
  EXPECT_THROW(from_dlpack(static_cast<DLManagedTensor*>(nullptr)), ValueError);
  expect_runtime_usable();
}

TEST(DLPackImport, NullDeleterIsAllowed) {
  float buf[2] = {1, 2};
  VProducer p(buf, kF32, {2});
  p.m.deleter = nullptr;  // the producer keeps ownership
  EXPECT_EQ(from_dlpack(&p.m).to_vector<float>(), (std::vector<float>{1, 2}));
  p.m.dl_tensor.dtype = DLDataType{kDLComplex, 64, 1};
  EXPECT_THROW(from_dlpack(&p.m), TypeError);
  EXPECT_EQ(p.deletes, 0);
}

// ---------------------------------------------------------------------------
// Round trips

TEST(DLPackRoundTrip, ExportThenImportSharesMemory) {
  static int freed = 0;
  freed = 0;
  auto* data = new float[4]{1, 2, 3, 4};
  Tensor t = from_blob(data, {2, 2}, [](void* p) { ++freed; delete[] static_cast<float*>(p); }, kFloat);
  Tensor v = from_dlpack(to_dlpack_versioned(t));
  Tensor l = from_dlpack(to_dlpack(t.t()));
  EXPECT_EQ(v.data_ptr(), data);
  EXPECT_EQ(l.data_ptr(), data);
  EXPECT_EQ(vec(l.strides()), (std::vector<int64_t>{1, 2}));
  EXPECT_NE(v.storage().get(), t.storage().get());  // a new storage over the same bytes
  t.fill_(7);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{7, 7, 7, 7}));
  v.select(0, 0).add_(1);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{8, 8, 7, 7}));
  EXPECT_EQ(l.to_vector<float>(), (std::vector<float>{8, 7, 8, 7}));
  t = Tensor();
  v = Tensor();
  EXPECT_EQ(freed, 0);
  l = Tensor();
  EXPECT_EQ(freed, 1);
}

TEST(DLPackRoundTrip, ImportThenExportSharesMemory) {
  int64_t buf[3] = {1, 2, 3};
  VProducer p(buf, kI64, {3});
  Tensor t = from_dlpack(&p.m);
  DLManagedTensorVersioned* m = to_dlpack_versioned(t);
  DLManagedTensor* l = to_dlpack(t);
  EXPECT_EQ(m->dl_tensor.data, buf);
  EXPECT_EQ(l->dl_tensor.data, buf);
  static_cast<int64_t*>(m->dl_tensor.data)[1] = 20;
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 20, 3}));
  t.mul_(2);
  EXPECT_EQ(static_cast<int64_t*>(l->dl_tensor.data)[2], 6);
  EXPECT_EQ(buf[0], 2);
  t = Tensor();
  EXPECT_EQ(p.deletes, 0);
  m->deleter(m);
  EXPECT_EQ(p.deletes, 0);
  l->deleter(l);
  EXPECT_EQ(p.deletes, 1);
}

// ---------------------------------------------------------------------------
// Device mapping beyond the CPU (test device type "dlpack_ext" = kDLExtDev, 2 devices)

TEST(DLPackDevices, ImportAndExportMapDeviceTypeAndIndex) {
  load_ext_plugin();
  float buf[3] = {1, 2, 3};
  VProducer p(buf, kF32, {3}, std::nullopt, 0, DLDevice{kDLExtDev, 1});
  {
    const Tensor t = from_dlpack(&p.m);
    EXPECT_EQ(t.device().str(), "dlpack_ext:1");
    EXPECT_EQ(t.data_ptr(), buf);
    EXPECT_NE(t.storage()->owner(), nullptr);  // the device's plugin stays loaded
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3}));  // through the plugin's copy
    DLManagedTensorVersioned* m = to_dlpack_versioned(t);
    EXPECT_EQ(m->dl_tensor.device.device_type, kDLExtDev);
    EXPECT_EQ(m->dl_tensor.device.device_id, 1);
    EXPECT_EQ(m->dl_tensor.data, buf);
    m->deleter(m);
  }
  EXPECT_EQ(p.deletes, 1);

  const Tensor e = empty({2}, TensorOptions(Device("dlpack_ext:0")));
  DLManagedTensor* m = to_dlpack(e);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLExtDev);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  EXPECT_EQ(m->dl_tensor.data, e.data_ptr());
  m->deleter(m);

  VProducer missing(buf, kF32, {3}, std::nullopt, 0, DLDevice{kDLExtDev, 2});
  expect_error<ValueError>([&] { from_dlpack(&missing.m); }, {"index 2", "dlpack_ext", "2 device(s)"});
  EXPECT_EQ(missing.deletes, 1);

  // Refusals list every registered DLPack device type.
  VProducer unknown(buf, kF32, {3}, std::nullopt, 0, DLDevice{kDLMetal, 0});
  expect_error<ValueError>([&] { from_dlpack(&unknown.m); },
                           {"kDLMetal (8)", "cpu = kDLCPU (1)", "dlpack_ext = kDLExtDev (12)"});
  EXPECT_EQ(unknown.deletes, 1);
  expect_runtime_usable();
}
