// Fuzz target: DLPack import (tessera::from_dlpack, versioned and legacy).
//
// The input fills every field of a DLManagedTensorVersioned or DLManagedTensor
// (version, flags, device, dtype, ndim, shape, strides, byte_offset, data) that
// points into a heap buffer of a size the input also picks. Properties:
//   - the importer either returns a tensor or throws a tessera::Error; anything
//     else (a crash, another exception) is a finding;
//   - the producer's deleter runs exactly once: right away on a refusal, when the
//     last tensor using the memory goes on success;
//   - an accepted tensor has the producer's metadata (ndim, shape, strides or
//     row-major ones, dtype, first element at data + byte_offset), its memory
//     does not wrap the address space, and its storage covers it;
//   - when that memory lies in the buffer, reading the tensor (contiguous())
//     gives the bytes an independent gather reads, a write (zero_()) changes
//     exactly the elements' bytes, or is refused for a read-only producer;
//   - exporting the tensor again and importing that gives the same view.
//
// Input layout (little-endian; missing bytes read as 0):
//   u8  mode: bit0 legacy struct, bit1 NULL strides, bit2 NULL shape, bit3 NULL
//       data, bit4 NULL deleter, bit5 NULL managed pointer, bit6 try a write,
//       bit7 export round trip
//   u32 version.major, u32 version.minor (versioned only), u64 flags (legacy:
//       the read-only bit picks LegacyAccess::ReadOnly, else Writable)
//   i32 device_type, i32 device_id
//   u8 dtype code, u8 bits, u16 lanes
//   i32 ndim (values above kMaxDim are taken modulo kMaxDim + 1)
//   u64 byte_offset, u16 data offset into the buffer, u16 buffer size (<= 4096)
//   i64 shape[ndim], i64 strides[ndim]
//   the rest: the buffer's bytes (repeated; a fixed pattern when empty)
#include <tessera/dlpack.h>
#include <tessera/error.h>
#include <tessera/plugin.h>
#include <tessera/tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.h"

using tessera::Tensor;

namespace {

constexpr const char* kName = "dlpack";
constexpr int32_t kMaxDim = 16;
constexpr size_t kMaxBuffer = 4096;
constexpr int64_t kMaxReadBytes = int64_t{1} << 20;  // reads of larger tensors (stride 0) are skipped

int g_deleter_calls = 0;
void versioned_deleter(DLManagedTensorVersioned*) { ++g_deleter_calls; }
void legacy_deleter(DLManagedTensor*) { ++g_deleter_calls; }

// The ScalarType DLPack's (code, bits, lanes) names, by DLPack's table rather
// than Tessera's: the importer must agree.
std::optional<tessera::ScalarType> expected_dtype(DLDataType t) {
  using namespace tessera;
  if (t.lanes != 1) return std::nullopt;
  const int code = t.code, bits = t.bits;
  if (code == kDLBool && bits == 8) return kBool;
  if (code == kDLUInt && bits == 8) return kByte;
  if (code == kDLInt && bits == 8) return kChar;
  if (code == kDLInt && bits == 16) return kShort;
  if (code == kDLInt && bits == 32) return kInt;
  if (code == kDLInt && bits == 64) return kLong;
  if (code == kDLFloat && bits == 16) return kHalf;
  if (code == kDLFloat && bits == 32) return kFloat;
  if (code == kDLFloat && bits == 64) return kDouble;
  if (code == kDLBfloat && bits == 16) return kBFloat16;
  return std::nullopt;
}

struct Extent {   // byte addresses of an accepted tensor, in exact arithmetic
  __int128 first;  // data + byte_offset
  __int128 lo;     // lowest byte any element occupies
  __int128 hi;     // one past the highest
};

Extent extent_of(uintptr_t data, uint64_t byte_offset, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, int64_t esize) {
  Extent e;
  e.first = static_cast<__int128>(data) + byte_offset;
  __int128 lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    const __int128 step = static_cast<__int128>(shape[i] - 1) * strides[i];
    (step < 0 ? lo : hi) += step;
  }
  e.lo = e.first + lo * esize;
  e.hi = e.first + (hi + 1) * esize;
  return e;
}

// Calls f(element address offset from first, in elements) for every element in
// row-major order.
template <typename F>
void for_each_element(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, F f) {
  const size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  while (true) {
    f(off);
    size_t d = nd;
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
      if (d == 0) return;
    }
    if (nd == 0) return;
  }
}

struct Case {
  uint8_t mode = 0;
  DLPackVersion version{};
  uint64_t flags = 0;
  DLDevice device{};
  DLDataType dtype{};
  int32_t ndim = 0;
  uint64_t byte_offset = 0;
  size_t data_offset = 0;
  size_t buffer_size = 0;
  std::vector<int64_t> shape, strides;
  bool legacy() const { return mode & 1; }
};

void check_accepted(const Case& c, Tensor& t, unsigned char* buffer, const unsigned char* data_arg) {
  using namespace tessera;
  const auto want = expected_dtype(c.dtype);
  TSR_FUZZ_CHECK(kName, want.has_value());  // accepted a dtype DLPack gives no Tessera type
  TSR_FUZZ_CHECK(kName, t.scalar_type() == *want);
  TSR_FUZZ_CHECK(kName, c.ndim >= 0 && t.dim() == c.ndim);
  TSR_FUZZ_CHECK(kName, c.ndim == 0 || !(c.mode & 4));  // NULL shape with ndim > 0
  for (int32_t i = 0; i < c.ndim; ++i) TSR_FUZZ_CHECK(kName, t.sizes()[i] == c.shape[i]);
  __int128 numel = 1;
  for (int64_t s : c.shape) {
    TSR_FUZZ_CHECK(kName, s >= 0);
    numel *= s;
    TSR_FUZZ_CHECK(kName, numel <= INT64_MAX);
  }
  TSR_FUZZ_CHECK(kName, t.numel() == static_cast<int64_t>(numel));
  TSR_FUZZ_CHECK(kName, t.device().type_name() == "cpu" && t.device().index() == 0);
  TSR_FUZZ_CHECK(kName, c.device.device_type == kDLCPU && c.device.device_id == 0);
  if (numel == 0) return;
  TSR_FUZZ_CHECK(kName, data_arg != nullptr);  // accepted NULL data for a non-empty tensor

  // Row-major strides when the producer gave none.
  std::vector<int64_t> strides = c.strides;
  if (c.mode & 2) {
    strides.assign(c.ndim, 1);
    for (int32_t i = c.ndim - 1; i > 0; --i) strides[i - 1] = strides[i] * c.shape[i];
  }
  if (numel > 1)
    for (int32_t i = 0; i < c.ndim; ++i)
      if (c.shape[i] > 1) TSR_FUZZ_CHECK(kName, t.strides()[i] == strides[i]);

  const int64_t esize = static_cast<int64_t>(t.element_size());
  const Extent e = extent_of(reinterpret_cast<uintptr_t>(data_arg), c.byte_offset, c.shape, strides, esize);
  const __int128 kAddressSpace = static_cast<__int128>(1) << 64;
  TSR_FUZZ_CHECK(kName, e.first < kAddressSpace);              // data + byte_offset wraps
  TSR_FUZZ_CHECK(kName, e.lo >= 0 && e.hi <= kAddressSpace);  // the elements wrap the address space
  TSR_FUZZ_CHECK(kName, reinterpret_cast<uintptr_t>(t.data_ptr()) == static_cast<uintptr_t>(e.first));
  const auto* sbase = static_cast<const unsigned char*>(t.storage()->data());
  const __int128 s_lo = reinterpret_cast<uintptr_t>(sbase);
  TSR_FUZZ_CHECK(kName, s_lo <= e.lo && e.hi <= s_lo + static_cast<__int128>(t.storage()->nbytes()));

  // Touch the memory only when it lies in our buffer.
  const __int128 b_lo = reinterpret_cast<uintptr_t>(buffer);
  const __int128 b_hi = b_lo + static_cast<__int128>(c.buffer_size);
  if (!(b_lo <= e.lo && e.hi <= b_hi) || numel * esize > kMaxReadBytes) return;
  const unsigned char* first = buffer + static_cast<size_t>(e.first - b_lo);

  std::vector<unsigned char> gathered;
  gathered.reserve(static_cast<size_t>(numel * esize));
  for_each_element(c.shape, strides, [&](int64_t off) {
    const unsigned char* p = first + off * esize;
    gathered.insert(gathered.end(), p, p + esize);
  });
  try {
    Tensor copy = t.contiguous();
    TSR_FUZZ_CHECK(kName, copy.nbytes() == gathered.size());
    TSR_FUZZ_CHECK(kName, std::memcmp(copy.data_ptr(), gathered.data(), gathered.size()) == 0);
  } catch (const tessera::Error&) {
    // An op may refuse a tensor the importer accepted (e.g. more dims than a
    // kernel takes): a clear error, not a wrong answer.
  }

  if (c.mode & 64) {
    const bool read_only = c.flags & DLPACK_FLAG_BITMASK_READ_ONLY;
    TSR_FUZZ_CHECK(kName, t.is_read_only() == read_only);
    const std::vector<unsigned char> before(buffer, buffer + c.buffer_size);
    bool wrote = false;
    try {
      t.zero_();
      wrote = true;
    } catch (const tessera::Error&) {
    }
    TSR_FUZZ_CHECK(kName, !(read_only && wrote));  // wrote into a read-only producer's memory
    std::vector<bool> element_byte(c.buffer_size, false);
    for_each_element(c.shape, strides, [&](int64_t off) {
      const size_t at = static_cast<size_t>(first - buffer) + static_cast<size_t>(off * esize);
      for (int64_t b = 0; b < esize; ++b) element_byte[at + b] = true;
    });
    for (size_t i = 0; i < c.buffer_size; ++i) {
      if (wrote && element_byte[i]) TSR_FUZZ_CHECK(kName, buffer[i] == 0);
      if (!wrote || !element_byte[i]) TSR_FUZZ_CHECK(kName, buffer[i] == before[i]);
    }
  }
}

void round_trip(Tensor& t) {
  DLManagedTensorVersioned* m = tessera::to_dlpack_versioned(t);
  TSR_FUZZ_CHECK(kName, m != nullptr && m->deleter != nullptr && m->version.major == DLPACK_MAJOR_VERSION);
  const DLTensor& dl = m->dl_tensor;
  TSR_FUZZ_CHECK(kName, dl.ndim == t.dim() && dl.byte_offset == 0);
  for (int32_t i = 0; i < dl.ndim; ++i)
    TSR_FUZZ_CHECK(kName, dl.shape[i] == t.sizes()[i] && dl.strides[i] == t.strides()[i]);
  TSR_FUZZ_CHECK(kName, dl.data == (t.numel() == 0 ? nullptr : t.data_ptr()));
  Tensor back = tessera::from_dlpack(m);  // takes m; its deleter drops the reference to t's storage
  TSR_FUZZ_CHECK(kName, back.dim() == t.dim() && back.scalar_type() == t.scalar_type());
  for (int64_t i = 0; i < t.dim(); ++i) TSR_FUZZ_CHECK(kName, back.sizes()[i] == t.sizes()[i]);
  if (t.numel() != 0) {
    TSR_FUZZ_CHECK(kName, back.data_ptr() == t.data_ptr());
    for (int64_t i = 0; i < t.dim(); ++i)
      if (t.sizes()[i] > 1) TSR_FUZZ_CHECK(kName, back.strides()[i] == t.strides()[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::load_default_plugins();  // before the first input: the import path stays the same for every one
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::FuzzInput in(data, size);
  Case c;
  c.mode = in.take<uint8_t>();
  c.version.major = in.take<uint32_t>();
  c.version.minor = in.take<uint32_t>();
  c.flags = in.take<uint64_t>();
  c.device.device_type = static_cast<DLDeviceType>(in.take<int32_t>());
  c.device.device_id = in.take<int32_t>();
  c.dtype.code = in.take<uint8_t>();
  c.dtype.bits = in.take<uint8_t>();
  c.dtype.lanes = in.take<uint16_t>();
  c.ndim = in.take<int32_t>();
  if (c.ndim > kMaxDim) c.ndim %= kMaxDim + 1;
  c.byte_offset = in.take<uint64_t>();
  const uint16_t data_offset = in.take<uint16_t>();
  c.buffer_size = in.take<uint16_t>() % (kMaxBuffer + 1);
  c.data_offset = c.buffer_size == 0 ? 0 : data_offset % (c.buffer_size + 1);
  const size_t n = c.ndim > 0 ? static_cast<size_t>(c.ndim) : 0;
  for (size_t i = 0; i < n; ++i) c.shape.push_back(in.take<int64_t>());
  for (size_t i = 0; i < n; ++i) c.strides.push_back(in.take<int64_t>());
  const std::string_view fill = in.rest();

  // Exactly-sized heap arrays: a read past ndim entries, or past the buffer, is
  // an AddressSanitizer report.
  std::unique_ptr<unsigned char[]> buffer(new unsigned char[c.buffer_size == 0 ? 1 : c.buffer_size]);
  for (size_t i = 0; i < c.buffer_size; ++i)
    buffer[i] = fill.empty() ? static_cast<unsigned char>(i * 37 + 11) : static_cast<unsigned char>(fill[i % fill.size()]);
  if (expected_dtype(c.dtype) == tessera::kBool)  // a bool byte holds 0 or 1 (DLPack's contract)
    for (size_t i = 0; i < c.buffer_size; ++i) buffer[i] &= 1;
  std::unique_ptr<int64_t[]> shape(n ? new int64_t[n] : nullptr);
  std::unique_ptr<int64_t[]> strides(n ? new int64_t[n] : nullptr);
  for (size_t i = 0; i < n; ++i) {
    shape[i] = c.shape[i];
    strides[i] = c.strides[i];
  }

  DLTensor dl{};
  unsigned char* data_arg = (c.mode & 8) ? nullptr : buffer.get() + c.data_offset;
  dl.data = data_arg;
  dl.device = c.device;
  dl.ndim = c.ndim;
  dl.dtype = c.dtype;
  dl.shape = (c.mode & 4) ? nullptr : shape.get();
  dl.strides = (c.mode & 2) ? nullptr : strides.get();
  dl.byte_offset = c.byte_offset;

  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
  const bool null_deleter = c.mode & 16;
  const bool null_managed = c.mode & 32;
  g_deleter_calls = 0;
  std::optional<Tensor> t;
  bool refused = false;
  try {
    if (c.legacy()) {
      legacy.dl_tensor = dl;
      legacy.deleter = null_deleter ? nullptr : &legacy_deleter;
      const auto access = (c.flags & DLPACK_FLAG_BITMASK_READ_ONLY) ? tessera::LegacyAccess::ReadOnly
                                                                     : tessera::LegacyAccess::Writable;
      t = tessera::from_dlpack(null_managed ? static_cast<DLManagedTensor*>(nullptr) : &legacy, access);
    } else {
      versioned.version = c.version;
      versioned.flags = c.flags;
      versioned.dl_tensor = dl;
      versioned.deleter = null_deleter ? nullptr : &versioned_deleter;
      t = tessera::from_dlpack(null_managed ? static_cast<DLManagedTensorVersioned*>(nullptr) : &versioned);
    }
  } catch (const tessera::Error& e) {
    refused = true;
    TSR_FUZZ_CHECK(kName, std::string(e.what()).find("dlpack") != std::string::npos);  // names the op
  }
  const int want_calls = (null_managed || null_deleter) ? 0 : 1;
  if (refused) {
    TSR_FUZZ_CHECK(kName, g_deleter_calls == want_calls);  // a refusal calls the deleter once, at once
    return 0;
  }
  TSR_FUZZ_CHECK(kName, !null_managed);
  TSR_FUZZ_CHECK(kName, g_deleter_calls == 0);  // not while the tensor lives
  if (!c.legacy()) TSR_FUZZ_CHECK(kName, c.version.major == DLPACK_MAJOR_VERSION);
  check_accepted(c, *t, buffer.get(), data_arg);
  if (c.mode & 128) round_trip(*t);
  TSR_FUZZ_CHECK(kName, g_deleter_calls == 0);
  t.reset();
  TSR_FUZZ_CHECK(kName, g_deleter_calls == want_calls);  // exactly once, when the last user goes
  return 0;
}
